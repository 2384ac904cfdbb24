// Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET,
// CLIENT, and MULTI / EXEC / DISCARD, with Redis 7's replies and errors.
//
// MULTI isolation: queued commands run back to back when EXEC arrives, on
// the connection's thread, but other connections' commands may interleave
// with them (the engine is concurrent and there is no global lock). Each
// command is itself atomic per item; a transaction is not atomic as a whole.
// There is no WATCH. Queueing errors (unknown command, arity, NOAUTH) make
// EXEC answer EXECABORT, as in Redis 7.
#include <string>
#include <vector>

#include "tools/commands/command_table.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";

bool ValidClientName(std::string_view name) {
  for (char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

void HelloReply(CommandContext& ctx) {
  ctx.out.Map(7);
  ctx.out.Bulk("server");
  ctx.out.Bulk("redis");
  ctx.out.Bulk("version");
  ctx.out.Bulk("7.0.0");
  ctx.out.Bulk("proto");
  ctx.out.Integer(ctx.out.protocol());
  ctx.out.Bulk("id");
  ctx.out.Integer(static_cast<int64_t>(ctx.session.id));
  ctx.out.Bulk("mode");
  ctx.out.Bulk(ctx.host.Cluster() != nullptr ? "cluster" : "standalone");
  ctx.out.Bulk("role");
  ctx.out.Bulk("master");
  ctx.out.Bulk("modules");
  ctx.out.Array(0);
}

bool Authenticate(CommandContext& ctx, std::string_view user,
                  std::string_view password) {
  if (!ctx.host.CheckPassword(user, password)) return false;
  ctx.session.authenticated = true;
  return true;
}

}  // namespace

namespace handlers {

void Ping(CommandContext& ctx, Args args) {
  if (args.size() > 2) return ReplyWrongArity(ctx.out, "ping");
  if (args.size() == 2) return ctx.out.Bulk(args[1]);
  ctx.out.SimpleString("PONG");
}

void Echo(CommandContext& ctx, Args args) { ctx.out.Bulk(args[1]); }

// HELLO [protover [AUTH username password] [SETNAME clientname]]
void Hello(CommandContext& ctx, Args args) {
  int64_t version = ctx.out.protocol();
  size_t i = 1;
  if (args.size() >= 2) {
    if (!ParseLongLong(args[1], &version)) {
      return ctx.out.Error(
          "ERR Protocol version is not an integer or out of range");
    }
    if (version < 2 || version > 3) {
      return ctx.out.Error("NOPROTO unsupported protocol version");
    }
    i = 2;
  }
  std::string_view user, password, name;
  bool has_auth = false, has_name = false;
  for (; i < args.size(); ++i) {
    const bool more = i + 1 < args.size();
    if (EqualsIgnoreCase(args[i], "AUTH") && i + 2 < args.size()) {
      user = args[i + 1];
      password = args[i + 2];
      has_auth = true;
      i += 2;
    } else if (EqualsIgnoreCase(args[i], "SETNAME") && more) {
      name = args[i + 1];
      has_name = true;
      if (!ValidClientName(name)) {
        return ctx.out.Error(
            "ERR Client names cannot contain spaces, newlines or special "
            "characters.");
      }
      ++i;
    } else {
      return ctx.out.Error("ERR Syntax error in HELLO option '" +
                           std::string(args[i]) + "'");
    }
  }
  if (has_auth && !Authenticate(ctx, user, password)) {
    return ctx.out.Error(kWrongPass);
  }
  if (ctx.host.RequiresPassword() && !ctx.session.authenticated) {
    return ctx.out.Error(
        "NOAUTH HELLO must be called with the client already authenticated, "
        "otherwise the HELLO <proto> AUTH <user> <pass> option can be used "
        "to authenticate the client and select the RESP protocol version at "
        "the same time");
  }
  if (has_name) ctx.session.name = std::string(name);
  ctx.out.SetProtocol(static_cast<int>(version));
  HelloReply(ctx);
}

// AUTH [username] password
void Auth(CommandContext& ctx, Args args) {
  if (args.size() > 3) return ctx.out.Error(kSyntaxError);
  if (!ctx.host.RequiresPassword()) {
    if (args.size() == 2) {
      return ctx.out.Error(
          "ERR AUTH <password> called without any password configured for "
          "the default user. Are you sure your configuration is correct?");
    }
  }
  const std::string_view user = args.size() == 3 ? args[1] : "default";
  if (!Authenticate(ctx, user, args.back())) return ctx.out.Error(kWrongPass);
  ctx.out.SimpleString("OK");
}

void Select(CommandContext& ctx, Args args) {
  int64_t db = 0;
  if (!ParseLongLong(args[1], &db)) {
    return ctx.out.Error("ERR value is not an integer or out of range");
  }
  if (db != 0) return ctx.out.Error("ERR DB index is out of range");
  ctx.out.SimpleString("OK");
}

void Quit(CommandContext& ctx, Args) {
  ctx.session.close_after_reply = true;
  ctx.out.SimpleString("OK");
}

void Reset(CommandContext& ctx, Args) {
  ctx.session.in_multi = false;
  ctx.session.multi_failed = false;
  ctx.session.queued.clear();
  ctx.session.name.clear();
  ctx.session.authenticated = false;
  ctx.out.SetProtocol(2);
  ctx.out.SimpleString("RESET");
}

// CLIENT ID | SETNAME name | GETNAME | SETINFO attr value | LIST | INFO
void Client(CommandContext& ctx, Args args) {
  const std::string sub = ToLower(args[1]);
  auto arity = [&](size_t n) {
    if (args.size() == n) return true;
    ReplyWrongArity(ctx.out, "client|" + sub);
    return false;
  };
  if (sub == "id") {
    if (!arity(2)) return;
    return ctx.out.Integer(static_cast<int64_t>(ctx.session.id));
  }
  if (sub == "setname") {
    if (!arity(3)) return;
    if (!ValidClientName(args[2])) {
      return ctx.out.Error(
          "ERR Client names cannot contain spaces, newlines or special "
          "characters.");
    }
    ctx.session.name = std::string(args[2]);
    return ctx.out.SimpleString("OK");
  }
  if (sub == "getname") {
    if (!arity(2)) return;
    if (ctx.session.name.empty()) return ctx.out.Null();
    return ctx.out.Bulk(ctx.session.name);
  }
  if (sub == "setinfo") {
    if (!arity(4)) return;
    if (!ValidClientName(args[3]) && !args[3].empty()) {
      return ctx.out.Error(
          "ERR " + ToLower(args[2]) +
          " cannot contain spaces, newlines or special characters.");
    }
    if (EqualsIgnoreCase(args[2], "LIB-NAME")) {
      ctx.session.lib_name = std::string(args[3]);
    } else if (EqualsIgnoreCase(args[2], "LIB-VER")) {
      ctx.session.lib_ver = std::string(args[3]);
    } else {
      return ctx.out.Error("ERR Unrecognized option '" + std::string(args[2]) +
                           "'");
    }
    return ctx.out.SimpleString("OK");
  }
  if (sub == "list") {
    return ctx.out.Verbatim("txt", ctx.host.ClientList(ctx.session));
  }
  if (sub == "info") {
    if (!arity(2)) return;
    std::string line = ctx.host.ClientList(ctx.session);
    // The host lists this client first.
    const size_t nl = line.find('\n');
    if (nl != std::string::npos) line.resize(nl + 1);
    return ctx.out.Verbatim("txt", line);
  }
  if (sub == "no-evict" || sub == "no-touch" || sub == "reply") {
    return ctx.out.SimpleString("OK");
  }
  ctx.out.Error("ERR unknown subcommand '" + std::string(args[1]) +
                "'. Try CLIENT HELP.");
}

void Multi(CommandContext& ctx, Args) {
  if (ctx.session.in_multi) {
    return ctx.out.Error("ERR MULTI calls can not be nested");
  }
  ctx.session.in_multi = true;
  ctx.session.multi_failed = false;
  ctx.session.queued.clear();
  ctx.out.SimpleString("OK");
}

void Exec(CommandContext& ctx, Args) {
  Session& s = ctx.session;
  if (!s.in_multi) return ctx.out.Error("ERR EXEC without MULTI");
  std::vector<std::vector<std::string>> queued;
  queued.swap(s.queued);
  s.in_multi = false;
  if (s.multi_failed) {
    s.multi_failed = false;
    return ctx.out.Error(
        "EXECABORT Transaction discarded because of previous errors.");
  }
  ctx.out.Array(queued.size());
  std::vector<std::string_view> views;
  for (const auto& cmd : queued) {
    views.assign(cmd.begin(), cmd.end());
    Dispatch(ctx, views);
  }
}

void Discard(CommandContext& ctx, Args) {
  if (!ctx.session.in_multi) {
    return ctx.out.Error("ERR DISCARD without MULTI");
  }
  ctx.session.in_multi = false;
  ctx.session.multi_failed = false;
  ctx.session.queued.clear();
  ctx.out.SimpleString("OK");
}

}  // namespace handlers
}  // namespace shardfilter::commands
