#include "tools/server/sync_workers.h"

#include <algorithm>
#include <utility>

namespace shardfilter::server {

SyncWorkers::SyncWorkers(uint32_t max_threads)
    : max_threads_(std::max<uint32_t>(1, max_threads)) {}

SyncWorkers::~SyncWorkers() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

void SyncWorkers::Submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
    // Every idle worker may already be woken for an earlier job: start one
    // when the queue outgrows them.
    if (jobs_.size() > idle_ && threads_.size() < max_threads_) {
      threads_.emplace_back([this] { Run(); });
    }
  }
  cv_.notify_one();
}

uint32_t SyncWorkers::threads() {
  std::lock_guard lock(mu_);
  return static_cast<uint32_t>(threads_.size());
}

void SyncWorkers::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace shardfilter::server
