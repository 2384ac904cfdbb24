// Clang thread-safety analysis (-Wthread-safety): attribute macros and
// annotated lock types, so that "field f is guarded by mutex m" and "this
// function must be called with m held" are checked by the compiler instead
// of written as comments. The macros expand to nothing for other compilers
// (GCC ignores the analysis; the code is the same).
//
//   class Catalog {
//     Mutex mu_;
//     std::map<...> entries_ SF_GUARDED_BY(mu_);
//     void AddLocked(...) SF_REQUIRES(mu_);
//   };
//   { MutexLock lock(mu_); AddLocked(...); }
//
// Where the analysis cannot follow the locking (a vector of shard locks, a
// seqlock, an object not yet shared), the function says so with
// SF_NO_THREAD_SAFETY_ANALYSIS and a comment giving the reason, at the spot.
//
// The names carry an SF_ prefix so that they never collide with another
// library's GUARDED_BY (RocksDB and abseil define their own).
//
// Thread safety: Mutex and SharedMutex are std::mutex / std::shared_mutex
// (same guarantees, same cost: every method is an inline forward).
#ifndef SHARDFILTER_FILTERS_INTERNAL_THREAD_ANNOTATIONS_H_
#define SHARDFILTER_FILTERS_INTERNAL_THREAD_ANNOTATIONS_H_

#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define SF_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SF_THREAD_ANNOTATION(x)
#endif

#define SF_CAPABILITY(x) SF_THREAD_ANNOTATION(capability(x))
#define SF_SCOPED_CAPABILITY SF_THREAD_ANNOTATION(scoped_lockable)
#define SF_GUARDED_BY(x) SF_THREAD_ANNOTATION(guarded_by(x))
#define SF_PT_GUARDED_BY(x) SF_THREAD_ANNOTATION(pt_guarded_by(x))
#define SF_ACQUIRED_BEFORE(...) \
  SF_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define SF_ACQUIRED_AFTER(...) SF_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define SF_REQUIRES(...) SF_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define SF_REQUIRES_SHARED(...) \
  SF_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define SF_ACQUIRE(...) SF_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define SF_ACQUIRE_SHARED(...) \
  SF_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define SF_RELEASE(...) SF_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define SF_RELEASE_SHARED(...) \
  SF_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define SF_RELEASE_GENERIC(...) \
  SF_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define SF_TRY_ACQUIRE(...) \
  SF_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define SF_EXCLUDES(...) SF_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define SF_ASSERT_CAPABILITY(x) SF_THREAD_ANNOTATION(assert_capability(x))
#define SF_RETURN_CAPABILITY(x) SF_THREAD_ANNOTATION(lock_returned(x))
#define SF_NO_THREAD_SAFETY_ANALYSIS \
  SF_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace shardfilter::internal {

// std::mutex as a capability.
class SF_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock() SF_ACQUIRE() { mu_.lock(); }
  void unlock() SF_RELEASE() { mu_.unlock(); }
  bool try_lock() SF_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds this mutex when it cannot see it
  // (the lock was taken through another name for the same object); checks
  // nothing at run time. Each use says why it holds.
  void AssertHeld() const SF_ASSERT_CAPABILITY(this) {}
  // For std::condition_variable waits, which need the std::mutex: the
  // caller holds this Mutex (a MutexLock) around the wait, and the wait
  // releases and retakes it inside, which the analysis need not see.
  std::mutex& native() SF_RETURN_CAPABILITY(this) { return mu_; }

 private:
  std::mutex mu_;
};

// std::shared_mutex as a capability (exclusive and shared modes).
class SF_CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;
  void lock() SF_ACQUIRE() { mu_.lock(); }
  void unlock() SF_RELEASE() { mu_.unlock(); }
  void lock_shared() SF_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() SF_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// std::lock_guard for Mutex.
class SF_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) SF_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() SF_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Exclusive / shared scoped locks of a SharedMutex.
class SF_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) SF_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() SF_RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

class SF_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) SF_ACQUIRE_SHARED(mu) : mu_(mu) {
    mu_.lock_shared();
  }
  ~ReaderLock() SF_RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_FILTERS_INTERNAL_THREAD_ANNOTATIONS_H_
