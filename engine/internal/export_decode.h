// The shard chains of an export, decoded and checked against its spec
// (engine/export_load.cc); shared by LoadExportedFilter and ImportFilter.
#ifndef SHARDFILTER_ENGINE_INTERNAL_EXPORT_DECODE_H_
#define SHARDFILTER_ENGINE_INTERNAL_EXPORT_DECODE_H_

#include <string_view>
#include <vector>

#include "shardfilter/engine/internal/memory_account.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::internal {

// Charges the blobs' total to `account` first (ResourceExhausted over the
// budget), then decodes each shard's chain: Corruption naming the shard and
// link whose type, seed, capacity, rate, layout, k, fingerprint bits or
// bucket size differ from `spec`.
Result<std::vector<LoadedChain>> DecodeExportShards(
    const FilterSpec& spec, const std::vector<std::string_view>& blobs,
    MemoryAccount& account);

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_EXPORT_DECODE_H_
