// The cuckoo filter's optimistic read protocol (filters/cuckoo_filter.h,
// invariants 4-6; filters/detail/cuckoo_stripes.h) in every table layout:
// readers query a stable key set without locks while writers keep the
// table near full, so that the stable keys' fingerprints are displaced
// over and over (copy, then clear, inside a move-version window). Every
// layout's own kernels run: single-word buckets, whole-byte buckets
// (the in-place slot writes and unaligned bucket loads, x86 outside TSan)
// and buckets wider than 64 bits. A negative answer for a stable key, from
// the single, batch or count query, fails.
//
// Under ThreadSanitizer (label "concurrency") the same protocol runs in its
// TSan form: no asm accesses, acquire table loads and release stores in a
// move instead of the fences TSan does not model (CuckooTable::kLoadOrder),
// so the race detector checks every table access and sees the seqlock's
// happens-before edges.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/detail/tsan.h"
#include "test_util.h"

namespace shardfilter {
namespace {

using testing::SplitMix64;

constexpr uint64_t kCapacity = internal::kTsan ? 6'000 : 40'000;
constexpr int kRounds = internal::kTsan ? 3 : 8;

uint64_t KeyOf(uint64_t stream, uint64_t i) {
  uint64_t s = (stream << 40) ^ i;
  return SplitMix64(&s);
}

struct Layout {
  uint32_t bucket_size;
  uint32_t fp_bits;
};

class CuckooSeqlockStressTest : public ::testing::TestWithParam<Layout> {};

TEST_P(CuckooSeqlockStressTest, ReadersNeverMissDisplacedKeys) {
  const Layout l = GetParam();
  CuckooOptions o;
  o.capacity = kCapacity;
  o.bucket_size = l.bucket_size;
  o.fingerprint_bits = l.fp_bits;
  o.fpp = 0.05;
  o.seed = 17;
  auto created = CuckooFilter::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  CuckooFilter& f = **created;
  const uint64_t stable = kCapacity * 60 / 100;
  for (uint64_t i = 0; i < stable; ++i) ASSERT_OK(f.AddHash(KeyOf(1, i)));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0}, reads{0}, churned{0};
  std::vector<std::thread> ts;
  constexpr int kWriters = 2, kReaders = 2;
  for (int w = 0; w < kWriters; ++w) {
    ts.emplace_back([&, w] {
      // Fill to the load limit (Full ends a fill), then drain half: the
      // fills displace stable fingerprints, the drains make room again.
      std::vector<uint64_t> mine;
      uint64_t next = 0;
      for (int round = 0; round < kRounds; ++round) {
        for (int fails = 0; fails < 8;) {
          const uint64_t h = KeyOf(10 + w, next++);
          if (f.AddHash(h).ok()) {
            mine.push_back(h);
          } else {
            ++fails;
          }
        }
        for (size_t i = mine.size() / 2; i < mine.size(); ++i) {
          if (!f.RemoveHash(mine[i]).ok()) misses.fetch_add(1);
        }
        churned.fetch_add(mine.size() - mine.size() / 2);
        mine.resize(mine.size() / 2);
      }
      for (uint64_t h : mine) {
        if (!f.MayContainHash(h)) misses.fetch_add(1);
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    ts.emplace_back([&, r] {
      uint64_t rng = 3 + r;
      std::vector<uint64_t> batch(16);
      std::vector<uint8_t> out(batch.size());
      while (!stop.load(std::memory_order_relaxed)) {
        for (uint64_t& h : batch) h = KeyOf(1, SplitMix64(&rng) % stable);
        f.MayContainHashes(batch, out);
        for (size_t i = 0; i < batch.size(); ++i) {
          if (!out[i] || !f.MayContainHash(batch[i]) ||
              f.CountHash(batch[i]) == 0) {
            misses.fetch_add(1);
          }
        }
        reads.fetch_add(batch.size(), std::memory_order_relaxed);
      }
    });
  }
  for (int w = 0; w < kWriters; ++w) ts[w].join();
  stop = true;
  for (size_t i = kWriters; i < ts.size(); ++i) ts[i].join();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  EXPECT_GT(churned.load(), kCapacity / 10);
  for (uint64_t i = 0; i < stable; ++i) {
    ASSERT_TRUE(f.MayContainHash(KeyOf(1, i))) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, CuckooSeqlockStressTest,
                         ::testing::Values(Layout{2, 8}, Layout{4, 8},
                                           Layout{8, 8}, Layout{2, 12},
                                           Layout{4, 12}, Layout{8, 12},
                                           Layout{2, 16}, Layout{4, 16},
                                           Layout{8, 16}),
                         [](const ::testing::TestParamInfo<Layout>& i) {
                           return "b" + std::to_string(i.param.bucket_size) +
                                  "f" + std::to_string(i.param.fp_bits);
                         });

}  // namespace
}  // namespace shardfilter
