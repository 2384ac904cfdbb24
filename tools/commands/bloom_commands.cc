// BF.*: RedisBloom's scalable Bloom filter commands over shardfilter's
// Bloom filters. Argument parsing, defaults, error texts and reply shapes
// follow RedisBloom (docs/server.md lists each command and where shardfilter
// differs).
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "tools/commands/command_table.h"
#include "tools/commands/filter_access.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

// RedisBloom's configuration defaults and ranges (its config.c).
constexpr double kDefaultErrorRate = 0.01;
constexpr double kErrorRateCap = 0.25;  // larger rates are capped to this
constexpr int64_t kDefaultCapacity = 100;
constexpr int64_t kMaxCapacity = int64_t{1} << 30;
constexpr int64_t kDefaultExpansion = 2;
constexpr int64_t kMaxExpansion = 32768;
// shardfilter's links grow by at most 16x (FilterSpec::expansion).
constexpr int64_t kMaxShardfilterExpansion = 16;

struct BloomOptions {
  int64_t capacity = kDefaultCapacity;
  double error_rate = kDefaultErrorRate;
  int64_t expansion = kDefaultExpansion;
  bool scalable = true;
  bool autocreate = true;
};

CreateParams ToParams(const BloomOptions& o) {
  CreateParams p;
  p.type = FilterType::kBloom;
  p.capacity = static_cast<uint64_t>(o.capacity);
  p.error_rate = o.error_rate;
  p.scalable = o.scalable && o.expansion > 0;
  p.expansion = o.expansion > 0 ? static_cast<uint32_t>(o.expansion) : 1;
  return p;
}

// Refuses an expansion RedisBloom takes but shardfilter cannot build.
bool RefuseExpansion(CommandContext& ctx, int64_t expansion) {
  if (expansion <= kMaxShardfilterExpansion) return false;
  ctx.out.Error("ERR expansion must be in the range [0, 16] (shardfilter)");
  return true;
}

// Looks the key up for a write; creates it with `o` when absent and
// allowed. Writes the error reply and returns null on failure.
std::shared_ptr<FilterHandle> OpenForWrite(CommandContext& ctx,
                                           std::string_view key,
                                           const BloomOptions& o) {
  auto found = LookupTyped(ctx, key, FilterType::kBloom);
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
  if (RefuseExpansion(ctx, o.expansion)) return nullptr;
  return CreateOrReplyError(ctx, key, ToParams(o),
                            "ERR could not create filter");
}

// BF.ADD / BF.MADD / BF.INSERT: opens the key for a write (OpenForWrite),
// adds the items and writes RedisBloom's reply: one 0/1 (RESP3 boolean) per
// item, an error element for an item that found a non-scaling filter full
// (and nothing after it), as an array when `multi`. A filter dropped
// between the lookup and the add is looked up (created) again.
void AddAndReply(CommandContext& ctx, std::string_view key,
                 const BloomOptions& o, Args items, bool multi) {
  std::vector<uint8_t> added;
  std::vector<Status> statuses;
  std::shared_ptr<FilterHandle> filter;
  for (int attempt = 1;; ++attempt) {
    filter = OpenForWrite(ctx, key, o);
    if (filter == nullptr) return;
    BloomAddReportingNew(*filter, items, &added, &statuses);
    if (!DroppedDuringWrite(statuses) || attempt == kMaxWriteAttempts) break;
  }
  ReplyBloomAdds(ctx, *filter, added, statuses, multi);
}

void CheckAndReply(CommandContext& ctx, Args args, bool multi) {
  auto found = LookupTyped(ctx, args[1], FilterType::kBloom);
  const Args items = args.subspan(2);
  // On the stack for the usual sizes: an M-command of 10 items in Redis
  // is ~3 us, and every allocation shows.
  std::array<uint8_t, 64> inline_present{};
  std::vector<uint8_t> heap_present;
  std::span<uint8_t> present(inline_present.data(),
                             std::min(items.size(), inline_present.size()));
  if (items.size() > inline_present.size()) {
    heap_present.assign(items.size(), 0);
    present = heap_present;
  }
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  // RedisBloom answers 0 for a missing key and for one of another type
  // (docs/design.md "Errors are never answers").
  if (found.handle != nullptr) {
    if (items.size() == 1) {
      present[0] = found.handle->MayContain(items[0]);
    } else {
      found.handle->MayContainMany(items, present);
    }
  }
  if (multi) ctx.out.Array(items.size());
  for (uint8_t p : present) {
    if (ctx.out.protocol() >= 3) {
      ctx.out.Boolean(p != 0);
    } else {
      ctx.out.Integer(p != 0);
    }
  }
}

}  // namespace

void ReplyBloomAdds(CommandContext& ctx, const FilterHandle& filter,
                    std::span<const uint8_t> added,
                    std::span<const Status> statuses, bool multi) {
  size_t n = statuses.size();
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (!statuses[i].ok()) {
      n = i + 1;  // RedisBloom stops at the first failed item
      break;
    }
  }
  if (multi) ctx.out.Array(n);
  for (size_t i = 0; i < n; ++i) {
    const Status& s = statuses[i];
    if (s.ok()) {
      if (ctx.out.protocol() >= 3) {
        ctx.out.Boolean(added[i] != 0);
      } else {
        ctx.out.Integer(added[i] != 0);
      }
    } else if (s.IsFull() && !filter.Spec().scalable) {
      ctx.out.Error("ERR non scaling filter is full");
    } else if (ReplyIfOverMaxmemory(ctx, s)) {
    } else if (s.IsNotFound()) {
      ctx.out.Error(kDroppedDuringWriteError);
    } else {
      // Also a scaling filter that cannot grow (Full: its chain's last
      // link, or a link its limits refuse): RedisBloom's answer when
      // SBChain_Add cannot add a link, with the reason.
      ctx.out.Error("ERR problem inserting into filter: " + s.message());
    }
  }
}

// BF.ADD's 0/1 comes from the engine (AddOutcome): an add that sets no new
// bit is "already present", uses no capacity and never grows the filter,
// and is journalled like any add before it is answered (its bits may
// belong to a concurrent add whose journal write has not completed: an
// answer of 0 is as durable as an answer of 1).
void BloomAddReportingNew(FilterHandle& filter, Args items,
                          std::vector<uint8_t>* added,
                          std::vector<Status>* statuses) {
  const size_t n = items.size();
  if (n == 1) {
    added->assign(1, 0);
    statuses->assign(1, Status::OK());
    Result<bool> r = filter.Add(items[0]);
    if (r.ok()) {
      (*added)[0] = *r ? 1 : 0;
    } else {
      (*statuses)[0] = r.status();
    }
    return;
  }
  filter.AddMany(items, statuses, added);
}

namespace handlers {

// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
void BfReserve(CommandContext& ctx, Args args) {
  if (args.size() < 4 || args.size() > 7) {
    return ReplyWrongArity(ctx.out, args[0]);
  }
  BloomOptions o;
  if (!ParseDouble(args[2], &o.error_rate)) {
    return ctx.out.Error("ERR bad error rate");
  }
  if (!(o.error_rate > 0.0 && o.error_rate < 1.0)) {
    return ctx.out.Error(
        "ERR error rate must be in the range (0.000000, 1.000000)");
  }
  o.error_rate = std::min(o.error_rate, kErrorRateCap);
  if (!ParseLongLong(args[3], &o.capacity)) {
    return ctx.out.Error("ERR bad capacity");
  }
  if (o.capacity < 1 || o.capacity > kMaxCapacity) {
    return ctx.out.Error("ERR capacity must be in the range [1, 1073741824]");
  }
  size_t expansion_at = 0;
  for (size_t i = 4; i < args.size(); ++i) {
    if (EqualsIgnoreCase(args[i], "NONSCALING")) o.scalable = false;
    if (expansion_at == 0 && EqualsIgnoreCase(args[i], "EXPANSION")) {
      expansion_at = i;
    }
  }
  if (expansion_at != 0) {
    if (expansion_at + 1 == args.size()) {
      return ctx.out.Error("ERR no expansion");
    }
    if (!ParseLongLong(args[expansion_at + 1], &o.expansion)) {
      return ctx.out.Error("ERR bad expansion");
    }
    if (o.expansion == 0) {
      o.scalable = false;
    } else if (!o.scalable) {
      return ctx.out.Error("Nonscaling filters cannot expand");
    }
    if (o.expansion < 0 || o.expansion > kMaxExpansion) {
      return ctx.out.Error("ERR expansion must be in the range [0, 32768]");
    }
  }
  auto found = LookupTyped(ctx, args[1], FilterType::kBloom);
  if (found.handle != nullptr) return ctx.out.Error(kItemExistsError);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  if (RefuseKeyName(ctx, args[1])) return;
  if (RefuseExpansion(ctx, o.expansion)) return;
  auto created = ctx.keyspace.Create(args[1], ToParams(o));
  if (!created.ok()) {
    return ReplyCreateError(ctx, created.status(),
                            "ERR could not create filter");
  }
  ctx.out.SimpleString("OK");
}

// BF.ADD key item
void BfAdd(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  AddAndReply(ctx, args[1], BloomOptions{}, args.subspan(2),
              /*multi=*/false);
}

// BF.MADD key item [item ...]
void BfMAdd(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  AddAndReply(ctx, args[1], BloomOptions{}, args.subspan(2),
              /*multi=*/true);
}

// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE]
//           [NONSCALING] ITEMS item [item ...]
// Options are recognised by their first letters, as RedisBloom does.
void BfInsert(CommandContext& ctx, Args args) {
  if (args.size() < 4) return ReplyWrongArity(ctx.out, args[0]);
  BloomOptions o;
  size_t items_at = 0;
  size_t pos = 2;
  while (pos < args.size() && items_at == 0) {
    const std::string_view word = args[pos];
    const char c0 = word.empty() ? '\0'
                                 : static_cast<char>(std::tolower(
                                       static_cast<unsigned char>(word[0])));
    const char c1 = word.size() > 1 ? static_cast<char>(std::tolower(
                                          static_cast<unsigned char>(word[1])))
                                    : '\0';
    const char c2 = word.size() > 2 ? static_cast<char>(std::tolower(
                                          static_cast<unsigned char>(word[2])))
                                    : '\0';
    switch (c0) {
      case 'i':
        items_at = ++pos;
        break;
      case 'e':
        if (++pos == args.size()) return ReplyWrongArity(ctx.out, args[0]);
        if (c1 == 'r') {
          if (!ParseDouble(args[pos++], &o.error_rate) ||
              !(o.error_rate > 0.0 && o.error_rate < 1.0)) {
            return ctx.out.Error("Bad error rate");
          }
          o.error_rate = std::min(o.error_rate, kErrorRateCap);
        } else {
          if (!ParseLongLong(args[pos++], &o.expansion) || o.expansion < 0 ||
              o.expansion > kMaxExpansion) {
            return ctx.out.Error("Bad expansion");
          }
        }
        break;
      case 'c':
        if (++pos == args.size()) return ReplyWrongArity(ctx.out, args[0]);
        if (!ParseLongLong(args[pos++], &o.capacity) || o.capacity < 1 ||
            o.capacity > kMaxCapacity) {
          return ctx.out.Error("Bad capacity");
        }
        break;
      case 'n':
        if (c2 == 'c') {
          o.autocreate = false;
        } else {
          o.scalable = false;
        }
        ++pos;
        break;
      default:
        return ctx.out.Error("Unknown argument received");
    }
  }
  if (o.expansion == 0) o.scalable = false;
  if (items_at == 0 || items_at == args.size()) {
    return ReplyWrongArity(ctx.out, args[0]);
  }
  AddAndReply(ctx, args[1], o, args.subspan(items_at), /*multi=*/true);
}

// BF.EXISTS key item
void BfExists(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  CheckAndReply(ctx, args, /*multi=*/false);
}

// BF.MEXISTS key item [item ...]
void BfMExists(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  CheckAndReply(ctx, args, /*multi=*/true);
}

// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]
void BfInfo(CommandContext& ctx, Args args) {
  if (args.size() != 2 && args.size() != 3) {
    return ReplyWrongArity(ctx.out, args[0]);
  }
  auto found = LookupTyped(ctx, args[1], FilterType::kBloom);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  if (found.handle == nullptr) return ctx.out.Error(kNotFoundError);
  const FilterSummary s = found.handle->Summary();
  struct Field {
    const char* key;   // the single-field selector
    const char* name;  // the reply's label
    int64_t value;
    bool null;
  };
  const Field fields[] = {
      {"capacity", "Capacity", static_cast<int64_t>(s.capacity), false},
      {"size", "Size", static_cast<int64_t>(s.bytes), false},
      {"filters", "Number of filters", s.links, false},
      {"items", "Number of items inserted", static_cast<int64_t>(s.items),
       false},
      {"expansion", "Expansion rate", s.expansion, !s.scalable},
  };
  auto value = [&](const Field& f) {
    if (f.null) {
      ctx.out.Null();
    } else {
      ctx.out.Integer(f.value);
    }
  };
  if (args.size() == 3) {
    for (const Field& f : fields) {
      if (!EqualsIgnoreCase(args[2], f.key)) continue;
      // RESP3: a one-pair map; RESP2: an array of the value alone.
      if (ctx.out.protocol() >= 3) {
        ctx.out.Map(1);
        ctx.out.SimpleString(f.name);
      } else {
        ctx.out.Array(1);
      }
      return value(f);
    }
    return ctx.out.Error("Invalid information value");
  }
  ctx.out.Map(std::size(fields));
  for (const Field& f : fields) {
    ctx.out.SimpleString(f.name);
    value(f);
  }
}

// BF.CARD key: items added (0 for a missing key).
void BfCard(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto found = LookupTyped(ctx, args[1], FilterType::kBloom);
  if (found.wrong_type) return ctx.out.Error(kWrongTypeError);
  if (ReplyIfUnreadable(ctx, args[1], found)) return;
  if (found.handle == nullptr) return ctx.out.Integer(0);
  ctx.out.Integer(static_cast<int64_t>(found.handle->Summary().items));
}

}  // namespace handlers
}  // namespace shardfilter::commands
