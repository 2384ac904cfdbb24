// Keyspace and persistence commands: DBSIZE, DEL/UNLINK, EXISTS, TYPE, KEYS,
// SCAN, FLUSHDB/FLUSHALL, SAVE/BGSAVE/LASTSAVE, SHUTDOWN, TIME.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "tools/commands/command_table.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

bool Holdable(CommandContext& ctx, std::string_view key) {
  return !key.empty() && key.size() <= ctx.keyspace.MaxKeyBytes();
}

// The TYPE name of what `key` holds ("none": nothing). A filter that exists
// but cannot be read is an error (its type is in what failed to load),
// never "none"; the other kinds' names are known without loading them.
Result<std::string> TypeOfKey(CommandContext& ctx, std::string_view key) {
  if (!Holdable(ctx, key)) return std::string("none");
  auto found = ctx.keyspace.Lookup(key);
  if (found.ok()) return std::string(TypeName((*found)->type()));
  const Status& s = found.status();
  if (s.code() == StatusCode::kWrongType) return ctx.keyspace.TypeOf(key);
  if (IsAbsent(s)) return std::string("none");
  return s;
}

// KEYS reads the keyspace in SCAN pages of this many names: one pass, no
// copy of every name at once, no lock held for the whole keyspace.
constexpr size_t kKeysPage = 1024;

}  // namespace

namespace handlers {

void Dbsize(CommandContext& ctx, Args) {
  ctx.out.Integer(static_cast<int64_t>(ctx.keyspace.Size()));
}

void Del(CommandContext& ctx, Args args) {
  int64_t deleted = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    if (!Holdable(ctx, args[i])) continue;
    auto r = ctx.keyspace.Delete(args[i]);
    if (!r.ok()) return ctx.out.Error("ERR " + r.status().message());
    deleted += *r ? 1 : 0;
  }
  ctx.out.Integer(deleted);
}

void Exists(CommandContext& ctx, Args args) {
  int64_t n = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    auto type = TypeOfKey(ctx, args[i]);
    if (!type.ok()) return ReplyUnreadable(ctx, args[i], type.status());
    if (*type != "none") ++n;
  }
  ctx.out.Integer(n);
}

void Type(CommandContext& ctx, Args args) {
  auto type = TypeOfKey(ctx, args[1]);
  if (!type.ok()) return ReplyUnreadable(ctx, args[1], type.status());
  ctx.out.SimpleString(*type);
}

// KEYS pattern: the matching keys in byte order.
void Keys(CommandContext& ctx, Args args) {
  const bool everything = args[1] == "*";
  std::vector<std::string> matched;
  uint64_t cursor = 0;
  do {
    ScanPage page = ctx.keyspace.Scan(cursor, kKeysPage);
    for (std::string& k : page.keys) {
      if (everything || GlobMatch(args[1], k)) matched.push_back(std::move(k));
    }
    cursor = page.next;
  } while (cursor != 0);
  std::sort(matched.begin(), matched.end());
  ctx.out.Array(matched.size());
  for (const std::string& k : matched) ctx.out.Bulk(k);
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
void Scan(CommandContext& ctx, Args args) {
  int64_t cursor = 0;
  if (!ParseLongLong(args[1], &cursor) || cursor < 0) {
    return ctx.out.Error("ERR invalid cursor");
  }
  std::string_view pattern, type;
  bool has_pattern = false, has_type = false;
  int64_t count = 10;
  for (size_t i = 2; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) return ctx.out.Error(kSyntaxError);
    if (EqualsIgnoreCase(args[i], "MATCH")) {
      pattern = args[i + 1];
      has_pattern = pattern != "*";
    } else if (EqualsIgnoreCase(args[i], "COUNT")) {
      if (!ParseLongLong(args[i + 1], &count)) {
        return ctx.out.Error("ERR value is not an integer or out of range");
      }
      if (count < 1) return ctx.out.Error(kSyntaxError);
    } else if (EqualsIgnoreCase(args[i], "TYPE")) {
      type = args[i + 1];
      has_type = true;
    } else {
      return ctx.out.Error(kSyntaxError);
    }
  }
  // MATCH and TYPE filter what COUNT visited, as in Redis: a call may
  // answer fewer than COUNT keys, or none, before the end.
  const ScanPage page = ctx.keyspace.Scan(static_cast<uint64_t>(cursor),
                                          static_cast<size_t>(count));
  std::vector<std::string_view> out;
  for (const std::string& k : page.keys) {
    if (has_pattern && !GlobMatch(pattern, k)) continue;
    if (has_type) {
      // A key whose type cannot be read fails the call: skipping it would
      // answer "not of that type" for a key that may be.
      auto t = TypeOfKey(ctx, k);
      if (!t.ok()) return ReplyUnreadable(ctx, k, t.status());
      if (!EqualsIgnoreCase(type, *t)) continue;
    }
    out.push_back(k);
  }
  const uint64_t next = page.next;
  ctx.out.Array(2);
  ctx.out.Bulk(std::to_string(next));
  ctx.out.Array(out.size());
  for (std::string_view k : out) ctx.out.Bulk(k);
}

// FLUSHDB / FLUSHALL [ASYNC | SYNC]: both run synchronously.
void Flush(CommandContext& ctx, Args args) {
  if (args.size() > 2 ||
      (args.size() == 2 && !EqualsIgnoreCase(args[1], "ASYNC") &&
       !EqualsIgnoreCase(args[1], "SYNC"))) {
    return ctx.out.Error(kSyntaxError);
  }
  const Status s = ctx.keyspace.Flush();
  if (!s.ok()) return ctx.out.Error("ERR " + s.message());
  ctx.out.SimpleString("OK");
}

void Save(CommandContext& ctx, Args) {
  const Status s = ctx.keyspace.Checkpoint();
  if (!s.ok()) return ctx.out.Error("ERR " + s.message());
  ctx.out.SimpleString("OK");
}

// BGSAVE [SCHEDULE]: the checkpoint is incremental (dirty shards only) and
// runs before the reply.
void Bgsave(CommandContext& ctx, Args args) {
  if (args.size() > 2 ||
      (args.size() == 2 && !EqualsIgnoreCase(args[1], "SCHEDULE"))) {
    return ctx.out.Error(kSyntaxError);
  }
  const Status s = ctx.keyspace.Checkpoint();
  if (!s.ok()) return ctx.out.Error("ERR " + s.message());
  ctx.out.SimpleString("Background saving started");
}

void Lastsave(CommandContext& ctx, Args) {
  ctx.out.Integer(ctx.keyspace.LastCheckpointUnix());
}

// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]. Every filter is
// checkpointed on the way down whatever the options (journalled writes
// survive anyway). No reply: the connection closes, as with Redis.
void Shutdown(CommandContext& ctx, Args args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string o = ToLower(args[i]);
    if (o == "abort") return ctx.out.Error("ERR No shutdown in progress.");
    if (o != "nosave" && o != "save" && o != "now" && o != "force") {
      return ctx.out.Error(kSyntaxError);
    }
  }
  ctx.host.RequestShutdown();
  ctx.session.close_after_reply = true;
}

void Time(CommandContext& ctx, Args) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(now).count();
  ctx.out.Array(2);
  ctx.out.Bulk(std::to_string(us / 1000000));
  ctx.out.Bulk(std::to_string(us % 1000000));
}

}  // namespace handlers
}  // namespace shardfilter::commands
