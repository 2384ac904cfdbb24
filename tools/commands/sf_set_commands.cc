// SF.DEDUP* (dedup sets: exact "new?" answers, optional TTL) and SF.TIER*
// (tiered filters: levels from coarse to precise, optionally ending in the
// exact key set), over the host's keyspace (Keyspace::LookupDedup / ...
// Tiered). docs/server.md specifies them; the module has neither (its
// keyspace answers NotSupported: a dedup set is a RocksDB set).
//
// Replies are integers under every protocol and INFO maps, as the other
// SF.* commands (sf_commands.cc). One file past ~400 lines: the two kinds
// share their option parsing, lookup and reply helpers.
#include <string>
#include <vector>

#include "tools/commands/command_table.h"
#include "tools/commands/sf_common.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

constexpr int64_t kMaxDedupCapacity = int64_t{1} << 40;

// Parses SF.DEDUPCREATE's options from args[at...]; writes the error and
// returns false on a bad one.
bool ParseDedupOptions(CommandContext& ctx, Args args, size_t at,
                       DedupParams* p) {
  bool partitions_given = false;
  for (size_t i = at; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) {
      ctx.out.Error(kSyntaxError);
      return false;
    }
    const std::string_view word = args[i], value = args[i + 1];
    int64_t n = 0;
    if (EqualsIgnoreCase(word, "CAPACITY")) {
      if (!ParseLongLong(value, &n) || n < 1 || n > kMaxDedupCapacity) {
        ctx.out.Error("ERR bad capacity (1.." +
                      std::to_string(kMaxDedupCapacity) + ")");
        return false;
      }
      p->capacity = static_cast<uint64_t>(n);
    } else if (EqualsIgnoreCase(word, "ERROR")) {
      double rate = 0;
      if (!ParseDouble(value, &rate) || !(rate > 0 && rate < 1)) {
        ctx.out.Error("ERR 0 < error rate range < 1");
        return false;
      }
      p->error_rate = rate;
    } else if (EqualsIgnoreCase(word, "TTL")) {
      if (!ParseLongLong(value, &n) || n < 0) {
        ctx.out.Error("ERR TTL must be a number of milliseconds >= 0");
        return false;
      }
      p->ttl_ms = static_cast<uint64_t>(n);
    } else if (EqualsIgnoreCase(word, "PARTITIONS")) {
      if (!ParseLongLong(value, &n) || n < 1 || n > kMaxDedupPartitions) {
        ctx.out.Error("ERR PARTITIONS must be in 1.." +
                      std::to_string(kMaxDedupPartitions));
        return false;
      }
      p->partitions = static_cast<uint32_t>(n);
      partitions_given = true;
    } else if (EqualsIgnoreCase(word, "FILTER")) {
      if (EqualsIgnoreCase(value, "cuckoo")) {
        p->filter_type = FilterType::kCuckoo;
      } else if (EqualsIgnoreCase(value, "counting")) {
        p->filter_type = FilterType::kCountingBloom;
      } else if (EqualsIgnoreCase(value, "bloom")) {
        p->filter_type = FilterType::kBloom;
      } else {
        ctx.out.Error("ERR FILTER must be cuckoo, counting or bloom");
        return false;
      }
    } else if (EqualsIgnoreCase(word, "DURABILITY")) {
      auto d = ParseDurability(ToLower(value));
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
  if (partitions_given && p->ttl_ms == 0) {
    ctx.out.Error("ERR PARTITIONS needs a TTL");
    return false;
  }
  return true;
}

// Replies for a failed lookup of a key that is there: WRONGTYPE for
// another kind, else the key cannot be read.
void ReplyLookupError(CommandContext& ctx, std::string_view key,
                      const Status& s) {
  if (s.code() == StatusCode::kWrongType) return ReplyStatus(ctx, s);
  ReplyUnreadable(ctx, key, s);
}

// The dedup set at `key` for a write, created with the defaults when
// missing; null with the reply written.
std::shared_ptr<DedupHandle> DedupForWrite(CommandContext& ctx,
                                           std::string_view key) {
  // Another connection may create the key between our lookup and create,
  // and a third drop it again before we look once more: bounded.
  for (int attempt = 1; attempt <= kMaxWriteAttempts; ++attempt) {
    auto found = ctx.keyspace.LookupDedup(key);
    if (found.ok()) return *std::move(found);
    if (found.status().IsInvalidArgument()) {  // a name no key can have
      ReplyStatus(ctx, found.status());
      return nullptr;
    }
    if (!found.status().IsNotFound()) {
      ReplyLookupError(ctx, key, found.status());
      return nullptr;
    }
    if (RefuseKeyName(ctx, key)) return nullptr;
    auto created = ctx.keyspace.CreateDedup(key, DedupParams{});
    if (created.ok()) return *std::move(created);
    if (created.status().code() != StatusCode::kAlreadyExists) {
      ReplyStatus(ctx, created.status());
      return nullptr;
    }
  }
  ctx.out.Error(kDroppedDuringWriteError);
  return nullptr;
}

// For queries: null and no reply when the key is missing; null with the
// reply written (*failed) for another kind or a key that cannot be read.
template <typename Handle, typename LookupFn>
std::shared_ptr<Handle> ForQuery(CommandContext& ctx, std::string_view key,
                                 LookupFn&& lookup, bool* failed) {
  auto found = lookup();
  *failed = false;
  if (found.ok()) return *std::move(found);
  if (IsAbsent(found.status())) return nullptr;
  *failed = true;
  ReplyLookupError(ctx, key, found.status());
  return nullptr;
}

// For the other commands: null with "ERR not found" written when the key
// is missing, or the lookup's error.
template <typename Handle, typename LookupFn>
std::shared_ptr<Handle> ForUse(CommandContext& ctx, std::string_view key,
                               LookupFn&& lookup) {
  auto found = lookup();
  if (found.ok()) return *std::move(found);
  if (IsAbsent(found.status())) {
    ctx.out.Error(kNotFoundError);
  } else {
    ReplyLookupError(ctx, key, found.status());
  }
  return nullptr;
}

// A dedup set refuses items over kMaxDedupKeyBytes (the engine's check and
// text, DedupStore): checked before DedupForWrite, so that a refused write
// creates no set. True when refused (reply written).
bool RefuseDedupItems(CommandContext& ctx, Args items, bool many) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].size() <= kMaxDedupKeyBytes) continue;
    Status s = Status::InvalidArgument(
        "dedup key of " + std::to_string(items[i].size()) +
        " bytes exceeds the limit of " + std::to_string(kMaxDedupKeyBytes));
    if (many) s = s.WithContext("key #" + std::to_string(i + 1));
    ReplyStatus(ctx, s);
    return true;
  }
  return false;
}

void ReplyBits(CommandContext& ctx, const std::vector<uint8_t>& bits,
               bool array) {
  if (!array) return ctx.out.Integer(bits[0]);
  ctx.out.Array(bits.size());
  for (uint8_t b : bits) ctx.out.Integer(b);
}

// SF.DEDUPADD / SF.DEDUPMADD: 1 new, 0 seen (per item). A set dropped
// between the lookup and the insert (its handle answers NotFound) is looked
// up (created) again.
void DedupInsert(CommandContext& ctx, Args args, bool many) {
  if (RefuseDedupItems(ctx, args.subspan(2), many)) return;
  std::vector<uint8_t> out;
  Status s;
  for (int attempt = 1;; ++attempt) {
    auto d = DedupForWrite(ctx, args[1]);
    if (d == nullptr) return;
    s = d->Insert(args.subspan(2), &out);
    if (!s.IsNotFound()) break;
    if (attempt == kMaxWriteAttempts) {
      return ctx.out.Error(kDroppedDuringWriteError);
    }
  }
  if (!s.ok()) return ReplyStatus(ctx, s);
  ReplyBits(ctx, out, many);
}

// A set dropped between the lookup and the query is looked up again (and
// then answers as a missing key).
void DedupQuery(CommandContext& ctx, Args args, bool many) {
  std::vector<uint8_t> out(args.size() - 2, 0);
  for (int attempt = 1;; ++attempt) {
    bool failed = false;
    auto d = ForQuery<DedupHandle>(
        ctx, args[1], [&] { return ctx.keyspace.LookupDedup(args[1]); },
        &failed);
    if (failed) return;
    if (d == nullptr) break;
    const Status s = d->Contains(args.subspan(2), &out);
    if (s.ok()) break;
    if (!s.IsNotFound() || attempt == kMaxWriteAttempts) {
      return ReplyStatus(ctx, s);
    }
  }
  ReplyBits(ctx, out, many);
}

// Parses SF.TIERCREATE's arguments after the key into *p.
bool ParseTiered(CommandContext& ctx, Args args, TieredParams* p) {
  size_t i = 2;
  for (; i < args.size() && !EqualsIgnoreCase(args[i], "LEVEL"); ++i) {
    if (EqualsIgnoreCase(args[i], "EXACT")) {
      p->exact_level = true;
    } else if (EqualsIgnoreCase(args[i], "DURABILITY") && i + 1 < args.size()) {
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
  while (i < args.size()) {  // args[i] is LEVEL
    size_t end = i + 1;
    while (end < args.size() && !EqualsIgnoreCase(args[end], "LEVEL")) ++end;
    if (end - i < 3) {
      ctx.out.Error("ERR LEVEL needs a type and a capacity");
      return false;
    }
    CreateParams level;
    if (!ParseSpec(ctx, args.first(end), i + 1, &level)) return false;
    if (level.durability.has_value() || level.retain_hashes) {
      ctx.out.Error(
          "ERR DURABILITY is set for the whole tiered filter (before the "
          "first LEVEL); RETAIN is not available for its levels");
      return false;
    }
    p->levels.push_back(level);
    i = end;
  }
  if (p->levels.empty() || p->levels.size() > kMaxTieredLevels) {
    ctx.out.Error("ERR a tiered filter has 1.." +
                  std::to_string(kMaxTieredLevels) + " levels (LEVEL ...)");
    return false;
  }
  return true;
}

// The tiered filter at `key` for a write; null with the reply written.
std::shared_ptr<TieredHandle> TieredForWrite(CommandContext& ctx,
                                             std::string_view key) {
  return ForUse<TieredHandle>(
      ctx, key, [&] { return ctx.keyspace.LookupTiered(key); });
}

void TieredQuery(CommandContext& ctx, Args args, bool many) {
  bool failed = false;
  auto t = ForQuery<TieredHandle>(
      ctx, args[1], [&] { return ctx.keyspace.LookupTiered(args[1]); },
      &failed);
  if (failed) return;
  std::vector<uint8_t> out(args.size() - 2, 0);
  if (t != nullptr) {
    const Status s = t->Contains(args.subspan(2), out);
    if (!s.ok()) return ReplyStatus(ctx, s);
  }
  ReplyBits(ctx, out, many);
}

void TieredInsert(CommandContext& ctx, Args args, bool many) {
  auto t = TieredForWrite(ctx, args[1]);
  if (t == nullptr) return;
  std::vector<Status> per_item;
  const Status first = t->Add(args.subspan(2), &per_item);
  if (!many) {
    if (!first.ok()) return ReplyStatus(ctx, first);
    return ctx.out.Integer(1);
  }
  ctx.out.Array(per_item.size());
  for (const Status& s : per_item) {
    if (s.ok()) {
      ctx.out.Integer(1);
    } else {
      ReplyStatus(ctx, s);
    }
  }
}

}  // namespace

namespace handlers {

// SF.DEDUPCREATE key [CAPACITY n] [ERROR rate] [TTL ms] [PARTITIONS n]
//   [FILTER cuckoo|counting|bloom] [DURABILITY none|journal|sync]
void SfDedupCreate(CommandContext& ctx, Args args) {
  if (args.size() < 2) return ReplyWrongArity(ctx.out, args[0]);
  DedupParams p;
  if (!ParseDedupOptions(ctx, args, 2, &p)) return;
  if (RefuseKeyName(ctx, args[1])) return;
  auto created = ctx.keyspace.CreateDedup(args[1], p);
  if (!created.ok()) return ReplyStatus(ctx, created.status());
  ctx.out.SimpleString("OK");
}

void SfDedupAdd(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  DedupInsert(ctx, args, false);
}

void SfDedupMAdd(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  DedupInsert(ctx, args, true);
}

void SfDedupExists(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  DedupQuery(ctx, args, false);
}

void SfDedupMExists(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  DedupQuery(ctx, args, true);
}

// SF.DEDUPDEL key item [item ...]: per item 1 removed, 0 absent (one
// integer for one item).
void SfDedupDel(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  auto d = ForUse<DedupHandle>(
      ctx, args[1], [&] { return ctx.keyspace.LookupDedup(args[1]); });
  if (d == nullptr) return;
  std::vector<uint8_t> out;
  const Status s = d->Remove(args.subspan(2), &out);
  if (!s.ok()) return ReplyStatus(ctx, s);
  ReplyBits(ctx, out, args.size() > 3);
}

void SfDedupInfo(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto found = ForUse<DedupHandle>(
      ctx, args[1], [&] { return ctx.keyspace.LookupDedup(args[1]); });
  if (found == nullptr) return;
  DedupHandle& d = *found;
  const DedupStats st = d.Stats();
  uint64_t items = 0, bytes = 0;
  for (const DedupPartitionStats& p : st.partitions) {
    items += p.filter_items;
    bytes += p.filter_bytes;
  }
  ctx.out.Map(17);
  Pair(ctx, "ttl_ms", static_cast<int64_t>(d.ttl_ms()));
  Pair(ctx, "partitions", static_cast<int64_t>(d.partitions()));
  Pair(ctx, "durability", DurabilityName(d.durability()));
  Pair(ctx, "keys", static_cast<int64_t>(items));  // held by the filters
  Pair(ctx, "filter_bytes", static_cast<int64_t>(bytes));
  Pair(ctx, "live_partitions", static_cast<int64_t>(st.partitions.size()));
  Pair(ctx, "inserts", static_cast<int64_t>(st.inserts));
  Pair(ctx, "new_keys", static_cast<int64_t>(st.new_keys));
  Pair(ctx, "duplicates", static_cast<int64_t>(st.duplicates));
  Pair(ctx, "removes", static_cast<int64_t>(st.removes));
  Pair(ctx, "removed", static_cast<int64_t>(st.removed));
  Pair(ctx, "lookups", static_cast<int64_t>(st.lookups));
  Pair(ctx, "store_reads", static_cast<int64_t>(st.rocksdb_reads));
  Pair(ctx, "reads_avoided", static_cast<int64_t>(st.reads_avoided));
  Pair(ctx, "filter_false_positives",
       static_cast<int64_t>(st.filter_false_positives));
  Pair(ctx, "observed_fpr", st.observed_fpr);
  Pair(ctx, "expired_keys", static_cast<int64_t>(st.expired_keys));
}

// SF.TIERCREATE key [EXACT] [DURABILITY mode] LEVEL spec [LEVEL spec ...]
void SfTierCreate(CommandContext& ctx, Args args) {
  if (args.size() < 5) return ReplyWrongArity(ctx.out, args[0]);
  TieredParams p;
  if (!ParseTiered(ctx, args, &p)) return;
  if (RefuseKeyName(ctx, args[1])) return;
  auto created = ctx.keyspace.CreateTiered(args[1], p);
  if (!created.ok()) return ReplyStatus(ctx, created.status());
  ctx.out.SimpleString("OK");
}

void SfTierAdd(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  TieredInsert(ctx, args, false);
}

void SfTierMAdd(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  TieredInsert(ctx, args, true);
}

void SfTierExists(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  TieredQuery(ctx, args, false);
}

void SfTierMExists(CommandContext& ctx, Args args) {
  if (args.size() < 3) return ReplyWrongArity(ctx.out, args[0]);
  TieredQuery(ctx, args, true);
}

// SF.TIERDEL key item: 1 removed, 0 not held.
void SfTierDel(CommandContext& ctx, Args args) {
  if (args.size() != 3) return ReplyWrongArity(ctx.out, args[0]);
  auto t = TieredForWrite(ctx, args[1]);
  if (t == nullptr) return;
  const Status s = t->Remove(args[2]);
  if (s.ok()) return ctx.out.Integer(1);
  if (s.IsNotFound()) return ctx.out.Integer(0);
  if (s.IsNotSupported()) {
    return ctx.out.Error("ERR this tiered filter cannot remove items: " +
                         s.message());
  }
  ReplyStatus(ctx, s);
}

void SfTierInfo(CommandContext& ctx, Args args) {
  if (args.size() != 2) return ReplyWrongArity(ctx.out, args[0]);
  auto t = TieredForWrite(ctx, args[1]);
  if (t == nullptr) return;
  const TieredStats st = t->Stats();
  ctx.out.Map(10);
  Pair(ctx, "exact_level", int64_t{st.exact_level ? 1 : 0});
  Pair(ctx, "queries", static_cast<int64_t>(st.queries));
  Pair(ctx, "exact_reached", static_cast<int64_t>(st.exact_reached));
  Pair(ctx, "exact_absent", static_cast<int64_t>(st.exact_absent));
  Pair(ctx, "exact_found", static_cast<int64_t>(st.exact_found));
  Pair(ctx, "filter_bytes", static_cast<int64_t>(st.filter_bytes));
  Pair(ctx, "compound_target_fpr", st.compound_target_fpr);
  Pair(ctx, "compound_estimated_fpr", st.compound_estimated_fpr);
  Pair(ctx, "compound_measured_fpr", st.compound_measured_fpr);
  ctx.out.SimpleString("levels");
  ctx.out.Array(st.levels.size());
  for (const TieredLevelStats& l : st.levels) {
    ctx.out.Map(10);
    Pair(ctx, "level", static_cast<int64_t>(l.level));
    Pair(ctx, "type", FilterTypeName(l.type));
    Pair(ctx, "capacity", static_cast<int64_t>(l.capacity));
    Pair(ctx, "bytes", static_cast<int64_t>(l.bytes));
    Pair(ctx, "target_fpr", l.target_fpr);
    Pair(ctx, "estimated_fpr", l.estimated_fpr);
    Pair(ctx, "reached", static_cast<int64_t>(l.reached));
    Pair(ctx, "settled", static_cast<int64_t>(l.settled));
    Pair(ctx, "passed", static_cast<int64_t>(l.passed));
    Pair(ctx, "measured_fpr", l.measured_fpr);
  }
}

}  // namespace handlers
}  // namespace shardfilter::commands
