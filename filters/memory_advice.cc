#include "shardfilter/filters/memory_advice.h"

#include <atomic>

namespace shardfilter {
namespace {

std::atomic<bool> g_huge_page_advice{true};

}  // namespace

void SetHugePageAdvice(bool enabled) {
  g_huge_page_advice.store(enabled, std::memory_order_relaxed);
}

bool HugePageAdvice() {
  return g_huge_page_advice.load(std::memory_order_relaxed);
}

}  // namespace shardfilter
