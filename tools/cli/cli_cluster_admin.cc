// `shardfilter cluster info | drop | expire | persist`: the commands on a
// multi-part filter as a whole (tools/cli/cli_cluster.h). Each surveys every
// part first (cluster::SurveyParts) and changes nothing unless the parts
// are the whole filter; `drop --damaged` is the one way to remove what is
// left of a filter that lost parts.
#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "shardfilter/engine/multi_part.h"
#include "tools/cli/cli.h"
#include "tools/cli/cli_cluster.h"
#include "tools/cli/cli_commands.h"

namespace shardfilter::tools {
namespace {

using cluster::ClusterCommand;
using resp::Reply;

// The longest `cluster expire` takes: 100 years.
constexpr uint64_t kMaxExpireSeconds = 3'155'760'000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Deadline(int64_t ms) {
  if (ms < 0) return "never";
  int64_t left = (ms - NowMs()) / 1000;
  return std::to_string(ms) + " (unix ms; in " +
         std::to_string(left < 0 ? 0 : left) + " s)";
}

// Sets (deadline_ms >= 0, PEXPIREAT) or removes (-1, PERSIST) every part's
// deadline, each followed by PEXPIRETIME to read back what it holds.
int SetDeadlines(CommandContext& ctx, ClusterSetup& s, int64_t deadline_ms) {
  const MultiPartFilter& f = *s.filter;
  std::vector<ClusterCommand> cmds;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    ClusterCommand set;
    set.write = true;
    set.args = deadline_ms >= 0
                   ? std::vector<std::string>{"PEXPIREAT", f.PartKey(p),
                                              std::to_string(deadline_ms)}
                   : std::vector<std::string>{"PERSIST", f.PartKey(p)};
    cmds.push_back(std::move(set));
    cmds.push_back({{"PEXPIRETIME", f.PartKey(p)}});
  }
  Result<std::vector<Reply>> r = s.client->Run(cmds);
  if (!r.ok()) return ReportError(ctx.err, r.status());
  uint32_t wrong = 0;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    const Reply& set = (*r)[2 * p];
    const Reply& now = (*r)[2 * p + 1];
    std::string why;
    if (set.is_error()) {
      why = set.str;
    } else if (now.is_error()) {
      why = "PEXPIRETIME: " + now.str;
    } else if (now.integer == -2) {
      why = "the part is gone";
    } else if (now.integer != deadline_ms) {
      why = "its deadline is " + Deadline(now.integer);
    }
    if (why.empty()) continue;
    if (++wrong <= kMaxPartsNamed) {
      ctx.err << "shardfilter: part " << p << " (" << f.PartKey(p)
              << "): " << why << "\n";
    }
  }
  if (wrong > 0) {
    ctx.err << "shardfilter: " << wrong << " of " << f.parts()
            << " parts did not take the deadline: the parts' deadlines may "
               "now differ (`shardfilter cluster info`); run the command "
               "again\n";
    return kExitError;
  }
  ctx.out << "'" << f.name() << "': " << f.parts() << " parts expire "
          << (deadline_ms < 0 ? "never" : "at " + Deadline(deadline_ms))
          << "\n";
  return kExitOk;
}

}  // namespace

int RunClusterInfo(CommandContext& ctx) {
  ClusterSetup s;
  if (int rc = OpenCluster(ctx, false, &s); rc != kExitOk) return rc;
  if (int rc = SurveyWhole(ctx, &s, /*warn_deadlines=*/false); rc != kExitOk) {
    return rc;
  }
  const MultiPartFilter& f = *s.filter;
  uint64_t items = 0, bytes = 0, largest = 0, capacity = 0;
  for (const Reply& x : s.survey.infos) {
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
  const bool same = SameDeadline(s.survey.views);
  ctx.out << "name: " << f.name() << "\nparts: " << f.parts() << "\nhash tag: {"
          << f.tag() << ".<part>}\nitems: " << items
          << "\ncapacity: " << capacity << "\nbytes: " << bytes << " ("
          << Mib(bytes) << ")\nlargest part: " << largest << " ("
          << Mib(largest) << ")\nmasters: " << s.client->masters()
          << (s.client->cluster_mode() ? "" : " (standalone)") << "\nexpires: "
          << (same ? Deadline(s.survey.views[0].deadline_ms)
                   : std::string("parts differ"))
          << "\n";
  if (same) return kExitOk;
  // Deadline -> its parts, in part order.
  std::map<int64_t, std::vector<uint32_t>> by;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    by[s.survey.views[p].deadline_ms].push_back(p);
  }
  ctx.err << "shardfilter: the deadlines of '" << f.name()
          << "''s parts differ: the first to expire will damage the filter; "
             "set one with `cluster expire` or `cluster persist`:\n";
  for (const auto& [deadline, parts] : by) {
    ctx.err << "  " << parts.size() << " part(s) (first: part " << parts[0]
            << ") expire "
            << (deadline < 0 ? "never" : "at " + Deadline(deadline)) << "\n";
  }
  return kExitFailed;
}

// Deletes the parts once every one of them is a filter with the others'
// parameters; with --damaged, the parts that are left of a filter that lost
// some, provided each is a filter (a key of a part's name holding anything
// else, or a wrong --parts, deletes nothing).
int RunClusterDrop(CommandContext& ctx) {
  ClusterSetup s;
  if (int rc = OpenCluster(ctx, true, &s); rc != kExitOk) return rc;
  const MultiPartFilter& f = *s.filter;
  Result<cluster::PartsSurvey> survey = cluster::SurveyParts(*s.client, f);
  if (!survey.ok()) return ReportError(ctx.err, survey.status());
  Status whole = CheckParts(f, survey->views, survey->next_exists);
  const bool damaged = ctx.args.Has("damaged");
  if (!whole.ok() && !(damaged && whole.IsCorruption())) {
    return ReportError(
        ctx.err,
        Status(whole.code(),
               whole.message() + "; nothing was deleted" +
                   (whole.IsCorruption()
                        ? " (`cluster drop --damaged` deletes the parts that "
                          "are left)"
                        : "")));
  }
  std::vector<ClusterCommand> cmds;
  for (uint32_t p = 0; p < f.parts(); ++p) {
    if (!survey->views[p].exists) continue;
    ClusterCommand c;
    c.write = true;
    c.args = {"DEL", f.PartKey(p)};
    cmds.push_back(std::move(c));
  }
  Result<std::vector<Reply>> r = s.client->Run(cmds);
  if (!r.ok()) return ReportError(ctx.err, r.status());
  uint64_t deleted = 0;
  for (size_t i = 0; i < cmds.size(); ++i) {
    const Reply& x = (*r)[i];
    if (x.is_error()) {
      ctx.err << "shardfilter: deleting " << cmds[i].args[1] << ": " << x.str
              << "\n";
      continue;
    }
    deleted += x.integer == 1;
  }
  ctx.out << "dropped '" << f.name() << "': " << deleted << " of " << f.parts()
          << " parts deleted"
          << (cmds.size() < f.parts()
                  ? " (" + std::to_string(f.parts() - cmds.size()) + " missing)"
                  : std::string())
          << "\n";
  return deleted == cmds.size() ? kExitOk : kExitError;
}

int RunClusterExpire(CommandContext& ctx) {
  Result<uint64_t> seconds =
      ParseCountInRange(ctx.args.positional[2], 1, kMaxExpireSeconds);
  if (!seconds.ok()) {
    return UsageError(ctx.err, "cluster expire: SECONDS is 1.." +
                                   std::to_string(kMaxExpireSeconds) +
                                   " (`cluster drop` deletes now)");
  }
  ClusterSetup s;
  if (int rc = OpenCluster(ctx, true, &s); rc != kExitOk) return rc;
  if (int rc = SurveyWhole(ctx, &s, /*warn_deadlines=*/false); rc != kExitOk) {
    return rc;
  }
  // One absolute deadline for every part (PEXPIREAT): parts on different
  // masters expire by the same clock reading, not each at its own
  // "now + SECONDS".
  return SetDeadlines(ctx, s, NowMs() + static_cast<int64_t>(*seconds) * 1000);
}

int RunClusterPersist(CommandContext& ctx) {
  ClusterSetup s;
  if (int rc = OpenCluster(ctx, true, &s); rc != kExitOk) return rc;
  if (int rc = SurveyWhole(ctx, &s, /*warn_deadlines=*/false); rc != kExitOk) {
    return rc;
  }
  return SetDeadlines(ctx, s, -1);
}

}  // namespace shardfilter::tools
