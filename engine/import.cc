// ImportFilter (engine/export.h): checks every byte of an export before the
// store is touched, then creates the filter in one synced commit.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/export.h"
#include "engine/internal/access.h"
#include "engine/internal/database_impl.h"
#include "engine/internal/filter_factory.h"
#include "engine/internal/shard.h"
#include "filters/envelope.h"

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

// Bytes of a shard envelope's params that define its shape (everything
// before the statistics: items, deletes); docs/format-bloom.md and
// docs/format-cuckoo.md.
size_t ShapeBytes(FilterType t) { return t == FilterType::kCuckoo ? 40 : 36; }

// The shard filters of an export, decoded and checked against its spec:
// type, seed and shard capacity (DecodeShardFilter), fpp, the explicit
// parameters of the spec, and one shape for every shard.
Result<std::vector<std::unique_ptr<Filter>>> DecodeShards(
    const FilterSpec& spec, const std::vector<std::string_view>& blobs) {
  std::vector<std::unique_ptr<Filter>> filters;
  std::string_view shape0;
  for (size_t i = 0; i < blobs.size(); ++i) {
    const std::string what = "export file: shard " + std::to_string(i);
    SF_ASSIGN_OR_RETURN(auto f,
                        internal::DecodeShardFilter(spec, blobs[i], what));
    // DecodeShardFilter opened the envelope already: this cannot fail.
    SF_ASSIGN_OR_RETURN(EnvelopeView env, OpenEnvelope(blobs[i]));
    if (env.params.size() < ShapeBytes(spec.type)) {
      return Status::Corruption(what + ": params too short");
    }
    std::string_view shape = env.params.substr(0, ShapeBytes(spec.type));
    const uint8_t p0 = static_cast<uint8_t>(shape[0]);
    const uint8_t p1 = static_cast<uint8_t>(shape[1]);
    std::string mismatch;
    if (f->target_fpr() != spec.fpp) mismatch = "fpp";
    switch (spec.type) {
      case FilterType::kBloom:
        if (p0 != (spec.classic_layout ? 2 : 1)) mismatch = "layout";
        if (spec.k != 0 && p1 != spec.k) mismatch = "k";
        break;
      case FilterType::kCountingBloom:
        if (spec.k != 0 && p0 != spec.k) mismatch = "k";
        break;
      case FilterType::kCuckoo: {
        const uint8_t bucket = static_cast<uint8_t>(shape[8]);
        const uint8_t bits = static_cast<uint8_t>(shape[9]);
        if (spec.bucket_size != 0 && bucket != spec.bucket_size) {
          mismatch = "bucket size";
        }
        if (spec.fingerprint_bits != 0 && bits != spec.fingerprint_bits) {
          mismatch = "fingerprint bits";
        }
        break;
      }
    }
    if (!mismatch.empty()) {
      return Status::Corruption(what + ": its " + mismatch +
                                " does not match the file header");
    }
    if (i == 0) {
      shape0 = shape;
    } else if (shape != shape0) {
      return Status::Corruption(what + ": parameters differ from shard 0's");
    }
    filters.push_back(std::move(f));
  }
  return filters;
}

}  // namespace

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
  SF_ASSIGN_OR_RETURN(auto filters, DecodeShards(*resolved, parsed.shards));

  internal::DatabaseImpl& d = internal::ImportAccess::impl(db);
  std::lock_guard lock(d.mu);  // lock order 1: no Create/Drop meanwhile
  if (d.closed) return Status::NotSupported("the database is closed");
  if (d.filters.count(name) != 0) {
    return Status::AlreadyExists(persistence::DescribeName(name) +
                                 " already exists");
  }
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
  std::shared_ptr<ShardedFilter> f = ShardedFilterAccess::Make(
      std::string(name), *resolved, std::move(filters));
  for (uint32_t i = 0; i < resolved->shards; ++i) {
    internal::Shard& sh = ShardedFilterAccess::shard(*f, i);
    sh.checkpoint_generation.store(1, std::memory_order_relaxed);
    sh.checkpoint_bytes.store(desc.shards[i].byte_length,
                              std::memory_order_relaxed);
  }
  ShardedFilterAccess::Attach(*f, d.journal.get(), false,
                              d.options.durability_override);
  auto state = std::make_shared<internal::FilterState>();
  state->committed = desc;
  d.filters.emplace(std::string(name),
                    internal::OpenFilter{std::move(f), std::move(state)});
  return Status::OK();
}

}  // namespace shardfilter
