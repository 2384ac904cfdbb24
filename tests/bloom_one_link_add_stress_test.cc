// The single-key Bloom add's inline path (engine/detail/shard_fast_path.h,
// ShardFastAdd): a shard of one split-block link with more than
// kBloomReserveSlack of its capacity left is added to without ChainAdd,
// which takes over near the capacity. Capacities here are large enough
// that both run. Checked: a link never holds more adds than its capacity
// (S7), a key found present uses none (S8), and no acknowledged key is
// ever reported absent, with writers racing on shared and distinct keys
// and a reader asking all along. Scaled down under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/detail/thread_stripe.h"
#include "test_util.h"

namespace shardfilter {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kCapacity = 12'000;
#else
constexpr uint64_t kCapacity = 60'000;
#endif
constexpr int kWriters = 3;

uint64_t KeyHash(uint64_t i) { return testing::KeyHashOf(i); }

std::unique_ptr<ShardedFilter> MakeFilter(bool scalable) {
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.layout = BloomLayout::kSplitBlock;
  spec.capacity = kCapacity;
  spec.shards = 1;
  spec.scalable = scalable;
  auto f = ShardedFilter::Create(spec);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

// One writer: every add is counted exactly, on both sides of the slack.
TEST(BloomOneLinkAddTest, FillsExactlyToCapacityThenFull) {
  auto f = MakeFilter(/*scalable=*/false);
  ASSERT_NE(f, nullptr);
  const uint64_t capacity = f->Stats().total.capacity;
  ASSERT_GT(capacity, 2u * 4096) << "the inline path would never run";
  uint64_t added = 0, present = 0, i = 0;
  for (;; ++i) {
    auto r = f->InsertHash(KeyHash(i));
    if (!r.ok()) {
      ASSERT_TRUE(r.status().IsFull()) << r.status().ToString();
      break;
    }
    (*r == AddOutcome::kAdded ? added : present) += 1;
    // A repeat of the key just added is present and uses nothing.
    auto again = f->InsertHash(KeyHash(i));
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    ASSERT_EQ(*again, AddOutcome::kAlreadyPresent) << "key " << i;
  }
  EXPECT_EQ(added, capacity);
  EXPECT_EQ(f->Stats().total.items, capacity);
  EXPECT_EQ(f->shard_links(0), 1u);
  for (uint64_t j = 0; j < i; ++j) {
    ASSERT_TRUE(f->MayContainHash(KeyHash(j))) << "false negative, key " << j;
  }
}

// Writers race on overlapping keys into a non-scaling filter until it is
// full, a reader checks acknowledged keys meanwhile: the count of kAdded
// answers never passes the capacity by more than S7 allows (what a lost or
// doubled reservation, or unflushed adds left out, would break), Stats agrees
// with it, and nothing is lost.
TEST(BloomOneLinkAddTest, RacingWritersNeverPassTheCapacity) {
  auto f = MakeFilter(/*scalable=*/false);
  ASSERT_NE(f, nullptr);
  const uint64_t capacity = f->Stats().total.capacity;
  std::atomic<uint64_t> added{0}, failures{0}, misses{0};
  std::atomic<uint64_t> acked[kWriters] = {};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      // Writer w adds keys w, w + 1, w + 2, ...: each key is raced by up
      // to three writers.
      for (uint64_t i = static_cast<uint64_t>(w);; ++i) {
        auto r = f->InsertHash(KeyHash(i));
        if (!r.ok()) {
          if (!r.status().IsFull()) failures.fetch_add(1);
          break;
        }
        if (*r == AddOutcome::kAdded) added.fetch_add(1);
        // Release: the reader that acquires i sees key i's add done.
        acked[w].store(i + 1, std::memory_order_release);
      }
    });
  }
  threads.emplace_back([&] {
    uint64_t probe = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      for (int w = 0; w < kWriters; ++w) {
        const uint64_t n = acked[w].load(std::memory_order_acquire);
        if (n <= static_cast<uint64_t>(w)) continue;
        const uint64_t k = w + (probe * 7919) % (n - w);
        if (!f->MayContainHash(KeyHash(k))) misses.fetch_add(1);
      }
      ++probe;
    }
  });
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  stop.store(true);
  threads.back().join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(misses.load(), 0u);
  // S7: an add delayed past the far-from-full check may land on a full
  // link, at most one per owned thread stripe (S9).
  EXPECT_LE(added.load(), capacity + internal::kOwnedStripes);
  EXPECT_EQ(f->Stats().total.items, added.load());
  EXPECT_EQ(f->shard_links(0), 1u);
  for (int w = 0; w < kWriters; ++w) {
    for (uint64_t i = w; i < acked[w].load(); ++i) {
      ASSERT_TRUE(f->MayContainHash(KeyHash(i))) << "key " << i;
    }
  }
}

// S8 near the capacity: threads re-adding keys the filter holds take and
// give back units of the fill on the inline path while it is far from the
// capacity; within kBloomReserveSlack of it they must reserve nothing
// (ChainAdd asks the link first), or a new key's add could find the fill
// at the capacity only because of their passing reservations: Full from a
// non-scaling filter with room, a needless link from a scalable one. The
// last new keys are added while the repeats run, each to a fresh filter
// one key short of full; both fail without the inline path's slack.
TEST(BloomOneLinkAddTest, RepeatedKeysNeverMakeTheLastNewKeySeeAFullLink) {
#if defined(__SANITIZE_THREAD__)
  constexpr int kRounds = 10;
#else
  constexpr int kRounds = 60;
#endif
  constexpr int kRepeaters = 2;
  for (bool scalable : {false, true}) {
    uint64_t spurious = 0;
    for (int round = 0; round < kRounds; ++round) {
      auto f = MakeFilter(scalable);
      ASSERT_NE(f, nullptr);
      const uint64_t capacity = f->shard_filter(0).capacity();
      // capacity - 1 keys added (a new key whose bits were all set already
      // is kAlreadyPresent and uses nothing: S8); the repeaters re-add the
      // first 64 of them.
      uint64_t next = 0;
      for (uint64_t added = 0; added + 1 < capacity; ++next) {
        auto r = f->InsertHash(KeyHash(next));
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        added += *r == AddOutcome::kAdded;
      }
      uint64_t last_key = next;
      while (f->MayContainHash(KeyHash(last_key))) ++last_key;
      std::atomic<bool> stop{false};
      std::atomic<int> running{0};
      std::vector<std::thread> repeaters;
      for (int t = 0; t < kRepeaters; ++t) {
        repeaters.emplace_back([&, t] {
          running.fetch_add(1);
          for (uint64_t i = t; !stop.load(std::memory_order_relaxed);
               i = (i + kRepeaters) % 64) {
            (void)f->InsertHash(KeyHash(i));  // present: kAlreadyPresent
          }
        });
      }
      while (running.load() < kRepeaters) std::this_thread::yield();
      // The last key with room, once the repeaters are well into their
      // loops.
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      auto last = f->InsertHash(KeyHash(last_key));
      stop.store(true);
      for (std::thread& t : repeaters) t.join();
      ASSERT_TRUE(last.ok() || last.status().IsFull())
          << last.status().ToString();
      if (!last.ok() || f->shard_links(0) != 1) {
        ++spurious;
      } else {
        ASSERT_EQ(*last, AddOutcome::kAdded);
        ASSERT_EQ(f->Stats().total.items, capacity);
      }
    }
    EXPECT_EQ(spurious, 0u) << (scalable ? "scalable" : "non-scaling")
                            << ": the last key saw a full link in " << spurious
                            << " of " << kRounds << " rounds";
  }
}

// A scalable filter: writers racing past link 0's capacity grow the chain
// once (the inline path hands over to ChainAdd near the capacity and never
// adds to a link that is not the newest), and no key is lost.
TEST(BloomOneLinkAddTest, RacingWritersGrowTheChainOnce) {
  auto f = MakeFilter(/*scalable=*/true);
  ASSERT_NE(f, nullptr);
  const uint64_t link0 = f->Stats().total.capacity;
  const uint64_t keys = link0 + link0 / 2;  // into link 1, not past it
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (uint64_t i = w; i < keys; i += kWriters) {
        if (!f->AddHash(KeyHash(i)).ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(f->shard_links(0), 2u);
  const ShardedStats st = f->Stats();
  EXPECT_LE(st.total.items, keys);
  for (uint64_t i = 0; i < keys; ++i) {
    ASSERT_TRUE(f->MayContainHash(KeyHash(i))) << "key " << i;
  }
}

}  // namespace
}  // namespace shardfilter
