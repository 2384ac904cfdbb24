// CF.*: RedisBloom's cuckoo filter commands over shardfilter's cuckoo
// filters. RedisBloom's BUCKETSIZE (1..255) maps onto shardfilter's layouts
// of 2, 4 or 8 slots per bucket (the next one up); larger sizes are refused.
// RedisBloom has no error rate for cuckoo filters: shardfilter sizes them
// for 1% at capacity (docs/server.md).
#include <string>
#include <vector>

#include "tools/commands/command_table.h"
#include "tools/commands/filter_access.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

// RedisBloom's defaults and ranges (its config.c).
constexpr int64_t kDefaultCapacity = 1024;  // cf-initial-size (CF.ADD)
constexpr int64_t kMaxCapacity = int64_t{1} << 30;
constexpr int64_t kDefaultBucketSize = 2;
constexpr int64_t kMaxBucketSize = 255;
constexpr int64_t kDefaultMaxIterations = 20;
constexpr int64_t kMaxIterations = 65535;
constexpr int64_t kDefaultExpansion = 1;
constexpr int64_t kMaxExpansion = 32768;
constexpr double kCuckooErrorRate = 0.01;
// cf-max-expansions: the most sub-filters a cuckoo filter has; RedisBloom
// refuses every add from there. The engine's chains stop at the same count.
constexpr uint32_t kMaxExpansions = 32;
static_assert(kMaxExpansions == internal::kMaxLinks);

// shardfilter's bucket layout for RedisBloom's BUCKETSIZE (0: refused).
uint32_t LayoutBucketSize(int64_t redisbloom_size) {
  if (redisbloom_size <= 2) return 2;
  if (redisbloom_size <= 4) return 4;
  if (redisbloom_size <= 8) return 8;
  return 0;
}

CreateParams Params(int64_t capacity, int64_t bucket_size,
                    int64_t max_iterations, int64_t expansion) {
  CreateParams p;
  p.type = FilterType::kCuckoo;
  p.capacity = static_cast<uint64_t>(capacity);
  p.error_rate = kCuckooErrorRate;
  p.bucket_size = LayoutBucketSize(bucket_size);
  p.max_iterations = static_cast<uint32_t>(max_iterations);
  p.scalable = expansion > 0;
  p.expansion = expansion > 0 ? static_cast<uint32_t>(expansion) : 1;
  return p;
}

// RedisBloom's text for an add refused for want of room (Full): "Maximum
// expansions reached" once a scaling filter has kMaxExpansions
// sub-filters (RedisBloom checks that before every add); "Filter is full"
// otherwise: a non-scaling filter without room, or the most copies of one
// item (which RedisBloom would grow for; this filter does not, DESIGN.md
// invariant 8).
const char* FullText(const FilterHandle& filter) {
  const FilterSummary summary = filter.Summary();
  return summary.scalable && summary.links >= kMaxExpansions
             ? "Maximum expansions reached"
             : "Filter is full";
}

void ReplyFlag(CommandContext& ctx, bool as_bool, int64_t v) {
  if (as_bool) {
    ctx.out.Boolean(v > 0);
  } else {
    ctx.out.Integer(v);
  }
}

struct InsertOptions {
  bool nx = false;
  bool multi = false;
  bool autocreate = true;
  int64_t capacity = kDefaultCapacity;
};

// The cuckoo filter at `key` for a write, created with `o`'s capacity when
// absent and allowed; null with the reply written.
std::shared_ptr<FilterHandle> OpenForWrite(CommandContext& ctx,
                                           std::string_view key,
                                           const InsertOptions& o) {
  auto found = LookupTyped(ctx, key, FilterType::kCuckoo);
  if (found.handle != nullptr) return found.handle;
  if (found.wrong_type) {
    ctx.out.Error(kWrongTypeError);
    return nullptr;
  }
  if (ReplyIfUnreadable(ctx, key, found)) return nullptr;
  if (!o.autocreate) {
    ctx.out.Error(kNotFoundError);
    return nullptr;
  }
  if (RefuseKeyName(ctx, key)) return nullptr;
  return CreateOrReplyError(ctx, key,
                            Params(o.capacity, kDefaultBucketSize,
                                   kDefaultMaxIterations, kDefaultExpansion),
                            "ERR Could not create filter");
}

// The error reply of a failed cuckoo add (not Full).
void ReplyAddError(CommandContext& ctx, const Status& s) {
  if (s.IsNotFound()) return ctx.out.Error(kDroppedDuringWriteError);
  if (ReplyIfOverMaxmemory(ctx, s)) return;
  ctx.out.Error("ERR problem inserting into filter: " + s.message());
}

void InsertCommon(CommandContext& ctx, std::string_view key, Args items,
                  const InsertOptions& o) {
  // RedisBloom: booleans under RESP3 except for CF.INSERTNX's integers.
  const bool resp3 = ctx.out.protocol() >= 3;
  const bool bool_added = resp3 && (!o.nx || !o.multi);
  const bool bool_full = resp3 && !o.nx;
  std::vector<Status> statuses(items.size());
  std::vector<uint8_t> existed(items.size(), 0);
  // A filter dropped between the lookup and the adds is looked up (created)
  // again, and every item added to it.
  std::shared_ptr<FilterHandle> filter;
  for (int attempt = 1;; ++attempt) {
    filter = OpenForWrite(ctx, key, o);
    if (filter == nullptr) return;
    if (o.nx) {
      // One at a time: a repeated item must see its own earlier copy.
      for (size_t i = 0; i < items.size(); ++i) {
        existed[i] = filter->MayContain(items[i]) ? 1 : 0;
        statuses[i] =
            existed[i] != 0 ? Status::OK() : filter->Add(items[i]).status();
      }
    } else {
      CuckooAddCopies(*filter, items, &statuses);
    }
    if (!DroppedDuringWrite(statuses) || attempt == kMaxWriteAttempts) break;
  }
  if (!o.multi) {
    const Status& s = statuses[0];
    if (s.ok()) return ReplyFlag(ctx, bool_added, existed[0] ? 0 : 1);
    if (s.IsFull()) return ctx.out.Error(FullText(*filter));
    return ReplyAddError(ctx, s);
  }
  ctx.out.Array(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Status& s = statuses[i];
    if (s.ok()) {
      ReplyFlag(ctx, bool_added, existed[i] ? 0 : 1);
    } else if (s.IsFull()) {
      ReplyFlag(ctx, bool_full, -1);  // RESP3 CF.INSERT: false
    } else {
      ReplyAddError(ctx, s);
    }
  }
}

void InsertCommand(CommandContext& ctx, Args args, bool nx) {
  if (args.size() < 4) return ReplyWrongArity(ctx.out, args[0]);
  InsertOptions o;
  o.nx = nx;
  o.multi = true;
  size_t items_at = 0;
  size_t pos = 2;
  while (pos < args.size() && items_at == 0) {
    const std::string_view word = args[pos];
    const char c0 = word.empty() ? '\0'
                                 : static_cast<char>(std::tolower(
                                       static_cast<unsigned char>(word[0])));
    switch (c0) {
      case 'c':
        if (++pos == args.size()) return ReplyWrongArity(ctx.out, args[0]);
        if (!ParseLongLong(args[pos++], &o.capacity)) {
          return ctx.out.Error("Bad capacity");
        }
        if (o.capacity < 2 * kDefaultBucketSize || o.capacity > kMaxCapacity) {
          return ctx.out.Error(
              "Capacity must be in the range [cf-bucket-size * 2, "
              "1073741824]");
        }
        break;
      case 'i':
        items_at = ++pos;
        break;
      case 'n':
        o.autocreate = false;
        ++pos;
        break;
      default:
        return ctx.out.Error("Unknown argument received");
    }
  }
  if (items_at == 0 || items_at == args.size()) {
    return ReplyWrongArity(ctx.out, args[0]);
  }
  InsertCommon(ctx, args[1], args.subspan(items_at), o);
}

// CF.EXISTS / CF.MEXISTS / CF.COUNT.
void CheckCommand(CommandContext& ctx, Args args, bool multi, bool count) {
  if ((!multi && args.size() != 3) || (multi && args.size() < 3)) {
    return ReplyWrongArity(ctx.out, args[0]);
  }
  auto found = LookupTyped(ctx, args[1], FilterType::kCuckoo);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  const Args items = args.subspan(2);
  const bool as_bool = ctx.out.protocol() >= 3 && !count;
  if (multi) ctx.out.Array(items.size());
  // Missing or of another type: 0, as RedisBloom (docs/design.md "Errors
  // are never answers").
  if (found.handle == nullptr) {
    for (size_t i = 0; i < items.size(); ++i) ReplyFlag(ctx, as_bool, 0);
    return;
  }
  if (count) {
    for (std::string_view item : items) {
      ReplyFlag(ctx, as_bool, found.handle->Count(item));
    }
    return;
  }
  std::vector<uint8_t> present(items.size(), 0);
  if (items.size() == 1) {
    present[0] = found.handle->MayContain(items[0]);
  } else {
    found.handle->MayContainMany(items, present);
  }
  for (uint8_t p : present) ReplyFlag(ctx, as_bool, p);
}

bool ParseOption(CommandContext& ctx, Args args, std::string_view name,
                 int64_t min, int64_t max, int64_t* value) {
  for (size_t i = 3; i + 1 < args.size(); ++i) {
    if (!EqualsIgnoreCase(args[i], name)) continue;
    if (!ParseLongLong(args[i + 1], value)) {
      ctx.out.Error("Couldn't parse " + std::string(name));
      return false;
    }
    if (*value < min || *value > max) {
      ctx.out.Error(std::string(name) + ": value must be in the range [" +
                    std::to_string(min) + ", " + std::to_string(max) + "]");
      return false;
    }
    return true;
  }
  return true;
}

}  // namespace

// Adds a copy of each item (a cuckoo filter is a multiset). The engine
// bounds the copies of one item and answers Full past the bound: copies
// never grow the filter (DESIGN.md invariant 8; RedisBloom grows instead).
void CuckooAddCopies(FilterHandle& filter, Args items,
                     std::vector<Status>* statuses) {
  if (items.size() == 1) {
    (*statuses)[0] = filter.Add(items[0]).status();
    return;
  }
  std::vector<uint8_t> added;
  filter.AddMany(items, statuses, &added);
}

void ReplyCuckooAdd(CommandContext& ctx, const FilterHandle& filter,
                    const Status& s) {
  if (s.ok()) return ReplyFlag(ctx, ctx.out.protocol() >= 3, 1);
  if (s.IsFull()) return ctx.out.Error(FullText(filter));
  ReplyAddError(ctx, s);
}

namespace handlers {

// CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]
void CfReserve(CommandContext& ctx, Args args) {
  if (args.size() < 3 || args.size() % 2 == 0) {
    return ReplyWrongArity(ctx.out, args[0]);
  }
  int64_t capacity = 0;
  if (!ParseLongLong(args[2], &capacity)) return ctx.out.Error("Bad capacity");
  int64_t max_iterations = kDefaultMaxIterations;
  int64_t bucket_size = kDefaultBucketSize;
  int64_t expansion = kDefaultExpansion;
  if (!ParseOption(ctx, args, "MAXITERATIONS", 1, kMaxIterations,
                   &max_iterations) ||
      !ParseOption(ctx, args, "BUCKETSIZE", 1, kMaxBucketSize, &bucket_size) ||
      !ParseOption(ctx, args, "EXPANSION", 0, kMaxExpansion, &expansion)) {
    return;
  }
  if (bucket_size * 2 > capacity || capacity > kMaxCapacity) {
    return ctx.out.Error(
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]");
  }
  auto found = LookupTyped(ctx, args[1], FilterType::kCuckoo);
  if (found.handle != nullptr) return ctx.out.Error(kItemExistsError);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  if (RefuseKeyName(ctx, args[1])) return;
  if (LayoutBucketSize(bucket_size) == 0) {
    return ctx.out.Error(
        "ERR BUCKETSIZE must be in the range [1, 8] (shardfilter: buckets of "
        "2, 4 or 8 slots)");
  }
  if (expansion > 16) {
    return ctx.out.Error(
        "ERR EXPANSION must be in the range [0, 16] "
        "(shardfilter)");
  }
  auto created = ctx.keyspace.Create(
      args[1], Params(capacity, bucket_size, max_iterations, expansion));
  if (!created.ok()) {
    return ReplyCreateError(ctx, created.status(),
                            "ERR Could not create filter");
  }
  ctx.out.SimpleString("OK");
}

void CfAdd(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  InsertCommon(ctx, args[1], args.subspan(2), InsertOptions{});
}

void CfAddNx(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  InsertOptions o;
  o.nx = true;
  InsertCommon(ctx, args[1], args.subspan(2), o);
}

void CfInsert(CommandContext& ctx, Args args) {
  InsertCommand(ctx, args, false);
}
void CfInsertNx(CommandContext& ctx, Args args) {
  InsertCommand(ctx, args, true);
}
void CfExists(CommandContext& ctx, Args args) {
  CheckCommand(ctx, args, false, false);
}
void CfMExists(CommandContext& ctx, Args args) {
  CheckCommand(ctx, args, true, false);
}
void CfCount(CommandContext& ctx, Args args) {
  CheckCommand(ctx, args, false, true);
}

// CF.DEL key item: 1 when a copy was removed, 0 when absent.
void CfDel(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  auto found = LookupTyped(ctx, args[1], FilterType::kCuckoo);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  // Missing or of another type: RedisBloom's "Not found".
  if (found.handle == nullptr) return ctx.out.Error("Not found");
  const Status s = found.handle->Remove(args[2]);
  if (!s.ok() && !s.IsNotFound()) {
    return ctx.out.Error("ERR problem deleting from filter: " + s.message());
  }
  ReplyFlag(ctx, ctx.out.protocol() >= 3, s.ok() ? 1 : 0);
}

void CfInfo(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto found = LookupTyped(ctx, args[1], FilterType::kCuckoo);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  if (found.handle == nullptr) return ctx.out.Error(kNotFoundError);
  const FilterSummary s = found.handle->Summary();
  const std::pair<const char*, int64_t> fields[] = {
      {"Size", static_cast<int64_t>(s.bytes)},
      {"Number of buckets", static_cast<int64_t>(s.buckets)},
      {"Number of filters", s.links},
      {"Number of items inserted", static_cast<int64_t>(s.items)},
      {"Number of items deleted", static_cast<int64_t>(s.deletes)},
      {"Bucket size", s.bucket_size},
      {"Expansion rate", s.scalable ? s.expansion : 0},
      {"Max iterations", s.max_iterations},
  };
  ctx.out.Map(std::size(fields));
  for (const auto& [name, value] : fields) {
    ctx.out.SimpleString(name);
    ctx.out.Integer(value);
  }
}

}  // namespace handlers
}  // namespace shardfilter::commands
