// ShardMutex (engine/detail/shard_mutex.h), the shard lock every
// mutation takes shared and every checkpoint exclusive: mutual exclusion
// between writers and readers (checked by counters the sections keep, and
// by TSan in CI over plain data the lock guards), readers together, and a
// writer that gets in while readers keep arriving (S5: no starvation).
// Readers come through their thread's slot or, when it is busy (a batch
// holding two shards), through the counter: writers exclude both, threads
// that come and go reuse slots, and a forked child still locks.
// ShortMutex (a shard's order_mu): mutual exclusion under contention,
// through its spinning and its sleeping paths, and every sleeper woken.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "shardfilter/engine/detail/shard_mutex.h"

namespace shardfilter::internal {
namespace {

// A writer that takes `mu` exclusive until `stop`, flagging `violated`
// when it finds a reader inside (`readers` counts them, `writers` says it
// is in).
std::thread LoopingWriter(ShardMutex& mu, std::atomic<bool>& stop,
                          std::atomic<int>& readers, std::atomic<int>& writers,
                          std::atomic<bool>& violated) {
  return std::thread([&] {
    while (!stop.load()) {
      std::unique_lock lock(mu);
      writers = 1;
      if (readers.load() != 0) violated = true;
      writers = 0;
    }
  });
}

TEST(ShardMutexStressTest, WritersExcludeReadersAndEachOther) {
  ShardMutex mu;
  std::atomic<int> readers_inside{0}, writers_inside{0};
  std::atomic<bool> violated{false}, stop{false};
  uint64_t guarded = 0;  // plain data: TSan checks the lock orders it
  std::atomic<uint64_t> reads{0}, writes{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::shared_lock lock(mu);
        readers_inside.fetch_add(1);
        if (writers_inside.load() != 0) violated = true;
        volatile uint64_t seen = guarded;
        (void)seen;
        readers_inside.fetch_sub(1);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::unique_lock lock(mu);
        if (writers_inside.fetch_add(1) != 0) violated = true;
        if (readers_inside.load() != 0) violated = true;
        ++guarded;
        writers_inside.fetch_sub(1);
        writes.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_FALSE(violated.load());
  EXPECT_GT(reads.load(), 0u);
  EXPECT_GT(writes.load(), 0u);
  std::unique_lock lock(mu);
  EXPECT_EQ(guarded, writes.load());
}

TEST(ShardMutexStressTest, AWriterGetsInWhileReadersKeepComing) {
  ShardMutex mu;
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        // Overlapping shared sections: the count never drops to zero by
        // itself while two readers alternate.
        std::shared_lock lock(mu);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::unique_lock lock(mu);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // A few reader sections at most stand in its way (generous bound for
    // sanitizer builds and a loaded machine).
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  }
  stop = true;
  for (auto& t : readers) t.join();
}

TEST(ShardMutexStressTest, ReadersShareTheLock) {
  ShardMutex mu;
  std::shared_lock a(mu);
  std::atomic<bool> got{false};
  std::thread t([&] {
    std::shared_lock b(mu);  // would block forever if readers excluded
    got = true;
  });
  t.join();
  EXPECT_TRUE(got.load());
}

// Four threads on two cores, sections long enough (and sometimes a sleep
// inside) that waiters exhaust their spins and sleep: every increment of
// the plain counter is kept, no two threads are ever inside, and every
// sleeper is woken (the test ends).
TEST(ShardMutexStressTest, ShortMutexExcludesThroughSpinAndSleep) {
  ShortMutex mu;
  std::atomic<int> inside{0};
  std::atomic<bool> violated{false};
  uint64_t guarded = 0;  // plain data: TSan checks the lock orders it
  constexpr int kThreads = 4, kRounds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard lock(mu);
        if (inside.fetch_add(1) != 0) violated = true;
        ++guarded;
        if ((i + t) % 2000 == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(violated.load());
  EXPECT_EQ(guarded, uint64_t{kThreads} * kRounds);
  EXPECT_TRUE(mu.try_lock());
  EXPECT_FALSE(mu.try_lock());
  mu.unlock();
}

// More threads than cores, and holders that sleep often: most waiters pass
// their spin and sleep, so a lost wake-up (an unlock that misses a
// sleeper: the plain-store unlock's handshake, shard_mutex.h) leaves a
// thread asleep for good and the test never ends (ctest's timeout).
TEST(ShardMutexStressTest, ShortMutexWakesEverySleeper) {
  ShortMutex mu;
  uint64_t guarded = 0;  // plain data: TSan checks the lock orders it
  constexpr int kThreads = 8, kRounds = 3000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard lock(mu);
        ++guarded;
        if ((i + t) % 100 == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(guarded, uint64_t{kThreads} * kRounds);
}

// Readers hold two locks at once, `a` through the slot and `b` through the
// counter (the slot is busy), released in either order, or `b` alone
// through the slot; writers take one or the other. Plain data under each lock:
// TSan checks that every path orders it.
TEST(ShardMutexStressTest, SlotAndCountedReadersBothExcludeWriters) {
  ShardMutex a, b;
  std::atomic<int> readers_in_a{0}, readers_in_b{0}, writers_in_a{0},
      writers_in_b{0};
  std::atomic<bool> violated{false}, stop{false};
  uint64_t guarded_a = 0, guarded_b = 0;
  std::atomic<uint64_t> reads{0}, writes_a{0}, writes_b{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        // S4's order (a before b, else two writers and two readers can
        // wait in a cycle, as with any writer-preferring lock); b is the
        // slot's when this reader takes it alone.
        std::shared_lock first(a, std::defer_lock), second(b);
        if ((i + r) % 3 != 0) {
          second.unlock();
          first.lock();   // the slot's
          second.lock();  // the counter's
        }
        const bool both = first.owns_lock();
        if (both) readers_in_a.fetch_add(1);
        readers_in_b.fetch_add(1);
        if ((both && writers_in_a.load() != 0) || writers_in_b.load() != 0) {
          violated = true;
        }
        volatile uint64_t seen = guarded_b + (both ? guarded_a : 0);
        (void)seen;
        if (both) readers_in_a.fetch_sub(1);
        readers_in_b.fetch_sub(1);
        if (i % 2 == 0) second.unlock();  // release order varies too
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      ShardMutex& mu = w == 0 ? a : b;
      std::atomic<int>& writers = w == 0 ? writers_in_a : writers_in_b;
      std::atomic<int>& readers = w == 0 ? readers_in_a : readers_in_b;
      uint64_t& guarded = w == 0 ? guarded_a : guarded_b;
      while (!stop.load(std::memory_order_relaxed)) {
        std::unique_lock lock(mu);
        if (writers.fetch_add(1) != 0) violated = true;
        if (readers.load() != 0) violated = true;
        ++guarded;
        writers.fetch_sub(1);
        (w == 0 ? writes_a : writes_b).fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_FALSE(violated.load());
  EXPECT_GT(reads.load(), 0u);
  EXPECT_GT(writes_a.load(), 0u);
  EXPECT_GT(writes_b.load(), 0u);
  std::unique_lock la(a), lb(b);
  EXPECT_EQ(guarded_a, writes_a.load());
  EXPECT_EQ(guarded_b, writes_b.load());
}

// A writer waits for a reader inside through its slot, and gets in once
// it leaves.
TEST(ShardMutexStressTest, AWriterWaitsForASlotReader) {
  ShardMutex mu;
  std::atomic<bool> reader_in{false}, release{false}, writer_in{false};
  std::thread reader([&] {
    std::shared_lock lock(mu);
    reader_in = true;
    while (!release.load()) std::this_thread::yield();
  });
  while (!reader_in.load()) std::this_thread::yield();
  std::thread writer([&] {
    std::unique_lock lock(mu);
    writer_in = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(writer_in.load());
  release = true;
  reader.join();
  writer.join();
  EXPECT_TRUE(writer_in.load());
}

// TryLockSharedSlot, the single-key Bloom add's lock (ShardedFilter::
// TryFastAdd): refused while a writer holds the lock, and then holding
// nothing (the writer's unlock and a later lock still work); refused while
// the thread's slot is busy (it holds another lock); once granted, it
// excludes writers like lock_shared, among readers of both kinds and a
// writer looping.
TEST(ShardMutexStressTest, TryLockSharedSlotFallsBackAndExcludesWriters) {
  ShardMutex mu;
  {
    std::shared_lock warm(mu);  // claims this thread's slot
  }
  {
    std::unique_lock writer(mu);
    std::atomic<ReaderSlot*> got{nullptr};
    std::thread t([&] { got = mu.TryLockSharedSlot(); });
    t.join();
    EXPECT_EQ(got.load(), nullptr);
  }
  ShardMutex other;
  {
    std::shared_lock busy(other);  // the slot now holds `other`
    EXPECT_EQ(mu.TryLockSharedSlot(), nullptr);
  }
  ReaderSlot* slot = mu.TryLockSharedSlot();
  ASSERT_NE(slot, nullptr);
  ShardMutex::UnlockSharedSlot(slot);
  { std::unique_lock writer(mu); }  // nothing left holding it

  std::atomic<bool> stop{false}, violated{false};
  std::atomic<int> readers{0}, writers{0};
  std::atomic<uint64_t> fast{0}, fallbacks{0};
  std::thread writer = LoopingWriter(mu, stop, readers, writers, violated);
  std::vector<std::thread> rs;
  for (int t = 0; t < 3; ++t) {
    rs.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        if (ReaderSlot* s = (t != 2) ? mu.TryLockSharedSlot() : nullptr) {
          ++readers;
          if (writers.load() != 0) violated = true;
          --readers;
          ShardMutex::UnlockSharedSlot(s);
          ++fast;
        } else {
          std::shared_lock lock(mu);  // the caller's fallback
          ++readers;
          if (writers.load() != 0) violated = true;
          --readers;
          ++fallbacks;
        }
      }
    });
  }
  for (auto& r : rs) r.join();
  stop = true;
  writer.join();
  EXPECT_FALSE(violated.load());
  EXPECT_GT(fast.load(), 0u);
  EXPECT_GT(fallbacks.load(), 0u);
}

// Threads that end give their slots back: 400 threads, 4 at a time, leave
// the registry at about the most alive at once, not 400; a writer runs
// throughout and excludes every one of them.
TEST(ShardMutexStressTest, EndedThreadsGiveTheirSlotsBack) {
  ShardMutex mu;
  std::atomic<bool> stop{false}, violated{false};
  std::atomic<int> readers{0}, writers{0};
  std::thread writer = LoopingWriter(mu, stop, readers, writers, violated);
  const uint32_t before = ReaderSlotCount();
  for (int round = 0; round < 100; ++round) {
    std::vector<std::thread> batch;
    for (int t = 0; t < 4; ++t) {
      batch.emplace_back([&] {
        for (int i = 0; i < 50; ++i) {
          std::shared_lock lock(mu);
          readers.fetch_add(1);
          if (writers.load() != 0) violated = true;
          readers.fetch_sub(1);
        }
      });
    }
    for (auto& t : batch) t.join();
  }
  stop = true;
  writer.join();
  EXPECT_FALSE(violated.load());
  // 4 readers and the writer (which holds no slot) at once, plus slots of
  // threads still ending while the next batch starts.
  EXPECT_LE(ReaderSlotCount(), before + 12);
}

// A forked child (a Redis module's save) inherits the slots but perhaps
// not the membarrier registration: its writer still gets in, and its
// readers too.
TEST(ShardMutexStressTest, AForkedChildLocks) {
  ShardMutex mu;
  { std::shared_lock lock(mu); }  // this thread's slot, claimed
  { std::unique_lock lock(mu); }  // registered barrier, used
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    { std::unique_lock lock(mu); }
    { std::shared_lock lock(mu); }
    { std::unique_lock lock(mu); }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace shardfilter::internal
