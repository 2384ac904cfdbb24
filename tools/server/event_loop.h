// EventLoop: one epoll loop of shardfilter-server (tools/server/server.h),
// its listeners and the connections it accepted.
//
// Per connection, on each readable event: one read straight into the input
// buffer; every complete request in it is parsed in place and run; all their
// replies are appended to the output buffer and sent with one write. While
// more than output_pause_bytes of replies are unsent, the loop neither reads
// nor runs that client's requests (so a client that pipelines and never
// reads costs at most that much, plus one reply); EPOLLOUT resumes it.
//
// Thread safety: all methods run on the loop's thread, except Wake (any
// thread, async-signal-safe).
#ifndef SHARDFILTER_TOOLS_SERVER_EVENT_LOOP_H_
#define SHARDFILTER_TOOLS_SERVER_EVENT_LOOP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shardfilter/filters/status.h"
#include "tools/commands/session.h"
#include "tools/resp/reply_writer.h"
#include "tools/resp/request_parser.h"
#include "tools/server/io_buffer.h"

namespace shardfilter::server {

class Server;

struct Connection {
  explicit Connection(const resp::ParserLimits& limits)
      : parser(limits), writer(&out) {}
  int fd = -1;
  IoBuffer in;
  std::string out;
  size_t out_sent = 0;  // bytes of `out` already written
  resp::RequestParser parser;
  resp::RespWriter writer;
  commands::Session session;
  int64_t last_active_ms = 0;
  uint32_t events = 0;  // epoll interest registered
  bool close_when_flushed = false;
  bool paused = false;  // too many unsent replies: not reading
  size_t pending() const { return out.size() - out_sent; }
};

class EventLoop {
 public:
  explicit EventLoop(Server* server);
  ~EventLoop();

  // Creates this loop's listener on every address (SO_REUSEPORT). With
  // *port == 0 the first bind picks one and stores it.
  Status Listen(const std::vector<std::string>& addresses, uint16_t* port);
  void Run();
  void Wake();

 private:
  void Accept(int listener);
  void OnReadable(Connection& c);
  void Process(Connection& c);
  void Flush(Connection& c);
  void UpdateInterest(Connection& c);
  void Close(int fd);
  void CloseIdle(int64_t now_ms);
  void ShutDown();

  Server* server_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::vector<int> listeners_;
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;
  std::vector<int> to_close_;
};

}  // namespace shardfilter::server

#endif  // SHARDFILTER_TOOLS_SERVER_EVENT_LOOP_H_
