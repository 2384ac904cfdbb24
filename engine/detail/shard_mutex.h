// ShardMutex: the reader-writer lock of one shard (engine/internal/shard.h
// S2, S5), taken shared by every mutation and exclusive by checkpoints,
// exports, migrations' switches and Drop/Close.
//
// Installed (engine/detail/shard_fast_path.h includes it), not API: the
// Bloom add's fast path, inline in callers' code (ShardedFilter::
// TryFastAdd), takes the lock through TryLockSharedSlot, so the reader's
// side of the protocol below is compiled into callers: names, layout and
// protocol may change in any release (the shared library's SONAME is
// major.minor while 0.x). The writer's side and the slot registry are the
// library's (engine/internal/shard_mutex.cc).
//
// Readers come in two ways; writers wait for both.
//
// - Through the thread's reader slot (the fast path, every single-key
//   mutation but the unjournalled one-link add of a counting or cuckoo
//   shard, which holds the shard's order_mu instead: engine/internal/
//   shard.h S2): each thread owns a ReaderSlot (a cache line of its own, in a
//   process-wide registry, engine/internal/shard_mutex.cc). A reader
//   announces itself by storing the lock's address in its slot, then loads
//   the lock word: writer bit clear, it is in. Unlock stores null. Neither
//   is a locked instruction, nor a write to a line another thread writes:
//   locked RMWs on the shard's line would cost every handle add two, and
//   the unlock's, which waits for the table's locked ORs (and their miss)
//   before it, measured 7 ns of a 51 ns add in a scratch loop.
// - Through the counter (a thread whose slot is already busy: a batch
//   holding several shards, or a thread being torn down): bits 0-30 of the
//   lock word count such readers; fetch_add(1) in, fetch_sub(1) out.
//
// The lock word's bit 31: a writer holds or wants the lock.
//
//   lock_shared:   slot free: announce (slot = this), then load the word.
//                  Writer bit clear: in. Set: withdraw (slot = null) and
//                  take the counter's path, which waits for the bit to
//                  clear. Slot busy: the counter's path: fetch_add(1),
//                  acquire; bit set: back out (fetch_sub, waking the writer
//                  if that was the last counted reader), wait, retry.
//   unlock_shared: the slot holds this: slot = null (release). Else
//                  fetch_sub(1), release; the last counted reader out
//                  while the writer bit is set wakes the writer.
//   lock:          writers take writer_mu_ (one at a time), set the bit,
//                  make the announcement visible (below), wait until no
//                  slot holds this lock, then until no counted reader is
//                  inside.
//   unlock:        clear the bit (release), wake waiting readers, release
//                  writer_mu_.
//
// The announcement (a Dekker handshake). Reader: store slot, load word.
// Writer: set bit (a locked RMW: a full barrier), load every slot. Either
// the reader's load sees the bit or the writer's load sees the slot; both
// missing would need each thread's store to pass its own later load. In the
// asymmetric mode (the default where the kernel offers it) the reader orders
// the two with a compiler barrier only, and the writer pays for both sides
// with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): the kernel runs a full
// barrier on every CPU running one of the process's threads before it
// returns (a thread not running has passed a context switch, a barrier too),
// so a reader's store before that point is visible to the writer's loads
// after it, and a reader's load after that point sees the bit (Linux
// membarrier(2); userspace RCU and folly's hazard pointers rely on the same
// pairing). Without membarrier (an older kernel, a seccomp filter that
// denies it) readers take the counter's path only. Under TSan (which does
// not model membarrier) the reader's store is seq_cst instead: the handshake
// holds by the total order of seq_cst operations, at the cost of one locked
// store to the thread's own line. A writer's membarrier costs ~0.3-5 us;
// writers are checkpoints and admin operations, not the op path.
//
// Writers are preferred: once the bit is set no new reader gets in through
// either path, so a steady stream of mutations cannot starve a checkpoint
// (S5). Hence a thread must not take one shard's lock shared twice (a second
// lock_shared of the lock its slot holds would count a reader that no unlock
// releases: the slot's unlock comes first).
// Memory order: a reader's acquire load of the word (or its acquire
// fetch_add) reads the writer's release fetch_and or a later value of the
// word, so the previous writer's section happens-before the reader's; the
// writer's acquire loads of a slot's null and of a zero count read the
// reader's release store or fetch_sub, so every reader's section
// happens-before the writer's.
//
// Meets the standard Lockable and SharedLockable requirements used here
// (std::unique_lock, std::shared_lock). Thread-safe.
//
// ShortMutex: an exclusive lock for critical sections of one op (a shard's
// `order_mu`, S3: an ordered add or remove, ~100-300 ns including the
// table's miss). It spins a little before it sleeps. std::mutex sleeps at
// once (a futex wait, then the holder's futex wake: microseconds on this
// VM), and two threads adding to a 16-shard counting or cuckoo filter meet
// on one shard every ~25 ops: with std::mutex a perf profile of two such
// writers has a quarter of their samples in the scheduler and the futex,
// and two threads add no faster than one (persistence_bench BM_DurableAdd,
// cuckoo, durability none).
//   Where membarrier is registered (ShardMutex's asymmetric mode, not under
//   TSan), the unlock is a plain release store: a locked exchange after the
//   op's stores waits for them to drain, and so for the table line the op
//   wrote (its miss), which then cannot overlap the next op's (a scratch
//   counting handle add without order_mu's two locked instructions ran 1.3x
//   the adds/s at 5e7; the exchange alone is 43% of the add's samples,
//   cpu-clock). state 0 free, 1 held; `sleepers_` counts threads past their
//   spin. lock: CAS 0 -> 1 (acquire); else spin up to kSpins pauses retrying
//   it; else sleepers_ +1, a heavy barrier (membarrier), then CAS 0 -> 1 or
//   sleep while the word is 1, until the CAS wins; sleepers_ -1. unlock:
//   store 0 (release), a compiler barrier, then wake one sleeper if
//   sleepers_ is not 0. A Dekker handshake as ShardMutex's: an unlock whose
//   load of sleepers_ comes after the sleeper's barrier sees its increment;
//   one whose load comes before it had made its store of 0 visible by then
//   (the barrier runs a full fence on the unlocker's CPU), so the sleeper's
//   CAS or the futex's check sees 0 and it does not sleep on that unlock.
//   Otherwise (no membarrier, TSan) the classic three-state futex mutex:
//   state 2 = held and a thread may sleep on it; lock spins, then exchanges
//   2 until it returns 0, sleeping while the word is 2; unlock exchanges 0
//   and wakes one sleeper if it was 2. Memory order (both): each lock's
//   acquire RMW reads the previous unlock's release store or exchange.
#ifndef SHARDFILTER_ENGINE_DETAIL_SHARD_MUTEX_H_
#define SHARDFILTER_ENGINE_DETAIL_SHARD_MUTEX_H_

#include <atomic>
#include <cstdint>
#include <mutex>

#include "shardfilter/filters/detail/spin.h"  // CpuRelax
#include "shardfilter/filters/detail/tsan.h"  // SHARDFILTER_TSAN

namespace shardfilter::internal {

// True once the library has loaded where membarrier is registered (a
// library not built with TSan): ShortMutex's plain-store unlock (above).
// Constant after the library's static initialisation, before any lock is
// taken.
extern const bool g_plain_store_unlock;  // engine/internal/shard_mutex.cc

class ShortMutex {
 public:
  ShortMutex() = default;
  ShortMutex(const ShortMutex&) = delete;
  ShortMutex& operator=(const ShortMutex&) = delete;

  void lock() {
    uint32_t free = 0;
    if (state_.compare_exchange_strong(free, 1, std::memory_order_acquire))
        [[likely]] {
      return;
    }
    LockSlow();
  }
  bool try_lock() {
    uint32_t free = 0;
    return state_.compare_exchange_strong(free, 1, std::memory_order_acquire);
  }
  // Always inline, the wake out of line: with notify_one inline, g++ -O3
  // -march=native makes the whole unlock a call on the cuckoo handle's
  // add.
  [[gnu::always_inline]] void unlock() {
    // The library's flag, not this caller's build: a caller built with TSan
    // against a plain library unlocks as the library's sleepers expect.
    if (g_plain_store_unlock) [[likely]] {
      state_.store(0, std::memory_order_release);
      // The unlocker's half of the handshake: the heavy barrier of a
      // sleeper orders the store before the load below.
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (sleepers_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
        WakeOne();
      }
      return;
    }
    if (state_.exchange(0, std::memory_order_release) == 2) [[unlikely]] {
      WakeOne();
    }
  }

 private:
  // About 1-2 us of pauses: several times the longest op the lock guards,
  // short of a scheduler round trip.
  static constexpr int kSpins = 100;

  // Out of line (shard_mutex.cc): the spin, then the sleep.
  void LockSlow();
  // Out of line (shard_mutex.cc): wakes one sleeper (state_.notify_one).
  void WakeOne();

  std::atomic<uint32_t> state_{0};
  // Threads past their spin, in the plain-store mode (written by them).
  std::atomic<uint32_t> sleepers_{0};
};

// A thread's reader slot (ShardMutex's fast path). Slots live in a
// process-wide registry, are claimed by a thread at its first shared lock
// and given back when it ends (to be claimed again by a later thread), and
// are never freed: a writer may be reading any of them.
struct alignas(64) ReaderSlot {
  constexpr ReaderSlot() = default;
  constexpr explicit ReaderSlot(const void* sentinel) : held(sentinel) {}

  // The ShardMutex this thread holds shared through the slot, or null.
  // Written by the owning thread only; read by writers.
  std::atomic<const void*> held{nullptr};
  std::atomic<bool> claimed{false};
  ReaderSlot* next = nullptr;  // registry order; constant once published
};

// This thread's slot. Until the thread's first shared lock claims one (out
// of line, shard_mutex.cc), and after its teardown, it points to a slot
// whose `held` is never null, so the fast path needs no other test: such
// a thread takes the slow path, which claims, or takes the counter's path.
// So does every thread of a process where the kernel offers no membarrier.
// Plain TLS (__thread: a constant initialiser, no wrapper call). Read by
// callers' code too (the inline Bloom add): an executable reads it with one
// %fs-relative load (initial-exec, through the GOT when the library is
// shared), code built as a shared object through __tls_get_addr. A TSan
// build's readers announce with seq_cst stores and its writers rely on
// them (no membarrier): code that takes these locks and the library are
// built with the same sanitizer setting (a TSan caller of a plain library
// only announces more strongly than needed).
extern __thread ReaderSlot* tls_reader_slot;
// Slots in the registry (claimed or free): the most threads that have used
// shard locks at once, plus the free ones. For tests.
uint32_t ReaderSlotCount();

class ShardMutex {
 public:
  ShardMutex() = default;
  ShardMutex(const ShardMutex&) = delete;
  ShardMutex& operator=(const ShardMutex&) = delete;

  void lock_shared() {
    ReaderSlot* slot = tls_reader_slot;
    if (slot->held.load(std::memory_order_relaxed) == nullptr) [[likely]] {
      Announce(*slot);
      if ((state_.load(std::memory_order_seq_cst) & kWriter) == 0) [[likely]] {
        return;
      }
    }
    LockSharedSlow();
  }
  void unlock_shared() {
    ReaderSlot* slot = tls_reader_slot;
    if (slot->held.load(std::memory_order_relaxed) == this) [[likely]] {
      slot->held.store(nullptr, std::memory_order_release);
      return;
    }
    UnlockSharedCounted();
  }

  // lock_shared's fast path alone, for a caller with a fallback: the slot
  // this thread announced in, held until UnlockSharedSlot(slot); or null,
  // holding nothing (a writer holds or waits, the thread's slot is busy or
  // not claimed yet, no membarrier): lock_shared decides then. The slot
  // comes back with the hold, so the unlock needs no second look at the
  // thread's slot (the TLS load and the `held == this` test).
  ReaderSlot* TryLockSharedSlot() {
    ReaderSlot* slot = tls_reader_slot;
    if (slot->held.load(std::memory_order_relaxed) != nullptr) return nullptr;
    Announce(*slot);
    if ((state_.load(std::memory_order_seq_cst) & kWriter) == 0) [[likely]] {
      return slot;
    }
    slot->held.store(nullptr, std::memory_order_release);  // withdraw
    return nullptr;
  }
  // REQUIRES: `slot` from TryLockSharedSlot on this mutex, still held.
  static void UnlockSharedSlot(ReaderSlot* slot) {
    slot->held.store(nullptr, std::memory_order_release);
  }

  // Whether a writer holds the lock or waits for it (a figure: the bit
  // may change right after), for a section that excludes writers by a lock
  // of its own and yields to them (ShardedFilter::TryFastOrderedAdd).
  [[gnu::always_inline]] bool WriterPending() const {
    return (state_.load(std::memory_order_relaxed) & kWriter) != 0;
  }
  // Out of line (shard_mutex.cc): the writer's barrier and waits.
  void lock();
  void unlock() {
    state_.fetch_and(~kWriter, std::memory_order_release);
    state_.notify_all();  // readers that backed out
    writer_mu_.unlock();
  }

 private:
  static constexpr uint32_t kWriter = uint32_t{1} << 31;
  static constexpr uint32_t kReaders = kWriter - 1;

  // The reader's half of the handshake (above): under TSan, which models
  // no membarrier, a seq_cst store.
  void Announce(ReaderSlot& slot) {
#if SHARDFILTER_TSAN
    slot.held.store(this, std::memory_order_seq_cst);
#else
    slot.held.store(this, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
  }
  // Out of line (shard_mutex.cc): withdraws an announcement that met the
  // writer bit, or claims the thread's slot and announces; else, and when
  // the announcement met the bit, the counter's path.
  void LockSharedSlow();
  void LockSharedCounted();
  // A counted reader leaves (and wakes a writer waiting for the last one).
  // Out of line: the inline unlock stays one load, compare and store.
  void UnlockSharedCounted();
  // Waits until no thread's slot holds this lock. REQUIRES: the writer
  // bit set by this thread.
  void WaitForSlotReaders() const;

  std::atomic<uint32_t> state_{0};
  // One writer at a time. A ShortMutex (4 bytes, not std::mutex's 40), so
  // that the whole lock fits in the shard's first line beside the other
  // fields every mutation writes (shard.h).
  ShortMutex writer_mu_;
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_DETAIL_SHARD_MUTEX_H_
