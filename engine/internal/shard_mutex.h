// ShardMutex: the reader-writer lock of one shard (engine/internal/shard.h
// S2, S5), taken shared by every mutation and exclusive by checkpoints,
// exports, migrations' switches and Drop/Close.
//
// One 32-bit word: bit 31 = a writer holds or wants the lock, bits 0-30 =
// readers inside. A reader's fast path is one fetch_add and one fetch_sub
// (glibc's pthread_rwlock, behind std::shared_mutex, was ~60 instructions
// per mutation: bench/instructions.sh), with no branch taken unless a
// writer is there.
//
//   lock_shared:   fetch_add(1), acquire. Writer bit clear: in. Set: back
//                  out (fetch_sub, waking the writer if that was the last
//                  reader), wait until the bit clears, retry.
//   unlock_shared: fetch_sub(1), release; the last reader out while the
//                  writer bit is set wakes the writer.
//   lock:          writers take writer_mu_ (a ShortMutex: one at a time),
//                  set the bit (acquire), then wait until no reader is
//                  inside.
//   unlock:        clear the bit (release), wake waiting readers, release
//                  writer_mu_.
//
// Writers are preferred: once the bit is set no new reader gets in, so a
// steady stream of mutations cannot starve a checkpoint (S5). Hence, as
// before, a thread must not take one shard's lock shared twice.
// Memory order: a reader's acquire fetch_add reads the writer's release
// fetch_and (or a later RMW of its release sequence), and the writer's
// acquire load of a zero count reads the last reader's release fetch_sub,
// so every section happens-before the next conflicting one. Waits are
// std::atomic::wait (a futex), so a long checkpoint blocks readers without
// spinning.
//
// Meets the standard Lockable and SharedLockable requirements used here
// (std::unique_lock, std::shared_lock). Thread-safe.
//
// ShortMutex: an exclusive lock for critical sections of one op (a shard's
// `order_mu`, S3: an ordered add or remove, ~100-300 ns including the
// table's miss). It spins a little before it sleeps. std::mutex sleeps at
// once (a futex wait, then the holder's futex wake: microseconds on this
// VM), and two threads adding to a 16-shard counting or cuckoo filter meet
// on one shard every ~25 ops: a perf profile of two such writers had a
// quarter of their samples in the scheduler and the futex, and two threads
// added no faster than one (persistence_bench BM_DurableAdd, cuckoo,
// durability none: 5.3 -> 5.1M adds/s).
//   state 0 free, 1 held, 2 held and a thread may sleep on it (the classic
//   three-state futex mutex). lock: CAS 0 -> 1 (acquire); else spin up to
//   kSpins pauses retrying it; else exchange 2 until it returns 0, sleeping
//   while the word is 2. unlock: exchange 0 (release); wake one sleeper if
//   it was 2. Memory order: each lock's acquire RMW reads the previous
//   unlock's release exchange.
#ifndef SHARDFILTER_ENGINE_INTERNAL_SHARD_MUTEX_H_
#define SHARDFILTER_ENGINE_INTERNAL_SHARD_MUTEX_H_

#include <atomic>
#include <cstdint>
#include <mutex>

#include "shardfilter/filters/internal/spin.h"  // CpuRelax

namespace shardfilter::internal {

class ShortMutex {
 public:
  ShortMutex() = default;
  ShortMutex(const ShortMutex&) = delete;
  ShortMutex& operator=(const ShortMutex&) = delete;

  void lock() {
    uint32_t free = 0;
    if (state_.compare_exchange_strong(free, 1, std::memory_order_acquire))
        [[likely]] {
      return;
    }
    LockSlow();
  }
  bool try_lock() {
    uint32_t free = 0;
    return state_.compare_exchange_strong(free, 1, std::memory_order_acquire);
  }
  void unlock() {
    if (state_.exchange(0, std::memory_order_release) == 2) [[unlikely]] {
      state_.notify_one();
    }
  }

 private:
  // About 1-2 us of pauses: several times the longest op the lock guards,
  // short of a scheduler round trip.
  static constexpr int kSpins = 100;

  void LockSlow() {
    for (int i = 0; i < kSpins; ++i) {
      CpuRelax();
      uint32_t free = 0;
      if (state_.load(std::memory_order_relaxed) == 0 &&
          state_.compare_exchange_weak(free, 1, std::memory_order_acquire)) {
        return;
      }
    }
    while (state_.exchange(2, std::memory_order_acquire) != 0) {
      state_.wait(2, std::memory_order_relaxed);
    }
  }

  std::atomic<uint32_t> state_{0};
};

class ShardMutex {
 public:
  ShardMutex() = default;
  ShardMutex(const ShardMutex&) = delete;
  ShardMutex& operator=(const ShardMutex&) = delete;

  void lock_shared() {
    const uint32_t s = state_.fetch_add(1, std::memory_order_acquire);
    if ((s & kWriter) == 0) [[likely]] {
      return;
    }
    LockSharedSlow();
  }
  void unlock_shared() {
    const uint32_t s = state_.fetch_sub(1, std::memory_order_release);
    if ((s & kWriter) != 0 && (s & kReaders) == 1) [[unlikely]] {
      state_.notify_all();  // the writer waits for the last reader
    }
  }

  void lock() {
    writer_mu_.lock();
    uint32_t s = state_.fetch_or(kWriter, std::memory_order_acquire) | kWriter;
    while ((s & kReaders) != 0) {
      state_.wait(s, std::memory_order_acquire);
      s = state_.load(std::memory_order_acquire);
    }
  }
  void unlock() {
    state_.fetch_and(~kWriter, std::memory_order_release);
    state_.notify_all();  // readers that backed out
    writer_mu_.unlock();
  }

 private:
  static constexpr uint32_t kWriter = uint32_t{1} << 31;
  static constexpr uint32_t kReaders = kWriter - 1;

  void LockSharedSlow() {
    for (;;) {
      // Back out, so that the writer can drain the readers inside.
      uint32_t s = state_.fetch_sub(1, std::memory_order_relaxed) - 1;
      if ((s & kWriter) != 0 && (s & kReaders) == 0) state_.notify_all();
      while ((s & kWriter) != 0) {
        state_.wait(s, std::memory_order_relaxed);
        s = state_.load(std::memory_order_relaxed);
      }
      s = state_.fetch_add(1, std::memory_order_acquire);
      if ((s & kWriter) == 0) return;
    }
  }

  std::atomic<uint32_t> state_{0};
  // One writer at a time. A ShortMutex (4 bytes, not std::mutex's 40), so
  // that the whole lock fits in the shard's first line beside the other
  // fields every mutation writes (shard.h).
  ShortMutex writer_mu_;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_SHARD_MUTEX_H_
