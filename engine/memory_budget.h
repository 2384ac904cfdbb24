// MemoryBudget: the memory a process (or the part of it that shares one
// budget) may hold at once. The engine checks it before every allocation a
// caller can cause (DESIGN.md invariant 8): creating a filter, growing one
// (a new link), building a migration target, importing, loading a store;
// exceeding it is ResourceExhausted with the figure needed and the budget,
// and changes nothing. A host that measures memory of its own (RocksDB's
// caches, journal pages, client buffers: AddExternal) counts it against
// the same limit, which is then the process's (shardfilter-server's
// --maxmemory).
//
//   auto budget = std::make_shared<MemoryBudget>(4ull << 30);  // 4 GiB
//   DatabaseOptions o{.path = dir};
//   o.memory_budget = budget;            // a Database's filters
//   ShardedFilter::Create(spec, budget);  // in-memory filters (Redis module)
//
// What is counted: each link's table (bits, counters or fingerprint slots),
// computed from its parameters before it is allocated, or the serialized
// size of a shard being loaded; not the small fixed per-shard metadata and
// lock arrays. A filter gives its bytes back when its last handle goes.
//
// The default (MemoryBudget::Default(), used when none is given) is
// kDefaultBudgetShare of the lower of physical memory and the limit of the
// process's own cgroup and its ancestors (cgroup v2 memory.max, v1
// memory.limit_in_bytes), like valkey-bloom's per-object limit but for the
// whole process.
//
// Thread safety: every method may be called concurrently.
#ifndef SHARDFILTER_ENGINE_MEMORY_BUDGET_H_
#define SHARDFILTER_ENGINE_MEMORY_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shardfilter/filters/status.h"

namespace shardfilter {

// The default budget's share of the machine's (or cgroup's) memory: half,
// leaving the rest to RocksDB's caches, the journal and the host process.
inline constexpr double kDefaultBudgetShare = 0.5;

class MemoryBudget {
 public:
  // A limit that never refuses (Redis's maxmemory 0).
  static constexpr uint64_t kUnlimited = UINT64_MAX;

  // A budget of `limit_bytes` (0: nothing may be allocated).
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // min(physical memory, cgroup limit): what the process may use at most.
  static uint64_t AvailableMemory();
  // Physical memory (sysconf), whatever the cgroup allows.
  static uint64_t PhysicalMemory();
  // The lowest memory limit of the cgroup named in `proc_self_cgroup` (the
  // text of /proc/self/cgroup) and its ancestors, under `root` (normally
  // /sys/fs/cgroup): cgroup v2 (the "0::" line, memory.max) and v1 (the
  // memory controller's line, memory/.../memory.limit_in_bytes). 0 when
  // none is set ("max", or v1's ~2^63 for unlimited counts as none).
  static uint64_t CgroupLimit(std::string_view proc_self_cgroup,
                              const std::string& root);
  // kDefaultBudgetShare of AvailableMemory().
  static uint64_t DefaultLimit();
  // The process-wide budget used when none is given, created on first use
  // with DefaultLimit(). Its limit may be changed (SetLimit: the CLI's
  // --memory-budget, the server's --maxmemory).
  static const std::shared_ptr<MemoryBudget>& Default();

  // Takes `bytes`, or returns ResourceExhausted ("<what> needs N bytes
  // (X MiB) but the memory budget of L bytes has R left") and takes
  // nothing. What is left is the limit minus used() and external(). Never
  // blocks.
  Status Reserve(uint64_t bytes, std::string_view what);
  // Gives back bytes taken by Reserve.
  void Release(uint64_t bytes);

  // Memory the owner measured outside reservations, raised or lowered by
  // `delta` (never below 0): it counts against the limit (later Reserves
  // see less room) but is never refused here; the owner bounds it.
  void AddExternal(int64_t delta);

  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  // A lower limit refuses later reservations; nothing held is taken back.
  void SetLimit(uint64_t bytes) {
    limit_.store(bytes, std::memory_order_relaxed);
  }
  // Bytes taken by Reserve.
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t external() const {
    return external_.load(std::memory_order_relaxed);
  }
  // used() + external(): the process's memory as the budget counts it.
  uint64_t total() const { return used() + external(); }
  // The highest total() seen at a Reserve or AddExternal.
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  void NotePeak();

  // Relaxed: the CAS on used_ alone keeps used_ + external_ <= limit_ at
  // reservation (external_ may move meanwhile: it is a measurement); the
  // counters order nothing else.
  std::atomic<uint64_t> limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> external_{0};
  std::atomic<uint64_t> peak_{0};
};

// "512M" / "4G" / "1.5GiB" / "1000000": k M G T are powers of 1024 here
// (memory), with an optional "iB" or "B"; a bare number is bytes.
// InvalidArgument otherwise.
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_MEMORY_BUDGET_H_
