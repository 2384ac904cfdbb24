// The split-block kernels for callers compiled without AVX2
// (filters/detail/split_block.h): the kernel pointers, pointing at the
// scalar kernels from the start (constant initialization) and at the AVX2
// ones once the CPU says it has AVX2 (dynamic initialization, while the
// library loads); and the CPU check every such choice uses.
#include "shardfilter/filters/detail/split_block.h"

#include <atomic>
#include <cstdint>

namespace shardfilter::internal {

bool CpuHasAvx2() {
#if SHARDFILTER_SPLIT_AVX2
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool CpuHasAvx512Counting() {
#if SHARDFILTER_SPLIT_AVX2
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bitalg");
  }();
  return has;
#else
  return false;
#endif
}

namespace {

bool SplitQueryKernelScalar(const std::atomic<uint64_t>* block, uint32_t h32) {
  return SplitMayContainScalar(block, h32);
}
bool SplitAddKernelScalar(std::atomic<uint64_t>* block, uint32_t h32) {
  return SplitAddScalar(block, h32);
}

#if SHARDFILTER_SPLIT_AVX2
// Named ...Avx2: the package test allows AVX registers only in functions so
// named (tests/package/run.sh).
SHARDFILTER_TARGET_AVX2 bool SplitQueryKernelAvx2(
    const std::atomic<uint64_t>* block, uint32_t h32) {
  return SplitMayContainAvx2(block, h32);
}
SHARDFILTER_TARGET_AVX2 bool SplitAddKernelAvx2(std::atomic<uint64_t>* block,
                                                uint32_t h32) {
  return SplitAddAvx2(block, h32);
}
#endif

}  // namespace

constinit std::atomic<SplitQueryKernel> g_split_query_kernel{
    &SplitQueryKernelScalar};
constinit std::atomic<SplitAddKernel> g_split_add_kernel{&SplitAddKernelScalar};

namespace {

#if SHARDFILTER_SPLIT_AVX2
[[maybe_unused]] const bool kSplitKernelsChosen = [] {
  if (CpuHasAvx2()) {
    g_split_query_kernel.store(&SplitQueryKernelAvx2,
                               std::memory_order_relaxed);
    g_split_add_kernel.store(&SplitAddKernelAvx2, std::memory_order_relaxed);
  }
  return true;
}();
#endif

}  // namespace

}  // namespace shardfilter::internal
