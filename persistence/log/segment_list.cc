// SegmentList and WriteStop (log/segment_list.h).
#include "shardfilter/persistence/log/segment_list.h"

#include <algorithm>
#include <utility>

namespace shardfilter::persistence {

Status WriteStop::status() const {
  if (!stopped()) return Status::OK();
  std::lock_guard lock(mu_);
  return status_;
}

void WriteStop::Stop(std::string_view name, const Status& cause) {
  std::lock_guard lock(mu_);
  if (stopped_.load(std::memory_order_relaxed)) return;
  status_ = Status::IOError(
      "writes to " + std::string(name) +
      " are stopped until a checkpoint of it succeeds (or it is reopened): " +
      cause.ToString());
  stopped_.store(true, std::memory_order_release);
}

void WriteStop::Clear() {
  std::lock_guard lock(mu_);
  status_ = Status::OK();
  stopped_.store(false, std::memory_order_release);
}

void SegmentList::Add(std::shared_ptr<Segment> s) {
  std::lock_guard lock(mu_);
  listed_.push_back(Listed{next_ordinal_++, std::move(s)});
}

void SegmentList::Adopt(std::shared_ptr<Segment> s) {
  std::lock_guard lock(mu_);
  listed_.push_back(Listed{next_ordinal_++, std::move(s)});
  unsynced_from_ = next_ordinal_;  // not ours to sync
}

bool SegmentList::empty() const {
  std::lock_guard lock(mu_);
  return listed_.empty();
}

Status SegmentList::SyncThrough(uint64_t last_seq,
                                const std::atomic<uint64_t>& copied,
                                WriteStop& stop, std::string_view name) {
  std::unique_lock lock(mu_);
  while (synced_ < last_seq) {  // C2
    if (stop.stopped()) return stop.status();
    if (syncing_) {
      cv_.wait(lock);
      continue;
    }
    syncing_ = true;
    const uint64_t target = copied.load(std::memory_order_acquire);
    // Every record <= target is in a listed segment (its writer listed the
    // segment before it reserved the slot, and moved `copied` after).
    std::vector<std::shared_ptr<Segment>> todo;
    uint64_t newest = unsynced_from_;
    for (const Listed& l : listed_) {
      if (l.ordinal < unsynced_from_) continue;
      todo.push_back(l.seg);
      newest = l.ordinal;
    }
    lock.unlock();
    Status s;
    for (const auto& seg : todo) {
      s = seg->Sync();
      if (!s.ok()) break;
    }
    lock.lock();
    syncing_ = false;
    if (!s.ok()) {
      stop.Stop(name, s.WithContext("syncing the journal of " +  // C4
                                    std::string(name)));
      cv_.notify_all();
      return stop.status();
    }
    // C1: by ordinal, whatever a retire removed from the list meanwhile.
    unsynced_from_ = std::max(unsynced_from_, newest);
    synced_ = std::max(synced_, target);
    cv_.notify_all();
  }
  return Status::OK();
}

void SegmentList::MarkSynced(uint64_t seq, std::atomic<uint64_t>* copied) {
  std::lock_guard lock(mu_);
  if (copied != nullptr && copied->load(std::memory_order_relaxed) < seq) {
    copied->store(seq, std::memory_order_release);
  }
  synced_ = std::max(synced_, seq);
  cv_.notify_all();
}

void SegmentList::RetireThrough(uint64_t seq, Env& env) {
  std::lock_guard lock(mu_);
  std::vector<Listed> keep;
  for (size_t i = 0; i < listed_.size(); ++i) {
    const Listed& l = listed_[i];
    const bool newest = i + 1 == listed_.size();
    if (!newest && l.seg->max_seq.load(std::memory_order_relaxed) <= seq) {
      // Dead: the checkpoint holds it. A file that stays (an error here)
      // is retired again by a later checkpoint's look, or goes with its
      // epoch.
      (void)env.Remove(l.seg->path());
      continue;
    }
    keep.push_back(l);
  }
  listed_ = std::move(keep);
}

void SegmentList::RetireGenerations(uint64_t g, Env& env) {
  std::lock_guard lock(mu_);
  std::vector<Listed> keep;
  for (Listed& l : listed_) {
    if (l.seg->max_seq.load(std::memory_order_relaxed) <= g) {
      (void)env.Remove(l.seg->path());
      // Still a writer's active segment: its writer may stay idle, and
      // keep the removed file mapped, for as long as the process lives.
      if (l.seg.use_count() > 1) l.seg->ReleaseSpace();
      continue;
    }
    keep.push_back(std::move(l));
  }
  listed_ = std::move(keep);
}

}  // namespace shardfilter::persistence
