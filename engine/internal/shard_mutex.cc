// ShardMutex's writer side and the registry of reader slots
// (engine/detail/shard_mutex.h: the protocol and why it is sound).
#include "shardfilter/engine/detail/shard_mutex.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "shardfilter/filters/detail/tsan.h"

namespace shardfilter::internal {

namespace {

// For a thread that has not claimed a slot yet, or is past its teardown,
// or in a process without slots: `held` is never null (its own address),
// so lock_shared's fast path sends the thread to LockSharedSlow.
// constinit: set before any code runs (no static-initialisation order).
constinit ReaderSlot g_unclaimed{&g_unclaimed};
constinit ReaderSlot g_retired{&g_retired};  // past teardown, or no slots

}  // namespace

__thread ReaderSlot* tls_reader_slot = &g_unclaimed;

namespace {

long Membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0, 0); }

// Slots are used when the reader's announcement can be ordered: under
// TSan by seq_cst stores (ShardMutex::Announce), else by membarrier
// (registered here once, before any slot is claimed). Decided once.
bool Asymmetric() {
  static const bool asymmetric = [] {
    if (SHARDFILTER_TSAN) return false;
    return Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }();
  return asymmetric;
}
bool SlotsUsed() { return SHARDFILTER_TSAN || Asymmetric(); }

// The writer's half of the announcement in the asymmetric mode: a full
// barrier on every CPU running a thread of this process.
void HeavyBarrier() {
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // A forked child inherits the parent's slots but maybe not its
  // registration: register again. Then the global command (slower: the
  // kernel waits for every CPU), which needs none.
  if (Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return;
  }
  if (Membarrier(MEMBARRIER_CMD_GLOBAL) == 0) return;
  // Readers would be unordered against this writer: a lost exclusion is
  // worse than a stop.
  std::fputs("shardfilter: membarrier failed after it was registered\n",
             stderr);
  std::abort();
}

}  // namespace

// Registers membarrier when the library loads (Asymmetric), so that the
// mode is fixed before any ShortMutex is unlocked.
const bool g_plain_store_unlock = !SHARDFILTER_TSAN && Asymmetric();

void ShortMutex::WakeOne() { state_.notify_one(); }

void ShortMutex::LockSlow() {
  for (int i = 0; i < kSpins; ++i) {
    CpuRelax();
    uint32_t free = 0;
    if (state_.load(std::memory_order_relaxed) == 0 &&
        state_.compare_exchange_weak(free, 1, std::memory_order_acquire)) {
      return;
    }
  }
  if (g_plain_store_unlock) {
    // The sleeper's half of the handshake (shard_mutex.h): after the
    // barrier every unlock either sees this thread counted or has made its
    // store of 0 visible to the CAS and the wait below.
    sleepers_.fetch_add(1, std::memory_order_relaxed);
    HeavyBarrier();
    for (;;) {
      uint32_t free = 0;
      if (state_.compare_exchange_strong(free, 1, std::memory_order_acquire)) {
        break;
      }
      state_.wait(1, std::memory_order_relaxed);  // while the word is 1
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  while (state_.exchange(2, std::memory_order_acquire) != 0) {
    state_.wait(2, std::memory_order_relaxed);
  }
}

namespace {

// The registry: a list that only grows (slots are reused, never freed).
std::atomic<ReaderSlot*> g_slots{nullptr};

// Gives the thread's slot back when the thread ends.
struct SlotRelease {
  ReaderSlot* slot = nullptr;
  ~SlotRelease() {
    tls_reader_slot = &g_retired;
    if (slot != nullptr) slot->claimed.store(false, std::memory_order_release);
  }
};
thread_local SlotRelease t_release;

// This thread's slot, claimed now (from the free ones, else a new one), or
// the retired sentinel in a process without slots.
ReaderSlot* ClaimReaderSlot() {
  if (!SlotsUsed()) {
    tls_reader_slot = &g_retired;
    return &g_retired;
  }
  ReaderSlot* slot = nullptr;
  for (ReaderSlot* s = g_slots.load(std::memory_order_acquire); s != nullptr;
       s = s->next) {
    bool free = false;
    if (s->claimed.compare_exchange_strong(free, true,
                                           std::memory_order_acquire)) {
      slot = s;
      break;
    }
  }
  if (slot == nullptr) {
    slot = new ReaderSlot;  // never freed: writers may read it any time
    slot->claimed.store(true, std::memory_order_relaxed);
    slot->next = g_slots.load(std::memory_order_relaxed);
    // seq_cst: see WaitForSlotReaders.
    while (!g_slots.compare_exchange_weak(slot->next, slot,
                                          std::memory_order_seq_cst,
                                          std::memory_order_relaxed)) {
    }
  }
  t_release.slot = slot;  // registers the release at the thread's end
  tls_reader_slot = slot;
  return slot;
}

}  // namespace

void ShardMutex::LockSharedSlow() {
  ReaderSlot* slot = tls_reader_slot;
  if (slot->held.load(std::memory_order_relaxed) == this) {
    // Announced and met the writer bit: withdraw, wait as a counted reader.
    slot->held.store(nullptr, std::memory_order_release);
  } else if (slot == &g_unclaimed) {
    slot = ClaimReaderSlot();
    if (slot->held.load(std::memory_order_relaxed) == nullptr) {
      Announce(*slot);
      if ((state_.load(std::memory_order_seq_cst) & kWriter) == 0) return;
      slot->held.store(nullptr, std::memory_order_release);
    }
  }
  LockSharedCounted();
}

void ShardMutex::LockSharedCounted() {
  uint32_t s = state_.fetch_add(1, std::memory_order_acquire);
  while ((s & kWriter) != 0) {
    // Back out, so that the writer can drain the readers inside.
    s = state_.fetch_sub(1, std::memory_order_relaxed) - 1;
    if ((s & kWriter) != 0 && (s & kReaders) == 0) state_.notify_all();
    while ((s & kWriter) != 0) {
      state_.wait(s, std::memory_order_relaxed);
      s = state_.load(std::memory_order_relaxed);
    }
    s = state_.fetch_add(1, std::memory_order_acquire);
  }
}

void ShardMutex::UnlockSharedCounted() {
  const uint32_t s = state_.fetch_sub(1, std::memory_order_release);
  if ((s & kWriter) != 0 && (s & kReaders) == 1) [[unlikely]] {
    state_.notify_all();  // the writer waits for the last counted reader
  }
}

uint32_t ReaderSlotCount() {
  uint32_t n = 0;
  for (ReaderSlot* s = g_slots.load(std::memory_order_acquire); s != nullptr;
       s = s->next) {
    ++n;
  }
  return n;
}

void ShardMutex::lock() {
  writer_mu_.lock();
  // seq_cst (a locked RMW): the writer's half of the handshake.
  uint32_t s = state_.fetch_or(kWriter, std::memory_order_seq_cst) | kWriter;
  WaitForSlotReaders();
  while ((s & kReaders) != 0) {
    state_.wait(s, std::memory_order_acquire);
    s = state_.load(std::memory_order_acquire);
  }
}

void ShardMutex::WaitForSlotReaders() const {
  if (!SHARDFILTER_TSAN && Asymmetric()) HeavyBarrier();
  // Slots reclaimed by a new thread are among those read here (the list
  // only grows). A slot this load misses was published by a seq_cst CAS
  // later than it in the seq_cst order, hence later than the bit's
  // fetch_or, and its thread's announcement loads the word after that CAS:
  // it sees the bit.
  for (ReaderSlot* slot = g_slots.load(std::memory_order_seq_cst);
       slot != nullptr; slot = slot->next) {
    // A reader's section is one op (up to its journal's sync): spin a
    // little, then yield, then sleep.
    for (int spins = 0;
         slot->held.load(std::memory_order_seq_cst) == this;  // handshake
         ++spins) {
      if (spins < 64) {
        CpuRelax();
      } else if (spins < 128) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }
}

}  // namespace shardfilter::internal
