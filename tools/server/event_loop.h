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
#include <deque>
#include <memory>
#include <mutex>
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
  bool busy = false;    // a batch of its requests runs on a worker (W1)
  bool closed_while_busy = false;  // W2
  // A reply would have taken its unsent output past the hard limit: closed
  // without sending the rest (Redis's client-output-buffer-limit).
  bool overflowed = false;
  // Its buffers' bytes as last reported to ServerMemory.
  size_t accounted = 0;
  size_t pending() const { return out.size() - out_sent; }
  size_t memory() const { return in.capacity() + out.capacity(); }
};

// One connection's batch on a worker: the requests (views into the
// connection's input, or into `owned`), and what running them produced.
struct WorkerJob {
  Connection* c = nullptr;
  std::vector<std::string_view> flat;
  std::vector<commands::Args> requests;  // spans of `flat`
  std::deque<std::string> owned;         // args the parser unescaped
  size_t consumed = 0;                   // input bytes the requests span
  bool parse_error = false;              // the batch ended at bad input
  int protocol = 2;                      // in: the writer's; out: after
  std::string out;                       // the replies
  size_t max_out = 0;                    // bound of `out` (the output limit)
  bool overflowed = false;               // `out` reached it
  size_t ran = 0;                        // DispatchPipeline's count
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
  // Out of descriptors (EMFILE, ENFILE): the pending client is answered
  // "-ERR max number of clients reached" and closed through the spare
  // descriptor; without one, the listeners leave epoll for
  // kAcceptPauseMs, so that a level-triggered listener cannot spin the
  // loop. True when the client was answered.
  bool RefuseWithoutDescriptors(int listener);
  void PauseAccepting();
  void ResumeAccepting();
  void OnReadable(Connection& c);
  void Process(Connection& c);
  // Hands the batch to a worker (W1).
  void StartJob(Connection& c, std::unique_ptr<WorkerJob> job);
  // Takes back every finished job: its replies, then the rest of the
  // connection's input.
  void FinishJobs();
  void Finish(std::unique_ptr<WorkerJob> job);
  // Ends the connection's batch as DispatchPipeline left it: counts, and
  // closes after QUIT / SHUTDOWN, an unknown state or a protocol error.
  void EndBatch(Connection& c, size_t ran, size_t requests, bool parse_error);
  void Flush(Connection& c);
  void UpdateInterest(Connection& c);
  // Reports the change of c's buffers to ServerMemory.
  void Account(Connection& c);
  // Over --maxmemory-clients: closes this loop's largest clients (those
  // using at least the average) until the total is under it again.
  void EvictClients();
  // A client past the output limit: closed now, its output dropped.
  void Overflowed(Connection& c);
  void Close(int fd);
  void CloseIdle(int64_t now_ms);
  void ShutDown();

  Server* server_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::vector<int> listeners_;
  // Kept open to be closed when accept() finds no descriptor left.
  int spare_fd_ = -1;
  bool accept_paused_ = false;
  int64_t resume_accept_ms_ = 0;
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;
  std::vector<int> to_close_;
  // Process's batch, reused (event_loop.cc).
  struct Scratch {
    std::vector<std::string_view> flat;
    std::vector<std::pair<size_t, size_t>> bounds;  // (first arg, count)
    std::vector<commands::Args> requests;
    std::deque<std::string> owned;
  } scratch_;
  uint32_t jobs_in_flight_ = 0;
  bool shutting_down_ = false;
  std::mutex completed_mu_;
  std::vector<std::unique_ptr<WorkerJob>> completed_;  // by completed_mu_
};

}  // namespace shardfilter::server

#endif  // SHARDFILTER_TOOLS_SERVER_EVENT_LOOP_H_
