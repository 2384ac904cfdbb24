// SyncWorkers: the threads that run what an event loop must not wait for.
// A write to a filter (dedup set, tiered filter) with durability sync
// returns only after an fdatasync, and creates, drops, expiry deadlines and
// checkpoints are synced writes whatever the mode (CommandFlag kFsyncs). The
// loop hands such a batch of one connection's requests to a worker and
// serves its other connections meanwhile; the worker's replies come back
// through the loop (event_loop.h). Concurrent workers' writes to one shard
// share an fsync (the journal's group commit, engine/internal/filter_log.h
// L3), so more waiting writers cost no more syncs.
//
// Threads are started on demand, up to `max_threads`, and stay until the
// object is destroyed: a server that never syncs has none.
//
// Thread safety: Submit may be called from any thread; the destructor runs
// every job already submitted, then joins.
#ifndef SHARDFILTER_TOOLS_SERVER_SYNC_WORKERS_H_
#define SHARDFILTER_TOOLS_SERVER_SYNC_WORKERS_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace shardfilter::server {

class SyncWorkers {
 public:
  explicit SyncWorkers(uint32_t max_threads);
  ~SyncWorkers();
  SyncWorkers(const SyncWorkers&) = delete;
  SyncWorkers& operator=(const SyncWorkers&) = delete;

  // Runs `job` on a worker thread, soon: a new thread is started when none
  // is idle and fewer than max_threads run.
  void Submit(std::function<void()> job);
  uint32_t threads();

 private:
  void Run();

  const uint32_t max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  uint32_t idle_ = 0;                       // guarded by mu_
  bool stop_ = false;                       // guarded by mu_
  std::vector<std::thread> threads_;        // guarded by mu_
};

}  // namespace shardfilter::server

#endif  // SHARDFILTER_TOOLS_SERVER_SYNC_WORKERS_H_
