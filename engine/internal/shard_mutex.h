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
//   lock:          writers take writer_mu_ (one at a time), set the bit
//                  (acquire), then wait until no reader is inside.
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
#ifndef SHARDFILTER_ENGINE_INTERNAL_SHARD_MUTEX_H_
#define SHARDFILTER_ENGINE_INTERNAL_SHARD_MUTEX_H_

#include <atomic>
#include <cstdint>
#include <mutex>

namespace shardfilter::internal {

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
  std::mutex writer_mu_;  // one writer at a time
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_SHARD_MUTEX_H_
