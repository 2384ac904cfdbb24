// CommandStats: INFO commandstats and errorstats, counted by Dispatch
// (command_table.cc) for a host that offers them (Host::Stats()).
//
//   cmdstat_bf.add:calls=3,usec=12,usec_per_call=4.00,rejected_calls=0,
//     failed_calls=1                      (Redis 7's format, one line)
//   errorstat_ERR:count=2
//
// calls / usec / failed_calls: commands that ran (failed: the reply held an
// error, also one nested in an array); rejected_calls: refused before they
// ran (arity, NOAUTH, refused while queued in MULTI). An error reply is
// counted under its code: the text up to its first space when that space
// is within the first 32 bytes, else "ERR" (Redis's rule). Commands queued
// by MULTI count when EXEC runs them (under their own name, not EXEC's).
//
// Thread safety: every method may run on any number of threads at once.
// Counters are relaxed atomics: each is an independent statistic, read
// alone, and no other memory is published through them. A client that got
// a reply sees its command counted: the count is made before the reply
// leaves the loop, and the socket's hand-off orders the two. Reset stores
// zeros: increments racing with it may survive or not, as in Redis. Error codes
// are interned in a fixed table (at most kMaxErrorCodes distinct codes, then
// further codes are not counted; Redis stops at 128 too) without a lock: a slot
// is claimed by CAS and published with a release store of its state.
#ifndef SHARDFILTER_TOOLS_COMMANDS_COMMAND_STATS_H_
#define SHARDFILTER_TOOLS_COMMANDS_COMMAND_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tools/resp/reply_writer.h"

namespace shardfilter::commands {

struct CommandSpec;

class CommandStats {
 public:
  static constexpr size_t kMaxErrorCodes = 128;

  CommandStats();

  // A command that ran for nanos; failed when its reply held an error.
  void RecordCall(const CommandSpec& spec, uint64_t nanos, bool failed);
  // A command refused before it ran.
  void RecordRejected(const CommandSpec& spec);
  // One error reply (the whole text, e.g. "WRONGTYPE Operation ...").
  void RecordError(std::string_view text);
  // CONFIG RESETSTAT.
  void Reset();

  // "# Commandstats\r\n" then one line per command called or rejected
  // since the last reset, in the command table's order.
  void AppendCommandstats(std::string* out) const;
  // "# Errorstats\r\n" then one line per error code seen.
  void AppendErrorstats(std::string* out) const;

 private:
  struct alignas(64) Counters {  // one cache line per command
    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> nanos{0};
    std::atomic<uint64_t> rejected{0};
    std::atomic<uint64_t> failed{0};
  };
  struct ErrorSlot {
    // 0 free, 1 being claimed (code being written), 2 published.
    std::atomic<uint32_t> state{0};
    uint8_t len = 0;
    char code[32] = {};
    std::atomic<uint64_t> count{0};
  };
  Counters& For(const CommandSpec& spec);

  std::unique_ptr<Counters[]> commands_;
  std::array<ErrorSlot, kMaxErrorCodes> errors_;
};

// The writer Dispatch hands a command: forwards every reply to the real
// writer and counts error replies (into CommandStats and errors()).
class StatsWriter final : public resp::ReplyWriter {
 public:
  StatsWriter(resp::ReplyWriter& inner, CommandStats& stats)
      : inner_(inner), stats_(stats) {}

  resp::ReplyWriter& inner() { return inner_; }
  uint64_t errors() const { return errors_; }

  int protocol() const override { return inner_.protocol(); }
  void SetProtocol(int protocol) override { inner_.SetProtocol(protocol); }
  void SimpleString(std::string_view s) override { inner_.SimpleString(s); }
  void Error(std::string_view text) override {
    ++errors_;
    stats_.RecordError(text);
    inner_.Error(text);
  }
  void Integer(int64_t v) override { inner_.Integer(v); }
  void Bulk(std::string_view s) override { inner_.Bulk(s); }
  void Null() override { inner_.Null(); }
  void NullArray() override { inner_.NullArray(); }
  void Array(size_t n) override { inner_.Array(n); }
  void Map(size_t pairs) override { inner_.Map(pairs); }
  void Set(size_t n) override { inner_.Set(n); }
  void Boolean(bool b) override { inner_.Boolean(b); }
  void Double(double d) override { inner_.Double(d); }
  void Verbatim(std::string_view format, std::string_view s) override {
    inner_.Verbatim(format, s);
  }

 private:
  resp::ReplyWriter& inner_;
  CommandStats& stats_;
  uint64_t errors_ = 0;
};

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_COMMAND_STATS_H_
