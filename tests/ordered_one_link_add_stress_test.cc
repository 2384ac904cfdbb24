// The single-key add's inline path for the ordered types (engine/detail/
// shard_fast_path.h, ShardFastOrderedAdd; engine/sharded_filter.h,
// TryFastOrderedAdd): a counting or cuckoo shard of one link with room is
// added to without ChainAdd, taking its unit of the fill by a load and a
// store under order_mu (S3, S7) and capping a key's copies at the chain's
// bound (invariant 8), holding order_mu alone (S2), which every exclusive
// holder of the shard takes too. Checked, for counting Bloom, the default
// cuckoo layout (which has the inline add) and a cuckoo layout without it
// (2-slot buckets, ChainAdd's path): a link never holds more adds than its
// capacity and Stats counts every add once, a key's copies stop at the
// bound, growth appends one link, and no acknowledged key is ever reported
// absent while writers race and a reader asks. Scaled down under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/sharded_filter.h"
#include "test_util.h"

namespace shardfilter {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kCapacity = 6'000;
#else
constexpr uint64_t kCapacity = 40'000;
#endif
constexpr int kWriters = 3;

uint64_t KeyHash(uint64_t i) { return testing::KeyHashOf(i, 17); }

struct Kind {
  FilterType type;
  uint32_t bucket_size;  // cuckoo only; 0 for counting
  const char* name;
};

// The test names' parameter: the kind's name, not its bytes.
void PrintTo(const Kind& kind, std::ostream* os) { *os << kind.name; }

const Kind kKinds[] = {
    {FilterType::kCountingBloom, 0, "counting"},
    {FilterType::kCuckoo, 4, "cuckoo_4x12"},
    {FilterType::kCuckoo, 2, "cuckoo_2x12"},
};

class OrderedOneLinkAddTest
    : public ::testing::TestWithParam<std::tuple<Kind, uint32_t>> {
 protected:
  std::unique_ptr<ShardedFilter> Make(bool scalable) const {
    const auto [kind, shards] = GetParam();
    FilterSpec spec;
    spec.type = kind.type;
    spec.capacity = kCapacity;
    spec.shards = shards;
    spec.bucket_size = kind.bucket_size;
    spec.scalable = scalable;
    auto f = ShardedFilter::Create(spec);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? std::move(*f) : nullptr;
  }
  bool cuckoo() const {
    return std::get<0>(GetParam()).type == FilterType::kCuckoo;
  }
  uint32_t max_copies() const {
    const Kind kind = std::get<0>(GetParam());
    return cuckoo() ? 2 * kind.bucket_size - 1 : 15;
  }
};

// One writer, distinct keys, into a non-scaling filter until every shard
// is full: each add takes exactly one unit (Stats' items is the count of
// OK answers, no shard past its link's capacity) and every acknowledged
// key stays present.
TEST_P(OrderedOneLinkAddTest, EveryAddCountedOnceUpToTheCapacity) {
  auto f = Make(/*scalable=*/false);
  ASSERT_NE(f, nullptr);
  // The links' capacities (each shard's is rounded up from its share).
  uint64_t capacity = 0;
  for (uint32_t s = 0; s < f->shard_count(); ++s) {
    capacity += f->shard_filter(s).capacity();
  }
  uint64_t added = 0;
  std::vector<bool> acked(2 * capacity);
  for (uint64_t i = 0; i < acked.size(); ++i) {
    Status s = f->AddHash(KeyHash(i));
    if (!s.ok()) {
      ASSERT_TRUE(s.IsFull()) << s.ToString();
      continue;  // that shard is full; others may still have room
    }
    acked[i] = true;
    ++added;
  }
  const ShardedStats st = f->Stats();
  EXPECT_EQ(st.total.items, added);
  EXPECT_LE(added, capacity);
  // Counting shards fill exactly; a cuckoo table may refuse a little
  // before its capacity (no displacement path), never after it.
  if (!cuckoo()) {
    EXPECT_EQ(added, capacity);
  } else {
    EXPECT_GE(added, capacity * 95 / 100);
  }
  for (uint32_t s = 0; s < f->shard_count(); ++s) {
    EXPECT_EQ(f->shard_links(s), 1u);
    EXPECT_LE(f->shard_filter(s).Stats().items, f->shard_filter(s).capacity());
  }
  for (uint64_t i = 0; i < acked.size(); ++i) {
    if (acked[i]) {
      ASSERT_TRUE(f->MayContainHash(KeyHash(i))) << "key " << i;
    }
  }
}

// A key's copies stop at the chain's bound (2b - 1 for cuckoo, 15 for
// counting) with Full naming it, refused copies take no unit, and (cuckoo)
// a removed copy makes room for one more.
TEST_P(OrderedOneLinkAddTest, CopiesStopAtTheBound) {
  auto f = Make(/*scalable=*/true);
  ASSERT_NE(f, nullptr);
  const uint32_t max = max_copies();
  for (uint32_t c = 0; c < max; ++c) {
    ASSERT_OK(f->AddHash(KeyHash(7)));
  }
  for (int extra = 0; extra < 100; ++extra) {
    Status s = f->AddHash(KeyHash(7));
    ASSERT_TRUE(s.IsFull()) << s.ToString();
    EXPECT_NE(s.message().find("already holds " + std::to_string(max)),
              std::string::npos)
        << s.ToString();
  }
  EXPECT_EQ(f->CountHash(KeyHash(7)), max);
  EXPECT_EQ(f->Stats().total.items, max);
  if (cuckoo()) {  // a counting filter's saturated counters are sticky
    ASSERT_OK(f->RemoveHash(KeyHash(7)));
    ASSERT_OK(f->AddHash(KeyHash(7)));
    EXPECT_TRUE(f->AddHash(KeyHash(7)).IsFull());
    EXPECT_EQ(f->Stats().total.items, max);
  }
  for (uint32_t s = 0; s < f->shard_count(); ++s) {
    EXPECT_EQ(f->shard_links(s), 1u);
  }
}

// Writers race on distinct keys into a scalable filter, past link 0's capacity,
// while a reader checks acknowledged keys: nothing is lost, Stats counts each
// OK once, no link holds more than its capacity, and each shard grew by one
// link.
TEST_P(OrderedOneLinkAddTest, RacingWritersLoseNothingAndGrowOnce) {
  auto f = Make(/*scalable=*/true);
  ASSERT_NE(f, nullptr);
  uint64_t link0 = 0;
  for (uint32_t s = 0; s < f->shard_count(); ++s) {
    link0 += f->shard_filter(s).capacity();
  }
  const uint64_t keys = link0 + link0 / 2;
  std::atomic<uint64_t> ok{0}, failures{0}, misses{0};
  std::atomic<uint64_t> acked[kWriters] = {};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      // Writer w adds keys w, w + kWriters, w + 2 kWriters, ...
      for (uint64_t i = static_cast<uint64_t>(w); i < keys; i += kWriters) {
        Status s = f->AddHash(KeyHash(i));
        if (s.ok()) {
          ok.fetch_add(1, std::memory_order_relaxed);
        } else {
          failures.fetch_add(1, std::memory_order_relaxed);
        }
        // Release: the reader that acquires i + 1 sees key i's add done.
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
        // A key of writer w's sequence below n.
        const uint64_t steps = (n - 1 - w) / kWriters + 1;
        const uint64_t k = w + kWriters * ((probe * 7919) % steps);
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
  EXPECT_EQ(ok.load(), keys);
  EXPECT_EQ(f->Stats().total.items, keys);
  for (uint32_t s = 0; s < f->shard_count(); ++s) {
    EXPECT_EQ(f->shard_links(s), 2u) << "shard " << s;
    for (uint32_t l = 0; l < f->shard_links(s); ++l) {
      EXPECT_LE(f->shard_filter(s, l).Stats().items,
                f->shard_filter(s, l).capacity())
          << "shard " << s << " link " << l;
    }
  }
  for (uint64_t i = 0; i < keys; ++i) {
    ASSERT_TRUE(f->MayContainHash(KeyHash(i))) << "key " << i;
  }
}

// The one-link add holds its shard's order_mu and not `mu` (S2), so it is
// the exclusive lock's order_mu (ExclusiveShardLock) that keeps it out of
// a checkpoint's, an export's or a switch's section. Writers add while a
// checker takes every shard exclusive (LockAll) again and again: while it
// holds them, no shard's fill, sequence or link count moves, and each
// link holds exactly the adds its fill counts (no add half done). And the
// checker keeps getting in until the writers are done (S5: the add gives
// way to a waiting writer; a starved checker would hang the test).
TEST_P(OrderedOneLinkAddTest, ExclusiveLockHoldsOffTheOneLinkAdd) {
  using internal::ShardedFilterAccess;
  auto f = Make(/*scalable=*/false);
  ASSERT_NE(f, nullptr);
  uint64_t room = 0;
  for (uint32_t s = 0; s < f->shard_count(); ++s) {
    room += f->shard_filter(s).capacity();
  }
  const uint64_t keys = room / 2;  // every shard stays far from full
  std::atomic<uint64_t> failures{0};
  std::atomic<int> writing{kWriters};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (uint64_t i = static_cast<uint64_t>(w); i < keys; i += kWriters) {
        if (!f->AddHash(KeyHash(i)).ok()) failures.fetch_add(1);
      }
      writing.fetch_sub(1);
    });
  }
  struct Seen {
    uint64_t fill, seq, items;
  };
  auto look = [&](uint32_t i) {
    internal::Shard& s = ShardedFilterAccess::shard(*f, i);
    return Seen{s.fill(0).load(std::memory_order_relaxed),
                s.last_seq.load(std::memory_order_relaxed),
                f->shard_filter(i).Counts().items};
  };
  uint64_t rounds = 0, moved = 0, torn = 0;
  do {
    auto locks = ShardedFilterAccess::LockAll(*f);
    std::vector<Seen> before;
    for (uint32_t i = 0; i < f->shard_count(); ++i) before.push_back(look(i));
    // Long enough for a racing writer's add to land.
    for (int y = 0; y < 20; ++y) std::this_thread::yield();
    for (uint32_t i = 0; i < f->shard_count(); ++i) {
      const Seen now = look(i);
      moved += now.fill != before[i].fill || now.seq != before[i].seq ||
               now.items != before[i].items;
      torn += now.fill != now.items;
    }
    ++rounds;
  } while (writing.load() > 0);
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(moved, 0u) << "of " << rounds << " rounds";
  EXPECT_EQ(torn, 0u) << "of " << rounds << " rounds";
  EXPECT_EQ(f->Stats().total.items, keys);
  for (uint64_t i = 0; i < keys; ++i) {
    ASSERT_TRUE(f->MayContainHash(KeyHash(i))) << "key " << i;
  }
}

// The lock that test relies on, without a race to catch: an exclusive
// lock on a counting or cuckoo shard holds its order_mu too (so a one-link
// add cannot start, whatever it read before), a Bloom shard's does not
// (Bloom adds take no order_mu), and both let go of everything.
TEST(ExclusiveShardLockTest, TakesAnOrderedShardsOrderMu) {
  using internal::ShardedFilterAccess;
  for (FilterType type :
       {FilterType::kCountingBloom, FilterType::kCuckoo, FilterType::kBloom}) {
    FilterSpec spec;
    spec.type = type;
    spec.capacity = 1000;
    spec.shards = 2;
    auto f = ShardedFilter::Create(spec);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const bool ordered = type != FilterType::kBloom;
    for (uint32_t i = 0; i < 2; ++i) {
      internal::Shard& s = ShardedFilterAccess::shard(**f, i);
      EXPECT_EQ(s.ordered, ordered) << static_cast<int>(type);
      {
        auto lock = internal::LockExclusive(s);
        ASSERT_TRUE(lock.owns_lock());
        const bool free = s.order_mu.try_lock();
        if (free) s.order_mu.unlock();
        EXPECT_EQ(free, !ordered) << static_cast<int>(type);
        lock.unlock();
        EXPECT_FALSE(lock.owns_lock());
      }
      ASSERT_TRUE(s.order_mu.try_lock());  // nothing left held
      s.order_mu.unlock();
      auto again = internal::LockExclusive(s);  // nor `mu`
    }
    EXPECT_TRUE((*f)->AddHash(KeyHash(1)).ok());
  }
}

INSTANTIATE_TEST_SUITE_P(Types, OrderedOneLinkAddTest,
                         ::testing::Combine(::testing::ValuesIn(kKinds),
                                            ::testing::Values(1u, 4u)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) +
                                  "_shards" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace shardfilter
