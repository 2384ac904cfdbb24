// Socket helpers of the server's event loops.
#ifndef SHARDFILTER_TOOLS_SERVER_SOCKETS_H_
#define SHARDFILTER_TOOLS_SERVER_SOCKETS_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "shardfilter/filters/status.h"

namespace shardfilter::server {

// A non-blocking listening TCP socket on addr (an IPv4 or IPv6 literal)
// and *port, with SO_REUSEPORT so that every event loop has its own; with
// *port == 0 the kernel picks one and *port is set. InvalidArgument for a
// bad literal, IOError when the address cannot be bound.
Result<int> OpenListener(const std::string& addr, uint16_t* port);

// 127.0.0.0/8, ::1, and IPv4-mapped 127.x.
bool IsLoopback(const sockaddr_storage& a);
// "ip:port".
std::string PeerName(const sockaddr_storage& a);

}  // namespace shardfilter::server

#endif  // SHARDFILTER_TOOLS_SERVER_SOCKETS_H_
