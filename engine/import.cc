// ImportFilter (engine/export.h): checks every byte of an export before the
// store is touched, then creates the filter in one synced commit.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_factory.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"

namespace shardfilter {
namespace internal {

// The Database internals ImportFilter needs (friend of Database).
class ImportAccess {
 public:
  static DatabaseImpl& impl(Database& db) { return *db.impl_; }
};

}  // namespace internal

namespace {

using internal::ShardedFilterAccess;

// What DecodeChain leaves to check: the explicit parameters of the spec
// (layout, k, fingerprint bits, bucket size) in every link. "" when all
// match, else the name of the first that does not.
std::string Mismatch(const FilterSpec& spec, const Filter& link) {
  // The link's type is the spec's (DecodeChain checked it); the casts
  // follow the type, as everywhere else.
  if (link.type() == FilterType::kBloom) {
    const auto* b = static_cast<const BloomFilter*>(&link);
    const BloomLayout want =
        spec.classic_layout ? BloomLayout::kClassic : BloomLayout::kBlocked;
    if (b->layout() != want) return "layout";
    if (spec.k != 0 && b->k() != spec.k) return "k";
  } else if (link.type() == FilterType::kCuckoo) {
    const auto* c = static_cast<const CuckooFilter*>(&link);
    const CuckooStats cs = c->CuckooStatistics();
    if (spec.bucket_size != 0 && cs.bucket_size != spec.bucket_size) {
      return "bucket size";
    }
    if (spec.fingerprint_bits != 0 &&
        cs.fingerprint_bits != spec.fingerprint_bits) {
      return "fingerprint bits";
    }
  } else if (spec.k != 0 && link.Stats().k != spec.k) {
    return "k";
  }
  return "";
}

// The shard chains of an export, decoded and checked against its spec:
// DecodeChain checks every link's type, seed, capacity and rate under the
// chain rule (and one link when non-scaling); Mismatch the rest.
Result<std::vector<internal::LoadedChain>> DecodeShards(
    const FilterSpec& spec, const std::vector<std::string_view>& blobs,
    internal::MemoryAccount& account) {
  // The whole filter is checked against the memory budget before any
  // shard is decoded (the tables are about the blobs' size).
  uint64_t total = 0;
  for (std::string_view b : blobs) total += b.size();
  SF_RETURN_IF_ERROR(account.Charge(total, "importing the filter"));
  std::vector<internal::LoadedChain> chains;
  for (size_t i = 0; i < blobs.size(); ++i) {
    const std::string what = "export file: shard " + std::to_string(i);
    SF_ASSIGN_OR_RETURN(internal::LoadedChain chain,
                        internal::DecodeChain(spec, blobs[i], what));
    for (size_t l = 0; l < chain.links.size(); ++l) {
      std::string m = Mismatch(spec, *chain.links[l]);
      if (!m.empty()) {
        return Status::Corruption(what + " link " + std::to_string(l) +
                                  ": its " + m +
                                  " does not match the file header");
      }
    }
    chains.push_back(std::move(chain));
  }
  return chains;
}

}  // namespace

Result<std::unique_ptr<ShardedFilter>> LoadExportedFilter(
    std::string_view bytes, std::shared_ptr<MemoryBudget> budget) {
  SF_ASSIGN_OR_RETURN(ParsedExport parsed, ParseExport(bytes));
  Result<FilterSpec> resolved =
      internal::ResolveSpec(parsed.spec, Durability::kNone);
  if (!resolved.ok()) {
    return Status::Corruption("export file: header holds an invalid spec: " +
                              resolved.status().message());
  }
  auto account = std::make_shared<internal::MemoryAccount>(std::move(budget));
  SF_ASSIGN_OR_RETURN(auto chains,
                      DecodeShards(*resolved, parsed.shards, *account));
  auto f = ShardedFilterAccess::MakeEmpty("", *resolved, std::move(account));
  for (uint32_t i = 0; i < resolved->shards; ++i) {
    internal::InstallChain(ShardedFilterAccess::shard(*f, i),
                           std::move(chains[i]));  // not shared yet
  }
  return f;
}

Status ImportFilter(Database& db, std::string_view name, std::string_view bytes,
                    std::optional<Durability> durability) {
  if (name.empty() || name.size() > kMaxFilterNameBytes) {
    return Status::InvalidArgument("filter name must have 1.." +
                                   std::to_string(kMaxFilterNameBytes) +
                                   " bytes");
  }
  if (db.read_only()) {
    return Status::NotSupported("import: the store is open read-only");
  }
  SF_ASSIGN_OR_RETURN(ParsedExport parsed, ParseExport(bytes));
  if (durability) parsed.spec.durability = *durability;
  Result<FilterSpec> resolved =
      internal::ResolveSpec(parsed.spec, db.options().default_durability);
  if (!resolved.ok()) {
    return Status::Corruption("export file: header holds an invalid spec: " +
                              resolved.status().message());
  }
  internal::DatabaseImpl& d = internal::ImportAccess::impl(db);
  auto account = d.NewAccount();
  SF_ASSIGN_OR_RETURN(auto chains,
                      DecodeShards(*resolved, parsed.shards, *account));

  internal::MutexLock lock(d.mu);  // lock order 1: no Create/Drop meanwhile
  if (d.closed) return Status::NotSupported("the database is closed");
  // Any filter of the name, loaded or not, damaged or not, is refused:
  // the DropFilter below only wipes debris no descriptor names.
  SF_RETURN_IF_ERROR(d.CheckNameFree(name));
  // The name has no descriptor: wipe any debris under it (a crash of an
  // earlier import), write every shard as generation 1 (unsynced), then one
  // synced commit puts the descriptor. Before it, the chunks are orphans no
  // descriptor refers to; after it, the filter is whole.
  SF_RETURN_IF_ERROR(d.store->DropFilter(name));
  persistence::FilterDescriptor desc = internal::DescriptorFromSpec(*resolved);
  std::vector<uint32_t> all;
  for (uint32_t i = 0; i < resolved->shards; ++i) {
    auto record = d.store->WriteChunks(name, i, 1, parsed.shards[i],
                                       d.options.chunk_bytes);
    if (!record.ok()) {
      (void)d.store->DropFilter(name);  // best effort; orphans otherwise
      return record.status();
    }
    desc.shards[i] = *record;
    all.push_back(i);
  }
  Status s = d.store->CommitCheckpoint(name, desc, all);
  if (!s.ok()) {
    (void)d.store->DropFilter(name);
    return s;
  }
  std::shared_ptr<ShardedFilter> f = ShardedFilterAccess::MakeEmpty(
      std::string(name), *resolved, std::move(account));
  for (uint32_t i = 0; i < resolved->shards; ++i) {
    internal::Shard& sh = ShardedFilterAccess::shard(*f, i);
    internal::InstallChain(sh, std::move(chains[i]));  // not shared yet
    sh.NoteCheckpoint(1, 0, desc.shards[i].byte_length);
  }
  ShardedFilterAccess::Attach(*f, d.journal.get(), false,
                              d.options.durability_override);
  auto state = std::make_shared<internal::FilterState>(desc);
  d.filters.emplace(std::string(name),
                    internal::OpenFilter{std::move(f), std::move(state)});
  return Status::OK();
}

}  // namespace shardfilter
