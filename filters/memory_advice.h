// Process-wide memory hints of the filter tables.
//
// By default, tables of 4 MiB or more are advised as transparent huge-page
// candidates (filters/internal/atomic_table.h, cuckoo_table.h): fewer TLB
// misses on random probes. A host that forks to snapshot (the Redis module:
// BGSAVE, AOF rewrite) turns the advice off, because a huge page copied on
// write copies 2 MiB for one changed bit.
//
// Thread-safe: an atomic flag, read when a table is allocated.
#ifndef SHARDFILTER_FILTERS_MEMORY_ADVICE_H_
#define SHARDFILTER_FILTERS_MEMORY_ADVICE_H_

namespace shardfilter {

// Applies to tables allocated afterwards.
void SetHugePageAdvice(bool enabled);
bool HugePageAdvice();

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_MEMORY_ADVICE_H_
