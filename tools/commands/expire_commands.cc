// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME, PEXPIRETIME,
// PERSIST with Redis 7's semantics and texts over Keyspace::SetExpiry /
// GetExpiry. The server keeps each deadline in its store (it survives a
// restart) and drops a filter once its deadline has passed: on the next
// command that names it, and by a sweep ten times a second. Inside
// redis-server these are Redis's own commands (the module registers none
// of them).
#include <chrono>
#include <limits>
#include <string>

#include "tools/commands/command_table.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Redis's expireGenericCommand: `unit_ms` 1000 for seconds; `absolute`
// for the *AT forms.
void ExpireGeneric(CommandContext& ctx, Args args, int64_t unit_ms,
                   bool absolute) {
  int64_t when = 0;
  if (!ParseLongLong(args[2], &when)) {
    return ctx.out.Error("ERR value is not an integer or out of range");
  }
  bool nx = false, xx = false, gt = false, lt = false;
  for (size_t i = 3; i < args.size(); ++i) {
    if (EqualsIgnoreCase(args[i], "NX")) {
      nx = true;
    } else if (EqualsIgnoreCase(args[i], "XX")) {
      xx = true;
    } else if (EqualsIgnoreCase(args[i], "GT")) {
      gt = true;
    } else if (EqualsIgnoreCase(args[i], "LT")) {
      lt = true;
    } else {
      return ctx.out.Error("ERR Unsupported option " + std::string(args[i]));
    }
  }
  if (nx && (xx || gt || lt)) {
    return ctx.out.Error(
        "ERR NX and XX, GT or LT options at the same time are not "
        "compatible");
  }
  if (gt && lt) {
    return ctx.out.Error(
        "ERR GT and LT options at the same time are not compatible");
  }
  const std::string invalid =
      "ERR invalid expire time in '" + ToLower(args[0]) + "' command";
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (when > kMax / unit_ms || when < -(kMax / unit_ms)) {
    return ctx.out.Error(invalid);
  }
  int64_t deadline = when * unit_ms;
  if (!absolute) {
    const int64_t now = NowMs();
    if (deadline > kMax - now) return ctx.out.Error(invalid);
    deadline += now;
  }
  auto current = ctx.keyspace.GetExpiry(args[1]);
  if (current.status().IsNotFound()) return ctx.out.Integer(0);
  if (!current.ok()) return ReplyUnreadable(ctx, args[1], current.status());
  const bool has = current->has_value();
  // Redis: a key without a deadline has an infinite TTL for GT / LT.
  if ((nx && has) || (xx && !has) || (gt && (!has || deadline <= **current)) ||
      (lt && has && deadline >= **current)) {
    return ctx.out.Integer(0);
  }
  const Status s = ctx.keyspace.SetExpiry(args[1], deadline);
  if (s.IsNotFound()) return ctx.out.Integer(0);
  if (!s.ok()) return ctx.out.Error("ERR " + s.message());
  ctx.out.Integer(1);  // a deadline already past deleted the key
}

// TTL / PTTL / EXPIRETIME / PEXPIRETIME.
void TtlGeneric(CommandContext& ctx, Args args, bool ms, bool absolute) {
  auto current = ctx.keyspace.GetExpiry(args[1]);
  if (current.status().IsNotFound()) return ctx.out.Integer(-2);
  if (!current.ok()) return ReplyUnreadable(ctx, args[1], current.status());
  if (!current->has_value()) return ctx.out.Integer(-1);
  const int64_t deadline = **current;
  if (absolute) return ctx.out.Integer(ms ? deadline : deadline / 1000);
  int64_t left = deadline - NowMs();
  if (left < 0) left = 0;
  ctx.out.Integer(ms ? left : (left + 500) / 1000);
}

}  // namespace

namespace handlers {

void ExpireCmd(CommandContext& ctx, Args args) {
  ExpireGeneric(ctx, args, 1000, false);
}
void PExpireCmd(CommandContext& ctx, Args args) {
  ExpireGeneric(ctx, args, 1, false);
}
void ExpireAtCmd(CommandContext& ctx, Args args) {
  ExpireGeneric(ctx, args, 1000, true);
}
void PExpireAtCmd(CommandContext& ctx, Args args) {
  ExpireGeneric(ctx, args, 1, true);
}
void TtlCmd(CommandContext& ctx, Args args) {
  TtlGeneric(ctx, args, false, false);
}
void PTtlCmd(CommandContext& ctx, Args args) {
  TtlGeneric(ctx, args, true, false);
}
void ExpireTimeCmd(CommandContext& ctx, Args args) {
  TtlGeneric(ctx, args, false, true);
}
void PExpireTimeCmd(CommandContext& ctx, Args args) {
  TtlGeneric(ctx, args, true, true);
}

void PersistCmd(CommandContext& ctx, Args args) {
  auto current = ctx.keyspace.GetExpiry(args[1]);
  if (current.status().IsNotFound()) return ctx.out.Integer(0);
  if (!current.ok()) return ReplyUnreadable(ctx, args[1], current.status());
  if (!current->has_value()) return ctx.out.Integer(0);
  const Status s = ctx.keyspace.SetExpiry(args[1], std::nullopt);
  if (s.IsNotFound()) return ctx.out.Integer(0);
  if (!s.ok()) return ctx.out.Error("ERR " + s.message());
  ctx.out.Integer(1);
}

}  // namespace handlers
}  // namespace shardfilter::commands
