// A zero-initialized, cache-line-aligned array of std::atomic<uint64_t>: the
// table of the Bloom and counting Bloom filters.
//
// Placed by AllocateFilterTable (filters/memory_advice.h): large tables in
// transparent huge pages, since a 60 MiB filter probed at random otherwise
// misses the TLB on nearly every query, on top of the DRAM miss the blocked
// layout is built to pay once. A host may turn that off and supply the
// allocator.
//
// Thread safety: the object is thread-compatible (allocate/destroy from one
// thread); the words themselves are atomics that any thread may use.
#ifndef SHARDFILTER_FILTERS_DETAIL_ATOMIC_TABLE_H_
#define SHARDFILTER_FILTERS_DETAIL_ATOMIC_TABLE_H_

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "shardfilter/filters/memory_advice.h"

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
    void* p = AllocateFilterTable(words * 8);  // the one policy
    if (p == nullptr) return false;
    words_ = static_cast<std::atomic<uint64_t>*>(p);
    for (uint64_t i = 0; i < words; ++i) {
      std::construct_at(words_ + i, uint64_t{0});
    }
    size_ = words;
    return true;
  }

  // The words as the serialized body holds them (docs/format-bloom.md):
  // size() x 8 bytes, little-endian, relaxed loads (a concurrent writer's
  // bits may or may not be in; every bit set before the call is).
  void WriteLittleEndian(char* out) const {
    for (uint64_t i = 0; i < size_; ++i, out += 8) {
      uint64_t v = words_[i].load(std::memory_order_relaxed);
      if constexpr (std::endian::native == std::endian::big) {
        v = __builtin_bswap64(v);
      }
      std::memcpy(out, &v, 8);
    }
  }
  // The reverse: size() x 8 bytes from `in`. REQUIRES: allocated, no reader.
  void ReadLittleEndian(const char* in) {
    for (uint64_t i = 0; i < size_; ++i, in += 8) {
      uint64_t v;
      std::memcpy(&v, in, 8);
      if constexpr (std::endian::native == std::endian::big) {
        v = __builtin_bswap64(v);
      }
      words_[i].store(v, std::memory_order_relaxed);
    }
  }

  // Same size and the same words (relaxed loads: a snapshot only when
  // neither table is written meanwhile).
  bool SameWords(const AtomicWordTable& o) const {
    if (o.size_ != size_) return false;
    for (uint64_t i = 0; i < size_; ++i) {
      if (words_[i].load(std::memory_order_relaxed) !=
          o.words_[i].load(std::memory_order_relaxed)) {
        return false;
      }
    }
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

#endif  // SHARDFILTER_FILTERS_DETAIL_ATOMIC_TABLE_H_
