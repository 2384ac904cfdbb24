#include "tools/module/module_memory.h"

namespace shardfilter::module {

std::shared_ptr<MemoryBudget> g_budget;

}  // namespace shardfilter::module
