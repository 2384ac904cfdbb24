// The fast path of a ShardedFilter's shard: what the inline MayContain and the
// inline adds (engine/sharded_filter.h) need to reach a
// shard without Shard (engine/internal/shard.h), which the public header cannot
// see: one ShardFastPath entry per shard, in an array of its own, and the
// shard's first cache line (ShardHead: its lock, sequence, dirty flag and
// link 0's fill), which Shard derives from.
//
// Installed (engine/sharded_filter.h includes it), not API: names here may
// change in any release.
//
// Invariant (cited as Q1 in shard.h and the code):
//  Q1. `table` is non-null only while the shard has exactly one link, that
//      link is a split-block Bloom filter (filters/detail/split_block.h)
//      whose table it is, with `blocks` blocks, and the filter is not
//      forwarded to a migration target. It is set (release, after `blocks`)
//      when link 0 is installed, before the shard's link count is published
//      (S1), and cleared before anything that ends those conditions is
//      published: growth clears it before raising the link count, the
//      migration switch before storing `forward_` (both under locks that
//      writers take, and both release-published). An op on the new state
//      (an add to link 1, an add through the forward) happens after that
//      publication, hence after the clear, so a query that happens after
//      such an op's acknowledgement loads null (write-read coherence) and
//      takes the full path: the fast path never misses an acknowledged key.
//      `link` follows the same rule for a shard of one link of any type or
//      layout (link 0 itself): set with `table`, cleared with it; and
//      `counters` for a shard of one counting link (of k <= 8): set and
//      cleared with `link`.
//
// Thread-safe: written by the shard's owner under the rules above; read by
// any thread.
#ifndef SHARDFILTER_ENGINE_DETAIL_SHARD_FAST_PATH_H_
#define SHARDFILTER_ENGINE_DETAIL_SHARD_FAST_PATH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "shardfilter/engine/detail/shard_mutex.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/detail/prefetch.h"
#include "shardfilter/filters/detail/split_block.h"
#include "shardfilter/filters/detail/thread_stripe.h"

namespace shardfilter {
class Filter;
}  // namespace shardfilter

namespace shardfilter::internal {

// Most links a shard's chain may have; an add that would need one more
// reports Full. With expansion 2 the last link holds 2^31 x the first, with
// expansion 1 (Bloom, counting: doubling from link 8) 2^24 x. For a cuckoo
// filter it is RedisBloom's cf-max-expansions (32 sub-filters).
inline constexpr uint32_t kMaxLinks = 32;
// Copies of one key a counting chain keeps (MaxOwnCopies below): where its
// 4-bit counters saturate (a copy past it would not be counted anyway).
inline constexpr uint32_t kMaxCountingCopies = 15;
// Adds a thread counts on its own before it adds them to the shard's fill
// (S9, ShardHead::unflushed): one locked add per this many, instead of a
// CAS per add.
inline constexpr uint32_t kFillFlush = 64;

// A shard's first cache line: what every mutation writes (the lock word, the
// order lock, the sequence, the dirty flag and link 0's fill),
// shared by the fields so that an add writes one line of the shard's. Two
// threads adding to one filter spread over all its shards, so a shard's
// written lines were last written by the other core about half the time, and
// each such line is a transfer between cores. A Bloom add far from the
// capacity writes none of it (but the dirty flag once after each
// checkpoint), only its thread's own unflushed line (S9) and reader slot
// (ShardMutex). The invariants these fields keep (S2, S3, S7, S8, S9) are
// Shard's (engine/internal/shard.h), which derives from this.
struct alignas(64) ShardHead {
  ShardMutex mu;        // S2, S4, S5
  ShortMutex order_mu;  // S3 (shard_mutex.h)
  // Set by every successful mutation under `mu` shared (the ordered
  // one-link add: under `order_mu`, S2), cleared by a checkpoint holding
  // the shard exclusive (restored if the checkpoint fails). Relaxed: the
  // locks order the two; a checkpoint that reads it without the lock and
  // sees a stale false only postpones that shard to the next one.
  std::atomic<bool> dirty{false};
  // Last journal sequence assigned (0 = none). Incremented under `mu`
  // shared (and `order_mu` for ordered types: TakeOrderedSeq), read under
  // `mu` exclusive by checkpoints: the lock gives the ordering, so relaxed
  // RMWs suffice. Every counting or cuckoo op takes one, and so does
  // every journalled op on the shard's own journal; a single-key Bloom add
  // takes none when its filter has no journal or it goes to its thread's
  // journal segment (engine/internal/filter_log.h L7): its replay needs no
  // order, and what it changed shows in the fill (an
  // add that set a new bit keeps its unit, S8), which
  // ShardedFilterAccess::Mutations counts for Bloom filters. That is one
  // locked instruction fewer per add: at DRAM sizes each one waits for the
  // table's miss or holds up the next add's (docs/performance.md, "The
  // filters, one at a time and batched").
  std::atomic<uint64_t> last_seq{0};
  // The fill below which the fast paths add to link 0 of a one-link chain
  // (Q1), written before the release store of `table` or `link` that
  // publishes that chain: a Bloom split-block link's capacity less
  // kBloomReserveSlack (engine/internal/shard_chain.h; 0 when the capacity
  // is smaller), ShardFastAdd; a counting or cuckoo link's capacity,
  // ShardFastOrderedAdd.
  uint64_t fast_add_limit = 0;
  // S9: adds of link 0 not yet in fill[0]: unflushed[k].n counts the adds
  // the owner of thread stripe k (filters/detail/thread_stripe.h) made
  // through ShardFastAdd's stripe path since it last added them to fill[0]
  // (every kFillFlush). Written by that owner only, under `mu` shared; read
  // by anyone (relaxed: the lock orders what must be exact). A line per
  // stripe: on one line, two threads adding to one shard would pass it
  // between their cores on every add. Allocated (kOwnedStripes lines, 1 KiB)
  // with the fast path of a one-link split-block Bloom shard whose limit is
  // above 0, before the shard is shared (Q1), and constant afterwards; null
  // for every other shard (the stripe path never runs there), so that many
  // small filters do not pay a KiB a shard.
  struct alignas(64) UnflushedLine {
    std::atomic<uint32_t> n{0};
  };
  std::unique_ptr<UnflushedLine[]> unflushed;
  // fill[0], link 0's fill (S7). The later links' are in the shard's link
  // tail (Shard::fill, engine/internal/shard.h), allocated when it grows.
  std::atomic<uint64_t> link0_fill{0};

  // Adds of link 0 not yet in fill[0] (S9).
  uint64_t UnflushedAdds() const {
    uint64_t n = 0;
    if (unflushed != nullptr) {
      for (uint32_t k = 0; k < kOwnedStripes; ++k) {
        n += unflushed[k].n.load(std::memory_order_relaxed);
      }
    }
    return n;
  }
  // The adds link 0 holds (S7, S8, S9): fill[0] and the adds not yet
  // flushed into it. Exact under `mu` exclusive; otherwise a figure.
  uint64_t Link0Fill() const {
    return link0_fill.load(std::memory_order_relaxed) + UnflushedAdds();
  }

  // Takes the next sequence of a counting or cuckoo shard: last_seq + 1.
  // Every taker of an ordered shard's sequence holds its order_mu (S3),
  // so a load and a store suffice, no locked RMW (Bloom adds, which race
  // without it, keep fetch_add). At 5e7 items one locked instruction less
  // per add gives the counting handle add about a quarter more adds/s
  // (sharded_bench BM_OneAdd, 1 shard, medians of 5 interleaved).
  // REQUIRES: order_mu held.
  uint64_t TakeOrderedSeq() {
    const uint64_t seq = last_seq.load(std::memory_order_relaxed) + 1;
    last_seq.store(seq, std::memory_order_relaxed);
    return seq;
  }
};
static_assert(sizeof(ShardMutex) + sizeof(ShortMutex) + 4 + 8 + 8 + 8 + 8 <= 64,
              "the lock, sequence, dirty flag, add limit, unflushed lines "
              "and link 0's fill share the shard's first line");
static_assert(sizeof(ShardHead) == 64, "the head is one line");

// A line each (the inline paths index the array with one shift).
struct alignas(64) ShardFastPath {
  // Mutable: a single-key Bloom add sets its bits through it too
  // (ShardFastAdd).
  std::atomic<std::atomic<uint64_t>*> table{nullptr};  // Q1
  // A one-link shard's link 0, whatever its type (Q1): queries ask it
  // through the filter's one-link query without the slow path's call; a
  // counting or cuckoo add adds to it (ShardFastOrderedAdd).
  std::atomic<const Filter*> link{nullptr};
  // Written before `table`'s or `counters`' release store.
  uint64_t blocks = 0;
  // The shard's first line. Set before the filter is shared, constant.
  ShardHead* head = nullptr;
  // Q1 for a counting shard: link 0's counters while it is the shard's one
  // link, of k <= 8, where CountingBloomFilter::kTableQuery (set and
  // cleared with `link`). The handle's query runs the filter's kernel on
  // them (CountingBloomFilter::MayContainInTable) from this entry alone:
  // through `link` it would load the link, its type, k, table and block
  // count first, ten instructions more a query, and at 5e7 items
  // one-at-a-time queries overlap fewer misses the more instructions each
  // takes (docs/performance.md, "The filters, one at a time and batched").
  std::atomic<const std::atomic<uint64_t>*> counters{nullptr};
  // Link 0's lane multipliers and k, written before `counters`' release
  // store.
  const uint32_t* mult = nullptr;
  uint32_t k = 0;
};

// Entries whose pointers are all null, never written: the inline paths'
// entries for a filter routed by Remix (ShardedFilter::InlineFastPath),
// which send every call to the slow path. One per possible shard
// (kMaxShards in engine/sharded_filter.h, which checks the count).
inline constexpr uint32_t kNoFastPathCount = 256;
extern const ShardFastPath kNoFastPaths[kNoFastPathCount];

// The add of the common Bloom shard: one split-block link (Q1: the table
// non-null) with more than kBloomReserveSlack of its capacity left in
// fill[0]. There ChainAdd (engine/internal/shard_chain.h) would ask no
// link before reserving (S8), and this does what it does, without its
// call, loop and virtual calls (a quarter of the handle add's instructions,
// callgrind; at DRAM sizes a loop of adds runs as fast as the CPU
// overlaps consecutive adds' misses, and each instruction per add shrinks
// that overlap): the bits set, and a new key's add counted (S7, S8; an
// add that set no new bit is kAlreadyPresent, *added false, and counts
// nothing). A thread with a stripe of its own counts it in its unflushed
// count (S9: a plain load and store on its own line, no locked
// instruction); any other thread reserves a unit of fill[0] by CAS first
// and gives it back when no bit was new. Link 0 is the newest link then: a
// growth needs its fill at the capacity, and only kBloomReserveSlack adds
// in flight (less the unflushed adds S9 allows: 3072) could have given
// back enough units to bring it below the slack again (ChainAdd relies on
// the same bound). True when done; false,
// with nothing changed, when any condition fails (another layout or type,
// more links, near the capacity, a CAS lost to another add): ChainAdd
// decides then, counting the unflushed adds too.
//
// Why S9's stripe count rather than a unit CAS per add (sharded_bench,
// native, medians of 7 alternating runs): BM_OneAdd, one thread, 2^22
// items, 1.10x the adds/s with 1 or 16 shards; 5e7: within the noise
// (each add waits on DRAM). BM_ConcurrentAdd, two threads into one handle
// at 5e7: 3.6x with 1 shard (1.04x with the stripes' counts on one shared
// line: hence a line each), 1.8x with 16 shards. Callgrind: 13 plain
// instructions more per add (the stripe's TLS and the count) for the
// locked CAS less.
// REQUIRES: as ChainAdd's (`mu` held shared, S2), for a Bloom filter (Q1
// keeps `table` null for the other types, so asking is harmless: false).
[[gnu::always_inline]] inline bool ShardFastAdd(const ShardFastPath& fast,
                                                uint64_t hash, bool* added) {
  // Acquire: pairs with Q1's release, after which `blocks` and the limit
  // are visible.
  std::atomic<uint64_t>* const table =
      fast.table.load(std::memory_order_acquire);
  if (table == nullptr) return false;
  ShardHead& h = *fast.head;
  // Below the limit, kBloomReserveSlack under the capacity: more than the
  // stripes' unflushed adds can be (fewer than kFillFlush each, one more in
  // flight; shard_chain.h checks), so link 0 holds fewer than its capacity
  // (S9).
  uint64_t f = h.link0_fill.load(std::memory_order_relaxed);
  if (f >= h.fast_add_limit) [[unlikely]] {
    return false;
  }
  std::atomic<uint64_t>* const block =
      table + SplitBlockOffset(hash, fast.blocks) / sizeof(uint64_t);
  if (const uint32_t k = ThisThreadStripe(); k < kOwnedStripes) [[likely]] {
    *added = SplitAdd(block, static_cast<uint32_t>(hash));
    if (*added) {
      // S9: its owner's; non-null below a limit above 0.
      std::atomic<uint32_t>& u = h.unflushed[k].n;
      const uint32_t n = u.load(std::memory_order_relaxed) + 1u;
      if (n == kFillFlush) [[unlikely]] {
        // fill[0] first: a reader between the two counts these adds twice
        // (too full, never too empty).
        h.link0_fill.fetch_add(n, std::memory_order_relaxed);
        u.store(0, std::memory_order_relaxed);
      } else {
        u.store(n, std::memory_order_relaxed);
      }
    }
    return true;
  }
  if (!h.link0_fill.compare_exchange_strong(f, f + 1,
                                            std::memory_order_relaxed)) {
    return false;
  }
  *added = SplitAdd(block, static_cast<uint32_t>(hash));
  if (!*added) {
    // S8: our own unit (fill >= 1), so no CAS loop is needed to stay >= 0.
    h.link0_fill.fetch_sub(1, std::memory_order_relaxed);
  }
  return true;
}

// The most copies of one key a chain keeps (DESIGN.md invariant 8: copies
// are bounded and never grow a filter), by the newest link's type. Cuckoo:
// 2b - 1 for buckets of b slots, so a key's own copies never fill its
// bucket pair and starve the displacement search (with 8 copies of a key
// in an 8-slot pair every later copy would report Full and append a link
// twice as large: 81 copies would ask for 51 GB). Counting:
// kMaxCountingCopies.
inline uint32_t MaxOwnCopies(const CountingBloomFilter&) {
  return kMaxCountingCopies;
}
inline uint32_t MaxOwnCopies(const CuckooFilter& link) {
  return 2 * link.bucket_size() - 1;
}
static_assert(kMaxCountingCopies == kCounterMax,
              "a counting link's copy bound is where its counters saturate "
              "(SoleWriterAdd)");

// The link's add of one more copy of the key, capped at MaxOwnCopies, as its
// only writer (REQUIRES: the shard's order_mu held, S3): true when added;
// false, with nothing changed, at the cap. A counting link's cap is its
// counters' own saturation, so its add refuses when no counter could grow
// (AddHashUnlessSaturatedSoleWriter), without the capped add's count first
// (a tenth of the counting handle add's instructions, callgrind); at 5e7
// items one-at-a-time adds overlap more misses the fewer each takes.
inline bool SoleWriterAdd(CountingBloomFilter& link, uint64_t hash,
                          std::atomic<uint64_t>* block) {
  return link.AddToBlockUnlessSaturatedSoleWriter(block, hash);
}
inline bool SoleWriterAdd(CuckooFilter& link, uint64_t hash, std::nullptr_t) {
  uint32_t held = 0;
  return link.AddHashCappedSoleWriter(hash, MaxOwnCopies(link), &held);
}

// What the ordered one-link add computes before its lock, from the link it
// loaded then: it prefetches what the add writes (the table's misses start
// before the lock's CAS) and returns what the add needs of it, a counting
// link's block (so the add under the lock does not load the link's fields
// and compute it again), nothing for a cuckoo link. Valid for as long as
// the shard's link 0 is that link (links are never replaced: S1).
inline std::atomic<uint64_t>* PrepareOrderedAdd(const CountingBloomFilter& link,
                                                uint64_t hash) {
  std::atomic<uint64_t>* const block = link.BlockFor(hash);
  PrefetchWrite(block);
  return block;
}
inline std::nullptr_t PrepareOrderedAdd(const CuckooFilter& link,
                                        uint64_t hash) {
  link.PrefetchAdd(hash);
  return nullptr;
}

// ChainAdd for the common shard of an ordered type (LinkFilter: counting
// or cuckoo): one link with room. There ChainAdd counts no older link and
// makes the link's capped add with the whole MaxOwnCopies (invariant 8);
// this makes the same add without its call, loop and virtual calls, through
// the link's inline capped add (callgrind: a fifth of the counting handle
// add's instructions, two fifths of the cuckoo one's).
// The shard's order_mu (S3, REQUIRED) makes this the link's only writer, so
// the link's add takes no stripe lock of its own (SoleWriterAdd:
// a locked CAS and a store fewer), and holds the chain and its fill still:
// growth appends under order_mu for ordered types (S4, S6), and every
// writer of an ordered shard's fill (ChainAdd, ChainRemove, growth) holds
// it, or runs before the shard is shared; so the unit (S7) is taken by a
// load and a store after the add, not by Reserve's CAS before it, and the
// link still never holds more adds than its capacity. True when done;
// false, with nothing changed, when a condition fails (more links, the
// link full, the key already at MaxOwnCopies, a cuckoo pair with no free
// slot or a layout without the inline add): ChainAdd decides and reports
// then. REQUIRES: a shard of a LinkFilter filter (the spec's type),
// order_mu held (with or without `mu` shared: S2, ExclusiveShardLock
// takes order_mu too). Always inline: g++ -O3 -march=native (an AVX-512
// build, whose capped counting add is longer) would make it a call, and
// the call's spills and vzeroupper cost the counting handle's add a fifth
// more time at 5e7 (side-by-side harness); portable builds (-O2, -O3)
// inline it anyway.
template <typename LinkFilter, typename Prepared>
[[gnu::always_inline]] inline bool ShardFastOrderedAdd(
    const ShardFastPath& fast, uint64_t hash, const LinkFilter& prepared_link,
    Prepared prepared) {
  // Acquire: pairs with Q1's release, after which the limit is visible.
  // Still the link the add was prepared for: then link 0 of a one-link
  // chain (Q1), the same object (S1), so `prepared` holds.
  if (fast.link.load(std::memory_order_acquire) != &prepared_link) {
    return false;
  }
  ShardHead& h = *fast.head;
  const uint64_t f = h.link0_fill.load(std::memory_order_relaxed);
  if (f >= h.fast_add_limit) return false;
  // The type is fixed by the spec (DecodeLinkFilter checks it); links are
  // mutable filters, published const for the queries.
  auto& filter = const_cast<LinkFilter&>(prepared_link);
  // Without the link's stripe lock: order_mu serializes its writers (S3).
  if (!SoleWriterAdd(filter, hash, prepared)) return false;
  h.link0_fill.store(f + 1, std::memory_order_relaxed);
  return true;
}

// The same for a caller that prepared nothing (ChainAddOrdered, under the
// locks already): prepares from the link it loads now.
template <typename LinkFilter>
[[gnu::always_inline]] inline bool ShardFastOrderedAdd(
    const ShardFastPath& fast, uint64_t hash) {
  const Filter* const link = fast.link.load(std::memory_order_acquire);
  if (link == nullptr) return false;
  const auto& l = static_cast<const LinkFilter&>(*link);
  return ShardFastOrderedAdd(fast, hash, l, PrepareOrderedAdd(l, hash));
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_DETAIL_SHARD_FAST_PATH_H_
