// ThreadSanitizer support: one test for "built with TSan" (GCC defines
// __SANITIZE_THREAD__, clang answers __has_feature(thread_sanitizer)), and
// the annotations for what TSan cannot see by itself. Everything here
// compiles to nothing outside TSan builds.
//
// - TsanRelease / TsanAcquire state a happens-before edge through `tag`
//   (engine/internal/parallel.h: oneTBB's fork/join, uninstrumented).
// - TsanIgnoreAccesses: a scope in which this thread's memory accesses are
//   not recorded (synchronisation still is). For calls into an
//   uninstrumented library that touches memory other threads touch, with
//   synchronisation TSan cannot see and no point where an edge could be
//   stated (persistence/: RocksDB's group commit).
//
// - A release window stands for a release fence TSan does not model
//   (std::atomic_thread_fence): between TsanOpenReleaseWindow and
//   TsanCloseReleaseWindow, TsanStoreOrder() is memory_order_release (else
//   relaxed), for the relaxed stores the fence would have ordered. The
//   cuckoo filter's seqlock (filters/detail/cuckoo_stripes.h) uses it.
//
// Thread-safe: the annotations act on the calling thread only.
#ifndef SHARDFILTER_FILTERS_DETAIL_TSAN_H_
#define SHARDFILTER_FILTERS_DETAIL_TSAN_H_

#if defined(__SANITIZE_THREAD__)
#define SHARDFILTER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHARDFILTER_TSAN 1
#endif
#endif
#ifndef SHARDFILTER_TSAN
#define SHARDFILTER_TSAN 0
#endif

#if SHARDFILTER_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

#include <atomic>

namespace shardfilter::internal {

inline constexpr bool kTsan = SHARDFILTER_TSAN;

#if SHARDFILTER_TSAN
inline thread_local bool tsan_release_window = false;
#endif
inline void TsanOpenReleaseWindow() {
#if SHARDFILTER_TSAN
  tsan_release_window = true;
#endif
}
inline void TsanCloseReleaseWindow() {
#if SHARDFILTER_TSAN
  tsan_release_window = false;
#endif
}
inline std::memory_order TsanStoreOrder() {
#if SHARDFILTER_TSAN
  if (tsan_release_window) return std::memory_order_release;
#endif
  return std::memory_order_relaxed;
}

inline void TsanRelease([[maybe_unused]] void* tag) {
#if SHARDFILTER_TSAN
  __tsan_release(tag);
#endif
}
inline void TsanAcquire([[maybe_unused]] void* tag) {
#if SHARDFILTER_TSAN
  __tsan_acquire(tag);
#endif
}

class TsanIgnoreAccesses {
 public:
#if SHARDFILTER_TSAN
  TsanIgnoreAccesses() { __tsan_ignore_thread_begin(); }
  ~TsanIgnoreAccesses() { __tsan_ignore_thread_end(); }
#else
  // User-provided (not = default): a scope object is never "unused".
  TsanIgnoreAccesses() {}
  ~TsanIgnoreAccesses() {}
#endif
  TsanIgnoreAccesses(const TsanIgnoreAccesses&) = delete;
  TsanIgnoreAccesses& operator=(const TsanIgnoreAccesses&) = delete;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_DETAIL_TSAN_H_
