#include "shardfilter/filters/memory_advice.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace shardfilter {
namespace {

std::atomic<bool> g_huge_page_advice{true};
std::atomic<TableAllocFn> g_alloc{nullptr};
std::atomic<TableFreeFn> g_free{nullptr};

}  // namespace

void SetHugePageAdvice(bool enabled) {
  g_huge_page_advice.store(enabled, std::memory_order_relaxed);
}

bool HugePageAdvice() {
  return g_huge_page_advice.load(std::memory_order_relaxed);
}

void SetTableAllocator(TableAllocFn alloc, TableFreeFn free) {
  g_alloc.store(alloc, std::memory_order_relaxed);
  g_free.store(free, std::memory_order_relaxed);
}

void* AllocateTable(size_t bytes, size_t align) {
  const TableAllocFn alloc = g_alloc.load(std::memory_order_relaxed);
  if (alloc == nullptr) {
    return std::aligned_alloc(align, (bytes + align - 1) / align * align);
  }
  // A host allocator has no alignment: over-allocate, align, and keep the
  // block's start in the word before the table.
  if (bytes > SIZE_MAX - align - sizeof(void*)) return nullptr;
  void* raw = alloc(bytes + align + sizeof(void*));
  if (raw == nullptr) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw) + sizeof(void*);
  const uintptr_t at = (start + align - 1) & ~(uintptr_t{align} - 1);
  reinterpret_cast<void**>(at)[-1] = raw;
  return reinterpret_cast<void*>(at);
}

void* AllocateFilterTable(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const bool huge = bytes >= kHugePageTableBytes && HugePageAdvice();
  const size_t align = huge ? kHugePage : 64;
  if (bytes > SIZE_MAX - align) return nullptr;
  const size_t rounded = (bytes + align - 1) / align * align;
  void* p = AllocateTable(rounded, align);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p != nullptr && huge) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

void FreeTable(void* p) {
  if (p == nullptr) return;
  const TableFreeFn free_fn = g_free.load(std::memory_order_relaxed);
  if (free_fn == nullptr) {
    std::free(p);
  } else {
    free_fn(static_cast<void**>(p)[-1]);
  }
}

}  // namespace shardfilter
