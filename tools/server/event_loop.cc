#include "tools/server/event_loop.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>

#include "tools/commands/command_table.h"
#include "tools/server/server.h"
#include "tools/server/sockets.h"

namespace shardfilter::server {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
// A single read never asks for more than this, however large the bulk.
constexpr size_t kMaxReadChunk = 16u << 20;
constexpr size_t kKeepOutputCapacity = 1u << 20;
// Requests parsed before they run (DispatchPipeline coalesces their adds).
constexpr size_t kMaxBatch = 256;
// How long the listeners stay out of epoll when no descriptor is left.
constexpr int kAcceptPauseMs = 100;
constexpr char kMaxClientsError[] = "-ERR max number of clients reached\r\n";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Best effort, for a connection about to be closed: one non-blocking send.
void SendNow(int fd, std::string_view text) {
  (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

EventLoop::EventLoop(Server* server) : server_(server) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

EventLoop::~EventLoop() {
  for (auto& [fd, c] : conns_) ::close(fd);
  for (int l : listeners_) ::close(l);
  if (spare_fd_ >= 0) ::close(spare_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

Status EventLoop::Listen(const std::vector<std::string>& addresses,
                         uint16_t* port) {
  for (std::string addr : addresses) {
    const bool optional = !addr.empty() && addr[0] == '-';
    if (optional) addr.erase(0, 1);
    Result<int> fd = OpenListener(addr, port);
    if (!fd.ok()) {
      if (optional && fd.status().code() == StatusCode::kIOError) continue;
      return fd.status();
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = *fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, *fd, &ev);
    listeners_.push_back(*fd);
  }
  if (listeners_.empty()) {
    return Status::IOError("no address could be bound");
  }
  return Status::OK();
}

void EventLoop::Wake() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void EventLoop::Run() {
  epoll_event events[256];
  const uint32_t idle_s = server_->options().idle_timeout_s;
  int64_t last_idle_check = NowMs();
  while (!server_->stopping()) {
    const int timeout = accept_paused_ ? kAcceptPauseMs
                        : idle_s > 0   ? 1000
                                       : -1;
    const int n = ::epoll_wait(epoll_fd_, events, 256, timeout);
    if (accept_paused_ && NowMs() >= resume_accept_ms_) ResumeAccepting();
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof(v));
        FinishJobs();
        continue;
      }
      if (std::find(listeners_.begin(), listeners_.end(), fd) !=
          listeners_.end()) {
        Accept(fd);
        continue;
      }
      auto it = conns_.find(fd);
      if (it == conns_.end()) continue;
      Connection& c = *it->second;
      const uint32_t e = events[i].events;
      if (e & EPOLLOUT) {
        Flush(c);
        Account(c);
      }
      if ((e & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c.paused &&
          !c.close_when_flushed && !c.busy) {
        OnReadable(c);
      } else if (e & (EPOLLHUP | EPOLLERR)) {
        to_close_.push_back(fd);
      }
    }
    for (int fd : to_close_) Close(fd);
    to_close_.clear();
    EvictClients();  // over --maxmemory-clients (this loop's share)
    server_->keyspace()->TrimThreadCache();  // after a drop elsewhere
    if (idle_s > 0 && NowMs() - last_idle_check >= 1000) {
      last_idle_check = NowMs();
      CloseIdle(last_idle_check);
    }
  }
  ShutDown();
}

void EventLoop::Accept(int listener) {
  const ServerOptions& opt = server_->options();
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) &&
          RefuseWithoutDescriptors(listener)) {
        continue;
      }
      return;  // EAGAIN (or another loop took it), or accepting is paused
    }
    server_->total_connections.fetch_add(1, std::memory_order_relaxed);
    if (opt.requirepass.empty() && opt.protected_mode && !IsLoopback(peer)) {
      SendNow(fd,
              "-DENIED shardfilter-server is in protected mode: no password "
              "is set, so only loopback clients are accepted. Set "
              "--requirepass, or --protected-mode no to accept others.\r\n");
      ::close(fd);
      server_->rejected_connections.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (server_->connected_clients.load(std::memory_order_relaxed) >=
        static_cast<int64_t>(opt.max_clients)) {
      SendNow(fd, kMaxClientsError);
      ::shutdown(fd, SHUT_WR);
      ::close(fd);
      server_->rejected_connections.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto c = std::make_unique<Connection>(opt.limits);
    c->fd = fd;
    c->session.id = server_->NextClientId();
    c->session.peer = PeerName(peer);
    c->last_active_ms = NowMs();
    c->events = EPOLLIN;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      continue;
    }
    server_->connected_clients.fetch_add(1, std::memory_order_relaxed);
    Connection& added = *conns_.emplace(fd, std::move(c)).first->second;
    Account(added);
  }
}

bool EventLoop::RefuseWithoutDescriptors(int listener) {
  if (spare_fd_ >= 0) {
    ::close(spare_fd_);
    spare_fd_ = -1;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      server_->total_connections.fetch_add(1, std::memory_order_relaxed);
      server_->rejected_connections.fetch_add(1, std::memory_order_relaxed);
      SendNow(fd, kMaxClientsError);
      ::shutdown(fd, SHUT_WR);
      ::close(fd);
    }
    spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && spare_fd_ >= 0) return true;
  }
  PauseAccepting();
  return false;
}

void EventLoop::PauseAccepting() {
  if (accept_paused_) return;
  for (int l : listeners_) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l, nullptr);
  accept_paused_ = true;
  resume_accept_ms_ = NowMs() + kAcceptPauseMs;
}

void EventLoop::ResumeAccepting() {
  accept_paused_ = false;
  if (spare_fd_ < 0) spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (int l : listeners_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = l;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, l, &ev);
  }
}

void EventLoop::OnReadable(Connection& c) {
  const ServerOptions& opt = server_->options();
  const size_t want =
      std::clamp(c.parser.bytes_needed(), kReadChunk, kMaxReadChunk);
  char* tail = c.in.Tail(want);
  const ssize_t n = ::read(c.fd, tail, c.in.tail_size());
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    to_close_.push_back(c.fd);  // peer closed or failed: replies are moot
    return;
  }
  if (n < 0) return;
  c.in.Commit(static_cast<size_t>(n));
  server_->net_input_bytes.fetch_add(n, std::memory_order_relaxed);
  c.last_active_ms = NowMs();
  if (c.in.size() > opt.max_query_buffer) {
    to_close_.push_back(c.fd);  // Redis closes such clients too
    server_->query_limit_disconnections.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Process(c);
  Flush(c);
  Account(c);
}

// Requests are collected (parsed in place, up to kMaxBatch) and run with
// DispatchPipeline, which coalesces consecutive adds to one key into one
// journalled write; their replies then go out together. A batch that may
// wait for an fsync goes to a worker instead (W1); the rest of the input
// waits for it.
void EventLoop::Process(Connection& c) {
  if (c.busy || shutting_down_) return;
  const ServerOptions& opt = server_->options();
  commands::CommandContext ctx{c.session, *server_->keyspace(), *server_,
                               c.writer};
  uint64_t ran = 0;
  // The output limit, checked at every reply's append (RespWriter): a
  // reply that would take the unsent output past it ends the batch and
  // the connection (EndBatch).
  c.writer.SetLimit(c.out_sent + opt.output_hard_limit,
                    &c.session.close_after_reply);
  // The loop's scratch, reused across calls (their capacity stays): no
  // allocation per read in the common case. A job takes them over.
  std::vector<std::string_view>& flat = scratch_.flat;
  std::vector<std::pair<size_t, size_t>>& bounds = scratch_.bounds;
  std::vector<commands::Args>& requests = scratch_.requests;
  std::deque<std::string>& owned = scratch_.owned;  // unescaped (inline)
  while (!c.close_when_flushed) {
    if (c.pending() >= opt.output_pause_bytes) {
      c.paused = true;  // resumed by Flush once the client reads
      break;
    }
    // Before AUTH the parser's limits depend on each command's effect:
    // one request at a time.
    const bool authed = c.session.authenticated || !server_->RequiresPassword();
    const size_t max_batch = authed ? kMaxBatch : 1;
    const std::string_view view = c.in.view();
    size_t offset = 0;
    bool parse_error = false;
    flat.clear();
    bounds.clear();
    owned.clear();
    while (bounds.size() < max_batch) {
      const resp::ParseStatus st = c.parser.Parse(view.substr(offset), authed);
      if (st == resp::ParseStatus::kNeedMore) break;
      if (st == resp::ParseStatus::kError) {
        parse_error = true;
        break;
      }
      bounds.emplace_back(flat.size(), c.parser.args().size());
      for (std::string_view a : c.parser.args()) {
        const bool in_buffer = a.data() >= view.data() &&
                               a.data() + a.size() <= view.data() + view.size();
        if (in_buffer) {
          flat.push_back(a);
        } else {
          flat.push_back(owned.emplace_back(a));
        }
      }
      offset += c.parser.consumed();
    }
    requests.clear();
    for (const auto& [first, count] : bounds) {
      requests.emplace_back(flat.data() + first, count);
    }
    if (!requests.empty() && server_->RunsOnWorker(c.session, requests)) {
      // Moving the containers keeps their elements where they are, so the
      // spans and views stay valid.
      auto job = std::make_unique<WorkerJob>();
      job->c = &c;
      job->flat = std::move(flat);
      job->requests = std::move(requests);
      job->owned = std::move(owned);
      job->consumed = offset;
      job->parse_error = parse_error;
      job->protocol = c.writer.protocol();
      job->max_out = c.pending() < opt.output_hard_limit
                         ? opt.output_hard_limit - c.pending()
                         : 0;
      server_->total_commands.fetch_add(ran, std::memory_order_relaxed);
      StartJob(c, std::move(job));
      return;  // the input is the job's until it returns (W1)
    }
    const size_t done = commands::DispatchPipeline(ctx, requests);
    ran += done;
    c.in.Consume(offset);
    EndBatch(c, done, requests.size(), parse_error);
    if (requests.empty() || bounds.size() < max_batch) break;  // all parsed
  }
  c.in.ShrinkIfIdle(kMaxReadChunk);
  server_->total_commands.fetch_add(ran, std::memory_order_relaxed);
}

void EventLoop::EndBatch(Connection& c, size_t ran, size_t requests,
                         bool parse_error) {
  if (c.writer.overflowed()) return Overflowed(c);
  if (c.session.close_after_reply || ran < requests) {
    c.close_when_flushed = true;
  } else if (parse_error) {
    c.writer.Error("ERR " + c.parser.error());
    c.close_when_flushed = true;
  }
}

void EventLoop::StartJob(Connection& c, std::unique_ptr<WorkerJob> job) {
  c.busy = true;
  ++jobs_in_flight_;
  UpdateInterest(c);  // no EPOLLIN while busy
  server_->workers().Submit([this, raw = job.release()] {
    std::unique_ptr<WorkerJob> j(raw);
    resp::RespWriter writer(&j->out, j->protocol);
    writer.SetLimit(j->max_out, &j->c->session.close_after_reply);
    commands::CommandContext ctx{j->c->session, *server_->keyspace(), *server_,
                                 writer};
    j->ran = commands::DispatchPipeline(ctx, j->requests);
    j->protocol = writer.protocol();
    j->overflowed = writer.overflowed();
    server_->keyspace()->ReleaseThreadCache();
    {
      std::lock_guard lock(completed_mu_);
      completed_.push_back(std::move(j));
    }
    Wake();
  });
}

void EventLoop::FinishJobs() {
  std::vector<std::unique_ptr<WorkerJob>> done;
  {
    std::lock_guard lock(completed_mu_);
    done.swap(completed_);
  }
  for (std::unique_ptr<WorkerJob>& job : done) Finish(std::move(job));
}

void EventLoop::Finish(std::unique_ptr<WorkerJob> job) {
  Connection& c = *job->c;
  --jobs_in_flight_;
  c.busy = false;
  c.writer.SetProtocol(job->protocol);
  if (!job->overflowed) c.out += job->out;
  c.in.Consume(job->consumed);
  server_->total_commands.fetch_add(job->ran, std::memory_order_relaxed);
  if (job->overflowed) {
    Overflowed(c);
  } else {
    EndBatch(c, job->ran, job->requests.size(), job->parse_error);
  }
  job.reset();  // its views into c.in end here
  if (c.closed_while_busy) {
    to_close_.push_back(c.fd);  // W2: closed after this round's events
    return;
  }
  if (shutting_down_ || c.overflowed) return;  // W3; closed this round
  c.last_active_ms = NowMs();
  Process(c);  // the requests read after the batch
  Flush(c);
  Account(c);
}

void EventLoop::Overflowed(Connection& c) {
  if (c.overflowed) return;
  c.overflowed = true;
  c.close_when_flushed = true;
  to_close_.push_back(c.fd);
  server_->output_limit_disconnections.fetch_add(1, std::memory_order_relaxed);
}

void EventLoop::Account(Connection& c) {
  const size_t now = c.memory();
  server_->memory().AddClientBytes(static_cast<int64_t>(now) -
                                   static_cast<int64_t>(c.accounted));
  c.accounted = now;
}

void EventLoop::EvictClients() {
  const uint64_t limit = server_->options().max_client_memory;
  ServerMemory& memory = server_->memory();
  if (limit == 0 || memory.client_bytes() <= limit) return;
  std::vector<Connection*> mine;
  for (auto& [fd, c] : conns_) {
    if (!c->closed_while_busy) mine.push_back(c.get());
  }
  std::sort(mine.begin(), mine.end(), [](Connection* a, Connection* b) {
    return a->memory() > b->memory();
  });
  const int64_t clients = std::max<int64_t>(
      1, server_->connected_clients.load(std::memory_order_relaxed));
  const uint64_t average = memory.client_bytes() / clients;
  bool evicted = false;
  for (Connection* c : mine) {
    if (memory.client_bytes() <= limit || c->memory() < average) break;
    server_->evicted_clients.fetch_add(1, std::memory_order_relaxed);
    evicted = true;
    Close(c->fd);  // its buffers are given back now (busy: when it ends)
  }
  // The largest clients may be another loop's: wake them to look.
  if (!evicted && memory.client_bytes() > limit) server_->WakeLoopsToEvict();
}

void EventLoop::Flush(Connection& c) {
  const ServerOptions& opt = server_->options();
  if (c.overflowed) return;  // its output is dropped, not sent
  while (c.pending() > 0) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.pending(),
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out_sent += n;
      server_->net_output_bytes.fetch_add(n, std::memory_order_relaxed);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    to_close_.push_back(c.fd);
    return;
  }
  if (c.pending() == 0) {
    c.out.clear();
    c.out_sent = 0;
    if (c.out.capacity() > kKeepOutputCapacity) std::string().swap(c.out);
    if (c.close_when_flushed) {
      to_close_.push_back(c.fd);
      return;
    }
  } else if (c.pending() > opt.output_hard_limit) {
    to_close_.push_back(c.fd);  // Redis's client-output-buffer-limit
    return;
  }
  if (c.paused && c.pending() < opt.output_pause_bytes / 2) {
    c.paused = false;
    Process(c);  // requests already read run now
    if (c.pending() > 0 && !c.paused) return Flush(c);
  }
  UpdateInterest(c);
}

void EventLoop::UpdateInterest(Connection& c) {
  if (c.closed_while_busy) return;  // out of epoll (W2)
  uint32_t want = 0;
  if (!c.paused && !c.close_when_flushed && !c.busy) want |= EPOLLIN;
  if (c.pending() > 0) want |= EPOLLOUT;
  if (want == c.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = c.fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.events = want;
}

void EventLoop::Close(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (it->second->busy) {  // W2: the job still uses it
    if (!it->second->closed_while_busy) {
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      it->second->closed_while_busy = true;
    }
    return;
  }
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  if (it->second->close_when_flushed) {
    // We close on purpose (QUIT, protocol error): send FIN first and drop
    // what the client sent meanwhile, so that closing with unread input
    // does not reset the connection before the client read our last reply.
    ::shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0;
         ++i) {
    }
  }
  ::close(fd);
  server_->memory().AddClientBytes(
      -static_cast<int64_t>(it->second->accounted));
  conns_.erase(it);
  server_->connected_clients.fetch_sub(1, std::memory_order_relaxed);
}

void EventLoop::CloseIdle(int64_t now_ms) {
  const int64_t limit = int64_t{server_->options().idle_timeout_s} * 1000;
  for (auto& [fd, c] : conns_) {
    if (now_ms - c->last_active_ms > limit && c->pending() == 0 && !c->busy) {
      to_close_.push_back(fd);
    }
  }
  for (int fd : to_close_) Close(fd);
  to_close_.clear();
}

// Stop: no more accepts; the jobs on workers finish (W3); each
// connection's replies to what it sent are written if the socket takes them
// now; then everything is closed.
void EventLoop::ShutDown() {
  shutting_down_ = true;
  for (int l : listeners_) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, l, nullptr);
    ::close(l);
  }
  listeners_.clear();
  while (jobs_in_flight_ > 0) {
    pollfd p{wake_fd_, POLLIN, 0};
    (void)::poll(&p, 1, 100);
    uint64_t v;
    (void)!::read(wake_fd_, &v, sizeof(v));
    FinishJobs();
  }
  to_close_.clear();  // everything is closed below
  for (auto& [fd, c] : conns_) {
    if (c->pending() > 0) {
      (void)!::send(fd, c->out.data() + c->out_sent, c->pending(),
                    MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }
  std::vector<int> fds;
  for (auto& [fd, c] : conns_) fds.push_back(fd);
  for (int fd : fds) Close(fd);
}

}  // namespace shardfilter::server
