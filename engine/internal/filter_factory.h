// From a FilterSpec to shard filters, and between FilterSpec and the
// catalog's FilterDescriptor. Thread-safe: pure functions.
#ifndef SHARDFILTER_ENGINE_INTERNAL_FILTER_FACTORY_H_
#define SHARDFILTER_ENGINE_INTERNAL_FILTER_FACTORY_H_

#include <memory>
#include <string_view>
#include <vector>

#include "shardfilter/engine/internal/memory_account.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/persistence/internal/values.h"

namespace shardfilter::internal {

// Fills defaults (shards, durability = `default_durability`) and checks
// what the engine itself must know (capacity, fpp, shard count);
// the filter types check the rest when shards are built.
Result<FilterSpec> ResolveSpec(const FilterSpec& spec,
                               Durability default_durability);

// The capacity of a shard's first link: ceil(capacity / shards), plus four
// standard deviations of the uneven split when shards > 1 (the .cc says
// why).
uint64_t ShardCapacity(const FilterSpec& spec);

// ---- The chain rule (docs/design.md, "Online expansion") ----
// Link i of a shard's chain holds c_i = c_0 x expansion^i items at rate
//   p_i = p (1 - r) r^i,  r = kTighteningRatio = 1/2, i.e. p / 2^(i+1)
// (a non-scaling filter has the one link c_0, p). A query for an absent key
// is positive only if some link is, so by the union bound the compound rate
// of n links, each at most at its capacity, is at most
//   sum_{i<n} p_i = p (1 - 2^-n) < p
// at every length n. p_i is computed with ldexp: exact, so a decoded link's
// stored rate compares equal to the rule's.
inline constexpr double kTighteningRatio = 0.5;
// Valid FilterSpec::expansion values (0 in a spec means the default, 2).
inline constexpr uint32_t kDefaultExpansion = 2;
inline constexpr uint32_t kMaxExpansion = 16;

// c_i, or 0 when it would overflow 64 bits.
uint64_t LinkCapacity(const FilterSpec& spec, uint32_t link);
// p_i.
double LinkFpp(const FilterSpec& spec, uint32_t link);
// sum_{i<links} p_i: the compound target of a chain of that many links.
double ChainTargetFpp(const FilterSpec& spec, uint32_t links);
// The memory budget of one shard (all its links): max_bytes / shards, or
// the filters' default per-filter bound.
uint64_t ShardMaxBytes(const FilterSpec& spec);

// An empty link `link` for one shard of a resolved spec, at most
// `max_bytes` large. InvalidArgument when the rule cannot be met (capacity
// overflow, a rate below what the type can give, past max_bytes).
Result<std::unique_ptr<Filter>> MakeLinkFilter(const FilterSpec& spec,
                                               uint32_t link,
                                               uint64_t max_bytes);
// Link 0 with the whole shard budget.
Result<std::unique_ptr<Filter>> MakeShardFilter(const FilterSpec& spec);
// The table bytes MakeLinkFilter would allocate (no allocation), or why
// not: TooLarge (with the bytes needed) when only `max_bytes` refuses it,
// InvalidArgument when no limit would make it valid. Call it before
// MakeLinkFilter, which reports a table past max_bytes as the filters do.
Result<uint64_t> LinkTableBytes(const FilterSpec& spec, uint32_t link,
                                uint64_t max_bytes);
// The bytes of one shard's link 0 of a resolved spec within the shard's
// share of max_bytes (LinkTableBytes(spec, 0, ShardMaxBytes(spec))), or
// why not. Over max_bytes it is TooLarge in the filter's terms (its
// capacity, rate, the bytes all its shards need and its limit), never in
// one shard's share of them.
Result<uint64_t> FirstLinkBytes(const FilterSpec& spec);
// Link 0 of every shard, charged to `account` as a whole before anything
// is allocated (ResourceExhausted naming `what` when over the budget,
// FirstLinkBytes's TooLarge when over spec.max_bytes).
Result<std::vector<std::unique_ptr<Filter>>> MakeShardFilters(
    const FilterSpec& spec, MemoryAccount& account, std::string_view what);

// Decodes one link's envelope, checking that it is of the spec's type and
// seed and keeps link `link`'s promise (capacity at least the shard's share
// times expansion^link, rate at most the spec's), by bounds, not by
// recomputing today's sizing formulas. `what` names it.
Result<std::unique_ptr<Filter>> DecodeLinkFilter(const FilterSpec& spec,
                                                 uint32_t link,
                                                 std::string_view bytes,
                                                 std::string_view what);

// The one conversion between a FilterSpec and its stored parameters
// (persistence/internal/spec_codec.h), which the descriptor and the export
// header share. A spec with no durability stores journal.
persistence::StoredSpec StoredFromSpec(const FilterSpec& spec);
FilterSpec SpecFromStored(const persistence::StoredSpec& s, uint32_t shards);
// A descriptor of a resolved spec with no checkpoint yet (generation 0).
persistence::FilterDescriptor DescriptorFromSpec(const FilterSpec& spec);
FilterSpec SpecFromDescriptor(const persistence::FilterDescriptor& d);

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_FILTER_FACTORY_H_
