#include "shardfilter/filters/memory_advice.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

#include "shardfilter/filters/internal/table_arena.h"

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

namespace {

// The placement policy (memory_advice.h) without arenas.
void* AllocatePlaced(size_t bytes) {
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

void FreeUnplaced(void* p) {
  const TableFreeFn free_fn = g_free.load(std::memory_order_relaxed);
  if (free_fn == nullptr) {
    std::free(p);
  } else {
    free_fn(static_cast<void**>(p)[-1]);
  }
}

}  // namespace

namespace internal {

// internal/table_arena.h. Every field but the constants is guarded by
// g_arena_mu (below).
class TableArena {
 public:
  TableArena(char* base, uint64_t table_bytes, uint64_t slot_bytes,
             uint32_t slots)
      : base_(base),
        table_bytes_(table_bytes),
        slot_bytes_(slot_bytes),
        slots_(slots) {}

  char* const base_;
  const uint64_t table_bytes_;
  const uint64_t slot_bytes_;
  const uint32_t slots_;
  uint32_t next_ = 0;  // slots cut so far
  uint64_t refs_ = 1;  // the creator's, plus one per slot not yet freed
};

namespace {

std::mutex g_arena_mu;
// Live arenas by base address (FreeTable's lookup). Never destroyed: a
// table may be freed during static destruction.
std::map<uintptr_t, TableArena*>& Arenas() {
  static auto* arenas = new std::map<uintptr_t, TableArena*>;
  return *arenas;
}
std::atomic<uint64_t> g_live_arenas{0};
std::atomic<uint64_t> g_slots_in_use{0};  // for tests
// The innermost TableArenaScope's arena of this thread (plain TLS: a
// constant initialiser).
__thread TableArena* tls_arena = nullptr;

// REQUIRES: g_arena_mu held.
void ReleaseLocked(TableArena* a) {
  if (--a->refs_ != 0) return;
  Arenas().erase(reinterpret_cast<uintptr_t>(a->base_));
  g_live_arenas.fetch_sub(1, std::memory_order_relaxed);
  FreeUnplaced(a->base_);
  delete a;
}

// A slot of `a` for a table of `bytes`, or null (another size, none left).
void* TakeSlot(TableArena* a, size_t bytes) {
  if (bytes != a->table_bytes_) return nullptr;
  std::lock_guard lock(g_arena_mu);
  if (a->next_ == a->slots_) return nullptr;
  ++a->refs_;
  g_slots_in_use.fetch_add(1, std::memory_order_relaxed);
  return a->base_ + a->slot_bytes_ * a->next_++;
}

// True when p is a slot of a live arena (then given back).
bool FreeSlot(void* p) {
  if (g_live_arenas.load(std::memory_order_relaxed) == 0) return false;
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(g_arena_mu);
  auto& arenas = Arenas();
  auto it = arenas.upper_bound(at);
  if (it == arenas.begin()) return false;
  TableArena* a = (--it)->second;
  if (at >= it->first + a->slot_bytes_ * a->slots_) return false;
  g_slots_in_use.fetch_sub(1, std::memory_order_relaxed);
  ReleaseLocked(a);
  return true;
}

}  // namespace

TableArenaRef MakeTableArena(uint64_t table_bytes, uint32_t slots) {
  if (slots < 2 || table_bytes == 0 || table_bytes >= kHugePageTableBytes ||
      !HugePageAdvice() || g_alloc.load(std::memory_order_relaxed) != nullptr) {
    return TableArenaRef();
  }
  const uint64_t slot_bytes = (table_bytes + 63) / 64 * 64;
  const uint64_t total = slot_bytes * slots;  // < 4 MiB x 2^32: no overflow
  if (total < kHugePageTableBytes) return TableArenaRef();
  void* base = AllocatePlaced(total);
  if (base == nullptr) return TableArenaRef();
  auto* a =
      new TableArena(static_cast<char*>(base), table_bytes, slot_bytes, slots);
  std::lock_guard lock(g_arena_mu);
  Arenas().emplace(reinterpret_cast<uintptr_t>(base), a);
  g_live_arenas.fetch_add(1, std::memory_order_relaxed);
  return TableArenaRef(a);
}

TableArenaRef::~TableArenaRef() {
  if (arena_ == nullptr) return;
  std::lock_guard lock(g_arena_mu);
  ReleaseLocked(arena_);
}

TableArenaScope::TableArenaScope(TableArena* arena) : previous_(tls_arena) {
  tls_arena = arena;
}

TableArenaScope::~TableArenaScope() { tls_arena = previous_; }

uint64_t LiveTableArenas() {
  return g_live_arenas.load(std::memory_order_relaxed);
}

uint64_t TableArenaSlotsInUse() {
  return g_slots_in_use.load(std::memory_order_relaxed);
}

}  // namespace internal

void* AllocateFilterTable(size_t bytes) {
  if (internal::TableArena* a = internal::tls_arena) {
    if (void* p = internal::TakeSlot(a, bytes)) return p;
  }
  return AllocatePlaced(bytes);
}

void FreeTable(void* p) {
  if (p == nullptr || internal::FreeSlot(p)) return;
  FreeUnplaced(p);
}

}  // namespace shardfilter
