// The in-memory engine's runner (shardfilter_memory; see parallel.h): every
// body in the calling thread, in index order.
#include "shardfilter/engine/internal/parallel.h"

namespace shardfilter::internal {

void RunParallel(size_t n, void (*body)(void*, size_t), void* ctx) {
  for (size_t i = 0; i < n; ++i) body(ctx, i);
}

}  // namespace shardfilter::internal
