// TableArena: one allocation from which the equal first-link tables of a
// sharded filter's shards are cut, so that they sit on huge pages together
// where each alone is too small to (filters/memory_advice.h places a table
// on huge pages from kHugePageTableBytes on, rounded up to whole 2 MiB
// pages). A 20M-key Bloom filter of 16 shards has 1.5 MB shard tables:
// alone each is on 4 KiB pages, and a random probe misses the TLB on top of
// its DRAM miss (sharded_bench BM_Query at 2e7 keys: 16 shards on 4 KiB
// pages take 1.8x the time of one shard's 24 MB table on huge pages).
// Rounding each up to 2 MiB instead would cost a third more
// memory; cut from one region they cost at most one partial huge page.
//
// Use: the creator of the tables makes the arena (MakeTableArena: null
// when the policy would not place the whole on huge pages, or each table
// alone already is), and every thread that allocates them holds a
// TableArenaScope for it meanwhile: AllocateFilterTable (memory_advice.cc)
// then cuts each table of the arena's size from the arena's next free slot
// (a table of another size, or one past the last slot, is allocated as
// usual). FreeTable knows a slot by its address and gives it back; the
// region is freed once every slot cut from it is freed and the creator's
// TableArenaRef is gone. Slots never cut are never touched, so they cost
// address space, not memory.
//
// Thread-safe: slots are cut and freed under a process-wide mutex (tables
// are made and freed by filter creation, load and drop, not per op).
#ifndef SHARDFILTER_FILTERS_INTERNAL_TABLE_ARENA_H_
#define SHARDFILTER_FILTERS_INTERNAL_TABLE_ARENA_H_

#include <cstdint>

namespace shardfilter::internal {

class TableArena;  // filters/memory_advice.cc

// The creator's reference to an arena (none: empty). Move-only.
class TableArenaRef {
 public:
  TableArenaRef() = default;
  explicit TableArenaRef(TableArena* arena) : arena_(arena) {}
  TableArenaRef(TableArenaRef&& other) noexcept : arena_(other.arena_) {
    other.arena_ = nullptr;
  }
  TableArenaRef& operator=(TableArenaRef&&) = delete;
  TableArenaRef(const TableArenaRef&) = delete;
  ~TableArenaRef();
  TableArena* get() const { return arena_; }

 private:
  TableArena* arena_ = nullptr;
};

// An arena of `slots` slots for tables of `table_bytes` bytes (each as
// AllocateFilterTable is asked for it), or empty when one is not worth it:
// `slots` < 2, each table alone at kHugePageTableBytes or more, the whole
// below it, huge-page advice off, a host allocator installed (the Redis
// module: its tables stay on the host's allocator), or no memory (then the
// tables are allocated one by one and report the shortage themselves).
TableArenaRef MakeTableArena(uint64_t table_bytes, uint32_t slots);

// While one lives, this thread's AllocateFilterTable calls cut tables of
// the arena's size from it (above). Scopes nest; the innermost one counts.
class TableArenaScope {
 public:
  explicit TableArenaScope(TableArena* arena);
  ~TableArenaScope();
  TableArenaScope(const TableArenaScope&) = delete;
  TableArenaScope& operator=(const TableArenaScope&) = delete;

 private:
  TableArena* const previous_;
};

// Arenas whose region is still allocated, and the slots cut from them and
// not yet freed. For tests.
uint64_t LiveTableArenas();
uint64_t TableArenaSlotsInUse();

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_TABLE_ARENA_H_
