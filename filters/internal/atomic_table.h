// A zero-initialized, cache-line-aligned array of std::atomic<uint64_t>: the
// table of the Bloom and counting Bloom filters.
//
// Tables of 4 MiB or more are aligned to 2 MiB and advised as huge-page
// candidates (Linux MADV_HUGEPAGE; a hint, ignored where unsupported): a
// 60 MiB filter probed at random otherwise misses the TLB on nearly every
// query, on top of the DRAM miss the blocked layout is built to pay once.
// A host may turn that off and supply the allocator (filters/memory_advice.h).
//
// Thread safety: the object is thread-compatible (allocate/destroy from one
// thread); the words themselves are atomics that any thread may use.
#ifndef SHARDFILTER_FILTERS_INTERNAL_ATOMIC_TABLE_H_
#define SHARDFILTER_FILTERS_INTERNAL_ATOMIC_TABLE_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "shardfilter/filters/memory_advice.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace shardfilter::internal {

class AtomicWordTable {
 public:
  AtomicWordTable() = default;
  AtomicWordTable(const AtomicWordTable&) = delete;
  AtomicWordTable& operator=(const AtomicWordTable&) = delete;
  ~AtomicWordTable() { FreeTable(words_); }

  // Allocates `words` zeroed words. False (and empty) when memory is
  // unavailable or the size overflows; REQUIRES: not yet allocated.
  bool Allocate(uint64_t words) {
    if (words == 0 || words > (uint64_t{1} << 58)) return false;
    const uint64_t bytes = words * 8;
    const uint64_t align = bytes >= (uint64_t{4} << 20) && HugePageAdvice()
                               ? (uint64_t{2} << 20)
                               : uint64_t{64};
    const uint64_t rounded = (bytes + align - 1) / align * align;
    void* p = AllocateTable(rounded, align);
    if (p == nullptr) return false;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align > 64) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    words_ = static_cast<std::atomic<uint64_t>*>(p);
    for (uint64_t i = 0; i < words; ++i) {
      std::construct_at(words_ + i, uint64_t{0});
    }
    size_ = words;
    return true;
  }

  std::atomic<uint64_t>* data() const { return words_; }
  uint64_t size() const { return size_; }
  std::atomic<uint64_t>& operator[](uint64_t i) const { return words_[i]; }

 private:
  std::atomic<uint64_t>* words_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_ATOMIC_TABLE_H_
