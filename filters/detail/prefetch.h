// Software prefetches that the compiler cannot delete.
//
// GCC 12 (-O2/-O3) classifies a function whose only effects are
// __builtin_prefetch calls as `const` (IPA pure-const), and dead-code
// elimination then deletes every call to it that is not inlined first:
// CuckooFilter::MayContainHashes lost all of its prefetches that way
// (found in its disassembly; its batched query at 5e7 items ran at 57 ns
// per key instead of ~15). An asm volatile statement is never deleted and
// makes its callers impure, so prefetches written with these helpers stay
// wherever they are called from. They read nothing architecturally: no
// fault, no data race (the operand only names the address).
#ifndef SHARDFILTER_FILTERS_DETAIL_PREFETCH_H_
#define SHARDFILTER_FILTERS_DETAIL_PREFETCH_H_

namespace shardfilter::internal {

// Into all cache levels, for reading.
[[gnu::always_inline]] inline void PrefetchRead(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

// Into L2 (and L3) but not L1, for reading: the batch queries' prefetch,
// kQueryPrefetchWindow keys ahead (filters/detail/bloom_kernels.h). A
// prefetch into L1 holds one of L1's few miss buffers until its line
// arrives, which bounds the misses in flight; one into L2 does not, and
// the probe then finds its line in L2. At 5e7 keys (bench/ab.sh 5 rounds of
// bloom_bench's batched query), 64 ahead into L2 against 16 into L1: 1.43x
// the keys/s for split block, 1.25x for counting; 32 or 64 ahead into L1
// measured no faster than 16.
[[gnu::always_inline]] inline void PrefetchReadL2(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// In exclusive state, for a store that follows (PREFETCHW: a no-op on x86
// CPUs without it, which decode it as a hint).
[[gnu::always_inline]] inline void PrefetchWrite(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_PREFETCH_H_
