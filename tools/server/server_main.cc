// shardfilter-server: RedisBloom's BF.* / CF.* over RESP2/RESP3, on a
// Database directory. `shardfilter-server --help` prints the options;
// docs/server.md is the manual.
//
// Stops on SIGTERM, SIGINT or SHUTDOWN: stops accepting, closes the
// connections, checkpoints every filter (Database::Close) and exits 0 (1
// when the final checkpoint failed).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "shardfilter/engine/database.h"
#include "tools/server/db_keyspace.h"
#include "tools/server/server.h"

#ifndef SHARDFILTER_VERSION
#define SHARDFILTER_VERSION "0"
#endif

namespace {

using shardfilter::Database;
using shardfilter::DatabaseOptions;
using shardfilter::MemoryBudget;

constexpr const char* kUsage = R"(usage: shardfilter-server --db DIR [options]

Serves RedisBloom's BF.* and CF.* commands over RESP2/RESP3 from the filters
of a shardfilter store directory (created when missing).

  --db DIR                       store directory (required)
  --bind ADDR                    listen address; repeat or comma-separate
                                 (default 127.0.0.1 and, if available, ::1)
  --port N                       TCP port (default 6379; 0 = any free port)
  --requirepass PASSWORD         require AUTH (visible in `ps`: prefer
  --requirepass-file FILE          the file; its first line is the password)
  --protected-mode yes|no        without a password, refuse non-loopback
                                 peers (default yes)
  --threads N                    event loops (default: one per CPU)
  --sync-threads N               most threads waiting for fsyncs (writes to
                                 sync filters, creates, drops, SAVE) off the
                                 event loops (default 16)
  --maxclients N                 default 10000
  --timeout SECONDS              close idle clients (default 0 = never)
  --durability none|journal|sync durability of filters the commands create
                                 (default journal: acknowledged writes
                                 survive kill -9)
  --checkpoint-interval-ms N     background checkpoints (default 60000; 0 off)
  --maxmemory SIZE|auto          the process's memory limit: filter tables,
                                 growth, loads, restores, migrations, RocksDB's
                                 memtables and caches, journal pages, client
                                 buffers (INFO used_memory). Writes that would
                                 pass it are refused with -OOM after unused
                                 filters were unloaded. 0 = none; auto (the
                                 default) = half of min(physical memory,
                                 cgroup limit), resolved at start
  --maxmemory-clients SIZE|N%    all clients' buffers together; past it the
                                 largest clients are closed (default 0 = none;
                                 N% of --maxmemory)
  --max-filter-bytes SIZE        memory budget of one filter incl. growth
                                 (default 1gb)
  --shards N                     shards of created filters (default: by size)
  --proto-max-bulk-len SIZE      largest bulk argument (default 512mb)
  --client-query-buffer-limit SIZE   unparsed input per client (default 1gb)
  --client-output-buffer-limit SIZE  unsent replies per client, checked at
                                 every reply: past it the client is
                                 disconnected (default 256mb)
  --cluster-emulation [yes|no]   answer CLUSTER SLOTS/SHARDS/NODES/... as a
                                 one-node cluster owning every slot, so
                                 cluster clients connect (default no)
  --cluster-announce-ip ADDR     the node's address in CLUSTER replies
                                 (default: the first --bind address)
  --version, --help
SIZE takes Redis's suffixes: 1k = 1000, 1kb = 1024, m/mb, g/gb (b: bytes).
)";

bool ParseSize(const std::string& s, uint64_t* out) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0) return false;
  uint64_t v = std::strtoull(s.substr(0, i).c_str(), nullptr, 10);
  std::string unit = s.substr(i);
  for (char& c : unit) c = static_cast<char>(std::tolower(c));
  uint64_t mul = 1;
  if (unit == "" || unit == "b")
    mul = 1;
  else if (unit == "k")
    mul = 1000;
  else if (unit == "kb")
    mul = 1024;
  else if (unit == "m")
    mul = 1000 * 1000;
  else if (unit == "mb")
    mul = 1024 * 1024;
  else if (unit == "g")
    mul = 1000ull * 1000 * 1000;
  else if (unit == "gb")
    mul = 1024ull * 1024 * 1024;
  else
    return false;
  if (v > UINT64_MAX / mul) return false;
  *out = v * mul;
  return true;
}

int Fail(const std::string& message) {
  std::cerr << "shardfilter-server: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  shardfilter::server::ServerOptions opt;
  shardfilter::server::DbKeyspaceOptions ks_opt;
  DatabaseOptions db_opt;
  db_opt.checkpoint_interval_ms = 60000;
  bool bind_given = false;
  std::optional<uint64_t> maxmemory;  // nullopt: auto
  std::string maxmemory_clients = "0";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (a == "--version") {
      std::cout << "shardfilter-server " << SHARDFILTER_VERSION << "\n";
      return 0;
    }
    if (a == "--cluster-emulation") {  // a flag, optionally yes|no
      const bool valued = i + 1 < argc && (std::string(argv[i + 1]) == "yes" ||
                                           std::string(argv[i + 1]) == "no");
      opt.cluster_emulation = !valued || std::string(argv[++i]) == "yes";
      continue;
    }
    if (i + 1 >= argc) return Fail("option " + a + " needs a value");
    const std::string v = argv[++i];
    uint64_t n = 0;
    auto number = [&](uint64_t max) {
      if (!ParseSize(v, &n) || n > max) {
        std::exit(Fail("bad value '" + v + "' for " + a));
      }
      return n;
    };
    if (a == "--db") {
      db_opt.path = v;
    } else if (a == "--bind") {
      if (!bind_given) opt.bind.clear();
      bind_given = true;
      std::stringstream ss(v);
      std::string part;
      while (std::getline(ss, part, ',')) {
        if (!part.empty()) opt.bind.push_back(part);
      }
    } else if (a == "--port") {
      opt.port = static_cast<uint16_t>(number(65535));
    } else if (a == "--requirepass") {
      opt.requirepass = v;
    } else if (a == "--requirepass-file") {
      std::ifstream f(v);
      if (!f || !std::getline(f, opt.requirepass)) {
        return Fail("cannot read the password from " + v);
      }
      if (!opt.requirepass.empty() && opt.requirepass.back() == '\r') {
        opt.requirepass.pop_back();
      }
      if (opt.requirepass.empty()) return Fail(v + " holds an empty password");
    } else if (a == "--protected-mode") {
      if (v != "yes" && v != "no") return Fail("--protected-mode takes yes|no");
      opt.protected_mode = v == "yes";
    } else if (a == "--cluster-announce-ip") {
      opt.cluster_announce_ip = v;
    } else if (a == "--threads") {
      opt.threads = static_cast<uint32_t>(number(1024));
    } else if (a == "--sync-threads") {
      opt.sync_threads = static_cast<uint32_t>(number(1024));
      if (opt.sync_threads == 0) return Fail("--sync-threads must be >= 1");
    } else if (a == "--maxclients") {
      opt.max_clients = static_cast<uint32_t>(number(1u << 24));
    } else if (a == "--timeout") {
      opt.idle_timeout_s = static_cast<uint32_t>(number(1u << 30));
    } else if (a == "--durability") {
      auto d = shardfilter::ParseDurability(v);
      if (!d.ok()) return Fail(d.status().message());
      db_opt.default_durability = *d;
    } else if (a == "--checkpoint-interval-ms") {
      db_opt.checkpoint_interval_ms = static_cast<uint32_t>(number(1u << 31));
    } else if (a == "--maxmemory") {
      if (v == "auto") {
        maxmemory.reset();
      } else {
        maxmemory = number(~0ull);
      }
    } else if (a == "--maxmemory-clients") {
      maxmemory_clients = v;
    } else if (a == "--max-filter-bytes") {
      ks_opt.max_filter_bytes = number(~0ull);
    } else if (a == "--shards") {
      ks_opt.shards = static_cast<uint32_t>(number(256));
    } else if (a == "--proto-max-bulk-len") {
      opt.limits.max_bulk_bytes = number(~0ull);
    } else if (a == "--client-query-buffer-limit") {
      opt.max_query_buffer = number(~0ull);
    } else if (a == "--client-output-buffer-limit") {
      opt.output_hard_limit = number(~0ull);
      opt.output_pause_bytes =
          std::min(opt.output_pause_bytes, std::max<uint64_t>(1, n / 2));
    } else {
      return Fail("unknown option " + a + " (see --help)");
    }
  }
  if (db_opt.path.empty()) return Fail("--db DIR is required (see --help)");
  opt.db_path = db_opt.path;
  // --maxmemory is the process's one memory budget (engine/memory_budget.h):
  // every filter of the store reserves from it, and the server adds what
  // it measures (tools/server/server_memory.h). auto is resolved now, from
  // this machine's and this cgroup's memory at this start.
  const uint64_t limit =
      maxmemory.has_value() ? *maxmemory : MemoryBudget::DefaultLimit();
  const auto& budget = MemoryBudget::Default();
  budget->SetLimit(limit == 0 ? MemoryBudget::kUnlimited : limit);
  db_opt.memory_budget = budget;
  if (!maxmemory_clients.empty() && maxmemory_clients.back() == '%') {
    uint64_t percent = 0;
    if (!ParseSize(maxmemory_clients.substr(0, maxmemory_clients.size() - 1),
                   &percent) ||
        percent > 100) {
      return Fail("bad value '" + maxmemory_clients +
                  "' for --maxmemory-clients");
    }
    opt.max_client_memory = limit / 100 * percent;
  } else if (!ParseSize(maxmemory_clients, &opt.max_client_memory)) {
    return Fail("bad value '" + maxmemory_clients +
                "' for --maxmemory-clients");
  }

  // SIGTERM/SIGINT are taken by sigwait below: blocked in every thread
  // (the loops inherit this mask).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto db = Database::Open(db_opt);
  if (!db.ok())
    return Fail("cannot open " + db_opt.path + ": " + db.status().ToString());
  shardfilter::server::DbKeyspace keyspace(db->get(), ks_opt);
  shardfilter::server::Server server(opt, &keyspace);
  server.SetShutdownHandler([] { kill(getpid(), SIGTERM); });
  const shardfilter::Status started = server.Start();
  if (!started.ok()) {
    (void)keyspace.Close();
    (void)(*db)->Close();
    return Fail(started.ToString());
  }
  std::cout << "shardfilter-server " << SHARDFILTER_VERSION << " ready: port "
            << server.port() << ", db " << db_opt.path << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "shardfilter-server: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
            << ", stopping" << std::endl;
  server.Stop();
  server.Wait();
  const shardfilter::Status sets_closed = keyspace.Close();  // dedup sets
  if (!sets_closed.ok()) {
    std::cerr << "shardfilter-server: closing dedup sets failed: "
              << sets_closed.ToString() << "\n";
  }
  const shardfilter::Status closed = (*db)->Close();
  if (!closed.ok()) {
    std::cerr << "shardfilter-server: final checkpoint failed: "
              << closed.ToString() << "\n";
    return 1;
  }
  std::cout << "shardfilter-server: checkpointed, bye" << std::endl;
  return 0;
}
