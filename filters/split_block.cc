// The out-of-line split-block kernels for callers compiled without AVX2
// (filters/internal/split_block.h): the AVX2 form, compiled for AVX2 here
// and taken when the CPU has it, else the scalar form.
#include "shardfilter/filters/internal/split_block.h"

#include <atomic>
#include <cstdint>

#if defined(__x86_64__) && !SHARDFILTER_TSAN
#include <immintrin.h>
#define SF_SPLIT_DISPATCH_AVX2 1
#else
#define SF_SPLIT_DISPATCH_AVX2 0
#endif

namespace shardfilter::internal {
namespace {

#if SF_SPLIT_DISPATCH_AVX2
// Same kernels as the inline AVX2 ones of split_block.h, compiled for AVX2
// whatever this file's flags (the memory-order argument is there).
__attribute__((target("avx2"))) inline __m256i MaskAvx2(uint32_t h32) {
  const __m256i salt =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kSplitSalt));
  const __m256i bit = _mm256_srli_epi32(
      _mm256_mullo_epi32(_mm256_set1_epi32(static_cast<int>(h32)), salt), 27);
  return _mm256_sllv_epi32(_mm256_set1_epi32(1), bit);
}

__attribute__((target("avx2"))) inline void OrAvx2(std::atomic<uint64_t>* block,
                                                   __m256i mask) {
  block[0].fetch_or(static_cast<uint64_t>(_mm256_extract_epi64(mask, 0)),
                    std::memory_order_relaxed);
  block[1].fetch_or(static_cast<uint64_t>(_mm256_extract_epi64(mask, 1)),
                    std::memory_order_relaxed);
  block[2].fetch_or(static_cast<uint64_t>(_mm256_extract_epi64(mask, 2)),
                    std::memory_order_relaxed);
  block[3].fetch_or(static_cast<uint64_t>(_mm256_extract_epi64(mask, 3)),
                    std::memory_order_relaxed);
}

__attribute__((target("avx2"))) bool MayContainAvx2(
    const std::atomic<uint64_t>* block, uint32_t h32) {
  const __m256i have =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(block));
  return _mm256_testc_si256(have, MaskAvx2(h32)) != 0;
}

__attribute__((target("avx2"))) bool AddAvx2(std::atomic<uint64_t>* block,
                                             uint32_t h32) {
  const __m256i mask = MaskAvx2(h32);
  const __m256i have =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(block));
  if (_mm256_testc_si256(have, mask)) return false;  // every bit is set
  OrAvx2(block, mask);
  return true;
}

// The CPU's answer, asked once while the library loads.
bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}
const bool kHasAvx2 = CpuHasAvx2();
#endif

}  // namespace

bool SplitMayContainDispatch(const std::atomic<uint64_t>* block, uint32_t h32) {
#if SF_SPLIT_DISPATCH_AVX2
  if (kHasAvx2) return MayContainAvx2(block, h32);
#endif
  return SplitMayContainScalar(block, h32);
}

bool SplitAddDispatch(std::atomic<uint64_t>* block, uint32_t h32) {
#if SF_SPLIT_DISPATCH_AVX2
  if (kHasAvx2) return AddAvx2(block, h32);
#endif
  return SplitAddScalar(block, h32);
}

}  // namespace shardfilter::internal
