// StripedCounter: a statistics counter that every op of every thread bumps
// (the Database's journal counts, a dedup store's per-op counts). One
// std::atomic shared by all threads makes two writers pass its cache line
// back and forth on every op: a perf profile of two threads adding to a
// journalled Bloom filter put 22% of all samples on the two locked adds of
// the journal's counters (docs/performance.md, session 14). Here each thread
// adds to its own slot (threads take slots round robin, once; a slot is
// shared only beyond kSlots threads), and a read sums the slots.
//
// Relaxed throughout: the counts order nothing. A read concurrent with adds
// sees some of them (as a relaxed load of one atomic would). Thread-safe.
#ifndef SHARDFILTER_ENGINE_INTERNAL_STRIPED_COUNTER_H_
#define SHARDFILTER_ENGINE_INTERNAL_STRIPED_COUNTER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace shardfilter::internal {

class StripedCounter {
 public:
  StripedCounter() = default;
  StripedCounter(const StripedCounter&) = delete;
  StripedCounter& operator=(const StripedCounter&) = delete;

  void Add(uint64_t n) {
    slots_[ThreadSlot()].value.fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Load() const {
    uint64_t total = 0;
    for (const Slot& s : slots_) {
      total += s.value.load(std::memory_order_relaxed);
    }
    return total;
  }

 private:
  static constexpr size_t kSlots = 16;
  struct alignas(64) Slot {
    std::atomic<uint64_t> value{0};
  };
  static size_t ThreadSlot() {
    thread_local const size_t slot = NextSlot();
    return slot;
  }
  static size_t NextSlot() {
    static std::atomic<size_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed) % kSlots;
  }

  Slot slots_[kSlots];
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_STRIPED_COUNTER_H_
