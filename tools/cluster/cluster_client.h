// ClusterClient: sends single-key commands to a Redis Cluster (or one node)
// the way cluster-aware clients do, for the CLI's `shardfilter cluster`.
//
// - The slot map comes from CLUSTER SLOTS on any reachable node. A node that
//   answers CLUSTER SLOTS with an error (cluster support disabled, or a
//   server without CLUSTER) is a standalone server owning every slot.
// - Run(commands) groups the commands by the node owning their key's slot
//   (tools/commands/key_slot.h), pipelines each group on its node's
//   connection, and drives all nodes at once with poll(). Replies come back
//   in the commands' order.
// - Redirections, as the cluster specification says: `-MOVED slot addr`
//   updates the map (and the whole map is refreshed before the next round),
//   the command goes to addr; `-ASK slot addr` sends it to addr once,
//   preceded by ASKING, without touching the map; `-TRYAGAIN` (a multi-key
//   command during a slot migration), `-CLUSTERDOWN` and `-LOADING` are
//   retried after a pause; a lost connection re-sends the group's
//   unanswered commands after refreshing the map (a failover). Retries stop
//   at Options::retry_ms; a command redirected more than max_redirects
//   times is answered with its last redirection error.
// - Resending after a lost connection may run a command twice. The CLI only
//   sends commands for which that is harmless or shows: adds to a Bloom
//   filter (idempotent; for a counting or cuckoo part one more copy of the
//   items of that batch, which membership never notices), queries, TYPE,
//   PEXPIRETIME, PEXPIREAT of one absolute deadline and PERSIST
//   (idempotent); a DEL or SF.CREATE run twice answers its second time as
//   if another client had been first (0, "item exists"), which the CLI
//   reports as a failure, never as success it did not see.
// - A refreshed map may be older than a MOVED just received (the node asked
//   has not heard of the move yet): within one Run, the slots named by
//   MOVED replies keep the address MOVED gave.
// - With Options::wait_replicas > 0 every group holding a write ends with
//   `WAIT wait_replicas wait_timeout_ms`; when WAIT answers fewer replicas,
//   the group's writes are reported as not acknowledged (their replies are
//   replaced by a `NOTREPLICATED` error). Redis replication is
//   asynchronous: only acknowledged writes are promised to survive a
//   failover.
//
// Thread safety: one thread at a time.
#ifndef SHARDFILTER_TOOLS_CLUSTER_CLUSTER_CLIENT_H_
#define SHARDFILTER_TOOLS_CLUSTER_CLUSTER_CLIENT_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "shardfilter/filters/status.h"
#include "tools/cluster/node_connection.h"
#include "tools/resp/reply_reader.h"

namespace shardfilter::cluster {

struct ClusterOptions {
  NodeAddress seed;        // any node of the cluster
  std::string password;    // AUTH on every connection when not empty
  std::string user;        // AUTH user password when not empty
  int timeout_ms = 10000;  // connect, and each wait for replies
  int retry_ms = 60000;    // how long retries of one Run may take
  int max_redirects = 16;  // per command, per Run
  int wait_replicas = 0;   // 0: no WAIT
  int wait_timeout_ms = 10000;
};

// One command: its arguments, args[key_index] is the key routed on. Only
// writes are followed by WAIT (Options::wait_replicas).
struct ClusterCommand {
  std::vector<std::string> args;
  size_t key_index = 1;
  bool write = false;
};

struct ClusterStats {
  uint64_t commands = 0;
  uint64_t moved = 0;
  uint64_t asked = 0;
  uint64_t retried = 0;     // TRYAGAIN, CLUSTERDOWN, LOADING
  uint64_t reconnects = 0;  // connections lost and commands resent
  uint64_t map_refreshes = 0;
};

class ClusterClient {
 public:
  // Connects to options.seed and reads the slot map. IOError when no node
  // answers; the AUTH error when the password is refused.
  static Result<std::unique_ptr<ClusterClient>> Connect(ClusterOptions o);

  // Runs every command; one reply per command, in order (a command's own
  // error is its reply). An error Status only when the cluster could not be
  // reached within retry_ms (then no reply vector is returned, though some
  // commands may have run).
  Result<std::vector<resp::Reply>> Run(std::span<const ClusterCommand> cmds);

  // False for a standalone server (every slot on the seed).
  bool cluster_mode() const { return cluster_mode_; }
  // Distinct masters in the slot map.
  size_t masters() const;
  const ClusterStats& stats() const { return stats_; }

 private:
  explicit ClusterClient(ClusterOptions o) : options_(std::move(o)) {}
  Status RefreshSlots();
  Result<NodeConnection*> Node(const std::string& address);
  Status Handshake(NodeConnection& c);

  ClusterOptions options_;
  bool cluster_mode_ = false;
  // slot -> "host:port" of its master ("" while unknown).
  std::vector<std::string> slots_;
  std::map<std::string, std::unique_ptr<NodeConnection>> nodes_;
  ClusterStats stats_;
};

}  // namespace shardfilter::cluster

#endif  // SHARDFILTER_TOOLS_CLUSTER_CLUSTER_CLIENT_H_
