// DispatchPipeline: consecutive adds to one key coalesced into one batch,
// and consecutive queries of one key into one batch query.
//
// Why: with a journalled durability every engine add call is one RocksDB
// write (WAL append + memtable insert); 16 pipelined BF.ADDs were 16 writes.
// As one batch they are one write per shard touched, and the answers are
// those of running the commands one by one: the engine counts an item
// repeated in the run as new once (Bloom) and bounds copies across the run
// (cuckoo), and a non-scaling filter that fills up fails every later
// item (a Bloom filter's "full" is monotonic). Queries change nothing, so
// a run of BF.EXISTS / BF.MEXISTS (or CF.EXISTS / CF.MEXISTS) of one key is
// one lookup of the key and one MayContainMany, whose prefetching overlaps
// the items' cache misses, with exactly the commands' replies.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tools/commands/command_stats.h"
#include "tools/commands/command_table.h"
#include "tools/commands/filter_access.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

enum class Kind {
  kNone,
  kBfAdd,
  kBfMAdd,
  kCfAdd,
  kBfExists,
  kBfMExists,
  kCfExists,
  kCfMExists
};

Kind KindOf(Args args) {
  if (args.size() < 3) return Kind::kNone;
  const std::string_view name = args[0];
  const bool one = args.size() == 3;
  switch (name.size()) {
    case 6:
      if (EqualsIgnoreCase(name, "BF.ADD"))
        return one ? Kind::kBfAdd : Kind::kNone;
      if (EqualsIgnoreCase(name, "CF.ADD"))
        return one ? Kind::kCfAdd : Kind::kNone;
      break;
    case 7:
      if (EqualsIgnoreCase(name, "BF.MADD")) return Kind::kBfMAdd;
      break;
    case 9:
      if (EqualsIgnoreCase(name, "BF.EXISTS")) {
        return one ? Kind::kBfExists : Kind::kNone;
      }
      if (EqualsIgnoreCase(name, "CF.EXISTS")) {
        return one ? Kind::kCfExists : Kind::kNone;
      }
      break;
    case 10:
      if (EqualsIgnoreCase(name, "BF.MEXISTS")) return Kind::kBfMExists;
      if (EqualsIgnoreCase(name, "CF.MEXISTS")) return Kind::kCfMExists;
      break;
    default:
      break;
  }
  return Kind::kNone;
}

// What may run together: adds of one family, or queries of one family.
enum class Family { kNone, kBloomAdd, kCuckooAdd, kBloomQuery, kCuckooQuery };

Family FamilyOf(Kind k) {
  switch (k) {
    case Kind::kBfAdd:
    case Kind::kBfMAdd:
      return Family::kBloomAdd;
    case Kind::kCfAdd:
      return Family::kCuckooAdd;
    case Kind::kBfExists:
    case Kind::kBfMExists:
      return Family::kBloomQuery;
    case Kind::kCfExists:
    case Kind::kCfMExists:
      return Family::kCuckooQuery;
    case Kind::kNone:
      break;
  }
  return Family::kNone;
}

// A run's item views and results, reused by the thread's next run (no
// allocation per pipelined read in the common case). A run is never
// re-entered: its replies call no command.
struct RunScratch {
  std::vector<std::string_view> items;
  std::vector<Status> statuses;
  std::vector<uint8_t> flags;
};
RunScratch& Scratch() {
  thread_local RunScratch scratch;
  return scratch;
}
// After a run: a huge one's buffers are not kept.
void TrimScratch(RunScratch& s) {
  constexpr size_t kKeep = 1 << 16;
  if (s.items.capacity() > kKeep) std::vector<std::string_view>().swap(s.items);
  if (s.statuses.capacity() > kKeep) std::vector<Status>().swap(s.statuses);
  if (s.flags.capacity() > kKeep) std::vector<uint8_t>().swap(s.flags);
}

// INFO commandstats for a run: each command one call of an equal share of
// the run's time (the spec looked up once per distinct name).
void RecordShares(CommandStats* stats, std::span<const Args> requests,
                  size_t begin, size_t end, uint64_t share,
                  std::span<const uint8_t> failed) {
  std::string_view name;
  const CommandSpec* spec = nullptr;
  for (size_t r = begin; r < end; ++r) {
    if (spec == nullptr || requests[r][0] != name) {
      name = requests[r][0];
      spec = FindCommand(name);
    }
    stats->RecordCall(*spec, share, !failed.empty() && failed[r - begin]);
  }
}

// The items of requests[begin, end) (each `CMD key item...`), in order.
void GatherItems(std::span<const Args> requests, size_t begin, size_t end,
                 std::vector<std::string_view>* items) {
  items->clear();
  for (size_t r = begin; r < end; ++r) {
    items->insert(items->end(), requests[r].begin() + 2, requests[r].end());
  }
}

uint64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - start)
          .count());
}

// What a run did. Unless kRan nothing was answered, and the caller
// dispatches the first command alone (then tries the rest as a run) or
// every command of the run alone.
enum class RunResult { kRan, kDispatchFirst, kDispatchEach };

// Runs requests[begin, end), queries of one family of requests[begin][1],
// as one batch query. A missing key, or one of another type, answers 0 for
// every item, as BF.EXISTS and CF.EXISTS do. A key that cannot be read:
// kDispatchEach (every command answers the error).
RunResult RunQueryGroup(CommandContext& ctx, std::span<const Args> requests,
                        size_t begin, size_t end, bool bloom) {
  const auto start = std::chrono::steady_clock::now();
  TypedLookup found =
      LookupTyped(ctx, requests[begin][1],
                  bloom ? FilterType::kBloom : FilterType::kCuckoo);
  if (!found.error.ok()) return RunResult::kDispatchEach;
  RunScratch& scratch = Scratch();
  std::vector<std::string_view>& items = scratch.items;
  GatherItems(requests, begin, end, &items);
  std::vector<uint8_t>& present = scratch.flags;
  present.assign(items.size(), 0);
  if (found.handle != nullptr) found.handle->MayContainMany(items, present);
  const bool resp3 = ctx.out.protocol() >= 3;
  size_t at = 0;
  for (size_t r = begin; r < end; ++r) {
    const Kind kind = KindOf(requests[r]);
    const size_t n = requests[r].size() - 2;
    ++ctx.session.commands;
    if (kind == Kind::kBfMExists || kind == Kind::kCfMExists) {
      ctx.out.Array(n);
    }
    for (size_t i = 0; i < n; ++i, ++at) {
      if (resp3) {
        ctx.out.Boolean(present[at] != 0);
      } else {
        ctx.out.Integer(present[at] != 0);
      }
    }
  }
  if (CommandStats* stats = ctx.host.Stats()) {
    RecordShares(stats, requests, begin, end, NanosSince(start) / (end - begin),
                 {});
  }
  TrimScratch(scratch);
  return RunResult::kRan;
}

// Runs requests[begin, end), all adds of one family to requests[begin][1],
// as one batch. When the key is not an existing filter of the family, or
// the filter was dropped during the batch (its writes went with it):
// kDispatchFirst (the first command creates the key, or answers WRONGTYPE);
// when the key cannot be read: kDispatchEach (each answers the error).
RunResult RunGroup(CommandContext& ctx, std::span<const Args> requests,
                   size_t begin, size_t end, bool bloom) {
  const auto start = std::chrono::steady_clock::now();
  const std::string_view key = requests[begin][1];
  TypedLookup found =
      LookupTyped(ctx, key, bloom ? FilterType::kBloom : FilterType::kCuckoo);
  if (!found.error.ok()) return RunResult::kDispatchEach;
  if (found.handle == nullptr) return RunResult::kDispatchFirst;
  RunScratch& scratch = Scratch();
  std::vector<std::string_view>& items = scratch.items;
  GatherItems(requests, begin, end, &items);
  std::vector<Status>& statuses = scratch.statuses;
  statuses.assign(items.size(), Status::OK());
  std::vector<uint8_t>& added = scratch.flags;
  if (bloom) {
    BloomAddReportingNew(*found.handle, items, &added, &statuses);
  } else {
    CuckooAddCopies(*found.handle, items, &statuses);
  }
  if (DroppedDuringWrite(statuses)) {
    TrimScratch(scratch);
    return RunResult::kDispatchFirst;
  }
  // INFO commandstats: each command of the run is one call of an equal
  // share of the batch's time.
  CommandStats* const stats = ctx.host.Stats();
  std::optional<StatsWriter> counting;
  if (stats != nullptr) counting.emplace(ctx.out, *stats);
  CommandContext rctx{ctx.session, ctx.keyspace, ctx.host,
                      counting ? *counting : ctx.out};
  const uint64_t share = NanosSince(start) / (end - begin);
  std::vector<uint8_t> failed;
  size_t at = 0;
  for (size_t r = begin; r < end; ++r) {
    const size_t n = requests[r].size() - 2;
    ++ctx.session.commands;
    const uint64_t errors_before = counting ? counting->errors() : 0;
    if (bloom) {
      ReplyBloomAdds(rctx, *found.handle,
                     std::span<const uint8_t>(added).subspan(at, n),
                     std::span<const Status>(statuses).subspan(at, n),
                     KindOf(requests[r]) == Kind::kBfMAdd);
    } else {
      ReplyCuckooAdd(rctx, *found.handle, statuses[at]);
    }
    if (counting) failed.push_back(counting->errors() > errors_before);
    at += n;
  }
  if (counting) RecordShares(stats, requests, begin, end, share, failed);
  TrimScratch(scratch);
  return RunResult::kRan;
}

}  // namespace

size_t DispatchPipeline(CommandContext& ctx, std::span<const Args> requests) {
  size_t i = 0;
  while (i < requests.size()) {
    const Family family = FamilyOf(KindOf(requests[i]));
    // Batching only where Dispatch would run the command at once.
    const bool batchable =
        family != Family::kNone && !ctx.session.in_multi &&
        (ctx.session.authenticated || !ctx.host.RequiresPassword());
    size_t j = i + 1;
    if (batchable) {
      const std::string_view key = requests[i][1];
      while (j < requests.size() && FamilyOf(KindOf(requests[j])) == family &&
             requests[j][1] == key) {
        ++j;
      }
    }
    if (j - i > 1) {
      const RunResult run =
          family == Family::kBloomQuery || family == Family::kCuckooQuery
              ? RunQueryGroup(ctx, requests, i, j,
                              family == Family::kBloomQuery)
              : RunGroup(ctx, requests, i, j, family == Family::kBloomAdd);
      if (run == RunResult::kRan) {
        i = j;
        continue;
      }
      if (run == RunResult::kDispatchEach) {
        // None of these commands closes the connection.
        for (; i < j; ++i) Dispatch(ctx, requests[i]);
        continue;
      }
    }
    Dispatch(ctx, requests[i]);
    ++i;
    if (ctx.session.close_after_reply) break;
  }
  return i;
}

}  // namespace shardfilter::commands
