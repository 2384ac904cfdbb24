#include "tools/commands/command_stats.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "tools/commands/command_table.h"

namespace shardfilter::commands {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// Redis's afterErrorReply: the code ends at the first space within the
// first 32 bytes; without one the error counts as "ERR".
std::string_view ErrorCode(std::string_view text) {
  const size_t space = text.substr(0, 32).find(' ');
  if (space == std::string_view::npos || space == 0) return "ERR";
  return text.substr(0, space);
}

uint64_t Hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

CommandStats::CommandStats()
    : commands_(std::make_unique<Counters[]>(AllCommands().size())) {}

CommandStats::Counters& CommandStats::For(const CommandSpec& spec) {
  return commands_[static_cast<size_t>(&spec - AllCommands().data())];
}

void CommandStats::RecordCall(const CommandSpec& spec, uint64_t nanos,
                              bool failed) {
  Counters& c = For(spec);
  c.calls.fetch_add(1, kRelaxed);
  c.nanos.fetch_add(nanos, kRelaxed);
  if (failed) c.failed.fetch_add(1, kRelaxed);
}

void CommandStats::RecordRejected(const CommandSpec& spec) {
  For(spec).rejected.fetch_add(1, kRelaxed);
}

void CommandStats::RecordError(std::string_view text) {
  const std::string_view code = ErrorCode(text);
  size_t i = Hash(code) % kMaxErrorCodes;
  for (size_t probes = 0; probes < kMaxErrorCodes;) {
    ErrorSlot& slot = errors_[i];
    uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state == 0) {
      // Claim the free slot; the release store of 2 publishes code/len to
      // every reader that loads state 2 with acquire.
      if (slot.state.compare_exchange_strong(state, 1,
                                             std::memory_order_acquire)) {
        slot.len = static_cast<uint8_t>(code.size());
        std::memcpy(slot.code, code.data(), code.size());
        slot.state.store(2, std::memory_order_release);
        slot.count.fetch_add(1, kRelaxed);
        return;
      }
      continue;  // lost the race: look at the slot again
    }
    if (state == 1) {  // another thread is writing this slot's code
      std::this_thread::yield();
      continue;
    }
    if (std::string_view(slot.code, slot.len) == code) {
      slot.count.fetch_add(1, kRelaxed);
      return;
    }
    i = (i + 1) % kMaxErrorCodes;
    ++probes;
  }
  // The table is full: further codes are not counted.
}

void CommandStats::Reset() {
  for (size_t i = 0; i < AllCommands().size(); ++i) {
    commands_[i].calls.store(0, kRelaxed);
    commands_[i].nanos.store(0, kRelaxed);
    commands_[i].rejected.store(0, kRelaxed);
    commands_[i].failed.store(0, kRelaxed);
  }
  // Codes stay interned (a slot is never freed); a count of 0 hides them.
  for (ErrorSlot& slot : errors_) slot.count.store(0, kRelaxed);
}

void CommandStats::AppendCommandstats(std::string* out) const {
  *out += "# Commandstats\r\n";
  const auto all = AllCommands();
  for (size_t i = 0; i < all.size(); ++i) {
    const uint64_t calls = commands_[i].calls.load(kRelaxed);
    const uint64_t rejected = commands_[i].rejected.load(kRelaxed);
    if (calls == 0 && rejected == 0) continue;
    const uint64_t usec = commands_[i].nanos.load(kRelaxed) / 1000;
    const double per_call =
        calls == 0 ? 0.0
                   : static_cast<double>(commands_[i].nanos.load(kRelaxed)) /
                         1000.0 / static_cast<double>(calls);
    char line[256];
    std::snprintf(
        line, sizeof(line),
        "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
        "rejected_calls=%llu,failed_calls=%llu\r\n",
        all[i].name, static_cast<unsigned long long>(calls),
        static_cast<unsigned long long>(usec), per_call,
        static_cast<unsigned long long>(rejected),
        static_cast<unsigned long long>(commands_[i].failed.load(kRelaxed)));
    *out += line;
  }
}

void CommandStats::AppendErrorstats(std::string* out) const {
  *out += "# Errorstats\r\n";
  // Sorted by code, as Redis lists them (its codes are a radix tree).
  std::vector<std::pair<std::string_view, uint64_t>> seen;
  for (const ErrorSlot& slot : errors_) {
    if (slot.state.load(std::memory_order_acquire) != 2) continue;
    const uint64_t n = slot.count.load(kRelaxed);
    if (n > 0) seen.emplace_back(std::string_view(slot.code, slot.len), n);
  }
  std::sort(seen.begin(), seen.end());
  for (const auto& [code, n] : seen) {
    *out += "errorstat_";
    *out += code;
    *out += ":count=" + std::to_string(n) + "\r\n";
  }
}

}  // namespace shardfilter::commands
