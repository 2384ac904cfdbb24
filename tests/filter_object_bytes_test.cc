// What a filter owns besides its table (docs/design.md, "Small filters:
// what one costs"): the heap bytes its objects hold, counted by this
// binary's own operator new (tables come from AllocateFilterTable, not
// operator new, so they are not in these figures). Millions of small
// filters make every fixed byte per filter count; the hot-path machinery
// sized for large filters (per-thread stripes, per-link arrays) must not
// be paid by a 500-item one.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"

namespace {

// The live bytes of the allocations made and not freed by this thread
// while counting (malloc_usable_size on both sides, so a free balances
// its allocation exactly).
thread_local bool t_counting = false;
thread_local int64_t t_live = 0;

void* Allocate(size_t n, size_t align) {
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(n == 0 ? 1 : n)
                : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p != nullptr && t_counting) {
    t_live += static_cast<int64_t>(malloc_usable_size(p));
  }
  return p;
}
void* AllocateOrThrow(size_t n, size_t align) {
  void* p = Allocate(n, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void Free(void* p) {
  if (p != nullptr && t_counting) {
    t_live -= static_cast<int64_t>(malloc_usable_size(p));
  }
  std::free(p);
}

}  // namespace

void* operator new(size_t n) { return AllocateOrThrow(n, 0); }
void* operator new[](size_t n) { return AllocateOrThrow(n, 0); }
void* operator new(size_t n, std::align_val_t a) {
  return AllocateOrThrow(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a) {
  return AllocateOrThrow(n, static_cast<size_t>(a));
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return Allocate(n, 0);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return Allocate(n, 0);
}
void* operator new(size_t n, std::align_val_t a,
                   const std::nothrow_t&) noexcept {
  return Allocate(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a,
                     const std::nothrow_t&) noexcept {
  return Allocate(n, static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, size_t) noexcept { Free(p); }
void operator delete[](void* p, size_t) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { Free(p); }

namespace shardfilter {
namespace {

// The live bytes `make` leaves allocated (what the object it returns
// holds), with that object. A first call, not counted, fills what the
// process keeps once for all filters (sizing memo and rate-model tables).
template <typename Make>
auto LiveBytesOf(Make&& make, int64_t* live) {
  (void)make();
  t_live = 0;
  t_counting = true;
  auto made = make();
  t_counting = false;
  *live = t_live;
  return made;
}

BloomOptions Small(BloomLayout layout) {
  BloomOptions o;
  o.capacity = 500;  // BF.RESERVE k 0.01 500
  o.fpp = 0.01;
  o.layout = layout;
  return o;
}

// A small link counts its items in one word: its object is a few
// cache lines, not the 17 x 64 B of per-thread stripes.
TEST(FilterObjectBytesTest, SmallBloomFilterHoldsNoStripes) {
  for (BloomLayout layout : {BloomLayout::kSplitBlock, BloomLayout::kBlocked,
                             BloomLayout::kClassic}) {
    int64_t live = 0;
    auto f =
        LiveBytesOf([&] { return BloomFilter::Create(Small(layout)); }, &live);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_LE(live, 256) << "layout " << static_cast<int>(layout);
  }
}

// A large one keeps its per-thread stripes (concurrent adds to one
// counter word would pass its line between cores on every new key).
TEST(FilterObjectBytesTest, LargeBloomFilterKeepsItsStripes) {
  BloomOptions o = Small(BloomLayout::kSplitBlock);
  o.capacity = 1'000'000;
  int64_t live = 0;
  auto f = LiveBytesOf([&] { return BloomFilter::Create(o); }, &live);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_GE(live, int64_t{internal::kCounterStripes} * 64);
}

// A small cuckoo table takes few lock stripes: a stripe is a line and a
// move version (72 B), and one per 8-bucket group, 64 (4.6 KB), would be
// most of a CF.RESERVE k 500 key's bytes. A large table keeps the most
// (1,024).
TEST(FilterObjectBytesTest, SmallCuckooFilterHoldsFewStripes) {
  CuckooOptions o;
  o.capacity = 500;  // CF.RESERVE k 500
  o.bucket_size = 2;
  int64_t live = 0;
  auto f = LiveBytesOf([&] { return CuckooFilter::Create(o); }, &live);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_LE(live, 512);
  EXPECT_LE((*f)->CuckooStatistics().stripes, 2u);
  o.capacity = 1'000'000;
  auto large = CuckooFilter::Create(o);
  ASSERT_TRUE(large.ok()) << large.status().ToString();
  EXPECT_EQ((*large)->CuckooStatistics().stripes,
            internal::CuckooStripes::kMaxStripes);
}

// The same for a counting filter, whose stripes (a lock and two counts,
// one line each) would be as large as the table at one per 64-byte block.
TEST(FilterObjectBytesTest, SmallCountingFilterHoldsFewStripes) {
  CountingBloomOptions o;
  o.capacity = 500;
  o.fpp = 0.01;
  int64_t live = 0;
  auto f = LiveBytesOf([&] { return CountingBloomFilter::Create(o); }, &live);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_LE(live, 512);
  EXPECT_LE((*f)->num_stripes(), 4u);
  o.capacity = 1'000'000;
  auto large = CountingBloomFilter::Create(o);
  ASSERT_TRUE(large.ok()) << large.status().ToString();
  EXPECT_EQ((*large)->num_stripes(), 1024u);
}

// The Redis module's BF.RESERVE k 0.01 500 (tools/module's ToFilterSpec:
// one shard, scaling, expansion 2) or CF.RESERVE k 500 (buckets of 2).
FilterSpec ReserveSpec(FilterType type) {
  FilterSpec spec;
  spec.type = type;
  spec.capacity = 500;
  spec.fpp = 0.01;
  spec.expansion = 2;
  spec.max_bytes = uint64_t{1} << 30;
  spec.durability = Durability::kNone;
  if (type == FilterType::kCuckoo) spec.bucket_size = 2;
  return spec;
}

// A one-link shard holds link 0's slot, capacity and fill, not arrays for
// 32 links (engine/internal/shard.h, S10): the whole filter (handle,
// shard, fast path, link object, account) in about a KiB besides its
// table.
TEST(FilterObjectBytesTest, OneLinkShardHoldsNoArraysForLaterLinks) {
  int64_t live = 0;
  auto f = LiveBytesOf(
      [&] { return ShardedFilter::Create(ReserveSpec(FilterType::kBloom)); },
      &live);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_LE(live, 1024);
  // It still grows: the later links' block comes with link 1.
  for (int i = 0; i < 2'000; ++i) {
    ASSERT_TRUE((*f)->Add("key:" + std::to_string(i)).ok()) << i;
  }
  EXPECT_GT((*f)->shard_links(0), 1u);
  for (int i = 0; i < 2'000; ++i) {
    ASSERT_TRUE((*f)->MayContain("key:" + std::to_string(i))) << i;
  }
}

}  // namespace
}  // namespace shardfilter
