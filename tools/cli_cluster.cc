// `shardfilter cluster ...`: multi-part filters on a Redis Cluster (or one
// Redis / shardfilter-server), through the cluster client
// (tools/cluster/cluster_client.h) and the routing of
// shardfilter/engine/multi_part.h. Talks RESP only: no store is opened.
// Longer than 400 lines because its five subcommands share the setup, the
// parts check and the routing helpers, which live nowhere else.
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/multi_part.h"
#include "tools/cli.h"
#include "tools/cli_commands.h"
#include "tools/cluster/cluster_client.h"
#include "tools/key_reader.h"

namespace shardfilter::tools {
namespace {

using cluster::ClusterClient;
using cluster::ClusterCommand;
using resp::Reply;

// Items per SF.MADD / SF.MEXISTS command, and keys read per round trip of
// the whole cluster (each part's commands pipelined on its node).
constexpr size_t kItemsPerCommand = 500;
constexpr size_t kKeysPerRound = 64 * 1024;
constexpr uint64_t kMaxReported = 10;

struct Setup {
  std::unique_ptr<ClusterClient> client;
  std::optional<MultiPartFilter> filter;
};

int Fail(CommandContext& ctx, const Status& s) {
  return ReportError(ctx.err, s);
}

// Connects and builds the filter's routing from --node and --parts.
int Open(CommandContext& ctx, bool writes, Setup* out) {
  const std::string* node = ctx.args.Get("node");
  if (node == nullptr)
    return UsageError(ctx.err, "--node HOST:PORT is required");
  const std::string* parts_text = ctx.args.Get("parts");
  if (parts_text == nullptr)
    return UsageError(ctx.err, "--parts N is required");
  Result<uint64_t> parts = ParseCountInRange(*parts_text, 1, kMaxFilterParts);
  if (!parts.ok()) return ReportError(ctx.err, parts.status());
  Result<MultiPartFilter> f = MultiPartFilter::Make(
      ctx.args.positional[1], static_cast<uint32_t>(*parts));
  if (!f.ok()) return ReportError(ctx.err, f.status());
  Result<cluster::NodeAddress> seed = cluster::ParseNodeAddress(*node);
  if (!seed.ok()) return ReportError(ctx.err, seed.status());
  cluster::ClusterOptions o;
  o.seed = *seed;
  // As redis-cli: the password from the environment, never the command
  // line (where `ps` shows it).
  if (const char* pw = std::getenv("REDISCLI_AUTH"); pw != nullptr) {
    o.password = pw;
  }
  if (const std::string* u = ctx.args.Get("user")) o.user = *u;
  if (writes) {
    if (const std::string* w = ctx.args.Get("wait-replicas")) {
      Result<uint64_t> r = ParseCountInRange(*w, 0, 64);
      if (!r.ok()) return ReportError(ctx.err, r.status());
      o.wait_replicas = static_cast<int>(*r);
    }
    if (const std::string* w = ctx.args.Get("wait-timeout")) {
      Result<uint64_t> r = ParseCountInRange(*w, 1, 3'600'000);
      if (!r.ok()) return ReportError(ctx.err, r.status());
      o.wait_timeout_ms = static_cast<int>(*r);
    }
  }
  Result<std::unique_ptr<ClusterClient>> c = ClusterClient::Connect(o);
  if (!c.ok()) return Fail(ctx, c.status());
  out->client = std::move(*c);
  out->filter = std::move(*f);
  return kExitOk;
}

std::string Stats(const ClusterClient& c) {
  const cluster::ClusterStats& s = c.stats();
  return std::to_string(c.masters()) +
         (c.cluster_mode() ? " master(s)" : " standalone server") + ", " +
         std::to_string(s.commands) + " commands, " + std::to_string(s.moved) +
         " MOVED, " + std::to_string(s.asked) + " ASK, " +
         std::to_string(s.retried) + " retried, " +
         std::to_string(s.reconnects) + " reconnects";
}

// Checks that the filter's parts are there: part 0 and part N-1 exist and
// part N does not (a wrong --parts would route items to the wrong part).
int CheckParts(CommandContext& ctx, Setup& s) {
  const MultiPartFilter& f = *s.filter;
  std::vector<ClusterCommand> cmds = {{{"EXISTS", f.PartKey(0)}},
                                      {{"EXISTS", f.PartKey(f.parts() - 1)}},
                                      {{"EXISTS", f.PartKey(f.parts())}}};
  Result<std::vector<Reply>> r = s.client->Run(cmds);
  if (!r.ok()) return Fail(ctx, r.status());
  for (const Reply& x : *r) {
    if (x.is_error()) return Fail(ctx, Status::IOError("EXISTS: " + x.str));
  }
  if ((*r)[0].integer != 1 || (*r)[1].integer != 1) {
    return Fail(ctx,
                Status::NotFound(
                    "'" + f.name() + "' has no " + std::to_string(f.parts()) +
                    " parts here (create it with `shardfilter cluster "
                    "create`, or give the --parts it was created with)"));
  }
  if ((*r)[2].integer != 0) {
    return Fail(ctx, Status::InvalidArgument(
                         "'" + f.name() + "' has more than " +
                         std::to_string(f.parts()) +
                         " parts: give the --parts it was created with"));
  }
  return kExitOk;
}

// SF.INFO of every part, in part order.
Result<std::vector<Reply>> PartInfos(Setup& s) {
  const MultiPartFilter& f = *s.filter;
  std::vector<ClusterCommand> cmds;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    cmds.push_back({{"SF.INFO", f.PartKey(p)}});
  }
  return s.client->Run(cmds);
}

// The keys of the command: positional arguments after NAME, else stdin.
class Keys {
 public:
  explicit Keys(CommandContext& ctx)
      : ctx_(ctx),
        reader_({}, ctx.in, false),
        from_args_(ctx.args.positional.size() > 2) {}
  // The next round's keys into *keys; false when none are left.
  bool Next(std::vector<std::string>* keys) {
    keys->clear();
    if (from_args_) {
      const auto& p = ctx_.args.positional;
      while (next_ < p.size() && keys->size() < kKeysPerRound) {
        keys->push_back(p[next_++]);
      }
      return !keys->empty();
    }
    std::string k;
    while (keys->size() < kKeysPerRound && reader_.Next(&k)) {
      keys->push_back(std::move(k));
    }
    return !keys->empty();
  }
  const Status& status() const { return reader_.status(); }

 private:
  CommandContext& ctx_;
  KeyReader reader_;
  bool from_args_;
  size_t next_ = 2;
};

// Splits one round's keys into per-part commands `verb part items...` of at
// most kItemsPerCommand items; *where[c] lists the key index of each item
// of command c.
void Route(const MultiPartFilter& f, std::string_view verb,
           const std::vector<std::string>& keys,
           std::vector<ClusterCommand>* cmds,
           std::vector<std::vector<size_t>>* where) {
  cmds->clear();
  where->clear();
  std::map<uint32_t, std::vector<size_t>> by_part;
  for (size_t i = 0; i < keys.size(); ++i) {
    by_part[f.PartOf(keys[i])].push_back(i);
  }
  for (auto& [part, idx] : by_part) {
    for (size_t at = 0; at < idx.size(); at += kItemsPerCommand) {
      size_t end = std::min(idx.size(), at + kItemsPerCommand);
      ClusterCommand c;
      c.write = verb == "SF.MADD";
      c.args.reserve(2 + end - at);
      c.args.push_back(std::string(verb));
      c.args.push_back(f.PartKey(part));
      where->emplace_back();
      for (size_t j = at; j < end; ++j) {
        c.args.push_back(keys[idx[j]]);
        where->back().push_back(idx[j]);
      }
      cmds->push_back(std::move(c));
    }
  }
}

int RunClusterCreate(CommandContext& ctx) {
  for (std::string_view need : {"type", "capacity"}) {
    if (!ctx.args.Has(need)) {
      return UsageError(ctx.err, "--" + std::string(need) + " is required");
    }
  }
  Setup s;
  if (int rc = Open(ctx, true, &s); rc != kExitOk) return rc;
  const MultiPartFilter& f = *s.filter;
  Result<uint64_t> capacity =
      ParseCountInRange(*ctx.args.Get("capacity"), 1, uint64_t{1} << 40);
  if (!capacity.ok()) return ReportError(ctx.err, capacity.status());
  // The part spec: SF.CREATE's SPEC (docs/server.md).
  std::vector<std::string> spec = {*ctx.args.Get("type"),
                                   std::to_string(f.PartCapacity(*capacity))};
  if (const std::string* p = ctx.args.Get("fpp")) {
    Result<double> rate = ParseProbability(*p);
    if (!rate.ok()) return ReportError(ctx.err, rate.status());
    spec.push_back("ERROR");
    spec.push_back(*p);
  }
  if (const std::string* v = ctx.args.Get("shards")) {
    spec.push_back("SHARDS");
    spec.push_back(*v);
  }
  if (ctx.args.Has("nonscaling")) spec.push_back("NONSCALING");
  if (const std::string* v = ctx.args.Get("expansion")) {
    spec.push_back("EXPANSION");
    spec.push_back(*v);
  }
  if (const std::string* v = ctx.args.Get("bucket-size")) {
    spec.push_back("BUCKETSIZE");
    spec.push_back(*v);
  }
  // Part 0 first: the server checks the spec, and its size tells whether
  // the parts are small enough to migrate (DUMP/RESTORE's bulk limit).
  auto create = [&](uint32_t part) {
    ClusterCommand c;
    c.write = true;
    c.args = {"SF.CREATE", f.PartKey(part)};
    c.args.insert(c.args.end(), spec.begin(), spec.end());
    return c;
  };
  std::vector<ClusterCommand> first = {create(0)};
  Result<std::vector<Reply>> r = s.client->Run(first);
  if (!r.ok()) return Fail(ctx, r.status());
  if ((*r)[0].is_error()) {
    ctx.err << "shardfilter: creating part 0 (" << f.PartKey(0)
            << "): " << (*r)[0].str << "\n";
    return kExitError;
  }
  std::vector<ClusterCommand> info = {{{"SF.INFO", f.PartKey(0)}}};
  r = s.client->Run(info);
  uint64_t bytes = 0;
  if (r.ok() && (*r)[0].type != Reply::Type::kError) {
    const auto& e = (*r)[0].elements;
    for (size_t i = 0; i + 1 < e.size(); i += 2) {
      if (e[i].str == "bytes") bytes = static_cast<uint64_t>(e[i + 1].integer);
    }
  }
  if (bytes > kMaxPartBytes) {
    // Remove the part this command created, and only it.
    std::vector<ClusterCommand> del = {{{"DEL", f.PartKey(0)}}};
    (void)s.client->Run(del);
    ctx.err << "shardfilter: each part would take " << Mib(bytes)
            << ", over the " << Mib(kMaxPartBytes)
            << " a part may take to stay movable (DUMP/RESTORE/MIGRATE "
               "bulk limit): use --parts "
            << SuggestedParts(bytes * f.parts()) << " or more\n";
    return kExitUsage;
  }
  std::vector<ClusterCommand> rest;
  for (uint32_t p = 1; p < f.parts(); ++p) rest.push_back(create(p));
  r = s.client->Run(rest);
  if (!r.ok()) return Fail(ctx, r.status());
  int code = kExitOk;
  for (size_t i = 0; i < r->size(); ++i) {
    if ((*r)[i].is_error()) {
      ctx.err << "shardfilter: creating part " << i + 1 << " ("
              << rest[i].args[1] << "): " << (*r)[i].str << "\n";
      code = kExitError;
    }
  }
  ctx.out << "created '" << f.name() << "': " << f.parts() << " parts of "
          << f.PartCapacity(*capacity) << " items (" << Mib(bytes)
          << " each) on " << s.client->masters()
          << (s.client->cluster_mode() ? " master(s)" : " server") << "\n";
  return code;
}

int RunClusterAdd(CommandContext& ctx) {
  Setup s;
  if (int rc = Open(ctx, true, &s); rc != kExitOk) return rc;
  if (int rc = CheckParts(ctx, s); rc != kExitOk) return rc;
  Keys source(ctx);
  std::vector<std::string> keys;
  std::vector<ClusterCommand> cmds;
  std::vector<std::vector<size_t>> where;
  uint64_t seen = 0, added = 0, failed = 0;
  while (source.Next(&keys)) {
    Route(*s.filter, "SF.MADD", keys, &cmds, &where);
    Result<std::vector<Reply>> r = s.client->Run(cmds);
    if (!r.ok()) {
      ctx.err << "shardfilter: after " << seen
              << " keys: " << r.status().message() << "\n";
      return kExitError;
    }
    for (size_t c = 0; c < cmds.size(); ++c) {
      const Reply& reply = (*r)[c];
      for (size_t j = 0; j < where[c].size(); ++j) {
        const Reply* item = nullptr;
        if (!reply.is_error() && j < reply.elements.size()) {
          item = &reply.elements[j];
        }
        if (item != nullptr && !item->is_error()) {
          if (item->integer == 1) ++added;
          continue;
        }
        if (++failed <= kMaxReported) {
          ctx.err << "shardfilter: key " << seen + where[c][j] + 1 << ": "
                  << (item != nullptr    ? item->str
                      : reply.is_error() ? reply.str
                                         : std::string("no reply"))
                  << "\n";
        }
      }
    }
    seen += keys.size();
  }
  if (!source.status().ok()) return ReportError(ctx.err, source.status());
  if (!ctx.args.Has("quiet") || failed > 0) {
    ctx.err << "added " << seen - failed << " of " << seen << " keys (" << added
            << " new) to '" << s.filter->name() << "' in " << s.filter->parts()
            << " parts; " << Stats(*s.client) << "\n";
  }
  if (failed > 0) {
    ctx.err << "shardfilter: " << failed << " keys failed"
            << (failed > kMaxReported
                    ? " (the first " + std::to_string(kMaxReported) +
                          " are listed)"
                    : std::string())
            << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

int RunClusterExists(CommandContext& ctx) {
  Setup s;
  if (int rc = Open(ctx, false, &s); rc != kExitOk) return rc;
  if (int rc = CheckParts(ctx, s); rc != kExitOk) return rc;
  Keys source(ctx);
  std::vector<std::string> keys;
  std::vector<ClusterCommand> cmds;
  std::vector<std::vector<size_t>> where;
  std::vector<char> found;
  std::string lines;
  while (source.Next(&keys)) {
    Route(*s.filter, "SF.MEXISTS", keys, &cmds, &where);
    Result<std::vector<Reply>> r = s.client->Run(cmds);
    if (!r.ok()) return Fail(ctx, r.status());
    found.assign(keys.size(), 0);
    for (size_t c = 0; c < cmds.size(); ++c) {
      const Reply& reply = (*r)[c];
      if (reply.is_error() || reply.elements.size() != where[c].size()) {
        return Fail(ctx, Status::IOError(
                             "SF.MEXISTS " + cmds[c].args[1] + ": " +
                             (reply.is_error() ? reply.str
                                               : std::string("bad reply"))));
      }
      for (size_t j = 0; j < where[c].size(); ++j) {
        found[where[c][j]] = reply.elements[j].integer != 0;
      }
    }
    lines.clear();
    for (char b : found) lines += b ? "1\n" : "0\n";
    ctx.out << lines;
    ctx.out.flush();
  }
  if (!source.status().ok()) return ReportError(ctx.err, source.status());
  return kExitOk;
}

int RunClusterInfo(CommandContext& ctx) {
  Setup s;
  if (int rc = Open(ctx, false, &s); rc != kExitOk) return rc;
  const MultiPartFilter& f = *s.filter;
  Result<std::vector<Reply>> r = PartInfos(s);
  if (!r.ok()) return Fail(ctx, r.status());
  uint64_t items = 0, bytes = 0, largest = 0, capacity = 0;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    const Reply& x = (*r)[p];
    if (x.is_error()) {
      ctx.err << "shardfilter: part " << p << " (" << f.PartKey(p)
              << "): " << x.str << "\n";
      return kExitError;
    }
    uint64_t b = 0;
    for (size_t i = 0; i + 1 < x.elements.size(); i += 2) {
      const std::string& k = x.elements[i].str;
      uint64_t v = static_cast<uint64_t>(x.elements[i + 1].integer);
      if (k == "items") items += v;
      if (k == "capacity") capacity += v;
      if (k == "bytes") b = v;
    }
    bytes += b;
    largest = std::max(largest, b);
  }
  ctx.out << "name: " << f.name() << "\nparts: " << f.parts() << "\nhash tag: {"
          << f.tag() << ".<part>}\nitems: " << items
          << "\ncapacity: " << capacity << "\nbytes: " << bytes << " ("
          << Mib(bytes) << ")\nlargest part: " << largest << " ("
          << Mib(largest) << ")\nmasters: " << s.client->masters()
          << (s.client->cluster_mode() ? "" : " (standalone)") << "\n";
  return kExitOk;
}

// Deletes the parts, and only if every one of them is a filter: SF.INFO
// answers for shardfilter's filters only (on both hosts), so a key of the
// part's name holding anything else, or a missing part, changes nothing.
int RunClusterDrop(CommandContext& ctx) {
  Setup s;
  if (int rc = Open(ctx, true, &s); rc != kExitOk) return rc;
  if (int rc = CheckParts(ctx, s); rc != kExitOk) return rc;
  const MultiPartFilter& f = *s.filter;
  Result<std::vector<Reply>> r = PartInfos(s);
  if (!r.ok()) return Fail(ctx, r.status());
  for (uint32_t p = 0; p < f.parts(); ++p) {
    if ((*r)[p].is_error()) {
      ctx.err << "shardfilter: part " << p << " (" << f.PartKey(p)
              << ") is not a filter: " << (*r)[p].str
              << "; nothing was deleted\n";
      return kExitError;
    }
  }
  std::vector<ClusterCommand> cmds;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    ClusterCommand c;
    c.write = true;
    c.args = {"DEL", f.PartKey(p)};
    cmds.push_back(std::move(c));
  }
  r = s.client->Run(cmds);
  if (!r.ok()) return Fail(ctx, r.status());
  uint64_t deleted = 0;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    const Reply& x = (*r)[p];
    if (x.is_error()) {
      ctx.err << "shardfilter: deleting part " << p << " (" << f.PartKey(p)
              << "): " << x.str << "\n";
      continue;
    }
    deleted += x.integer == 1;
  }
  ctx.out << "dropped '" << f.name() << "': " << deleted << " of " << f.parts()
          << " parts deleted\n";
  return deleted == f.parts() ? kExitOk : kExitError;
}

}  // namespace

int RunCluster(CommandContext& ctx) {
  const std::string& sub = ctx.args.positional[0];
  if (sub == "create") {
    if (ctx.args.positional.size() != 2) {
      return UsageError(ctx.err, "cluster create takes one NAME");
    }
    return RunClusterCreate(ctx);
  }
  if (sub == "add") return RunClusterAdd(ctx);
  if (sub == "exists") return RunClusterExists(ctx);
  if (sub == "info" || sub == "drop") {
    if (ctx.args.positional.size() != 2) {
      return UsageError(ctx.err, "cluster " + sub + " takes one NAME");
    }
    return sub == "info" ? RunClusterInfo(ctx) : RunClusterDrop(ctx);
  }
  return UsageError(ctx.err, "unknown cluster command '" + sub +
                                 "' (create, add, exists, info or drop)");
}

}  // namespace shardfilter::tools
