// Server: shardfilter-server's network host. One epoll event loop per
// thread, each with its own SO_REUSEPORT listener on every bound address
// (the kernel spreads new connections over them); a connection stays on the
// loop that accepted it, and its commands run inline on that loop against
// the concurrent engine (no hop to another thread). Every reply produced by
// one read of a connection's socket goes out in one write. The exception:
// a batch holding a request that may wait for an fsync (a write to a sync
// filter, a create, a drop, a checkpoint: RunsOnWorker) runs on a
// SyncWorkers thread, and the connection's replies wait for it while its
// loop serves the other connections (event_loop.h).
//
// Limits (ServerOptions): bulk length, arguments and query buffer per
// client (the parser's), output buffer per client (past output_pause_bytes
// of unsent replies the loop stops reading that client's requests until it
// reads its replies; a reply that would take them past output_hard_limit
// closes the connection, checked at every append), all clients' buffers
// together (max_client_memory: the largest clients are closed), max
// clients, idle timeout, and the process's memory (ServerMemory: the
// memory budget that --maxmemory sets). With no password, protected mode
// refuses peers that are not loopback.
//
// Thread safety: Start, Stop and Wait are called by one controlling thread
// (Stop also from any loop thread, through the Host's RequestShutdown).
#ifndef SHARDFILTER_TOOLS_SERVER_SERVER_H_
#define SHARDFILTER_TOOLS_SERVER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/filters/status.h"
#include "tools/commands/command_stats.h"
#include "tools/commands/session.h"
#include "tools/resp/request_parser.h"
#include "tools/server/db_keyspace.h"
#include "tools/server/server_memory.h"
#include "tools/server/sync_workers.h"

namespace shardfilter::server {

struct ServerOptions {
  // Addresses to listen on (IPv4 or IPv6 literals). An address prefixed
  // with '-' is optional: failing to bind it is not an error (Redis's
  // "-::1").
  std::vector<std::string> bind = {"127.0.0.1", "-::1"};
  // 0 = an ephemeral port (port() says which).
  uint16_t port = 6379;
  // Empty = no password (then protected mode applies).
  std::string requirepass;
  bool protected_mode = true;
  // Event loops; 0 = one per online CPU.
  uint32_t threads = 0;
  uint32_t max_clients = 10000;
  // Close connections idle this long; 0 = never (Redis's `timeout`).
  uint32_t idle_timeout_s = 0;
  resp::ParserLimits limits;
  // Unparsed input a client may accumulate (Redis's client-query-buffer-
  // limit, 1 GB); past it the connection is closed.
  uint64_t max_query_buffer = 1ull << 30;
  // Unsent replies past which the client's further requests wait unread.
  uint64_t output_pause_bytes = 4ull << 20;
  // Unsent replies past which the client is disconnected.
  uint64_t output_hard_limit = 256ull << 20;
  // Every client's input and output buffers together (Redis's
  // maxmemory-clients); past it the largest clients are closed. 0: none.
  uint64_t max_client_memory = 0;
  // For INFO / CONFIG GET dir.
  std::string db_path;
  // Emulated cluster mode (docs/server.md, "Cluster emulation"): CLUSTER
  // answers as a one-node cluster owning every slot, at the announced
  // address (default: the first bound address; "" for a wildcard one, as
  // Redis announces before it learns its address) and port.
  bool cluster_emulation = false;
  std::string cluster_announce_ip;
  // Most threads waiting for fsyncs on behalf of the loops (sync_workers.h);
  // started on demand.
  uint32_t sync_threads = 16;
};

class EventLoop;

class Server final : public commands::Host {
 public:
  Server(const ServerOptions& options, DbKeyspace* keyspace);
  ~Server() override;

  // Binds every listener and starts the loops. IOError naming the address
  // when a required one cannot be bound.
  Status Start();
  uint16_t port() const { return port_; }
  // Stops accepting, lets each loop flush what it can, closes every
  // connection; Wait returns once all loops ended. Idempotent.
  void Stop();
  void Wait();
  // Called by SHUTDOWN (from a loop thread); defaults to Stop().
  void SetShutdownHandler(std::function<void()> handler) {
    shutdown_handler_ = std::move(handler);
  }

  // commands::Host
  bool RequiresPassword() const override {
    return !options_.requirepass.empty();
  }
  bool CheckPassword(std::string_view user,
                     std::string_view password) const override;
  bool AppendInfoSection(std::string_view section, std::string* out) override;
  std::vector<std::pair<std::string, std::string>> ConfigValues()
      const override;
  std::string ClientList(const commands::Session& self) override;
  void RequestShutdown() override;
  const commands::ClusterNode* Cluster() const override {
    return options_.cluster_emulation ? &cluster_node_ : nullptr;
  }
  commands::CommandStats* Stats() override { return &stats_; }

  // Shared by the loops.
  const ServerOptions& options() const { return options_; }
  DbKeyspace* keyspace() { return keyspace_; }
  ServerMemory& memory() { return memory_; }
  // Over max_client_memory with nothing this loop could close: every loop
  // looks at its own clients (at most ten times a second).
  void WakeLoopsToEvict();
  SyncWorkers& workers() { return workers_; }
  // True when running `requests` (one connection's batch, in order) may
  // wait for an fsync: a request flagged kFsyncs, a write whose key
  // DbKeyspace::WriteMayWaitForSync, or an EXEC whose queued commands hold
  // one. The loop then runs the batch on a worker.
  bool RunsOnWorker(const commands::Session& session,
                    std::span<const commands::Args> requests);
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  uint64_t NextClientId() {
    return next_client_id_.fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<int64_t> connected_clients{0};
  std::atomic<uint64_t> total_connections{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> total_commands{0};
  std::atomic<uint64_t> net_input_bytes{0};
  std::atomic<uint64_t> net_output_bytes{0};
  std::atomic<uint64_t> evicted_clients{0};
  std::atomic<uint64_t> output_limit_disconnections{0};
  std::atomic<uint64_t> query_limit_disconnections{0};

 private:
  // Lowers options_.max_clients to what RLIMIT_NOFILE leaves (server.cc).
  Status FitClientsToDescriptors();

  ServerOptions options_;
  DbKeyspace* keyspace_;
  ServerMemory memory_;
  std::atomic<int64_t> last_evict_wake_ms_{0};
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::vector<std::thread> threads_;
  // Active expiry: drops filters past their deadline ten times a second
  // (Redis's), so that an expired key that nobody reads frees its memory.
  std::thread expirer_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> next_client_id_{1};
  std::function<void()> shutdown_handler_;
  int64_t start_unix_ = 0;
  commands::ClusterNode cluster_node_;  // set by Start, then immutable
  commands::CommandStats stats_;
  // Declared after loops_, so destroyed (joined) before them: by then
  // (Wait) no job is in flight, but a job's last step, waking its loop,
  // may still be running.
  SyncWorkers workers_;
};

}  // namespace shardfilter::server

#endif  // SHARDFILTER_TOOLS_SERVER_SERVER_H_
