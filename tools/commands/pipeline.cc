// DispatchPipeline: consecutive adds to one key coalesced into one batch.
//
// Why: with a journalled durability every engine add call is one RocksDB
// write (WAL append + memtable insert); 16 pipelined BF.ADDs were 16 writes.
// As one batch they are one write per shard touched, and the answers are
// those of running the commands one by one: the engine counts an item
// repeated in the run as new once (Bloom) and bounds copies across the run
// (cuckoo), and a non-scaling filter that fills up fails every later
// item (a Bloom filter's "full" is monotonic).
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

enum class Kind { kNone, kBfAdd, kBfMAdd, kCfAdd };

Kind KindOf(Args args) {
  if (args.size() < 3) return Kind::kNone;
  const std::string_view name = args[0];
  if (name.size() == 6 && EqualsIgnoreCase(name, "BF.ADD")) {
    return args.size() == 3 ? Kind::kBfAdd : Kind::kNone;
  }
  if (name.size() == 7 && EqualsIgnoreCase(name, "BF.MADD")) {
    return Kind::kBfMAdd;
  }
  if (name.size() == 6 && EqualsIgnoreCase(name, "CF.ADD")) {
    return args.size() == 3 ? Kind::kCfAdd : Kind::kNone;
  }
  return Kind::kNone;
}

bool IsBloom(Kind k) { return k == Kind::kBfAdd || k == Kind::kBfMAdd; }

// Runs requests[begin, end), all adds of one family to requests[begin][1],
// as one batch. False (nothing run, nothing written) when the key is not an
// existing filter of the family: the caller then dispatches one by one
// (which creates it, or answers the error).
bool RunGroup(CommandContext& ctx, std::span<const Args> requests, size_t begin,
              size_t end, bool bloom) {
  const auto start = std::chrono::steady_clock::now();
  const std::string_view key = requests[begin][1];
  TypedLookup found =
      LookupTyped(ctx, key, bloom ? FilterType::kBloom : FilterType::kCuckoo);
  if (found.handle == nullptr) return false;
  std::vector<std::string_view> items;
  for (size_t r = begin; r < end; ++r) {
    for (size_t i = 2; i < requests[r].size(); ++i) {
      items.push_back(requests[r][i]);
    }
  }
  std::vector<Status> statuses(items.size());
  std::vector<uint8_t> added;
  if (bloom) {
    BloomAddReportingNew(*found.handle, items, &added, &statuses);
  } else {
    CuckooAddCopies(*found.handle, items, &statuses);
  }
  // INFO commandstats: each command of the run is one call of an equal
  // share of the batch's time.
  CommandStats* const stats = ctx.host.Stats();
  std::optional<StatsWriter> counting;
  if (stats != nullptr) counting.emplace(ctx.out, *stats);
  CommandContext rctx{ctx.session, ctx.keyspace, ctx.host,
                      counting ? *counting : ctx.out};
  const uint64_t share =
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(
              std::chrono::steady_clock::now() - start)
              .count()) /
      (end - begin);
  size_t at = 0;
  for (size_t r = begin; r < end; ++r) {
    const size_t n = requests[r].size() - 2;
    ++ctx.session.commands;
    const uint64_t errors_before = counting ? counting->errors() : 0;
    if (bloom) {
      ReplyBloomAdds(rctx, std::span<const uint8_t>(added).subspan(at, n),
                     std::span<const Status>(statuses).subspan(at, n),
                     KindOf(requests[r]) == Kind::kBfMAdd);
    } else {
      ReplyCuckooAdd(rctx, statuses[at]);
    }
    if (counting) {
      stats->RecordCall(*FindCommand(requests[r][0]), share,
                        counting->errors() > errors_before);
    }
    at += n;
  }
  return true;
}

}  // namespace

size_t DispatchPipeline(CommandContext& ctx, std::span<const Args> requests) {
  size_t i = 0;
  while (i < requests.size()) {
    const Kind kind = KindOf(requests[i]);
    // Batching only where Dispatch would run the command at once.
    const bool batchable =
        kind != Kind::kNone && !ctx.session.in_multi &&
        (ctx.session.authenticated || !ctx.host.RequiresPassword());
    size_t j = i + 1;
    if (batchable) {
      const std::string_view key = requests[i][1];
      while (j < requests.size()) {
        const Kind next = KindOf(requests[j]);
        if (next == Kind::kNone || IsBloom(next) != IsBloom(kind) ||
            requests[j][1] != key) {
          break;
        }
        ++j;
      }
    }
    if (j - i > 1 && RunGroup(ctx, requests, i, j, IsBloom(kind))) {
      i = j;
      continue;
    }
    Dispatch(ctx, requests[i]);
    ++i;
    if (ctx.session.close_after_reply) break;
  }
  return i;
}

}  // namespace shardfilter::commands
