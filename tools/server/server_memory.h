// ServerMemory: shardfilter-server's memory as one figure against one limit
// (--maxmemory, Redis's name and semantics: docs/server.md "Memory").
//
// The limit is the process's MemoryBudget (engine/memory_budget.h), the one
// every filter table, growth, load, import and migration target reserves
// from before it allocates. What the engine does not reserve, the server
// measures and adds to the same budget (MemoryBudget::AddExternal), so that
// used_memory counts it and later reservations see less room:
//   - client buffers (input and output of every connection): exact, the
//     loops report every change (AddClientBytes);
//   - RocksDB's memtables, block caches and table readers, and the resident
//     pages of the memory-mapped journals (the process's file-backed RSS
//     above what it was at start): sampled (Sample), ten times a second and
//     at every INFO.
//
// Thread safety: every method may be called from any thread.
#ifndef SHARDFILTER_TOOLS_SERVER_SERVER_MEMORY_H_
#define SHARDFILTER_TOOLS_SERVER_SERVER_MEMORY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/memory_budget.h"

namespace shardfilter::server {

class ServerMemory {
 public:
  // `db` may be null (no store figures); it must outlive this object.
  ServerMemory(std::shared_ptr<MemoryBudget> budget, const Database* db);

  const std::shared_ptr<MemoryBudget>& budget() const { return budget_; }
  // --maxmemory as Redis reports it: 0 when there is no limit.
  uint64_t maxmemory() const;

  void AddClientBytes(int64_t delta);
  uint64_t client_bytes() const {
    return clients_.load(std::memory_order_relaxed);
  }
  // Re-measures the store and journal figures; the budget's external
  // memory moves by their change.
  void Sample();
  // used_memory is past --maxmemory: measured memory grew after the
  // reservations were made (a loaded filter's journal pages, memtables).
  bool over() const { return budget_->total() > budget_->limit(); }
  uint64_t store_bytes() const;
  uint64_t journal_bytes() const;

  // INFO's "# Memory" section (Redis's field names). `filter_bytes`: the
  // loaded filters' tables.
  void AppendInfo(uint64_t filter_bytes, std::string* out);

 private:
  const std::shared_ptr<MemoryBudget> budget_;
  const Database* db_;
  std::atomic<uint64_t> clients_{0};
  mutable std::mutex mu_;
  uint64_t store_ = 0;    // GUARDED_BY(mu_)
  uint64_t journal_ = 0;  // GUARDED_BY(mu_)
  const uint64_t file_rss_at_start_;
};

// The process's resident set and its file-backed part (/proc/self/status
// VmRSS, RssFile), in bytes; 0 when unknown.
uint64_t ResidentBytes();
uint64_t FileResidentBytes();

// "1.50M": Redis's *_human format.
std::string HumanBytes(uint64_t bytes);

}  // namespace shardfilter::server

#endif  // SHARDFILTER_TOOLS_SERVER_SERVER_MEMORY_H_
