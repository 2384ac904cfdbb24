// NodeConnection (tools/cluster/node_connection.h).
#include "tools/cluster/node_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "tools/resp/request_parser.h"

namespace shardfilter::cluster {

std::string NodeAddress::ToString() const {
  std::string s;
  bool v6 = host.find(':') != std::string::npos;
  if (v6) s += '[';
  s += host;
  if (v6) s += ']';
  s += ':';
  s += std::to_string(port);
  return s;
}

namespace {
// Appends, not a chain of operator+ on a temporary: GCC 12 warns
// (-Wrestrict) falsely on "'" + std::string(s) + ...
Status NotAnAddress(std::string_view s, std::string_view what) {
  std::string m = "'";
  m += s;
  m += "' is not host:port";
  m += what;
  return Status::InvalidArgument(std::move(m));
}
}  // namespace

Result<NodeAddress> ParseNodeAddress(std::string_view s) {
  NodeAddress a;
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return NotAnAddress(s, "");
  }
  std::string_view host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int64_t port = 0;
  if (!resp::ParseInt64(s.substr(colon + 1), &port) || port < 1 ||
      port > 65535 || host.empty()) {
    return NotAnAddress(s, " (port 1..65535)");
  }
  a.host = std::string(host);
  a.port = static_cast<int>(port);
  return a;
}

NodeConnection::~NodeConnection() { Close(); }

void NodeConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  out_.clear();
  sent_ = 0;
  in_.clear();
  read_ = 0;
}

Status NodeConnection::Connect(const NodeAddress& address, int timeout_ms) {
  Close();
  address_ = address;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string port = std::to_string(address.port);
  int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    return Status::IOError("resolving " + address.ToString() + ": " +
                           ::gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                 ai->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 &&
        errno != EINPROGRESS) {
      why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, timeout_ms);
    int err = 0;
    socklen_t len = sizeof err;
    if (ready <= 0) {
      why = ready == 0 ? "timed out" : std::strerror(errno);
      ::close(fd);
      continue;
    }
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      why = std::strerror(err);
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fd_ = fd;
    break;
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) {
    return Status::IOError("connecting to " + address.ToString() + ": " + why);
  }
  return Status::OK();
}

void NodeConnection::Append(std::span<const std::string_view> args) {
  out_ += '*';
  out_ += std::to_string(args.size());
  out_ += "\r\n";
  for (std::string_view a : args) {
    out_ += '$';
    out_ += std::to_string(a.size());
    out_ += "\r\n";
    out_.append(a.data(), a.size());
    out_ += "\r\n";
  }
}

void NodeConnection::Append(std::initializer_list<std::string_view> args) {
  Append(std::span<const std::string_view>(args.begin(), args.size()));
}

Status NodeConnection::Flush() {
  while (sent_ < out_.size()) {
    ssize_t n =
        ::send(fd_, out_.data() + sent_, out_.size() - sent_, MSG_NOSIGNAL);
    if (n > 0) {
      sent_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return Status::IOError("sending to " + address_.ToString() + ": " +
                           std::strerror(errno));
  }
  if (sent_ == out_.size()) {
    out_.clear();
    sent_ = 0;
  }
  return Status::OK();
}

Status NodeConnection::Receive() {
  // Drop what the replies already took before growing the buffer.
  if (read_ > 0 && read_ * 2 >= in_.size()) {
    in_.erase(0, read_);
    read_ = 0;
  }
  char chunk[64 * 1024];
  for (;;) {
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      in_.append(chunk, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof chunk) return Status::OK();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Status::OK();
    }
    return Status::IOError(n == 0
                               ? address_.ToString() + " closed the connection"
                               : "reading from " + address_.ToString() + ": " +
                                     std::strerror(errno));
  }
}

Result<bool> NodeConnection::NextReply(resp::Reply* reply) {
  std::string_view buf(in_);
  buf.remove_prefix(read_);
  switch (reader_.Parse(buf, reply)) {
    case resp::ReplyStatus::kReply:
      read_ += reader_.consumed();
      return true;
    case resp::ReplyStatus::kNeedMore:
      return false;
    case resp::ReplyStatus::kError:
      break;
  }
  return Status::Corruption(address_.ToString() + ": " + reader_.error());
}

Status NodeConnection::RoundTrip(size_t count,
                                 std::vector<resp::Reply>* replies,
                                 int timeout_ms) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  replies->clear();
  while (replies->size() < count) {
    if (Status s = Flush(); !s.ok()) return s;
    resp::Reply r;
    Result<bool> got = NextReply(&r);
    if (!got.ok()) return got.status();
    if (*got) {
      replies->push_back(std::move(r));
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      return Status::IOError(address_.ToString() + " did not answer in " +
                             std::to_string(timeout_ms) + " ms");
    }
    pollfd p{fd_, static_cast<short>(POLLIN | (wants_write() ? POLLOUT : 0)),
             0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) {
      return Status::IOError(std::string("poll: ") + std::strerror(errno));
    }
    if (ready > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      if (Status s = Receive(); !s.ok()) return s;
    }
  }
  return Status::OK();
}

}  // namespace shardfilter::cluster
