// The fast path of a ShardedFilter's shard: what the inline MayContain and
// the inline Bloom add (engine/sharded_filter.h) need to reach a shard
// without Shard (engine/internal/shard.h), which the public header cannot
// see: one ShardFastPath entry per shard, in an array of its own, and the
// shard's first cache line (ShardHead: its lock, sequence, dirty flag and
// fills), which Shard derives from.
//
// Installed (engine/sharded_filter.h includes it), not API: names here may
// change in any release.
//
// Invariant (cited as Q1 in shard.h and the code):
//  Q1. `table` is non-null only while the shard has exactly one link, that
//      link is a split-block Bloom filter (filters/internal/split_block.h)
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
//      layout (link 0 itself): set with `table`, cleared with it.
//
// Thread-safe: written by the shard's owner under the rules above; read by
// any thread.
#ifndef SHARDFILTER_ENGINE_DETAIL_SHARD_FAST_PATH_H_
#define SHARDFILTER_ENGINE_DETAIL_SHARD_FAST_PATH_H_

#include <atomic>
#include <cstdint>

#include "shardfilter/engine/detail/shard_mutex.h"
#include "shardfilter/filters/internal/split_block.h"

namespace shardfilter {
class Filter;
}  // namespace shardfilter

namespace shardfilter::internal {

// Most links a shard's chain may have; an add that would need one more
// reports Full. With expansion 2 the last link holds 2^31 x the first.
inline constexpr uint32_t kMaxLinks = 32;

// A shard's first cache line: what every mutation writes (the lock word,
// the order lock, the sequence, the dirty flag and the first links' fill),
// shared by the fields so that an add writes one line of the shard's. Two
// threads adding to one filter spread over all its shards, so a shard's
// written lines were last written by the other core about half the time,
// and each such line is a transfer between cores (three lines per add
// before). The invariants these fields keep (S2, S3, S7, S8) are Shard's
// (engine/internal/shard.h), which derives from this.
struct alignas(64) ShardHead {
  ShardMutex mu;        // S2, S4, S5
  ShortMutex order_mu;  // S3 (shard_mutex.h)
  // Set by every successful mutation under `mu` shared, cleared by a
  // checkpoint under `mu` exclusive (restored if the checkpoint fails).
  // Relaxed: `mu` orders the two; a checkpoint that reads it without the
  // lock and sees a stale false only postpones that shard to the next one.
  std::atomic<bool> dirty{false};
  // Last journal sequence assigned (0 = none). Incremented under `mu`
  // shared (and `order_mu` for ordered types), read under `mu` exclusive by
  // checkpoints: the lock gives the ordering, so relaxed RMWs suffice.
  std::atomic<uint64_t> last_seq{0};
  // Q1: while the fast path's `table` is set, link 0's capacity less
  // kBloomReserveSlack (engine/internal/shard_chain.h; 0 when the capacity
  // is smaller): ShardFastAdd reserves only below it. Written with
  // `blocks`, before `table`'s release store.
  uint64_t fast_add_limit = 0;
  std::atomic<uint64_t> fill[kMaxLinks];  // S7 (zero: C++20)
};
static_assert(sizeof(ShardMutex) + sizeof(ShortMutex) + 4 + 8 + 8 + 8 <= 64,
              "the lock, sequence, dirty flag, add limit and link 0's fill "
              "share the shard's first line");

struct ShardFastPath {
  // Mutable: a single-key Bloom add sets its bits through it too
  // (ShardFastAdd).
  std::atomic<std::atomic<uint64_t>*> table{nullptr};  // Q1
  // A one-link shard's link 0, whatever its type (Q1): queries ask it
  // through the filter's one-link query without the slow path's call.
  std::atomic<const Filter*> link{nullptr};
  uint64_t blocks = 0;  // written before `table`'s release store
  // The shard's first line. Set before the filter is shared, constant.
  ShardHead* head = nullptr;
};

// The add of the common Bloom shard: one split-block link (Q1: the table
// non-null) with more than kBloomReserveSlack of its capacity left. There
// ChainAdd (engine/internal/shard_chain.h) would ask no link before
// reserving (S8), and this does what it does, without its call, loop and
// virtual calls (callgrind, handle_add_bloom_16: 247 -> 184 instructions;
// at DRAM sizes a loop of adds runs as fast as the CPU overlaps
// consecutive adds' misses, and each instruction per add shrinks that
// overlap): a unit of link 0's fill reserved by CAS below the limit (S7),
// the bits set, and the unit given back when no bit was new (*added false:
// kAlreadyPresent, S8). Link 0 is the newest link then: a growth needs its
// fill at the capacity, and only kBloomReserveSlack adds in flight could
// have given back enough units to bring it below the slack again (ChainAdd
// relies on the same bound). True when done; false, with nothing changed,
// when any condition fails (another layout or type, more links, near the
// capacity, a CAS lost to another add): ChainAdd decides then.
// REQUIRES: as ChainAdd's (`mu` held shared, S2), for a Bloom filter (Q1
// keeps `table` null for the other types, so asking is harmless: false).
inline bool ShardFastAdd(const ShardFastPath& fast, uint64_t hash,
                         bool* added) {
  // Acquire: pairs with Q1's release, after which `blocks` and the limit
  // are visible.
  std::atomic<uint64_t>* const table =
      fast.table.load(std::memory_order_acquire);
  if (table == nullptr) return false;
  ShardHead& h = *fast.head;
  uint64_t f = h.fill[0].load(std::memory_order_relaxed);
  if (f >= h.fast_add_limit) return false;
  if (!h.fill[0].compare_exchange_strong(f, f + 1, std::memory_order_relaxed)) {
    return false;
  }
  *added =
      SplitAdd(table + SplitBlockOffset(hash, fast.blocks) / sizeof(uint64_t),
               static_cast<uint32_t>(hash));
  if (!*added) {
    // S8: our own unit (fill >= 1), so no CAS loop is needed to stay >= 0.
    h.fill[0].fetch_sub(1, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_DETAIL_SHARD_FAST_PATH_H_
