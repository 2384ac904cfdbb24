// Process-wide memory policy of the filter tables: huge-page advice and
// the allocator.
//
// By default, tables of 4 MiB or more are 2 MiB-aligned and advised as
// transparent huge-page candidates (filters/detail/atomic_table.h,
// cuckoo_table.h): fewer TLB misses on random probes. A host that forks to
// snapshot (the Redis module: BGSAVE, AOF rewrite) turns the advice off,
// because a huge page copied on write copies 2 MiB for one changed bit;
// tables are then only cache-line aligned.
//
// Tables come from std::aligned_alloc unless the host installs its own
// allocator (the Redis module: RedisModule_Alloc, so that maxmemory and
// INFO memory count the filters).
//
// Thread-safe: atomics, read when a table is allocated or freed.
#ifndef SHARDFILTER_FILTERS_MEMORY_ADVICE_H_
#define SHARDFILTER_FILTERS_MEMORY_ADVICE_H_

#include <cstddef>

namespace shardfilter {

// Applies to tables allocated afterwards.
void SetHugePageAdvice(bool enabled);
bool HugePageAdvice();

using TableAllocFn = void* (*)(size_t bytes);
using TableFreeFn = void (*)(void* p);
// Installs the allocator of every table allocated afterwards (null, null:
// std::aligned_alloc again). REQUIRES: no table exists (a table is freed
// by the allocator in force when it is freed).
void SetTableAllocator(TableAllocFn alloc, TableFreeFn free);

// `bytes` of memory aligned to `align` (a power of two, 8..2 MiB); null
// when unavailable. Freed with FreeTable.
void* AllocateTable(size_t bytes, size_t align);
void FreeTable(void* p);

// The one placement policy of the filters' tables (above): at least
// `bytes`, cache-line aligned; from kHugePageTableBytes on and while
// HugePageAdvice() holds, 2 MiB-aligned, rounded up to whole huge pages and
// advised into transparent huge pages (Linux MADV_HUGEPAGE: a hint, ignored
// where unsupported). Smaller tables made together (a sharded filter's
// shards) are cut from one region placed so, where the whole reaches that
// size (internal/table_arena.h). Null when unavailable; freed with
// FreeTable.
inline constexpr size_t kHugePageTableBytes = size_t{4} << 20;
void* AllocateFilterTable(size_t bytes);

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_MEMORY_ADVICE_H_
