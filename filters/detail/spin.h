// The one spin primitive of the tree: CpuRelax (the CPU's spin-wait hint)
// and SpinLock, a test-and-test-and-set lock for critical sections of a few
// stores (a counting filter's stripe, a Bloom journal reservation, a
// cuckoo relocation's wait). Waiters spin 64 times with CpuRelax, then
// yield: on 2 shared cores the holder may be descheduled, and a waiter that
// keeps spinning would only delay it.
//
// Memory order: acquire on lock, release on unlock, so the guarded data
// written by one holder is seen by the next.
#ifndef SHARDFILTER_FILTERS_DETAIL_SPIN_H_
#define SHARDFILTER_FILTERS_DETAIL_SPIN_H_

#include <atomic>
#include <cstdint>
#include <thread>

namespace shardfilter::internal {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Meets BasicLockable (std::lock_guard works).
class SpinLock {
 public:
  void lock() {
    while (state_.exchange(1, std::memory_order_acquire) != 0) {
      for (int spins = 0; state_.load(std::memory_order_relaxed) != 0;) {
        if (++spins < 64) {
          CpuRelax();
        } else {
          std::this_thread::yield();
          spins = 0;
        }
      }
    }
  }
  void unlock() { state_.store(0, std::memory_order_release); }

 private:
  std::atomic<uint32_t> state_{0};
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_SPIN_H_
