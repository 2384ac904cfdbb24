#include "tools/server/server_memory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace shardfilter::server {
namespace {

// The "<name>: <n> kB" line of /proc/self/status, in bytes; 0 if absent.
uint64_t StatusField(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string want = std::string(name) + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, want.size(), want) != 0) continue;
    std::istringstream fields(line.substr(want.size()));
    uint64_t kb = 0;
    fields >> kb;
    return kb * 1024;
  }
  return 0;
}

void Field(std::string* out, const char* name, const std::string& value) {
  *out += name;
  *out += ':';
  *out += value;
  *out += "\r\n";
}

}  // namespace

uint64_t ResidentBytes() { return StatusField("VmRSS"); }
uint64_t FileResidentBytes() { return StatusField("RssFile"); }

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "K", "M", "G", "T", "P"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%s", v, units[u]);
  return buf;
}

ServerMemory::ServerMemory(std::shared_ptr<MemoryBudget> budget,
                           const Database* db)
    : budget_(std::move(budget)),
      db_(db),
      file_rss_at_start_(FileResidentBytes()) {}

uint64_t ServerMemory::maxmemory() const {
  const uint64_t limit = budget_->limit();
  return limit == MemoryBudget::kUnlimited ? 0 : limit;
}

void ServerMemory::AddClientBytes(int64_t delta) {
  if (delta == 0) return;
  if (delta > 0) {
    clients_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
  } else {
    clients_.fetch_sub(static_cast<uint64_t>(-delta),
                       std::memory_order_relaxed);
  }
  budget_->AddExternal(delta);
}

void ServerMemory::Sample() {
  const uint64_t store = db_ != nullptr ? db_->StoreMemoryBytes() : 0;
  const uint64_t file_rss = FileResidentBytes();
  // Pages of the binary and libraries are resident from the start; what
  // grows beyond is the mapped journals' pages (and the dedup sets').
  const uint64_t journal =
      file_rss > file_rss_at_start_ ? file_rss - file_rss_at_start_ : 0;
  std::lock_guard lock(mu_);
  budget_->AddExternal(static_cast<int64_t>(store + journal) -
                       static_cast<int64_t>(store_ + journal_));
  store_ = store;
  journal_ = journal;
}

uint64_t ServerMemory::store_bytes() const {
  std::lock_guard lock(mu_);
  return store_;
}

uint64_t ServerMemory::journal_bytes() const {
  std::lock_guard lock(mu_);
  return journal_;
}

void ServerMemory::AppendInfo(uint64_t filter_bytes, std::string* out) {
  Sample();
  const uint64_t used = budget_->total();
  const uint64_t rss = ResidentBytes();
  const uint64_t peak = std::max(budget_->peak(), used);
  const uint64_t max = maxmemory();
  const uint64_t system = MemoryBudget::PhysicalMemory();
  *out += "# Memory\r\n";
  Field(out, "used_memory", std::to_string(used));
  Field(out, "used_memory_human", HumanBytes(used));
  Field(out, "used_memory_rss", std::to_string(rss));
  Field(out, "used_memory_rss_human", HumanBytes(rss));
  Field(out, "used_memory_peak", std::to_string(peak));
  Field(out, "used_memory_peak_human", HumanBytes(peak));
  // What used_memory is made of (shardfilter's own fields): the engine's
  // reservations (filter tables, growth, loads, imports, migration
  // targets, LOADCHUNK staging) and what the server measures.
  Field(out, "used_memory_reserved", std::to_string(budget_->used()));
  Field(out, "used_memory_filters", std::to_string(filter_bytes));
  Field(out, "used_memory_store", std::to_string(store_bytes()));
  Field(out, "used_memory_journal", std::to_string(journal_bytes()));
  Field(out, "mem_clients_normal", std::to_string(client_bytes()));
  Field(out, "total_system_memory", std::to_string(system));
  Field(out, "total_system_memory_human", HumanBytes(system));
  Field(out, "maxmemory", std::to_string(max));
  Field(out, "maxmemory_human", HumanBytes(max));
  Field(out, "maxmemory_policy", "noeviction");
}

}  // namespace shardfilter::server
