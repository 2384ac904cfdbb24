// The fast path of a ShardedFilter's shard: what an inline MayContain
// (engine/sharded_filter.h) needs to probe a shard without reaching into
// Shard (engine/internal/shard.h), which the public header cannot see, and
// what the single-key add's inline path reads. One entry per shard, in an
// array of its own.
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

namespace shardfilter {
class Filter;
}  // namespace shardfilter

namespace shardfilter::internal {

struct ShardFastPath {
  // Mutable: a single-key Bloom add sets its bits through it too
  // (engine/internal/shard_chain.h, ChainAddOneSplitLink).
  std::atomic<std::atomic<uint64_t>*> table{nullptr};  // Q1
  // A one-link shard's link 0, whatever its type (Q1): queries ask it
  // through the filter's one-link query without the slow path's call.
  std::atomic<const Filter*> link{nullptr};
  uint64_t blocks = 0;  // written before `table`'s release store
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_DETAIL_SHARD_FAST_PATH_H_
