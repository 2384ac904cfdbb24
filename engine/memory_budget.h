// MemoryBudget: the bytes of filter tables that a process (or the part of
// it that shares one budget) may hold at once. The engine checks it before
// every allocation a caller can cause (DESIGN.md invariant 8): creating a
// filter, growing one (a new link), building a migration target, importing,
// loading a store; exceeding it is ResourceExhausted with the figure needed
// and the budget, and changes nothing.
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
// kDefaultBudgetShare of the lower of physical memory and the process's
// cgroup limit (cgroup v2 memory.max, v1 memory.limit_in_bytes), like
// valkey-bloom's per-object limit but for the whole process.
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
  // A budget of `limit_bytes` (0: nothing may be allocated).
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // min(physical memory, cgroup limit): what the process may use at most.
  static uint64_t AvailableMemory();
  // kDefaultBudgetShare of AvailableMemory().
  static uint64_t DefaultLimit();
  // The process-wide budget used when none is given, created on first use
  // with DefaultLimit(). Its limit may be changed (SetLimit: the CLI's and
  // the server's --memory-budget).
  static const std::shared_ptr<MemoryBudget>& Default();

  // Takes `bytes`, or returns ResourceExhausted ("<what> needs N bytes
  // (X MiB) but the memory budget of L bytes has R left") and takes
  // nothing. Never blocks.
  Status Reserve(uint64_t bytes, std::string_view what);
  // Gives back bytes taken by Reserve.
  void Release(uint64_t bytes);

  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }
  // A lower limit refuses later reservations; nothing held is taken back.
  void SetLimit(uint64_t bytes) {
    limit_.store(bytes, std::memory_order_relaxed);
  }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  // Relaxed: the CAS on used_ alone keeps used_ <= limit_ at reservation;
  // the counters order nothing else.
  std::atomic<uint64_t> limit_;
  std::atomic<uint64_t> used_{0};
};

// "512M" / "4G" / "1.5GiB" / "1000000": k M G T are powers of 1024 here
// (memory), with an optional "iB" or "B"; a bare number is bytes.
// InvalidArgument otherwise.
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_MEMORY_BUDGET_H_
