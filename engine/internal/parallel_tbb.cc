// The full library's runner: tbb::parallel_for, with the fork/join
// happens-before edges made visible to ThreadSanitizer.
//
// oneTBB comes uninstrumented (Debian's libtbb), so TSan cannot see its
// fork and join edges: not only that the caller's writes happen-before
// each body and each body before the caller's code after it, but also
// that a worker's last touch of the call's wait_context (an atomic in
// TBB's headers, on the caller's stack) happens-before the caller reuses
// that stack: TSan reported exactly that once filters loaded in parallel
// from many threads. Under TSan this therefore runs the bodies on
// std::threads (whose start and join TSan models), so the bodies still
// run concurrently and are still race-checked; otherwise it is
// tbb::parallel_for itself.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "shardfilter/engine/internal/parallel.h"
#include "shardfilter/filters/detail/tsan.h"

namespace shardfilter::internal {

void RunParallel(size_t n, void (*body)(void*, size_t), void* ctx) {
#if SHARDFILTER_TSAN
  const size_t workers = std::min<size_t>(n, 4);
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      body(ctx, i);
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(run);
  run();
  for (std::thread& t : threads) t.join();
#else
  tbb::parallel_for(size_t{0}, n, [&](size_t i) { body(ctx, i); });
#endif
}

}  // namespace shardfilter::internal
