// The out-of-line split-block kernels for callers compiled without AVX2
// (filters/internal/split_block.h): its AVX2 kernels when the CPU has AVX2,
// else the scalar ones.
#include "shardfilter/filters/internal/split_block.h"

#include <atomic>
#include <cstdint>

namespace shardfilter::internal {
namespace {

#if SHARDFILTER_SPLIT_AVX2
// The CPU's answer, asked once while the library loads (false before that:
// the scalar kernels, which give the same answers).
bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}
const bool kHasAvx2 = CpuHasAvx2();
#endif

}  // namespace

bool SplitMayContainDispatch(const std::atomic<uint64_t>* block, uint32_t h32) {
#if SHARDFILTER_SPLIT_AVX2
  if (kHasAvx2) return SplitMayContainAvx2(block, h32);
#endif
  return SplitMayContainScalar(block, h32);
}

bool SplitAddDispatch(std::atomic<uint64_t>* block, uint32_t h32) {
#if SHARDFILTER_SPLIT_AVX2
  if (kHasAvx2) return SplitAddAvx2(block, h32);
#endif
  return SplitAddScalar(block, h32);
}

}  // namespace shardfilter::internal
