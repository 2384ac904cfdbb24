// What the files of `shardfilter cluster` share (tools/cli/cli_cluster.cc:
// setup, create, add, exists; tools/cli/cli_cluster_admin.cc: info, drop,
// expire, persist). Internal to the CLI.
#ifndef SHARDFILTER_TOOLS_CLI_CLI_CLUSTER_H_
#define SHARDFILTER_TOOLS_CLI_CLI_CLUSTER_H_

#include <memory>
#include <optional>
#include <string>

#include "shardfilter/engine/multi_part.h"
#include "tools/cli/cli_commands.h"
#include "tools/cluster/cluster_client.h"
#include "tools/cluster/multi_part_client.h"

namespace shardfilter::tools {

struct ClusterSetup {
  std::unique_ptr<cluster::ClusterClient> client;
  std::optional<MultiPartFilter> filter;
  cluster::PartsSurvey survey;  // filled by SurveyWhole
};

// Connects and builds the filter's routing from --node and --parts (and,
// for a command that writes, --wait-replicas / --wait-timeout). An exit
// code: kExitOk or the error's, reported on ctx.err.
int OpenCluster(CommandContext& ctx, bool writes, ClusterSetup* out);

// Surveys the parts into s->survey and checks that they are the whole
// filter (CheckParts); reports the verdict and returns its exit code.
// With warn_deadlines, warns on stderr when the parts' deadlines differ.
int SurveyWhole(CommandContext& ctx, ClusterSetup* s,
                bool warn_deadlines = true);

// "3 master(s), 12 commands, 0 MOVED, ...".
std::string ClusterStatsLine(const cluster::ClusterClient& c);

int RunClusterInfo(CommandContext& ctx);
int RunClusterDrop(CommandContext& ctx);
int RunClusterExpire(CommandContext& ctx);
int RunClusterPersist(CommandContext& ctx);

}  // namespace shardfilter::tools

#endif  // SHARDFILTER_TOOLS_CLI_CLI_CLUSTER_H_
