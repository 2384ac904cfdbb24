// From a FilterSpec to shard filters, and between FilterSpec and the
// catalog's FilterDescriptor. Thread-safe: pure functions.
#ifndef SHARDFILTER_ENGINE_INTERNAL_FILTER_SPEC_H_
#define SHARDFILTER_ENGINE_INTERNAL_FILTER_SPEC_H_

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "shardfilter/engine/internal/memory_account.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/persistence/values.h"

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
// Link i of a shard's chain holds c_i items at rate p_i (a non-scaling
// filter has the one link c_0, p).
//
// Capacity: c_i = c_0 x expansion^i; with expansion 1, a Bloom or counting
// chain keeps that size for its first kSameSizeLinks links and doubles from
// there (c_i = c_0 x 2^(i - kSameSizeLinks + 1)): at one size, link i's rate
// p / 2^(i+1) costs ~1.44 (i + 1) bits per key more than link 0's, so the
// chain's memory would grow with the square of its keys and kMaxLinks links
// would hold only 32 c_0; doubling keeps the bits per key growing with
// log(keys / c_0), and 32 links hold ~3.4e7 c_0. A cuckoo chain keeps
// c_0 x expansion^i (RedisBloom's CF sub-filters, at most kMaxLinks: its
// cf-max-expansions).
//
// Rate: Bloom and counting links p_i = p (1 - r) r^i, r = kTighteningRatio
// = 1/2, i.e. p / 2^(i+1). A query for an absent key is positive only if
// some link is, so by the union bound the compound rate of n links, each at
// most at its capacity, is at most sum_{i<n} p_i = p (1 - 2^-n) < p at
// every length n. p_i is computed with ldexp: exact.
// Cuckoo links: link 0 at p / 2; link n > 0 at what the earlier links left
// (CuckooNextLinkFpp below), because a cuckoo link's rate cannot halve for
// long: 16-bit fingerprints at the design load give ~1.2e-4 (b = 4), and
// a lower rate costs a lower load, twice the bytes per item per halving.
inline constexpr double kTighteningRatio = 0.5;
// Valid FilterSpec::expansion values (0 in a spec means the default, 2).
inline constexpr uint32_t kDefaultExpansion = 2;
inline constexpr uint32_t kMaxExpansion = 16;
// Links of one size at the head of a Bloom or counting chain of expansion 1.
inline constexpr uint32_t kSameSizeLinks = 8;

// The power-of-two cuckoo geometry (FilterSpec::cuckoo_pow2_buckets): its
// fingerprint width, link `link`'s buckets in one shard of a resolved spec
// (0 past 2^56), and every link's rate when full (CuckooFpr(8, b, 1)).
// Such a chain's c_i is its link's slots.
inline constexpr uint32_t kPow2FingerprintBits = 8;
uint64_t Pow2LinkBuckets(const FilterSpec& spec, uint32_t link);
double Pow2LinkFpp(const FilterSpec& spec);

// c_i, or 0 when it would overflow 64 bits.
uint64_t LinkCapacity(const FilterSpec& spec, uint32_t link);
// p_i of a Bloom or counting chain, and of link 0 of any chain.
double LinkFpp(const FilterSpec& spec, uint32_t link);
// sum_{i<links} p_i: the compound target of a Bloom or counting chain of
// that many links.
double ChainTargetFpp(const FilterSpec& spec, uint32_t links);
// The rate a decoded or built link keeps at its capacity: its stored rate,
// or for a cuckoo link the lower rate its table gives there (CuckooFpr at
// capacity / slots: its fingerprints are 8, 12 or 16 bits, so it usually
// does better than the rate it was sized for).
double LinkPromisedRate(const Filter& link);
// The rate of the link that follows `older` (a shard's links 0..n-1) in a
// chain of `spec`: LinkFpp(spec, n) for Bloom and counting filters (and
// n = 0). Cuckoo, n > 0: with L = what the older links promise
// (LinkPromisedRate) subtracted from p, and m = kMaxLinks - 1 - n the links
// that may still follow, min(L / 2, L - m f) when that is at least f, the
// rate of the widest fingerprints the spec allows at the design load
// (enough left for every later link at f: the chain can reach kMaxLinks
// links), else L / 2. Each link promises at most what it was given, which
// is less than L, so the links' promises sum to less than p at any length.
// InvalidArgument (the chain ends) when that rate is below f: the link
// would need a load under the design load, more bytes per item with each
// halving (what made 32 links of 64 items take 838 MB).
Result<double> NextLinkFpp(const FilterSpec& spec,
                           std::span<const Filter* const> older);
// The memory budget of one shard (all its links): max_bytes / shards, or
// the filters' default per-filter bound.
uint64_t ShardMaxBytes(const FilterSpec& spec);

// An empty link `link` for one shard of a resolved spec at rate `fpp`
// (NextLinkFpp; LinkFpp without it), at most `max_bytes` large.
// InvalidArgument when the rule cannot be met (capacity overflow, a rate
// below what the type can give, past max_bytes).
Result<std::unique_ptr<Filter>> MakeLinkFilter(const FilterSpec& spec,
                                               uint32_t link, double fpp,
                                               uint64_t max_bytes);
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
                                double fpp, uint64_t max_bytes);
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
// (persistence/spec_codec.h), which the descriptor and the export
// header share. A spec with no durability stores journal.
persistence::StoredSpec StoredFromSpec(const FilterSpec& spec);
FilterSpec SpecFromStored(const persistence::StoredSpec& s, uint32_t shards);
// A descriptor of a resolved spec with no checkpoint yet (generation 0).
persistence::FilterDescriptor DescriptorFromSpec(const FilterSpec& spec);
FilterSpec SpecFromDescriptor(const persistence::FilterDescriptor& d);

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_FILTER_SPEC_H_
