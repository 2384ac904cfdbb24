// The out-of-line split-block kernels for callers compiled without AVX2
// (filters/internal/split_block.h): its AVX2 kernels when the CPU has AVX2,
// else the scalar ones; and the CPU check every such dispatch uses.
#include "shardfilter/filters/internal/split_block.h"

#include <atomic>
#include <cstdint>

namespace shardfilter::internal {
namespace {

#if SHARDFILTER_SPLIT_AVX2
// The CPU's answer, asked once while the library loads (false before that:
// the scalar kernels, which give the same answers).
bool AskCpuForAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}
#endif

}  // namespace

#if SHARDFILTER_SPLIT_AVX2
const bool kCpuHasAvx2 = AskCpuForAvx2();
#else
const bool kCpuHasAvx2 = false;
#endif

bool SplitMayContainDispatch(const std::atomic<uint64_t>* block, uint32_t h32) {
#if SHARDFILTER_SPLIT_AVX2
  if (kCpuHasAvx2) return SplitMayContainAvx2(block, h32);
#endif
  return SplitMayContainScalar(block, h32);
}

bool SplitAddDispatch(std::atomic<uint64_t>* block, uint32_t h32) {
#if SHARDFILTER_SPLIT_AVX2
  if (kCpuHasAvx2) return SplitAddAvx2(block, h32);
#endif
  return SplitAddScalar(block, h32);
}

}  // namespace shardfilter::internal
