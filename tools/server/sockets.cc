#include "tools/server/sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shardfilter::server {
namespace {

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

}  // namespace

bool IsLoopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      return in6->sin6_addr.s6_addr[12] == 127;
    }
  }
  return a.ss_family == AF_UNIX;
}

std::string PeerName(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

Result<int> OpenListener(const std::string& addr, uint16_t* port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (addr.find(':') != std::string::npos) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(*port);
    if (inet_pton(AF_INET6, addr.c_str(), &in6->sin6_addr) != 1) {
      return Status::InvalidArgument("bad bind address '" + addr + "'");
    }
    len = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    in->sin_port = htons(*port);
    if (inet_pton(AF_INET, addr.c_str(), &in->sin_addr) != 1) {
      return Status::InvalidArgument("bad bind address '" + addr + "'");
    }
    len = sizeof(sockaddr_in);
  }
  const int fd =
      ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return Status::IOError(Errno("socket for " + addr));
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (ss.ss_family == AF_INET6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      ::listen(fd, 511) != 0) {
    const Status s = Status::IOError(
        Errno("cannot listen on " + addr + " port " + std::to_string(*port)));
    ::close(fd);
    return s;
  }
  if (*port == 0) {
    sockaddr_storage bound{};
    socklen_t blen = sizeof(bound);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
    *port = ntohs(bound.ss_family == AF_INET6
                      ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  return fd;
}

}  // namespace shardfilter::server
