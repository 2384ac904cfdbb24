// ParallelFor(n, fn): calls fn(i) for every i in [0, n), possibly
// concurrently for distinct indexes, and returns once every call has
// returned (each call happens-before the return; the caller's writes before
// the call happen-before each fn(i)).
//
// Which runner does it is a link-time choice (one definition of RunParallel
// per library), so the objects that use it are compiled once for both:
// - shardfilter (the full library): engine/internal/parallel_tbb.cc,
//   tbb::parallel_for (std::threads under TSan: see there);
// - shardfilter_memory (the in-memory engine the Redis module links):
//   engine/internal/parallel_serial.cc, in the calling thread (Redis runs
//   module commands on its main thread; a module starts no thread pool).
//
// Thread-safe: fn must be safe to call concurrently for distinct indexes.
#ifndef SHARDFILTER_ENGINE_INTERNAL_PARALLEL_H_
#define SHARDFILTER_ENGINE_INTERNAL_PARALLEL_H_

#include <cstddef>
#include <type_traits>

namespace shardfilter::internal {

// body(ctx, i) for every i in [0, n); the runner behind ParallelFor.
void RunParallel(size_t n, void (*body)(void* ctx, size_t i), void* ctx);

template <typename Fn>
void ParallelFor(size_t n, Fn&& fn) {
  using F = std::remove_reference_t<Fn>;
  RunParallel(
      n, [](void* ctx, size_t i) { (*static_cast<F*>(ctx))(i); },
      const_cast<void*>(static_cast<const void*>(&fn)));
}

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_PARALLEL_H_
