#include "tools/server/server.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "tools/commands/command_table.h"
#include "tools/commands/util.h"
#include "tools/server/event_loop.h"

#ifndef SHARDFILTER_VERSION
#define SHARDFILTER_VERSION "0"
#endif

namespace shardfilter::server {
namespace {

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Field(std::string* out, const char* name, const std::string& value) {
  *out += name;
  *out += ':';
  *out += value;
  *out += "\r\n";
}

// The node's announced address: the configured one, else the first bound
// address ("" when that is a wildcard).
std::string AnnouncedIp(const ServerOptions& o) {
  if (!o.cluster_announce_ip.empty()) return o.cluster_announce_ip;
  if (o.bind.empty()) return "";
  std::string ip = o.bind.front();
  if (!ip.empty() && ip[0] == '-') ip.erase(0, 1);
  if (ip == "0.0.0.0" || ip == "::" || ip == "*") return "";
  return ip;
}

// 40 hex digits derived from the store path, address and port: stable
// across restarts of one store at one address (Redis keeps its id in
// nodes.conf), distinct for different servers.
std::string NodeId(const ServerOptions& o, const std::string& ip,
                   uint16_t port) {
  const std::string seed = o.db_path + "\n" + ip + "\n" + std::to_string(port);
  std::string id;
  for (uint64_t round = 0; id.size() < 40; ++round) {
    uint64_t h = 1469598103934665603ull ^ (round * 0x9E3779B97F4A7C15ull);
    for (const char c : seed)
      h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx",
                  static_cast<unsigned long long>(h));
    id += buf;
  }
  id.resize(40);
  return id;
}

}  // namespace

namespace {

// The budget --maxmemory set: the Database's (null there: the process
// default, which every filter of that Database reserves from).
std::shared_ptr<MemoryBudget> BudgetOf(const DbKeyspace& keyspace) {
  const auto& budget = keyspace.database()->options().memory_budget;
  return budget != nullptr ? budget : MemoryBudget::Default();
}

}  // namespace

Server::Server(const ServerOptions& options, DbKeyspace* keyspace)
    : options_(options),
      keyspace_(keyspace),
      memory_(BudgetOf(*keyspace), keyspace->database()),
      workers_(options.sync_threads) {}

void Server::WakeLoopsToEvict() {
  const int64_t now = NowUnixMs();
  int64_t last = last_evict_wake_ms_.load(std::memory_order_relaxed);
  if (now - last < 100 ||
      !last_evict_wake_ms_.compare_exchange_strong(last, now)) {
    return;
  }
  for (auto& loop : loops_) loop->Wake();
}

Server::~Server() {
  Stop();
  Wait();
  keyspace_->SetDropListener(nullptr);
  keyspace_->SetAfterReclaim(nullptr);
}

namespace {

// Descriptors kept free beyond those open at start, for what the store and
// the server open later (RocksDB's new table files, a filter's journal
// segments, a dedup set's journal): Redis keeps 32 for its own.
constexpr uint64_t kReservedDescriptors = 32;

uint64_t OpenDescriptors() {
  uint64_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
    if (n > 0) --n;  // opendir's own
  }
  return n;
}

}  // namespace

// Redis's adjustOpenFilesLimit: every client is a descriptor, so maxclients
// must fit under RLIMIT_NOFILE with the store's own descriptors (those open
// now, and kReservedDescriptors more) to spare. The soft limit is raised
// towards the hard one first; what still does not fit lowers maxclients
// (INFO and CONFIG GET report the new figure), and says so on stderr.
Status Server::FitClientsToDescriptors() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return Status::OK();
  const uint64_t reserved = OpenDescriptors() + kReservedDescriptors;
  const uint64_t wanted = reserved + options_.max_clients;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < wanted) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max == RLIM_INFINITY
                          ? wanted
                          : std::min<uint64_t>(wanted, rl.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= wanted) {
    return Status::OK();
  }
  if (rl.rlim_cur <= reserved) {
    return Status::IOError(
        "the descriptor limit (ulimit -n) is " + std::to_string(rl.rlim_cur) +
        ": not enough for any client beside the " + std::to_string(reserved) +
        " the store and the server need; raise it");
  }
  const uint64_t fit = rl.rlim_cur - reserved;
  std::fprintf(stderr,
               "shardfilter-server: the descriptor limit (ulimit -n) is %llu: "
               "maxclients lowered from %u to %llu (%llu descriptors kept for "
               "the store, its journals and the server)\n",
               static_cast<unsigned long long>(rl.rlim_cur),
               options_.max_clients, static_cast<unsigned long long>(fit),
               static_cast<unsigned long long>(reserved));
  options_.max_clients = static_cast<uint32_t>(fit);
  return Status::OK();
}

Status Server::Start() {
  uint32_t n = options_.threads;
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  uint16_t port = options_.port;
  for (uint32_t i = 0; i < n; ++i) {
    auto loop = std::make_unique<EventLoop>(this);
    SF_RETURN_IF_ERROR(loop->Listen(options_.bind, &port));
    loops_.push_back(std::move(loop));
  }
  port_ = port;
  // The loops' own descriptors are open now: what is left is the clients'.
  SF_RETURN_IF_ERROR(FitClientsToDescriptors());
  start_unix_ = NowUnix();
  cluster_node_.ip = AnnouncedIp(options_);
  cluster_node_.port = port_;
  cluster_node_.id = NodeId(options_, cluster_node_.ip, port_);
  keyspace_->SetAfterReclaim([this] { memory_.Sample(); });
  // A drop wakes every loop so each frees its cached handles of it.
  keyspace_->SetDropListener([this] {
    for (auto& loop : loops_) loop->Wake();
  });
  for (auto& loop : loops_) {
    threads_.emplace_back([l = loop.get()] { l->Run(); });
  }
  // Also samples the memory the server measures (server_memory.h) and,
  // when that took used_memory past --maxmemory, unloads unused filters
  // until it is under again (or none is left to unload).
  expirer_ = std::thread([this] {
    while (!stopping()) {
      keyspace_->ExpireDue();
      memory_.Sample();
      for (size_t tries = keyspace_->ReclaimAttempts();
           tries > 0 && !stopping() && memory_.over() &&
           keyspace_->ReclaimMemory();
           --tries) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  return Status::OK();
}

void Server::Stop() {
  stopping_.store(true, std::memory_order_release);
  for (auto& loop : loops_) loop->Wake();
}

void Server::Wait() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  if (expirer_.joinable()) expirer_.join();
}

namespace {

// An EXPIRE-family request or PERSIST: waits when its key's writes do
// (WriteMayWaitForSync), or when it may drop the key: a deadline within a
// second of now or past (Redis then deletes the key, a synced drop), or one
// that overflows. A malformed time is answered with an error and writes
// nothing.
bool DeadlineMayWait(DbKeyspace* keyspace, const commands::CommandSpec* spec,
                     commands::Args args) {
  if (args.size() < 2) return false;  // an arity error
  if (keyspace->WriteMayWaitForSync(args[1])) return true;
  const std::string_view name(spec->name);
  if (name == "persist" || args.size() < 3) return false;
  int64_t when = 0;
  if (!commands::ParseLongLong(args[2], &when)) return false;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  int64_t ms = 0;
  if (__builtin_mul_overflow(when, name.starts_with("p") ? 1 : 1000, &ms)) {
    return true;
  }
  if (!name.ends_with("at") && __builtin_add_overflow(ms, now, &ms)) {
    return true;
  }
  return ms <= now + 1000;
}

// One request's part of RunsOnWorker. `last_key` remembers the key last
// found not to wait, so that a run of writes to one key costs one lookup.
bool MayWait(DbKeyspace* keyspace, const commands::CommandSpec* spec,
             commands::Args args, std::string_view* last_key) {
  if (spec == nullptr) return false;
  if ((spec->flags & commands::kFsyncs) != 0) return true;
  if ((spec->flags & commands::kSetsDeadline) != 0) {
    return DeadlineMayWait(keyspace, spec, args);
  }
  if ((spec->flags & commands::kWrite) == 0 || spec->first_key <= 0 ||
      args.size() <= static_cast<size_t>(spec->first_key)) {
    return false;
  }
  const std::string_view key = args[spec->first_key];
  if (last_key->data() != nullptr && key == *last_key) return false;
  if (keyspace->WriteMayWaitForSync(key)) return true;
  *last_key = key;
  return false;
}

}  // namespace

bool Server::RunsOnWorker(const commands::Session& session,
                          std::span<const commands::Args> requests) {
  std::string_view last_key;
  std::string_view last_name;  // a pipeline mostly repeats one command
  const commands::CommandSpec* spec = nullptr;
  bool exec = false;
  for (commands::Args args : requests) {
    if (last_name.data() == nullptr || args[0] != last_name) {
      spec = commands::FindCommand(args[0]);
      last_name = args[0];
    }
    if (MayWait(keyspace_, spec, args, &last_key)) return true;
    exec = exec || (spec != nullptr && std::string_view(spec->name) == "exec");
  }
  if (!exec) return false;
  // The transaction's commands queued before this batch (those queued in
  // it were looked at above).
  std::vector<std::string_view> views;
  for (const std::vector<std::string>& queued : session.queued) {
    if (queued.empty()) continue;
    views.assign(queued.begin(), queued.end());
    if (MayWait(keyspace_, commands::FindCommand(views[0]), views, &last_key)) {
      return true;
    }
  }
  return false;
}

void Server::RequestShutdown() {
  if (shutdown_handler_) {
    shutdown_handler_();
  } else {
    Stop();
  }
}

bool Server::CheckPassword(std::string_view user,
                           std::string_view password) const {
  if (user != "default") return false;
  if (options_.requirepass.empty()) return true;  // nopass default user
  const std::string& want = options_.requirepass;
  // Constant time in the password's content.
  unsigned diff = want.size() != password.size();
  for (size_t i = 0; i < password.size(); ++i) {
    diff |=
        static_cast<unsigned char>(password[i]) ^
        static_cast<unsigned char>(want[i % (want.size() ? want.size() : 1)]);
  }
  return diff == 0;
}

bool Server::AppendInfoSection(std::string_view section, std::string* out) {
  if (section == "server") {
    utsname u{};
    uname(&u);
    *out += "# Server\r\n";
    Field(out, "redis_version", "7.0.0");
    Field(out, "shardfilter_version", SHARDFILTER_VERSION);
    Field(out, "redis_mode",
          options_.cluster_emulation ? "cluster" : "standalone");
    Field(out, "os",
          std::string(u.sysname) + " " + u.release + " " + u.machine);
    Field(out, "arch_bits", "64");
    Field(out, "multiplexing_api", "epoll");
    Field(out, "process_id", std::to_string(getpid()));
    Field(out, "tcp_port", std::to_string(port_));
    const int64_t up = NowUnix() - start_unix_;
    Field(out, "uptime_in_seconds", std::to_string(up));
    Field(out, "uptime_in_days", std::to_string(up / 86400));
    Field(out, "event_loops", std::to_string(loops_.size()));
    return true;
  }
  if (section == "clients") {
    *out += "# Clients\r\n";
    Field(out, "connected_clients",
          std::to_string(connected_clients.load(std::memory_order_relaxed)));
    Field(out, "maxclients", std::to_string(options_.max_clients));
    Field(out, "blocked_clients", "0");
    return true;
  }
  if (section == "memory") {
    memory_.AppendInfo(keyspace_->FilterBytes(), out);
    // Filters unloaded to make room (loaded again on their next use).
    Field(out, "unloaded_filters", std::to_string(keyspace_->unloads()));
    Field(out, "maxmemory_clients", std::to_string(options_.max_client_memory));
    return true;
  }
  if (section == "stats") {
    *out += "# Stats\r\n";
    Field(out, "total_connections_received",
          std::to_string(total_connections.load(std::memory_order_relaxed)));
    Field(out, "total_commands_processed",
          std::to_string(total_commands.load(std::memory_order_relaxed)));
    Field(out, "total_net_input_bytes",
          std::to_string(net_input_bytes.load(std::memory_order_relaxed)));
    Field(out, "total_net_output_bytes",
          std::to_string(net_output_bytes.load(std::memory_order_relaxed)));
    Field(out, "rejected_connections",
          std::to_string(rejected_connections.load(std::memory_order_relaxed)));
    Field(out, "evicted_clients",
          std::to_string(evicted_clients.load(std::memory_order_relaxed)));
    Field(out, "client_query_buffer_limit_disconnections",
          std::to_string(
              query_limit_disconnections.load(std::memory_order_relaxed)));
    Field(out, "client_output_buffer_limit_disconnections",
          std::to_string(
              output_limit_disconnections.load(std::memory_order_relaxed)));
    // Keys dropped at their deadline, by a command naming them or by the
    // active expiry, and the CPU time of the active expiry's ticks.
    Field(out, "expired_keys", std::to_string(keyspace_->expired_keys()));
    Field(out, "expire_cycle_cpu_milliseconds",
          std::to_string(keyspace_->expire_cycle_cpu_ms()));
    Field(out, "keyspace_hits", "0");
    Field(out, "keyspace_misses", "0");
    return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> Server::ConfigValues() const {
  std::string bind;
  for (const std::string& b : options_.bind)
    bind += (bind.empty() ? "" : " ") + b;
  return {
      {"save", ""},
      {"appendonly", "no"},
      {"databases", "1"},
      {"port", std::to_string(port_)},
      {"bind", bind},
      {"protected-mode", options_.protected_mode ? "yes" : "no"},
      {"timeout", std::to_string(options_.idle_timeout_s)},
      {"maxclients", std::to_string(options_.max_clients)},
      {"maxmemory", std::to_string(memory_.maxmemory())},
      {"maxmemory-policy", "noeviction"},
      {"maxmemory-clients", std::to_string(options_.max_client_memory)},
      {"client-output-buffer-limit",
       "normal " + std::to_string(options_.output_hard_limit) + " 0 0"},
      {"proto-max-bulk-len", std::to_string(options_.limits.max_bulk_bytes)},
      {"client-query-buffer-limit", std::to_string(options_.max_query_buffer)},
      {"dir", options_.db_path},
      {"cluster-enabled", options_.cluster_emulation ? "yes" : "no"},
  };
}

std::string Server::ClientList(const commands::Session& self) {
  // Only the calling client: the others belong to other loop threads.
  return "id=" + std::to_string(self.id) + " addr=" + self.peer +
         " name=" + self.name + " db=0 lib-name=" + self.lib_name +
         " lib-ver=" + self.lib_ver + " cmd=client\n";
}

}  // namespace shardfilter::server
