// `shardfilter cluster ...`: multi-part filters on a Redis Cluster (or one
// Redis / shardfilter-server), through the cluster client
// (tools/cluster/cluster_client.h) and the routing of
// shardfilter/engine/multi_part.h. Talks RESP only: no store is opened.
// This file: the setup and the parts check every subcommand shares, create,
// add and exists; tools/cli/cli_cluster_admin.cc: info, drop, expire, persist.
#include "tools/cli/cli_cluster.h"

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/multi_part.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_commands.h"
#include "tools/cli/key_reader.h"
#include "tools/cluster/cluster_client.h"
#include "tools/cluster/multi_part_client.h"

namespace shardfilter::tools {
namespace {

using cluster::ClusterClient;
using cluster::ClusterCommand;
using cluster::PartRound;
using resp::Reply;

// Items per SF.MADD / SF.MEXISTS command, and keys read per round trip of
// the whole cluster (each part's commands pipelined on its node).
constexpr size_t kItemsPerCommand = 500;
constexpr size_t kKeysPerRound = 64 * 1024;
constexpr uint64_t kMaxReported = 10;

int Fail(CommandContext& ctx, const Status& s) {
  return ReportError(ctx.err, s);
}

// create: no key of a part's name may exist. A part made beside parts that
// survived would hide their filter's loss, and SF.CREATE refuses only the
// parts that exist.
int RefuseExistingParts(CommandContext& ctx, ClusterSetup& s) {
  const MultiPartFilter& f = *s.filter;
  std::vector<ClusterCommand> cmds;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    cmds.push_back({{"EXISTS", f.PartKey(p)}});
  }
  Result<std::vector<Reply>> r = s.client->Run(cmds);
  if (!r.ok()) return Fail(ctx, r.status());
  std::vector<uint32_t> there;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    const Reply& x = (*r)[p];
    if (x.is_error()) {
      return Fail(ctx,
                  Status::IOError("EXISTS " + f.PartKey(p) + ": " + x.str));
    }
    if (x.integer != 0) there.push_back(p);
  }
  if (there.empty()) return kExitOk;
  std::string which;
  for (size_t j = 0; j < there.size() && j < kMaxPartsNamed; ++j) {
    which += (j == 0 ? "" : ", ") + std::to_string(there[j]);
  }
  if (there.size() > kMaxPartsNamed) which += ", ...";
  return Fail(ctx, Status::AlreadyExists(
                       "'" + f.name() + "' already exists here: " +
                       std::to_string(there.size()) + " of its " +
                       std::to_string(f.parts()) + " parts exist (" + which +
                       "); nothing was created (`shardfilter cluster info` "
                       "says whether it is whole)"));
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

}  // namespace

int OpenCluster(CommandContext& ctx, bool writes, ClusterSetup* out) {
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

int SurveyWhole(CommandContext& ctx, ClusterSetup* s, bool warn_deadlines) {
  Result<cluster::PartsSurvey> survey =
      cluster::SurveyParts(*s->client, *s->filter);
  if (!survey.ok()) return Fail(ctx, survey.status());
  s->survey = std::move(*survey);
  Status whole = CheckParts(*s->filter, s->survey.views, s->survey.next_exists);
  if (!whole.ok()) return Fail(ctx, whole);
  if (warn_deadlines && !SameDeadline(s->survey.views)) {
    ctx.err << "shardfilter: warning: the parts of '" << s->filter->name()
            << "' have different deadlines (`shardfilter cluster info` "
               "lists them): the first to expire will damage the filter; "
               "set one with `cluster expire` or `cluster persist`\n";
  }
  return kExitOk;
}

std::string ClusterStatsLine(const ClusterClient& c) {
  const cluster::ClusterStats& s = c.stats();
  return std::to_string(c.masters()) +
         (c.cluster_mode() ? " master(s)" : " standalone server") + ", " +
         std::to_string(s.commands) + " commands, " + std::to_string(s.moved) +
         " MOVED, " + std::to_string(s.asked) + " ASK, " +
         std::to_string(s.retried) + " retried, " +
         std::to_string(s.reconnects) + " reconnects";
}

namespace {

// Deletes the given parts (ones this command made); how many went.
uint64_t RemoveParts(ClusterSetup& s, const std::vector<uint32_t>& parts) {
  std::vector<ClusterCommand> del;
  for (uint32_t p : parts) {
    ClusterCommand c;
    c.write = true;
    c.args = {"DEL", s.filter->PartKey(p)};
    del.push_back(std::move(c));
  }
  Result<std::vector<Reply>> d = s.client->Run(del);
  uint64_t removed = 0;
  if (d.ok()) {
    for (const Reply& x : *d) {
      // NOTREPLICATED: deleted on the master, not yet on R replicas.
      removed +=
          x.IsErrorCode("NOTREPLICATED") || (!x.is_error() && x.integer == 1);
    }
  }
  return removed;
}

int RunClusterCreate(CommandContext& ctx) {
  for (std::string_view need : {"type", "capacity"}) {
    if (!ctx.args.Has(need)) {
      return UsageError(ctx.err, "--" + std::string(need) + " is required");
    }
  }
  ClusterSetup s;
  if (int rc = OpenCluster(ctx, true, &s); rc != kExitOk) return rc;
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
  if (int rc = RefuseExistingParts(ctx, s); rc != kExitOk) return rc;
  std::vector<ClusterCommand> first = {create(0)};
  Result<std::vector<Reply>> r = s.client->Run(first);
  if (!r.ok()) return Fail(ctx, r.status());
  if ((*r)[0].is_error()) {
    ctx.err << "shardfilter: creating part 0 (" << f.PartKey(0)
            << "): " << (*r)[0].str << "\n";
    // Made on its master, not acknowledged by the replicas: not kept.
    if ((*r)[0].IsErrorCode("NOTREPLICATED")) {
      ctx.err << "shardfilter: '" << f.name() << "' was not created: part 0 "
              << (RemoveParts(s, {0}) == 1 ? "was" : "could not be")
              << " removed again\n";
    }
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
  // Parts this command made; all of them go again when one failed, so that
  // no partial filter is left (the missing part would make it damaged).
  // A part the replicas did not acknowledge (NOTREPLICATED) was made on its
  // master: it counts as made and as failed.
  std::vector<uint32_t> made = {0};
  bool failed = false;
  for (size_t i = 0; i < r->size(); ++i) {
    const Reply& x = (*r)[i];
    if (x.is_error()) {
      ctx.err << "shardfilter: creating part " << i + 1 << " ("
              << rest[i].args[1] << "): " << x.str << "\n";
      failed = true;
    }
    if (!x.is_error() || x.IsErrorCode("NOTREPLICATED")) {
      made.push_back(static_cast<uint32_t>(i + 1));
    }
  }
  if (failed) {
    const uint64_t removed = RemoveParts(s, made);
    ctx.err << "shardfilter: '" << f.name() << "' was not created: " << removed
            << " of the " << made.size()
            << " parts this command made were removed again\n";
    return kExitError;
  }
  ctx.out << "created '" << f.name() << "': " << f.parts() << " parts of "
          << f.PartCapacity(*capacity) << " items (" << Mib(bytes)
          << " each) on " << s.client->masters()
          << (s.client->cluster_mode() ? " master(s)" : " server") << "\n";
  return kExitOk;
}

int RunClusterAdd(CommandContext& ctx) {
  ClusterSetup s;
  if (int rc = OpenCluster(ctx, true, &s); rc != kExitOk) return rc;
  if (int rc = SurveyWhole(ctx, &s); rc != kExitOk) return rc;
  Keys source(ctx);
  std::vector<std::string> keys;
  PartRound round;
  uint64_t seen = 0, added = 0, failed = 0;
  while (source.Next(&keys)) {
    round.Build(*s.filter, "SF.MADD", true, keys, kItemsPerCommand);
    Result<std::vector<Reply>> r = s.client->Run(round.commands());
    if (!r.ok()) {
      ctx.err << "shardfilter: after " << seen
              << " keys: " << r.status().message() << "\n";
      return kExitError;
    }
    // SF.MADD never creates a part: a lost one answered errors, and the
    // check says why.
    if (Status v = round.Verify(*s.filter, s.survey, *r); !v.ok()) {
      return Fail(ctx, Status(v.code(), v.message() + "; stopped after " +
                                            std::to_string(seen) +
                                            " keys (this round's keys for "
                                            "the other parts may be added)"));
    }
    for (size_t c = 0; c < round.commands().size(); ++c) {
      if (round.is_check(c)) continue;
      const Reply& reply = (*r)[c];
      const std::vector<size_t>& where = round.items_of(c);
      for (size_t j = 0; j < where.size(); ++j) {
        const Reply* item = nullptr;
        if (!reply.is_error() && j < reply.elements.size()) {
          item = &reply.elements[j];
        }
        if (item != nullptr && !item->is_error()) {
          if (item->integer == 1) ++added;
          continue;
        }
        if (++failed <= kMaxReported) {
          ctx.err << "shardfilter: key " << seen + where[j] + 1 << ": "
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
            << " parts; " << ClusterStatsLine(*s.client) << "\n";
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
  ClusterSetup s;
  if (int rc = OpenCluster(ctx, false, &s); rc != kExitOk) return rc;
  if (int rc = SurveyWhole(ctx, &s); rc != kExitOk) return rc;
  Keys source(ctx);
  std::vector<std::string> keys;
  PartRound round;
  std::vector<char> found;
  std::string lines;
  uint64_t seen = 0;
  while (source.Next(&keys)) {
    round.Build(*s.filter, "SF.MEXISTS", false, keys, kItemsPerCommand);
    Result<std::vector<Reply>> r = s.client->Run(round.commands());
    if (!r.ok()) return Fail(ctx, r.status());
    // A missing part answers 0 for every item: no answer of the round
    // counts until every part it read is known to have been there.
    if (Status v = round.Verify(*s.filter, s.survey, *r); !v.ok()) {
      return Fail(
          ctx, Status(v.code(), v.message() + "; stopped after " +
                                    std::to_string(seen) + " answered keys"));
    }
    found.assign(keys.size(), 0);
    for (size_t c = 0; c < round.commands().size(); ++c) {
      if (round.is_check(c)) continue;
      const Reply& reply = (*r)[c];
      const std::vector<size_t>& where = round.items_of(c);
      if (reply.is_error() || reply.elements.size() != where.size()) {
        return Fail(
            ctx,
            Status::IOError(
                "SF.MEXISTS " + round.commands()[c].args[1] + ": " +
                (reply.is_error() ? reply.str : std::string("bad reply"))));
      }
      for (size_t j = 0; j < where.size(); ++j) {
        found[where[j]] = reply.elements[j].integer != 0;
      }
    }
    lines.clear();
    for (char b : found) lines += b ? "1\n" : "0\n";
    ctx.out << lines;
    ctx.out.flush();
    seen += keys.size();
  }
  if (!source.status().ok()) return ReportError(ctx.err, source.status());
  return kExitOk;
}

}  // namespace

int RunCluster(CommandContext& ctx) {
  const std::string& sub = ctx.args.positional[0];
  const size_t n = ctx.args.positional.size();
  auto one_name = [&]() {
    return UsageError(ctx.err, "cluster " + sub + " takes one NAME");
  };
  if (sub == "create") return n != 2 ? one_name() : RunClusterCreate(ctx);
  if (sub == "add") return RunClusterAdd(ctx);
  if (sub == "exists") return RunClusterExists(ctx);
  if (sub == "info") return n != 2 ? one_name() : RunClusterInfo(ctx);
  if (sub == "drop") return n != 2 ? one_name() : RunClusterDrop(ctx);
  if (sub == "persist") return n != 2 ? one_name() : RunClusterPersist(ctx);
  if (sub == "expire") {
    if (n != 3) {
      return UsageError(ctx.err, "cluster expire takes NAME SECONDS");
    }
    return RunClusterExpire(ctx);
  }
  return UsageError(ctx.err,
                    "unknown cluster command '" + sub +
                        "' (create, add, exists, info, expire, persist or "
                        "drop)");
}

}  // namespace shardfilter::tools
