// SF.*: shardfilter's own commands, in RedisBloom's style, for what
// RedisBloom's BF.* / CF.* cannot say: any filter type (counting Bloom
// included) with shards, durability and retained hashes; add / remove /
// exists / count on every type; full and per-shard statistics; online
// migration with progress. docs/server.md specifies them (syntax, replies,
// errors); both hosts run them (the module refuses what Redis keeps itself:
// durability, retained hashes, migration).
//
// Replies are integers (never RESP3 booleans: one shape for every
// protocol), SF.INFO / SF.SHARDS / SF.MIGRATION maps (RESP2: flat arrays of
// name, value).
#include <cmath>
#include <string>
#include <vector>

#include "shardfilter/filters/cuckoo_filter.h"
#include "tools/commands/command_table.h"
#include "tools/commands/filter_access.h"
#include "tools/commands/sf_common.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {

constexpr int64_t kMaxCapacity = int64_t{1} << 40;

void ReplyStatus(CommandContext& ctx, const Status& s) {
  switch (s.code()) {
    case StatusCode::kFull:
      return ctx.out.Error("ERR filter is full");
    case StatusCode::kResourceExhausted:
      if (ReplyIfOverMaxmemory(ctx, s)) return;
      [[fallthrough]];
    case StatusCode::kTooLarge:
      return ctx.out.Error("ERR Insufficient memory: " + s.message());
    case StatusCode::kNotFound:
      return ctx.out.Error(kNotFoundError);
    case StatusCode::kAlreadyExists:
      return ctx.out.Error(kItemExistsError);
    case StatusCode::kWrongType:
      return ctx.out.Error(kWrongTypeError);
    default:
      return ctx.out.Error("ERR " + s.message());
  }
}

bool ParseSpec(CommandContext& ctx, Args args, size_t at, CreateParams* p) {
  const std::string_view type = args[at];
  if (EqualsIgnoreCase(type, "bloom")) {
    p->type = FilterType::kBloom;
  } else if (EqualsIgnoreCase(type, "counting")) {
    p->type = FilterType::kCountingBloom;
  } else if (EqualsIgnoreCase(type, "cuckoo")) {
    p->type = FilterType::kCuckoo;
  } else {
    ctx.out.Error("ERR unknown filter type '" + std::string(type) +
                  "' (bloom, counting or cuckoo)");
    return false;
  }
  int64_t capacity = 0;
  if (!ParseLongLong(args[at + 1], &capacity) || capacity < 1 ||
      capacity > kMaxCapacity) {
    ctx.out.Error("ERR bad capacity (1.." + std::to_string(kMaxCapacity) + ")");
    return false;
  }
  p->capacity = static_cast<uint64_t>(capacity);
  p->error_rate = 0.01;
  p->scalable = true;
  p->expansion = 2;
  bool nonscaling = false, expansion_given = false;
  for (size_t i = at + 2; i < args.size(); ++i) {
    const std::string_view word = args[i];
    const bool has_value = i + 1 < args.size();
    int64_t n = 0;
    if (EqualsIgnoreCase(word, "NONSCALING")) {
      nonscaling = true;
    } else if (EqualsIgnoreCase(word, "RETAIN")) {
      p->retain_hashes = true;
    } else if (!has_value) {
      ctx.out.Error(kSyntaxError);
      return false;
    } else if (EqualsIgnoreCase(word, "ERROR")) {
      double rate = 0;
      if (!ParseDouble(args[++i], &rate) || !(rate > 0 && rate < 1)) {
        ctx.out.Error("ERR 0 < error rate range < 1");
        return false;
      }
      p->error_rate = rate;
    } else if (EqualsIgnoreCase(word, "SHARDS")) {
      if (!ParseLongLong(args[++i], &n) || n < 1 || n > kMaxShards ||
          (n & (n - 1)) != 0) {
        ctx.out.Error("ERR SHARDS must be a power of two in 1..256");
        return false;
      }
      p->shards = static_cast<uint32_t>(n);
    } else if (EqualsIgnoreCase(word, "EXPANSION")) {
      if (!ParseLongLong(args[++i], &n) || n < 1 || n > 16) {
        ctx.out.Error("ERR EXPANSION must be in 1..16");
        return false;
      }
      p->expansion = static_cast<uint32_t>(n);
      expansion_given = true;
    } else if (EqualsIgnoreCase(word, "BUCKETSIZE")) {
      if (!ParseLongLong(args[++i], &n) || (n != 2 && n != 4 && n != 8) ||
          p->type != FilterType::kCuckoo) {
        ctx.out.Error("ERR BUCKETSIZE must be 2, 4 or 8 (cuckoo filters)");
        return false;
      }
      p->bucket_size = static_cast<uint32_t>(n);
    } else if (EqualsIgnoreCase(word, "MAXITERATIONS")) {
      if (!ParseLongLong(args[++i], &n) || n < 1 || n > 65535 ||
          p->type != FilterType::kCuckoo) {
        ctx.out.Error("ERR MAXITERATIONS must be in 1..65535 (cuckoo filters)");
        return false;
      }
      p->max_iterations = static_cast<uint32_t>(n);
    } else if (EqualsIgnoreCase(word, "DURABILITY")) {
      auto d = ParseDurability(ToLower(args[++i]));
      if (!d.ok()) {
        ctx.out.Error("ERR DURABILITY must be none, journal or sync");
        return false;
      }
      p->durability = *d;
    } else {
      ctx.out.Error(kSyntaxError);
      return false;
    }
  }
  if (nonscaling && expansion_given) {
    ctx.out.Error("Nonscaling filters cannot expand");
    return false;
  }
  p->scalable = !nonscaling;
  return true;
}

namespace {

// Replies for a failed lookup of a key that is there: WRONGTYPE for a
// dedup set or tiered filter, else the key cannot be read.
void ReplyLookupError(CommandContext& ctx, std::string_view key,
                      const Status& s) {
  if (s.code() == StatusCode::kWrongType) return ctx.out.Error(kWrongTypeError);
  ReplyUnreadable(ctx, key, s);
}

// The filter at `key`, or null with the reply written ("ERR not found";
// WRONGTYPE; the key cannot be read).
std::shared_ptr<FilterHandle> Existing(CommandContext& ctx,
                                       std::string_view key) {
  auto f = ctx.keyspace.Lookup(key);
  if (f.ok()) return *std::move(f);
  if (IsAbsent(f.status())) {
    ctx.out.Error(kNotFoundError);
  } else {
    ReplyLookupError(ctx, key, f.status());
  }
  return nullptr;
}
std::shared_ptr<FilterHandle> Existing(CommandContext& ctx, Args args) {
  return Existing(ctx, args[1]);
}

// For queries: a missing key answers as an empty filter (null, no error).
// Another kind of key or one that cannot be read: null with the error
// written (*failed set).
std::shared_ptr<FilterHandle> Maybe(CommandContext& ctx, std::string_view key,
                                    bool* failed) {
  auto f = ctx.keyspace.Lookup(key);
  *failed = false;
  if (f.ok()) return *std::move(f);
  if (IsAbsent(f.status())) return nullptr;
  *failed = true;
  ReplyLookupError(ctx, key, f.status());
  return nullptr;
}

}  // namespace

void Pair(CommandContext& ctx, std::string_view name, int64_t v) {
  ctx.out.SimpleString(name);
  ctx.out.Integer(v);
}
void Pair(CommandContext& ctx, std::string_view name, double v) {
  ctx.out.SimpleString(name);
  ctx.out.Double(v);
}
void Pair(CommandContext& ctx, std::string_view name, std::string_view v) {
  ctx.out.SimpleString(name);
  ctx.out.Bulk(v);
}

namespace handlers {

// SF.CREATE key type capacity [ERROR rate] [SHARDS n] [NONSCALING]
//   [EXPANSION n] [BUCKETSIZE n] [MAXITERATIONS n] [DURABILITY mode] [RETAIN]
void SfCreate(CommandContext& ctx, Args args) {
  if (args.size() < 4) return ReplyWrongArity(ctx.out, args[0]);
  CreateParams p;
  if (!ParseSpec(ctx, args, 2, &p)) return;
  if (RefuseKeyName(ctx, args[1])) return;
  auto f = ctx.keyspace.Create(args[1], p);
  if (!f.ok()) return ReplyStatus(ctx, f.status());
  ctx.out.SimpleString("OK");
}

// SF.ADD key item: 1 added, 0 a Bloom filter already held it.
void SfAdd(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  auto f = Existing(ctx, args);
  if (f == nullptr) return;
  auto added = f->Add(args[2]);
  if (!added.ok()) return ReplyStatus(ctx, added.status());
  ctx.out.Integer(*added ? 1 : 0);
}

// SF.MADD key item [item ...]: one reply per item (an error for the ones
// that failed).
void SfMAdd(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  auto f = Existing(ctx, args);
  if (f == nullptr) return;
  std::vector<Status> statuses;
  std::vector<uint8_t> added;
  f->AddMany(args.subspan(2), &statuses, &added);
  ctx.out.Array(args.size() - 2);
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (statuses[i].ok()) {
      ctx.out.Integer(added[i]);
    } else {
      ReplyStatus(ctx, statuses[i]);
    }
  }
}

// SF.REMOVE key item: 1 removed, 0 not there; an error for Bloom filters.
void SfRemove(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  auto f = Existing(ctx, args);
  if (f == nullptr) return;
  const Status s = f->Remove(args[2]);
  if (s.ok()) return ctx.out.Integer(1);
  if (s.IsNotFound()) return ctx.out.Integer(0);
  if (s.IsNotSupported()) {
    return ctx.out.Error(
        "ERR bloom filters cannot remove items (use a counting or cuckoo "
        "filter)");
  }
  ReplyStatus(ctx, s);
}

// SF.UNION dest src [src ...]: OK once every source's bits are in dest.
void SfUnion(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  // A key that cannot be read answers its own error (Union's names no key).
  for (size_t i = 1; i < args.size(); ++i) {
    auto f = ctx.keyspace.Lookup(args[i]);
    if (!f.ok() && !IsAbsent(f.status()) &&
        f.status().code() != StatusCode::kWrongType) {
      return ReplyUnreadable(ctx, args[i], f.status());
    }
  }
  const Status s = ctx.keyspace.Union(args[1], args.subspan(2));
  if (s.ok()) return ctx.out.SimpleString("OK");
  ReplyStatus(ctx, s);
}

// SF.EXISTS key item: 1 may be present, 0 definitely absent (or no key).
void SfExists(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  bool failed = false;
  auto f = Maybe(ctx, args[1], &failed);
  if (failed) return;
  ctx.out.Integer(f != nullptr && f->MayContain(args[2]) ? 1 : 0);
}

void SfMExists(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  bool failed = false;
  auto f = Maybe(ctx, args[1], &failed);
  if (failed) return;
  const Args items = args.subspan(2);
  std::vector<uint8_t> found(items.size(), 0);
  if (f != nullptr) f->MayContainMany(items, found);
  ctx.out.Array(items.size());
  for (uint8_t b : found) ctx.out.Integer(b);
}

// SF.COUNT key item: copies held (counting / cuckoo; Bloom: 0 or 1).
void SfCount(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  bool failed = false;
  auto f = Maybe(ctx, args[1], &failed);
  if (failed) return;
  ctx.out.Integer(f != nullptr ? f->Count(args[2]) : 0);
}

// SF.INFO key: the filter's parameters and figures.
void SfInfo(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto f = Existing(ctx, args);
  if (f == nullptr) return;
  const FilterSpec spec = f->Spec();
  const ShardedStats stats = f->Stats();
  uint32_t links = 1;
  for (const ShardStats& sh : stats.shards) links = std::max(links, sh.links);
  const bool cuckoo = spec.type == FilterType::kCuckoo;
  ctx.out.Map(cuckoo ? 18 : 16);
  Pair(ctx, "type", FilterTypeName(spec.type));
  Pair(ctx, "capacity", static_cast<int64_t>(stats.total.capacity));
  Pair(ctx, "declared_capacity", static_cast<int64_t>(spec.capacity));
  Pair(ctx, "error_rate", spec.fpp);
  Pair(ctx, "scalable", int64_t{spec.scalable ? 1 : 0});
  Pair(ctx, "expansion", int64_t{spec.scalable ? spec.expansion : 0});
  Pair(ctx, "shards", static_cast<int64_t>(stats.shards.size()));
  Pair(ctx, "links", int64_t{links});
  Pair(ctx, "items", static_cast<int64_t>(stats.total.items));
  Pair(ctx, "deletes", static_cast<int64_t>(stats.total.deletes));
  Pair(ctx, "bytes", static_cast<int64_t>(stats.total.bytes));
  Pair(ctx, "bits_per_item", stats.total.bits_per_item);  // of capacity
  Pair(ctx, "fill", stats.total.fill_ratio);
  Pair(ctx, "estimated_fpr", stats.total.estimated_fpr);
  Pair(ctx, "durability",
       spec.durability.has_value() ? DurabilityName(*spec.durability)
                                   : "default");
  Pair(ctx, "retain_hashes", int64_t{spec.retain_hashes ? 1 : 0});
  if (cuckoo) {
    const CuckooOptions defaults;  // what 0 in the spec stands for
    Pair(ctx, "bucket_size",
         int64_t{spec.bucket_size != 0 ? spec.bucket_size
                                       : defaults.bucket_size});
    Pair(ctx, "max_iterations",
         int64_t{spec.max_kicks != 0 ? spec.max_kicks : defaults.max_kicks});
  }
}

// SF.SHARDS key: one map per shard.
void SfShards(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto f = Existing(ctx, args);
  if (f == nullptr) return;
  const ShardedStats stats = f->Stats();
  ctx.out.Array(stats.shards.size());
  for (const ShardStats& sh : stats.shards) {
    ctx.out.Map(10);
    Pair(ctx, "shard", int64_t{sh.shard});
    Pair(ctx, "links", int64_t{sh.links});
    Pair(ctx, "capacity", static_cast<int64_t>(sh.filter.capacity));
    Pair(ctx, "items", static_cast<int64_t>(sh.filter.items));
    Pair(ctx, "deletes", static_cast<int64_t>(sh.filter.deletes));
    Pair(ctx, "bytes", static_cast<int64_t>(sh.filter.bytes));
    Pair(ctx, "fill", sh.filter.fill_ratio);
    Pair(ctx, "estimated_fpr", sh.filter.estimated_fpr);
    Pair(ctx, "last_sequence", static_cast<int64_t>(sh.last_sequence));
    Pair(ctx, "checkpoint_sequence",
         static_cast<int64_t>(sh.checkpoint_sequence));
  }
}

// SF.MIGRATE key type capacity [options as SF.CREATE]: starts an online
// rebuild; SF.MIGRATION follows it.
void SfMigrate(CommandContext& ctx, Args args) {
  if (args.size() < 4) return ReplyWrongArity(ctx.out, args[0]);
  CreateParams p;
  if (!ParseSpec(ctx, args, 2, &p)) return;
  if (Existing(ctx, args) == nullptr) return;
  const Status s = ctx.keyspace.StartMigration(args[1], p);
  if (s.ok()) return ctx.out.SimpleString("OK");
  if (s.code() == StatusCode::kBusy) {
    return ctx.out.Error("ERR a migration of this key is running");
  }
  ReplyStatus(ctx, s);
}

// SF.MIGRATION key: the running or last migration's progress.
void SfMigration(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto r = ctx.keyspace.Migration(args[1]);
  if (!r.ok()) {
    if (r.status().IsNotFound()) return ctx.out.Error("ERR no migration");
    return ReplyStatus(ctx, r.status());
  }
  ctx.out.Map(7);
  Pair(ctx, "phase", r->phase);
  Pair(ctx, "items_total", static_cast<int64_t>(r->items_total));
  Pair(ctx, "items_done", static_cast<int64_t>(r->items_done));
  Pair(ctx, "ops_replayed", static_cast<int64_t>(r->ops_replayed));
  Pair(ctx, "ops_queued", static_cast<int64_t>(r->ops_queued));
  Pair(ctx, "seconds", r->seconds);
  Pair(ctx, "error", r->error);
}

}  // namespace handlers
}  // namespace shardfilter::commands
