// Introspection: COMMAND (COUNT, INFO, DOCS, LIST, GETKEYS), INFO, CONFIG.
// INFO's commandstats / errorstats come from the host's CommandStats.
#include <string>
#include <vector>

#include "tools/commands/command_stats.h"
#include "tools/commands/command_table.h"
#include "tools/commands/util.h"

namespace shardfilter::commands {
namespace {

constexpr std::pair<uint32_t, const char*> kFlagNames[] = {
    {kWrite, "write"},     {kReadonly, "readonly"}, {kDenyOom, "denyoom"},
    {kFast, "fast"},       {kAdmin, "admin"},       {kNoAuth, "no_auth"},
    {kLoading, "loading"}, {kStale, "stale"},       {kNoScript, "noscript"},
};

bool HasKeys(const CommandSpec& c) { return c.first_key > 0; }

void ReplyKeySpecs(resp::ReplyWriter& out, const CommandSpec& c) {
  if (!HasKeys(c)) return out.Array(0);
  out.Array(1);
  out.Map(3);
  out.Bulk("flags");
  const bool write = (c.flags & kWrite) != 0;
  out.Set(2);
  out.SimpleString(write ? "RW" : "RO");
  out.SimpleString(write ? "UPDATE" : "ACCESS");
  out.Bulk("begin_search");
  out.Map(2);
  out.Bulk("type");
  out.Bulk("index");
  out.Bulk("spec");
  out.Map(1);
  out.Bulk("index");
  out.Integer(c.first_key);
  out.Bulk("find_keys");
  out.Map(2);
  out.Bulk("type");
  out.Bulk("range");
  out.Bulk("spec");
  out.Map(3);
  out.Bulk("lastkey");
  out.Integer(c.last_key < 0 ? -1 : c.last_key - c.first_key);
  out.Bulk("keystep");
  out.Integer(c.key_step);
  out.Bulk("limit");
  out.Integer(0);
}

// Redis 7's ten-element COMMAND INFO entry.
void ReplyCommandInfo(resp::ReplyWriter& out, const CommandSpec& c) {
  out.Array(10);
  out.Bulk(c.name);
  out.Integer(c.arity);
  size_t nflags = 0;
  for (const auto& [bit, name] : kFlagNames) nflags += (c.flags & bit) != 0;
  out.Set(nflags);
  for (const auto& [bit, name] : kFlagNames) {
    if (c.flags & bit) out.SimpleString(name);
  }
  out.Integer(c.first_key);
  out.Integer(c.last_key);
  out.Integer(c.key_step);
  const std::string group = c.group;
  const bool bloom = group == "bf" || group == "cf";
  out.Set(bloom ? 2 : 1);
  out.SimpleString((c.flags & kWrite) ? "@write" : "@read");
  if (bloom) out.SimpleString(group == "bf" ? "@bloom" : "@cuckoo");
  out.Set(0);  // tips
  ReplyKeySpecs(out, c);
  out.Array(0);  // subcommands
}

void ReplyCommandDocs(resp::ReplyWriter& out, const CommandSpec& c) {
  out.Bulk(c.name);
  out.Map(3);
  out.Bulk("summary");
  out.Bulk(c.summary);
  out.Bulk("since");
  out.Bulk("1.0.0");
  out.Bulk("group");
  const std::string group = c.group;
  out.Bulk(group == "bf" || group == "cf" ? "module" : group);
}

void AppendPersistence(CommandContext& ctx, std::string* out) {
  *out += "# Persistence\r\nloading:0\r\nasync_loading:0\r\n";
  *out += "rdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\n";
  *out += "rdb_last_save_time:" +
          std::to_string(ctx.keyspace.LastCheckpointUnix()) + "\r\n";
  *out += "rdb_last_bgsave_status:ok\r\naof_enabled:0\r\n";
  *out += "aof_rewrite_in_progress:0\r\naof_last_write_status:ok\r\n";
}

void AppendKeyspace(CommandContext& ctx, std::string* out) {
  *out += "# Keyspace\r\n";
  const KeyspaceFigures f = ctx.keyspace.Figures();
  if (f.keys > 0) {
    *out += "db0:keys=" + std::to_string(f.keys) +
            ",expires=" + std::to_string(f.expires) +
            ",avg_ttl=" + std::to_string(f.avg_ttl_ms) + "\r\n";
  }
}

}  // namespace

namespace handlers {

void Command(CommandContext& ctx, Args args) {
  const auto all = AllCommands();
  if (args.size() == 1) {
    ctx.out.Array(all.size());
    for (const CommandSpec& c : all) ReplyCommandInfo(ctx.out, c);
    return;
  }
  const std::string sub = ToLower(args[1]);
  if (sub == "count") return ctx.out.Integer(static_cast<int64_t>(all.size()));
  if (sub == "list") {
    ctx.out.Array(all.size());
    for (const CommandSpec& c : all) ctx.out.Bulk(c.name);
    return;
  }
  if (sub == "info") {
    if (args.size() == 2) {
      ctx.out.Array(all.size());
      for (const CommandSpec& c : all) ReplyCommandInfo(ctx.out, c);
      return;
    }
    ctx.out.Array(args.size() - 2);
    for (size_t i = 2; i < args.size(); ++i) {
      const CommandSpec* c = FindCommand(args[i]);
      if (c == nullptr) {
        ctx.out.NullArray();
      } else {
        ReplyCommandInfo(ctx.out, *c);
      }
    }
    return;
  }
  if (sub == "docs") {
    std::vector<const CommandSpec*> wanted;
    if (args.size() == 2) {
      for (const CommandSpec& c : all) wanted.push_back(&c);
    } else {
      for (size_t i = 2; i < args.size(); ++i) {
        if (const CommandSpec* c = FindCommand(args[i])) wanted.push_back(c);
      }
    }
    ctx.out.Map(wanted.size());
    for (const CommandSpec* c : wanted) ReplyCommandDocs(ctx.out, *c);
    return;
  }
  if (sub == "getkeys") {
    if (args.size() < 3) return ReplyWrongArity(ctx.out, "command|getkeys");
    const CommandSpec* c = FindCommand(args[2]);
    if (c == nullptr) return ctx.out.Error("ERR Invalid command specified");
    const Args cmd = args.subspan(2);
    const int n = static_cast<int>(cmd.size());
    if ((c->arity > 0 && n != c->arity) || (c->arity < 0 && n < -c->arity)) {
      return ctx.out.Error(
          "ERR Invalid number of arguments specified for command");
    }
    if (!HasKeys(*c)) {
      return ctx.out.Error("ERR The command has no key arguments");
    }
    const int last = c->last_key < 0 ? n + c->last_key : c->last_key;
    std::vector<std::string_view> keys;
    for (int i = c->first_key; i <= last && i < n; i += c->key_step) {
      keys.push_back(cmd[i]);
    }
    ctx.out.Array(keys.size());
    for (std::string_view k : keys) ctx.out.Bulk(k);
    return;
  }
  ctx.out.Error("ERR unknown subcommand '" + std::string(args[1]) +
                "'. Try COMMAND HELP.");
}

// INFO [section ...]: default / all / everything, or named sections.
// Default leaves commandstats out, as Redis does; all and everything
// include it.
void Info(CommandContext& ctx, Args args) {
  static constexpr const char* kDefault[] = {
      "server", "clients",    "memory",  "persistence",
      "stats",  "errorstats", "cluster", "keyspace"};
  static constexpr const char* kAll[] = {
      "server",       "clients",    "memory",  "persistence", "stats",
      "commandstats", "errorstats", "cluster", "keyspace"};
  std::vector<std::string> sections;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string s = ToLower(args[i]);
    if (s == "default") {
      sections.insert(sections.end(), std::begin(kDefault), std::end(kDefault));
    } else if (s == "all" || s == "everything") {
      sections.insert(sections.end(), std::begin(kAll), std::end(kAll));
    } else {
      sections.push_back(s);
    }
  }
  if (sections.empty()) {
    sections.assign(std::begin(kDefault), std::end(kDefault));
  }
  CommandStats* const stats = ctx.host.Stats();
  std::string text;
  for (const std::string& s : sections) {
    const size_t before = text.size();
    if (!text.empty()) text += "\r\n";
    if (s == "persistence") {
      AppendPersistence(ctx, &text);
    } else if (s == "keyspace") {
      AppendKeyspace(ctx, &text);
    } else if (s == "cluster") {
      text += "# Cluster\r\ncluster_enabled:";
      text += ctx.host.Cluster() != nullptr ? "1\r\n" : "0\r\n";
    } else if (s == "commandstats" && stats != nullptr) {
      stats->AppendCommandstats(&text);
    } else if (s == "errorstats" && stats != nullptr) {
      stats->AppendErrorstats(&text);
    } else if (!ctx.host.AppendInfoSection(s, &text)) {
      text.resize(before);  // unknown sections are left out, as in Redis
    }
  }
  ctx.out.Verbatim("txt", text);
}

// CONFIG GET pattern [pattern ...] | SET | RESETSTAT
void Config(CommandContext& ctx, Args args) {
  const std::string sub = ToLower(args[1]);
  if (sub == "get") {
    if (args.size() < 3) return ReplyWrongArity(ctx.out, "config|get");
    std::vector<std::pair<std::string, std::string>> matched;
    for (const auto& kv : ctx.host.ConfigValues()) {
      for (size_t i = 2; i < args.size(); ++i) {
        if (GlobMatch(args[i], kv.first, /*nocase=*/true)) {
          matched.push_back(kv);
          break;
        }
      }
    }
    ctx.out.Map(matched.size());
    for (const auto& [k, v] : matched) {
      ctx.out.Bulk(k);
      ctx.out.Bulk(v);
    }
    return;
  }
  if (sub == "resetstat") {
    if (CommandStats* stats = ctx.host.Stats()) stats->Reset();
    return ctx.out.SimpleString("OK");
  }
  if (sub == "set") {
    if (args.size() < 4) return ReplyWrongArity(ctx.out, "config|set");
    return ctx.out.Error("ERR Unsupported CONFIG parameter: " +
                         std::string(args[2]));
  }
  ctx.out.Error("ERR unknown subcommand '" + std::string(args[1]) +
                "'. Try CONFIG HELP.");
}

}  // namespace handlers
}  // namespace shardfilter::commands
