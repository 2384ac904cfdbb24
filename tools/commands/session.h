// Per-connection state of the command layer (Session), the services a host
// offers the generic commands (Host), and the context a command runs in.
//
// Thread safety: a Session belongs to one connection; a Host is shared by
// every connection and must be thread-safe.
#ifndef SHARDFILTER_TOOLS_COMMANDS_SESSION_H_
#define SHARDFILTER_TOOLS_COMMANDS_SESSION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/commands/keyspace.h"
#include "tools/commands/staging.h"
#include "tools/resp/reply_writer.h"

namespace shardfilter::commands {

class CommandStats;
class StatsWriter;

using Args = std::span<const std::string_view>;

// Most BF/CF.LOADCHUNK sequences pending at once in the process (each
// holds its whole announced dump, Keyspace::NewStaging).
inline constexpr int kMaxPendingRestores = 32;

// A BF/CF.LOADCHUNK sequence in progress on one connection: one of the
// process's kMaxPendingRestores until it is destroyed (completed, abandoned
// for a newer header on the connection, or the connection closed).
class PendingRestore {
 public:
  // Null when kMaxPendingRestores are pending, unless `obey` (a command the
  // host must apply: Keyspace::MustObey).
  static std::unique_ptr<PendingRestore> Start(std::string key, bool obey);
  ~PendingRestore();
  PendingRestore(const PendingRestore&) = delete;
  PendingRestore& operator=(const PendingRestore&) = delete;

  std::string key;
  std::unique_ptr<StagingBuffer> bytes;  // size(): the announced dump
  uint64_t filled = 0;                   // bytes received, in order

 private:
  explicit PendingRestore(std::string k) : key(std::move(k)) {}
};

struct Session {
  uint64_t id = 0;
  bool authenticated = false;  // meaningful only when a password is set
  std::string name;            // CLIENT SETNAME / HELLO SETNAME
  std::string lib_name, lib_ver;
  std::string peer;  // "ip:port", for CLIENT LIST / INFO
  // MULTI: commands queued (copied: the request buffer moves on).
  bool in_multi = false;
  bool multi_failed = false;  // a queued command was refused: EXECABORT
  std::vector<std::vector<std::string>> queued;
  // QUIT: the host closes the connection once this reply is written.
  bool close_after_reply = false;
  uint64_t commands = 0;
  // BF/CF.SCANDUMP: the snapshot being handed out in chunks (one per
  // connection, so a dump is one consistent instant), charged to the
  // host's budget until its last chunk is served.
  std::string dump_key;
  std::unique_ptr<StagingBuffer> dump;
  // BF/CF.LOADCHUNK: the dump being received (restored when complete).
  std::unique_ptr<PendingRestore> load;
  // Dispatch's counting writer while a command runs (so EXEC's queued
  // commands are counted once, under their own names); else nullptr.
  StatsWriter* stats_writer = nullptr;
};

// Emulated cluster mode: the one node of a one-node cluster that owns
// every slot (docs/server.md, "Cluster emulation").
struct ClusterNode {
  std::string id;  // 40 hex digits, stable for one store and address
  std::string ip;  // announced address ("" = the one the client used)
  uint16_t port = 0;
};

class Host {
 public:
  virtual ~Host() = default;
  virtual bool RequiresPassword() const = 0;
  // AUTH / HELLO AUTH: user is "default" when the client gave none.
  virtual bool CheckPassword(std::string_view user,
                             std::string_view password) const = 0;
  // Appends INFO's "# Section\r\nfield:value\r\n..." for a section the host
  // owns (server, clients, memory, stats); false for other names.
  virtual bool AppendInfoSection(std::string_view section,
                                 std::string* out) = 0;
  // CONFIG GET: every parameter the host reports, (name, value).
  virtual std::vector<std::pair<std::string, std::string>> ConfigValues()
      const = 0;
  // CLIENT LIST: one line per client, Redis's format.
  virtual std::string ClientList(const Session& self) = 0;
  // SHUTDOWN: stop accepting, finish, checkpoint, exit (asynchronously).
  virtual void RequestShutdown() = 0;
  // CLUSTER, READONLY, READWRITE, ASKING: this node when the host emulates
  // a one-node cluster; nullptr (the default) answers Redis's "cluster
  // support disabled". The module keeps the default: inside redis-server,
  // Redis answers CLUSTER itself (the module registers no CLUSTER).
  virtual const ClusterNode* Cluster() const { return nullptr; }
  // INFO commandstats / errorstats, counted by Dispatch; nullptr (the
  // default): not counted.
  virtual CommandStats* Stats() { return nullptr; }
};

struct CommandContext {
  Session& session;
  Keyspace& keyspace;
  Host& host;
  resp::ReplyWriter& out;
};

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_SESSION_H_
