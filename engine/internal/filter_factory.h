// From a FilterSpec to shard filters, and between FilterSpec and the
// catalog's FilterDescriptor. Thread-safe: pure functions.
#ifndef SHARDFILTER_ENGINE_INTERNAL_FILTER_FACTORY_H_
#define SHARDFILTER_ENGINE_INTERNAL_FILTER_FACTORY_H_

#include <memory>
#include <string_view>

#include "engine/sharded_filter.h"
#include "persistence/values.h"

namespace shardfilter::internal {

// Fills defaults (shards, durability = `default_durability`) and checks
// what the engine itself must know (capacity, fpp, shard count);
// the filter types check the rest when shards are built.
Result<FilterSpec> ResolveSpec(const FilterSpec& spec,
                               Durability default_durability);

// ceil(capacity / shards).
uint64_t ShardCapacity(const FilterSpec& spec);

// An empty filter for one shard of a resolved spec.
Result<std::unique_ptr<Filter>> MakeShardFilter(const FilterSpec& spec);

// Decodes a shard blob, checking that it is of the spec's type and seed.
// `what` names the shard for messages.
Result<std::unique_ptr<Filter>> DecodeShardFilter(const FilterSpec& spec,
                                                  std::string_view blob,
                                                  std::string_view what);

// A descriptor of a resolved spec with no checkpoint yet (generation 0).
persistence::FilterDescriptor DescriptorFromSpec(const FilterSpec& spec);
FilterSpec SpecFromDescriptor(const persistence::FilterDescriptor& d);

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_FILTER_FACTORY_H_
