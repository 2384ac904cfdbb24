// ParallelFor: tbb::parallel_for over [0, n) with the fork/join
// happens-before edges made visible to ThreadSanitizer.
//
// oneTBB comes uninstrumented (Debian's libtbb), so TSan cannot see that
// everything the caller wrote before parallel_for happens-before each body,
// and each body happens-before the caller's code after it. Under TSan this
// wrapper states both edges with __tsan_release / __tsan_acquire on a tag
// local to the call; otherwise it is tbb::parallel_for itself.
//
// Thread-safe: `fn` is called concurrently for distinct indexes.
#ifndef SHARDFILTER_ENGINE_INTERNAL_PARALLEL_H_
#define SHARDFILTER_ENGINE_INTERNAL_PARALLEL_H_

#include <tbb/parallel_for.h>

#include <cstddef>

#include "shardfilter/filters/internal/tsan.h"

namespace shardfilter::internal {

template <typename Fn>
void ParallelFor(size_t n, Fn&& fn) {
#if SHARDFILTER_TSAN
  char tag = 0;
  TsanRelease(&tag);  // fork: caller's writes -> every body
  tbb::parallel_for(size_t{0}, n, [&](size_t i) {
    TsanAcquire(&tag);
    fn(i);
    TsanRelease(&tag);  // join: every body -> caller
  });
  TsanAcquire(&tag);
#else
  tbb::parallel_for(size_t{0}, n, [&](size_t i) { fn(i); });
#endif
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_PARALLEL_H_
