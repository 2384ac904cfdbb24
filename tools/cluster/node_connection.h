// NodeConnection: one client connection to a Redis (or shardfilter-server)
// node, for the cluster client (cluster_client.h). Requests are queued as
// RESP arrays of bulk strings and sent pipelined; replies are read in order.
// The socket is non-blocking so that the cluster client can drive several
// nodes at once with poll(): it writes to one while another answers.
//
// Thread safety: one thread at a time.
#ifndef SHARDFILTER_TOOLS_CLUSTER_NODE_CONNECTION_H_
#define SHARDFILTER_TOOLS_CLUSTER_NODE_CONNECTION_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "shardfilter/filters/status.h"
#include "tools/resp/reply_reader.h"

namespace shardfilter::cluster {

// "host:port" ("[::1]:6379" or "::1:6379" for IPv6).
struct NodeAddress {
  std::string host;
  int port = 0;
  std::string ToString() const;
  bool operator==(const NodeAddress&) const = default;
};
// InvalidArgument unless s is host:port with a port in 1..65535.
Result<NodeAddress> ParseNodeAddress(std::string_view s);

class NodeConnection {
 public:
  NodeConnection() = default;
  ~NodeConnection();
  NodeConnection(const NodeConnection&) = delete;
  NodeConnection& operator=(const NodeConnection&) = delete;

  // Connects (blocking, at most timeout_ms) and leaves the socket
  // non-blocking. IOError on failure, naming the address.
  Status Connect(const NodeAddress& address, int timeout_ms);
  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const NodeAddress& address() const { return address_; }
  void Close();

  // Queues one request (sent by Flush).
  void Append(std::span<const std::string_view> args);
  void Append(std::initializer_list<std::string_view> args);
  bool wants_write() const { return sent_ < out_.size(); }

  // Writes what the socket takes now. IOError when the peer is gone.
  Status Flush();
  // Reads what is there now (call when poll says readable). IOError on
  // EOF or a reset.
  Status Receive();
  // The next whole reply received, if any: kReply fills *reply;
  // kNeedMore: none yet; kError: the bytes are not RESP (Corruption).
  Result<bool> NextReply(resp::Reply* reply);

  // Blocking round trip of everything queued: sends it and reads `count`
  // replies into *replies (for setup commands: AUTH, CLUSTER SLOTS).
  Status RoundTrip(size_t count, std::vector<resp::Reply>* replies,
                   int timeout_ms);

 private:
  int fd_ = -1;
  NodeAddress address_;
  std::string out_;
  size_t sent_ = 0;
  std::string in_;
  size_t read_ = 0;  // bytes of in_ already consumed by NextReply
  resp::ReplyReader reader_;
};

}  // namespace shardfilter::cluster

#endif  // SHARDFILTER_TOOLS_CLUSTER_NODE_CONNECTION_H_
