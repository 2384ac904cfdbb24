// SpareSegments (log/spares.h).
#include "shardfilter/persistence/log/spares.h"

#include <chrono>
#include <utility>

namespace shardfilter::persistence {

SpareSegments::SpareSegments(std::shared_ptr<Env> env, uint32_t slots,
                             MakeFn make)
    : env_(std::move(env)),
      make_(std::move(make)),
      spare_(slots),
      wanted_(slots, 0) {}

SpareSegments::~SpareSegments() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (const auto& seg : spare_) {
    if (seg != nullptr) (void)env_->Remove(seg->path());  // R1: no records
  }
}

std::shared_ptr<Segment> SpareSegments::Take(uint32_t slot,
                                             uint64_t min_bytes) {
  std::lock_guard lock(mu_);
  std::shared_ptr<Segment>& s = spare_[slot];
  if (s == nullptr || s->size() < min_bytes) return nullptr;
  return std::move(s);
}

void SpareSegments::Want(uint32_t slot) {
  std::lock_guard lock(mu_);
  if (stop_) return;
  wanted_[slot] = 1;
  if (!running_) {
    // R2: an idle loop returned (under mu_, which we hold now, so all that
    // is left of it is its return): join it, start another.
    if (thread_.joinable()) thread_.join();
    running_ = true;
    thread_ = std::thread([this] { Loop(); });
  }
  cv_.notify_one();
}

void SpareSegments::Release(const std::function<bool(uint32_t slot)>& idle) {
  std::vector<std::shared_ptr<Segment>> gone;
  {
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < spare_.size(); ++i) {
      if (spare_[i] != nullptr && idle(i)) gone.push_back(std::move(spare_[i]));
    }
  }
  // R1: no records, nothing to keep. The last reference unmaps it.
  for (const auto& seg : gone) (void)env_->Remove(seg->path());
}

void SpareSegments::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    const uint32_t slots = static_cast<uint32_t>(spare_.size());
    uint32_t want = slots;
    const bool woken = cv_.wait_for(lock, std::chrono::seconds(1), [&] {
      if (stop_) return true;
      for (uint32_t i = 0; i < slots; ++i) {
        if (wanted_[i] != 0 && spare_[i] == nullptr) {
          want = i;
          return true;
        }
      }
      return false;
    });
    if (stop_ || !woken) {
      running_ = false;  // R2: idle for a second (or stopping)
      return;
    }
    wanted_[want] = 0;
    lock.unlock();
    auto seg = make_(want);
    lock.lock();
    if (seg.ok()) spare_[want] = std::move(*seg);
  }
}

}  // namespace shardfilter::persistence
