// LoadExportedFilter (engine/export.h): an export decoded into a standalone
// filter, every link checked against the header's spec. No store: this is
// part of the in-memory engine (the Redis module's RESTORE and LOADCHUNK).
#include <memory>
#include <string>
#include <vector>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/export_decode.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/internal/table_arena.h"

namespace shardfilter {
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
    if (spec.layout == BloomLayout::kAuto ? b->layout() == BloomLayout::kClassic
                                          : b->layout() != spec.layout) {
      return "layout";
    }
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

}  // namespace

namespace internal {

// DecodeChain checks every link's type, seed, capacity and rate under the
// chain rule (and one link when non-scaling); Mismatch the rest.
Result<std::vector<LoadedChain>> DecodeExportShards(
    const FilterSpec& spec, const std::vector<std::string_view>& blobs,
    internal::MemoryAccount& account) {
  // The whole filter is checked against the memory budget before any
  // shard is decoded (the tables are about the blobs' size).
  uint64_t total = 0;
  for (std::string_view b : blobs) total += b.size();
  SF_RETURN_IF_ERROR(account.Charge(total, "importing the filter"));
  std::vector<internal::LoadedChain> chains;
  // The shards' first links together, on huge pages where each alone would
  // not be (filters/internal/table_arena.h).
  auto link0_bytes = LinkTableBytes(spec, 0, ShardMaxBytes(spec));
  const TableArenaRef arena = MakeTableArena(
      link0_bytes.ok() ? *link0_bytes : 0, static_cast<uint32_t>(blobs.size()));
  const TableArenaScope in_arena(arena.get());
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

}  // namespace internal

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
  SF_ASSIGN_OR_RETURN(auto chains, internal::DecodeExportShards(
                                       *resolved, parsed.shards, *account));
  auto f = ShardedFilterAccess::MakeEmpty("", *resolved, std::move(account));
  for (uint32_t i = 0; i < resolved->shards; ++i) {
    internal::InstallChain(ShardedFilterAccess::shard(*f, i),
                           std::move(chains[i]));  // not shared yet
  }
  return f;
}

}  // namespace shardfilter
