// ShardedFilter::UnionWith (sharded_filter.h): the shape checks, then the
// OR of every link under its shard's lock.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/bloom_filter.h"

namespace shardfilter {
namespace {

const BloomFilter& BloomLink(const internal::Shard& s, uint32_t i) {
  return static_cast<const BloomFilter&>(*s.link(i));  // spec type: Bloom
}

bool SameShape(const BloomFilter& a, const BloomFilter& b) {
  return a.layout() == b.layout() && a.k() == b.k() &&
         a.num_bits() == b.num_bits() && a.seed() == b.seed();
}

// fill = max(fill, min(target, capacity)) (S7: never above capacity).
void RaiseFill(std::atomic<uint64_t>& fill, uint64_t target,
               uint64_t capacity) {
  const uint64_t want = std::min(target, capacity);
  uint64_t old = fill.load(std::memory_order_relaxed);
  while (old < want &&
         !fill.compare_exchange_weak(old, want, std::memory_order_relaxed)) {
  }
}

// The distinct keys link `f` holds, as its set bits imply (FilterStats::
// estimated_cardinality: Swamidass and Baldi's estimate, per block for the
// blocked layouts), plus 1%, rounded: an estimate, and fill must not run
// low (S7). Fill is also what BF.CARD reports (ChainStatistics), so small
// sets are not rounded up (4 keys: 4, not 5).
uint64_t KeysImplied(const BloomFilter& f) {
  return static_cast<uint64_t>(
      std::llround(f.Stats().estimated_cardinality * 1.01));
}

constexpr const char* kMigrating =
    "the destination is being migrated (SF.MIGRATE): union into it once the "
    "migration is done";

}  // namespace

Status ShardedFilter::CheckUnion(const ShardedFilter& other_in) const {
  std::vector<uint32_t> links;
  return Live().CheckUnion(other_in.Live(), &links);
}

// The checks, on live filters; links[i]: the source's links of shard i,
// read once (a key acknowledged in it before the call is in one of them,
// S1; only those are ORed).
Status ShardedFilter::CheckUnion(const ShardedFilter& other,
                                 std::vector<uint32_t>* links) const {
  SF_RETURN_IF_ERROR(CheckWritable());
  if (uint8_t d = detached_.load(std::memory_order_relaxed)) {
    return d == internal::kDropped
               ? Status::NotFound("filter was dropped")
               : Status::NotSupported("the database was closed");
  }
  if (spec_.type != FilterType::kBloom ||
      other.spec_.type != FilterType::kBloom) {
    return Status::InvalidArgument("only Bloom filters can be unioned");
  }
  if (migration_.load(std::memory_order_relaxed) != nullptr) {
    return Status::NotSupported(kMigrating);
  }
  if (spec_.retain_hashes) {
    return Status::NotSupported(
        "the destination retains hashes: a migration rebuilds from them and "
        "would lose the union's keys");
  }
  links->assign(shard_count_, 0);
  if (&other == this) return Status::OK();
  if (shard_count_ != other.shard_count_ || spec_.seed != other.spec_.seed ||
      (shard_count_ > 1 && spec_.router != other.spec_.router)) {
    auto router = [](const FilterSpec& s) {
      return std::string(s.router == ShardRouter::kRemix ? "the remix"
                                                         : "the multiply");
    };
    return Status::InvalidArgument(
        "the filters differ in shape: " + std::to_string(shard_count_) +
        " shards, seed " + std::to_string(spec_.seed) + " and " +
        router(spec_) + " shard router here, " +
        std::to_string(other.shard_count_) + ", " +
        std::to_string(other.spec_.seed) + " and " + router(other.spec_) +
        " in the source");
  }
  for (uint32_t i = 0; i < shard_count_; ++i) {
    const internal::Shard& mine = shards_[i];
    const internal::Shard& theirs = other.shards_[i];
    (*links)[i] = theirs.links_visible();
    const uint32_t have = mine.links_visible();
    if ((*links)[i] > have) {
      return Status::InvalidArgument(
          "the source has grown further than the destination (shard " +
          std::to_string(i) + ": " + std::to_string((*links)[i]) + " links, " +
          std::to_string(have) +
          " here): union into the larger filter, or use NONSCALING filters");
    }
    for (uint32_t j = 0; j < (*links)[i]; ++j) {
      if (!SameShape(BloomLink(mine, j), BloomLink(theirs, j))) {
        return Status::InvalidArgument(
            "the filters differ in shape (shard " + std::to_string(i) +
            ", link " + std::to_string(j) +
            "): they must be made with the same capacity, error rate and "
            "options");
      }
    }
  }
  return Status::OK();
}

Status ShardedFilter::UnionWith(const ShardedFilter& other_in) {
  if (ShardedFilter* f = Forward()) return f->UnionWith(other_in);
  const ShardedFilter& other = other_in.Live();
  // Every shape first, so that a mismatch changes nothing.
  std::vector<uint32_t> links;
  SF_RETURN_IF_ERROR(CheckUnion(other, &links));
  if (&other == this) return Status::OK();
  for (uint32_t i = 0; i < shard_count_; ++i) {
    if (links[i] == 0) continue;
    internal::Shard& s = shards_[i];
    const internal::Shard& theirs = other.shards_[i];
    auto lock = internal::LockShared(s);  // S2, as an add
    if (uint8_t d = detached_.load(std::memory_order_relaxed)) {
      return d == internal::kDropped
                 ? Status::NotFound("filter was dropped")
                 : Status::NotSupported("the database was closed");
    }
    // A migration records the ops it must replay into its target (M2); a
    // union is none, so its bits would be missing there. One that started
    // since the check (every shard lock exclusive, so not while this one is
    // held) copies the shards ORed so far: stop here.
    if (migration_.load(std::memory_order_relaxed) != nullptr) {
      return Status::NotSupported(kMigrating);
    }
    for (uint32_t j = 0; j < links[i]; ++j) {
      auto& link = static_cast<BloomFilter&>(*s.link(j));
      // Cannot fail: the shapes were checked and links never change (S1).
      (void)link.UnionWith(BloomLink(theirs, j));
      // S9: link 0 also holds its stripes' unflushed adds (read as the
      // adds running beside this one leave them: a figure, as KeysImplied
      // is).
      const uint64_t implied = KeysImplied(link);
      const uint64_t unflushed =
          j == 0 ? std::min(s.UnflushedAdds(), link.capacity()) : 0;
      RaiseFill(s.fill(j), implied - std::min(implied, unflushed),
                link.capacity() - unflushed);
    }
    s.dirty.store(true, std::memory_order_relaxed);
  }
  return Status::OK();
}

}  // namespace shardfilter
