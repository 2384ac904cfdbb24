// ClusterClient (tools/cluster/cluster_client.h): slot map, pipelined
// groups per node, redirections and retries.
#include "tools/cluster/cluster_client.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tools/commands/key_slot.h"
#include "tools/resp/request_parser.h"

namespace shardfilter::cluster {
namespace {

using Clock = std::chrono::steady_clock;
using resp::Reply;

// "MOVED 3999 127.0.0.1:6381" -> slot, address.
bool ParseRedirect(const std::string& text, uint32_t* slot,
                   std::string* address) {
  size_t a = text.find(' ');
  if (a == std::string::npos) return false;
  size_t b = text.find(' ', a + 1);
  if (b == std::string::npos) return false;
  int64_t s = 0;
  if (!resp::ParseInt64(std::string_view(text).substr(a + 1, b - a - 1), &s) ||
      s < 0 || s >= commands::kClusterSlots) {
    return false;
  }
  Result<NodeAddress> parsed =
      ParseNodeAddress(std::string_view(text).substr(b + 1));
  if (!parsed.ok()) return false;
  *slot = static_cast<uint32_t>(s);
  *address = parsed->ToString();
  return true;
}

Reply ErrorReply(std::string text) {
  Reply r;
  r.type = Reply::Type::kError;
  r.str = std::move(text);
  return r;
}

}  // namespace

Result<std::unique_ptr<ClusterClient>> ClusterClient::Connect(
    ClusterOptions o) {
  std::unique_ptr<ClusterClient> c(new ClusterClient(std::move(o)));
  c->slots_.assign(commands::kClusterSlots, "");
  if (Status s = c->RefreshSlots(); !s.ok()) return s;
  return c;
}

size_t ClusterClient::masters() const {
  std::vector<std::string> distinct;
  for (const std::string& a : slots_) {
    if (!a.empty() &&
        std::find(distinct.begin(), distinct.end(), a) == distinct.end()) {
      distinct.push_back(a);
    }
  }
  return distinct.size();
}

Status ClusterClient::Handshake(NodeConnection& c) {
  if (options_.password.empty()) return Status::OK();
  if (options_.user.empty()) {
    c.Append({"AUTH", options_.password});
  } else {
    c.Append({"AUTH", options_.user, options_.password});
  }
  std::vector<Reply> replies;
  if (Status s = c.RoundTrip(1, &replies, options_.timeout_ms); !s.ok()) {
    return s;
  }
  if (replies[0].is_error()) {
    return Status::InvalidArgument(c.address().ToString() +
                                   ": AUTH: " + replies[0].str);
  }
  return Status::OK();
}

Result<NodeConnection*> ClusterClient::Node(const std::string& address) {
  auto& slot = nodes_[address];
  if (slot == nullptr) slot = std::make_unique<NodeConnection>();
  if (!slot->connected()) {
    Result<NodeAddress> a = ParseNodeAddress(address);
    if (!a.ok()) return a.status();
    if (Status s = slot->Connect(*a, options_.timeout_ms); !s.ok()) return s;
    if (Status s = Handshake(*slot); !s.ok()) {
      slot->Close();
      return s;
    }
  }
  return slot.get();
}

Status ClusterClient::RefreshSlots() {
  ++stats_.map_refreshes;
  // Ask the seed first, then every node we know of.
  std::vector<std::string> candidates{options_.seed.ToString()};
  for (const auto& [address, conn] : nodes_) candidates.push_back(address);
  for (const std::string& a : slots_) {
    if (!a.empty()) candidates.push_back(a);
  }
  std::sort(candidates.begin() + 1, candidates.end());
  candidates.erase(std::unique(candidates.begin() + 1, candidates.end()),
                   candidates.end());
  Status last = Status::IOError("no node to ask for the slot map");
  for (const std::string& address : candidates) {
    Result<NodeConnection*> node = Node(address);
    if (!node.ok()) {
      if (node.status().code() == StatusCode::kInvalidArgument) {
        return node.status();  // AUTH refused: retrying will not help
      }
      last = node.status();
      continue;
    }
    NodeConnection& c = **node;
    c.Append({"CLUSTER", "SLOTS"});
    std::vector<Reply> replies;
    if (Status s = c.RoundTrip(1, &replies, options_.timeout_ms); !s.ok()) {
      c.Close();
      last = s;
      continue;
    }
    const Reply& r = replies[0];
    if (r.is_error()) {
      // No cluster here: one standalone server owns every slot.
      cluster_mode_ = false;
      slots_.assign(commands::kClusterSlots, address);
      return Status::OK();
    }
    if (r.type != Reply::Type::kArray) {
      last = Status::Corruption(address + ": CLUSTER SLOTS is not an array");
      continue;
    }
    std::vector<std::string> map(commands::kClusterSlots, "");
    bool bad = false;
    for (const Reply& range : r.elements) {
      if (range.type != Reply::Type::kArray || range.elements.size() < 3 ||
          range.elements[0].type != Reply::Type::kInteger ||
          range.elements[1].type != Reply::Type::kInteger ||
          range.elements[2].type != Reply::Type::kArray ||
          range.elements[2].elements.size() < 2 ||
          range.elements[2].elements[1].type != Reply::Type::kInteger) {
        bad = true;
        break;
      }
      int64_t from = range.elements[0].integer;
      int64_t to = range.elements[1].integer;
      const Reply& master = range.elements[2];
      std::string host = master.elements[0].str;
      // An empty (or "?") endpoint means "the node you asked".
      if (host.empty() || host == "?") host = c.address().host;
      NodeAddress owner{host, static_cast<int>(master.elements[1].integer)};
      if (from < 0 || to >= commands::kClusterSlots || from > to ||
          owner.port < 1 || owner.port > 65535) {
        bad = true;
        break;
      }
      for (int64_t s = from; s <= to; ++s) map[s] = owner.ToString();
    }
    if (bad) {
      last = Status::Corruption(address + ": malformed CLUSTER SLOTS reply");
      continue;
    }
    cluster_mode_ = true;
    slots_ = std::move(map);
    return Status::OK();
  }
  return last;
}

Result<std::vector<Reply>> ClusterClient::Run(
    std::span<const ClusterCommand> cmds) {
  const size_t n = cmds.size();
  stats_.commands += n;
  std::vector<Reply> out(n);
  std::vector<int> redirects(n, 0);
  std::vector<std::string> ask(n);
  std::vector<size_t> pending(n);
  for (size_t i = 0; i < n; ++i) pending[i] = i;
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(options_.retry_ms);
  bool refresh = false;
  int pause_ms = 0;
  std::string last_error;
  const std::string wait_replicas = std::to_string(options_.wait_replicas);
  const std::string wait_timeout = std::to_string(options_.wait_timeout_ms);
  // slot -> the address its latest MOVED gave (outranks a refreshed map).
  std::map<uint32_t, std::string> moved_to;

  struct Group {
    NodeConnection* conn = nullptr;
    std::vector<size_t> cmds;  // indexes into cmds, in send order
    std::vector<bool> asking;  // per entry: preceded by ASKING
    size_t expected = 0;       // replies the group will get
    std::vector<Reply> replies;
    bool failed = false;
    bool writes = false;  // a WAIT follows
  };

  while (!pending.empty()) {
    if (pause_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      pause_ms = 0;
    }
    if (Clock::now() > deadline) {
      return Status::IOError(
          std::to_string(pending.size()) + " of " + std::to_string(n) +
          " commands unanswered after " + std::to_string(options_.retry_ms) +
          " ms of retries" +
          (last_error.empty() ? "" : " (last: " + last_error + ")"));
    }
    if (refresh) {
      Status s = RefreshSlots();
      if (!s.ok()) {
        if (s.code() == StatusCode::kInvalidArgument) return s;
        last_error = s.message();
        pause_ms = 200;
        continue;
      }
      refresh = false;
      for (const auto& [slot, address] : moved_to) slots_[slot] = address;
    }
    std::map<std::string, Group> groups;
    for (size_t i : pending) {
      const ClusterCommand& c = cmds[i];
      std::string address = ask[i];
      if (address.empty()) {
        address = slots_[commands::KeySlot(c.args[c.key_index])];
      }
      if (address.empty()) address = options_.seed.ToString();
      Group& g = groups[address];
      g.cmds.push_back(i);
      g.asking.push_back(!ask[i].empty());
      g.writes |= c.write && options_.wait_replicas > 0;
    }
    std::vector<size_t> next;
    std::vector<Group*> live;
    for (auto& [address, g] : groups) {
      Result<NodeConnection*> node = Node(address);
      if (!node.ok()) {
        if (node.status().code() == StatusCode::kInvalidArgument) {
          return node.status();
        }
        last_error = node.status().message();
        g.failed = true;
        continue;
      }
      g.conn = *node;
      std::vector<std::string_view> args;
      for (size_t e = 0; e < g.cmds.size(); ++e) {
        if (g.asking[e]) {
          g.conn->Append({"ASKING"});
          ++g.expected;
        }
        const ClusterCommand& c = cmds[g.cmds[e]];
        args.assign(c.args.begin(), c.args.end());
        g.conn->Append(args);
        ++g.expected;
      }
      if (g.writes) {
        g.conn->Append({"WAIT", wait_replicas, wait_timeout});
        ++g.expected;
      }
      live.push_back(&g);
    }
    // Drive every live group's connection until it has all its replies.
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<Group*> polled;
      for (Group* g : live) {
        if (g->failed || g->replies.size() == g->expected) continue;
        fds.push_back({g->conn->fd(),
                       static_cast<short>(
                           POLLIN | (g->conn->wants_write() ? POLLOUT : 0)),
                       0});
        polled.push_back(g);
      }
      if (fds.empty()) break;
      // A WAIT may block the node for its whole timeout.
      int wait_ms = options_.timeout_ms +
                    (options_.wait_replicas > 0 ? options_.wait_timeout_ms : 0);
      int ready = ::poll(fds.data(), fds.size(), wait_ms);
      if (ready == 0) {
        for (Group* g : polled) {
          last_error = g->conn->address().ToString() + " did not answer";
          g->failed = true;
        }
        break;
      }
      if (ready < 0) continue;  // EINTR
      for (size_t f = 0; f < fds.size(); ++f) {
        Group* g = polled[f];
        Status s;
        if (fds[f].revents & POLLOUT) s = g->conn->Flush();
        if (s.ok() && (fds[f].revents & (POLLIN | POLLHUP | POLLERR))) {
          s = g->conn->Receive();
        }
        // Replies that arrived before an error still count.
        while (g->replies.size() < g->expected) {
          Reply r;
          Result<bool> got = g->conn->NextReply(&r);
          if (!got.ok()) {
            s = got.status();
            break;
          }
          if (!*got) break;
          g->replies.push_back(std::move(r));
        }
        if (!s.ok() && g->replies.size() < g->expected) {
          last_error = s.message();
          g->failed = true;
        }
      }
    }
    // Settle each group's replies.
    for (auto& [address, g] : groups) {
      size_t at = 0;                // next reply of the group
      std::vector<size_t> written;  // answered here, not an error
      for (size_t e = 0; e < g.cmds.size(); ++e) {
        size_t i = g.cmds[e];
        if (g.asking[e]) ++at;  // ASKING's +OK
        if (at >= g.replies.size()) {
          next.push_back(i);  // unanswered: the connection was lost
          continue;
        }
        Reply& r = g.replies[at++];
        ask[i].clear();
        uint32_t slot = 0;
        std::string to;
        bool moved = r.IsErrorCode("MOVED");
        if ((moved || r.IsErrorCode("ASK")) &&
            ParseRedirect(r.str, &slot, &to)) {
          if (moved) {
            ++stats_.moved;
            slots_[slot] = to;
            moved_to[slot] = to;
            refresh = true;
          } else {
            ++stats_.asked;
            ask[i] = to;
          }
          if (++redirects[i] > options_.max_redirects) {
            out[i] = std::move(r);
          } else {
            next.push_back(i);
          }
        } else if (r.IsErrorCode("TRYAGAIN") || r.IsErrorCode("CLUSTERDOWN") ||
                   r.IsErrorCode("LOADING") || r.IsErrorCode("MASTERDOWN")) {
          ++stats_.retried;
          last_error = r.str;
          if (!r.IsErrorCode("TRYAGAIN")) refresh = true;
          pause_ms = std::max(pause_ms, 100);
          next.push_back(i);
        } else {
          if (!r.is_error() && cmds[i].write) written.push_back(i);
          out[i] = std::move(r);
        }
      }
      if (g.failed) {
        ++stats_.reconnects;
        refresh = true;
        pause_ms = std::max(pause_ms, 100);
        if (g.conn != nullptr) g.conn->Close();
      }
      if (g.writes && !written.empty()) {
        if (at >= g.replies.size()) {
          // The WAIT never answered: send the writes again to learn.
          for (size_t i : written) next.push_back(i);
        } else {
          const Reply& w = g.replies[at];
          if (w.type != Reply::Type::kInteger ||
              w.integer < options_.wait_replicas) {
            std::string why = w.type == Reply::Type::kInteger
                                  ? "WAIT answered " +
                                        std::to_string(w.integer) + " of " +
                                        wait_replicas + " replicas"
                                  : "WAIT failed: " + w.str;
            for (size_t i : written) {
              out[i] = ErrorReply("NOTREPLICATED " + why + " on " + address);
            }
          }
        }
      }
    }
    std::sort(next.begin(), next.end());
    pending = std::move(next);
  }
  return out;
}

}  // namespace shardfilter::cluster
