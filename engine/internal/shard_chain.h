// A shard's chain of link filters (online expansion, docs/design.md):
// the operations a ShardedFilter applies to one Shard (engine/internal/
// shard.h), its checkpoint encoding and its statistics.
//
// Link i's capacity and rate follow the chain rule (LinkCapacity,
// NextLinkFpp and the proof that the links' rates sum to less than the
// target: filter_spec.h). Adds go to the newest link;
// the add that finds it full (S7) appends the next one (S6) and goes there.
// Queries consult every link, newest first (the newest holds the most keys
// with expansion >= 2), with no lock (S1). A remove takes one copy out of
// the one link that may hold the key. When two or more links may hold it
// (it was added on both sides of a growth, or it collides in one of them:
// probability < p) the remove is refused with NotSupported and changes
// nothing: taking the copy from the wrong link could make a colliding key
// absent, a false negative, while refusing leaves at worst an extra
// positive. (Removing newest-first instead made ~1% of 2000 removes at
// p = 1%, expansion 1, hit the wrong link: tests/expansion_test.cc.)
//
// Determinism: for counting and cuckoo filters every add/remove of a shard
// runs under its `order_mu` (S3) in journal-sequence order, and the growth
// decision depends only on the chain's state (fill counters, cuckoo table
// contents), which the checkpoint stores. So replaying the journal after a
// checkpoint appends the same links at the same points and reproduces a
// chain that Equals the one that was running. Bloom adds are not ordered
// (they commute within a link); replay of concurrent Bloom adds may place
// a key in a different link than the original did, never in none (no false
// negatives), and every link still holds at most its capacity (S7).
//
// Thread safety: per function.
#ifndef SHARDFILTER_ENGINE_INTERNAL_SHARD_CHAIN_H_
#define SHARDFILTER_ENGINE_INTERNAL_SHARD_CHAIN_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/detail/shard_fast_path.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/detail/split_block.h"

namespace shardfilter::internal {

// A chain decoded from a checkpoint (or a new one-link chain).
struct LoadedChain {
  std::vector<std::unique_ptr<Filter>> links;
  std::vector<uint64_t> fill;  // same size as links
};

// Makes `chain` the shard's chain. REQUIRES: the shard is not shared yet
// (construction or recovery).
void InstallChain(Shard& s, LoadedChain chain);

// REQUIRES: `mu` shared held (S2), and `order_mu` for counting / cuckoo
// filters (S3). Full when the filter is non-scaling and the shard full, the
// chain has kMaxLinks links, or the next link cannot be built (rate or
// memory bound): nothing changed then.
// Bloom (S8): a key that some link already reports present is
// kAlreadyPresent (*outcome, optional): no link changes, no fill is
// reserved, the chain never grows for it; so is an add of the newest link
// that set no new bit (a racing add of the same key won), whose
// reservation is given back. Counting and cuckoo: always kAdded; Full
// (nothing changed, no growth) when the key already holds the most copies
// the chain keeps of one key: 2 x bucket size - 1 for cuckoo (7 with the
// default 4-slot buckets), kMaxCountingCopies for counting; and, for
// cuckoo, when the newest link has no room because the key's bucket pair
// is at least half full of its own copies.
Status ChainAdd(const FilterSpec& spec, Shard& s, uint64_t hash,
                AddOutcome* outcome = nullptr);

// ChainAdd (S8): how close to the newest Bloom link's capacity its adds
// ask it before reserving (ShardFastAdd: below ShardHead::fast_add_limit,
// the capacity less this).
inline constexpr uint64_t kBloomReserveSlack = 4096;
// S9: every stripe's unflushed adds (fewer than kFillFlush each, one more
// in flight) fit in the slack, so adds below the fast path's limit never
// take link 0 past its capacity.
static_assert(kOwnedStripes * kFillFlush <= kBloomReserveSlack);

// ChainAdd, inline where ShardFastOrderedAdd (engine/detail/
// shard_fast_path.h) applies: the single-key add paths of ordered types
// (counting, cuckoo), which hold order_mu.
// REQUIRES: as ChainAdd's, order_mu held (S3); outcome non-null.
inline Status ChainAddOrdered(const FilterSpec& spec, Shard& s, uint64_t hash,
                              AddOutcome* outcome) {
  if (s.fast != nullptr &&
      (spec.type == FilterType::kCountingBloom
           ? ShardFastOrderedAdd<CountingBloomFilter>(*s.fast, hash)
           : spec.type == FilterType::kCuckoo &&
                 ShardFastOrderedAdd<CuckooFilter>(*s.fast, hash))) {
    *outcome = AddOutcome::kAdded;
    return Status::OK();
  }
  return ChainAdd(spec, s, hash, outcome);
}

// ChainAdd, inline where ShardFastAdd or ShardFastOrderedAdd applies.
// `fast` is the shard's ShardFastPath entry. REQUIRES: as ChainAdd's (for
// counting and cuckoo filters: order_mu held, S3); outcome non-null.
inline Status ChainAddAt(const FilterSpec& spec, Shard& s,
                         const ShardFastPath& fast, uint64_t hash,
                         AddOutcome* outcome) {
  if (bool added; ShardFastAdd(fast, hash, &added)) {
    *outcome = added ? AddOutcome::kAdded : AddOutcome::kAlreadyPresent;
    return Status::OK();
  }
  return ChainAddOrdered(spec, s, hash, outcome);
}
// As ChainAdd's REQUIRES. NotFound when no link may hold the key;
// NotSupported (nothing changed) when more than one may.
Status ChainRemove(Shard& s, uint64_t hash);

// Lock-free (S1). Prefetches what an add (for_write) or a query of `hash`
// touches in the newest link (Filter::PrefetchHash): batch loops call it a
// few items ahead.
void ChainPrefetch(const Shard& s, uint64_t hash, bool for_write);
// Prefetch distance of those loops, in items: enough misses in flight to
// cover one DRAM latency at the per-item cost of ChainAdd.
inline constexpr uint32_t kChainPrefetchItems = 8;

// Lock-free (S1).
bool ChainMayContain(const Shard& s, uint64_t hash);
uint32_t ChainCount(const Shard& s, uint64_t hash);
void ChainMayContainHashes(const Shard& s, std::span<const uint64_t> hashes,
                           std::span<uint8_t> out);

// The shard blob (persistence/chain_blob.h). REQUIRES: `mu` exclusive
// (or no writer) for an exact copy.
std::string ChainSerialize(const Shard& s);
// Decodes a shard blob and checks every link against the spec's rule
// (type, seed, capacity and rate of link i; one link when non-scaling;
// fill <= capacity; the links' promised rates, LinkPromisedRate, summing to
// at most the spec's rate). Corruption naming `what` otherwise. With
// `account`, the blob's size is charged before anything is decoded
// (ResourceExhausted over the budget) and refunded if decoding fails.
Result<LoadedChain> DecodeChain(const FilterSpec& spec, std::string_view blob,
                                std::string_view what,
                                MemoryAccount* account = nullptr);

// The links' figures merged: capacity, bytes, slots, items, deletes and
// cardinality summed; fill slot-weighted; estimated_fpr the compound
// 1 - prod(1 - fpr_i); target_fpr the links' promised rates summed
// (LinkPromisedRate: for Bloom and counting chains ChainTargetFpp); k of
// link 0. Approximate while writers run.
// scan = false: Filter::Counts() per link (no pass over the tables; the
// figures computed from them are 0).
FilterStats ChainStatistics(const FilterSpec& spec, const Shard& s,
                            bool scan = true);

// Same link count, fills and Filter::Equals links.
bool ChainEquals(const Shard& a, const Shard& b);

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_SHARD_CHAIN_H_
