#include "shardfilter/engine/internal/filter_log.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "shardfilter/filters/internal/thread_stripe.h"
#include "shardfilter/persistence/internal/boot_id.h"
#include "shardfilter/persistence/internal/store.h"

namespace shardfilter::internal {

using persistence::Segment;
using persistence::SegmentHeader;

uint64_t NewJournalEpoch() {
  std::random_device rd;
  uint64_t e = 0;
  while (e == 0) {
    e = (uint64_t{rd()} << 32) ^ rd() ^
        static_cast<uint64_t>(
            std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return e;
}

void RemoveStaleJournals(persistence::Env& env, const std::string& store_path,
                         const std::set<uint64_t>& keep) {
  const std::string dir = persistence::FilterJournalDir(store_path);
  auto names = env.Children(dir);
  if (!names.ok()) return;
  for (const std::string& n : *names) {
    if (n.size() != 16 ||
        n.find_first_not_of("0123456789abcdef") != std::string::npos) {
      continue;
    }
    const uint64_t epoch = std::stoull(n, nullptr, 16);
    if (keep.count(epoch) == 0) (void)env.RemoveTree(dir + "/" + n);
  }
}

uint64_t MappedSegmentBytes(uint64_t shard_table_bytes, uint32_t shards) {
  // L6: half the shard's table, 32 MiB per filter at most, 1 to 8 MiB (a
  // segment per 40,000 to 350,000 single-key ops of a shard: smaller ones
  // are made so often that writers measurably wait for them).
  uint64_t per = std::min<uint64_t>((uint64_t{32} << 20) / std::max(shards, 1u),
                                    shard_table_bytes / 2);
  per = std::clamp<uint64_t>(per, uint64_t{1} << 20, uint64_t{8} << 20);
  return per / 4096 * 4096;
}

FilterLog::FilterLog(std::string name, uint32_t shards)
    : name_(std::move(name)),
      shard_count_(shards),
      shards_(std::make_unique<LogShard[]>(shards)) {
  segment_bytes_ = MappedSegmentBytes(uint64_t{8} << 20, shards);
  if (uint64_t t = persistence::SegmentBytesForTesting()) segment_bytes_ = t;
}

FilterLog::~FilterLog() {
  {
    std::lock_guard lock(spare_mu_);
    spare_stop_ = true;
  }
  spare_cv_.notify_all();
  if (spare_thread_.joinable()) spare_thread_.join();
  for (uint32_t i = 0; i < shard_count_; ++i) {
    // Made ahead and never used: no records, ours to remove.
    if (shards_[i].spare != nullptr) Unlink(*shards_[i].spare);
  }
  for (uint32_t k = 0; threads_ != nullptr && k < kOwnedStripes; ++k) {
    if (threads_[k].spare != nullptr) Unlink(*threads_[k].spare);
  }
}

void FilterLog::Unlink(const Segment& s) {
  // Errors are left: a file that stays is removed with its epoch, or
  // retired again by the next checkpoint's look (its records are dead).
  if (env_ != nullptr) (void)env_->Remove(s.path());
}

void FilterLog::Configure(JournalSink* sink, bool mmap, bool sync,
                          uint64_t shard_table_bytes, bool thread_segments) {
  sink_ = sink;
  store_path_ = sink->store()->path();
  env_ = sink->store()->log_env();
  mmap_ = mmap;
  sync_ = sync;
  segment_bytes_ = MappedSegmentBytes(shard_table_bytes, shard_count_);
  // L6, L7: a writer's segment is an eighth of the whole table, 1 to 8
  // MiB (65,536 to 524,288 adds), so that a writer thread's active and
  // spare segments cost about a quarter of the table or 2 MiB.
  thread_segment_bytes_ =
      std::clamp<uint64_t>(shard_table_bytes * shard_count_ / 8,
                           uint64_t{1} << 20, uint64_t{8} << 20) /
      4096 * 4096;
  if (uint64_t t = persistence::SegmentBytesForTesting()) {
    segment_bytes_ = t;
    thread_segment_bytes_ = t;
  }
  if (thread_segments && mmap && !sync && threads_ == nullptr) {
    threads_ = std::make_unique<ThreadLog[]>(kOwnedStripes);
  }
}

void FilterLog::AdoptSegment(uint32_t shard, std::shared_ptr<Segment> s) {
  LogShard& L = shards_[shard];
  if (L.next_number.load() <= s->header().number) {
    L.next_number.store(s->header().number + 1);
  }
  std::lock_guard lock(L.mu);
  L.segments.push_back(Listed{L.next_ordinal++, std::move(s)});
  L.unsynced_from = L.next_ordinal;  // loaded ones are not ours to sync
}

void FilterLog::SetRecovered(uint32_t shard, uint64_t last_seq) {
  LogShard& L = shards_[shard];
  L.copied.store(last_seq, std::memory_order_relaxed);
  std::lock_guard lock(L.mu);
  L.synced = last_seq;
}

Status FilterLog::EnsureEpoch() {
  std::lock_guard lock(epoch_mu_);
  if (epoch_.load(std::memory_order_relaxed) != 0) return Status::OK();
  SF_ASSIGN_OR_RETURN(uint64_t e, sink_->JournalEpoch(name_));
  if (e == 0) {
    e = NewJournalEpoch();
    SF_RETURN_IF_ERROR(sink_->PutJournalEpoch(name_, e));
  }
  epoch_.store(e, std::memory_order_release);
  return Status::OK();
}

Result<std::shared_ptr<Segment>> FilterLog::MakeSegment(uint32_t slot,
                                                        uint64_t bytes) {
  SegmentHeader h;
  h.epoch = epoch();
  h.file_bytes = bytes;
  h.boot_id = persistence::CurrentBootId().substr(0, 64);
  h.name = name_;
  if (slot >= shard_count_) {  // L7: a thread segment
    h.version = persistence::kThreadSegmentVersion;
    h.shard = slot - shard_count_;  // the stripe
    h.number = thread_next_number_.fetch_add(1);
    return Segment::Create(
        *env_,
        persistence::ThreadSegmentPath(store_path_, h.epoch, h.shard, h.number),
        h, /*prefault_write=*/true);
  }
  h.shard = slot;
  h.number = shards_[slot].next_number.fetch_add(1);
  return Segment::Create(
      *env_, persistence::SegmentPath(store_path_, h.epoch, slot, h.number), h,
      /*prefault_write=*/!sync_);
}

std::shared_ptr<Segment>& FilterLog::SpareOf(uint32_t slot) {
  return slot < shard_count_ ? shards_[slot].spare
                             : threads_[slot - shard_count_].spare;
}

bool& FilterLog::SpareWanted(uint32_t slot) {
  return slot < shard_count_ ? shards_[slot].spare_wanted
                             : threads_[slot - shard_count_].spare_wanted;
}

namespace {
std::atomic<bool> thread_hook_set{false};
std::mutex& ThreadHookMu() {
  static std::mutex mu;
  return mu;
}
std::function<void()>& ThreadHook() {
  static std::function<void()> fn;
  return fn;
}
}  // namespace

void SetThreadSegmentActivatedForTesting(std::function<void()> fn) {
  std::lock_guard lock(ThreadHookMu());
  thread_hook_set.store(fn != nullptr);
  ThreadHook() = std::move(fn);
}

Result<char*> FilterLog::ThreadSlotSlow(uint32_t stripe) {
  SF_RETURN_IF_ERROR(failure());
  SF_RETURN_IF_ERROR(EnsureEpoch());
  ThreadLog& t = threads_[stripe];
  const uint64_t gen = thread_gen_.load(std::memory_order_relaxed);
  const uint32_t slot = shard_count_ + stripe;
  std::shared_ptr<Segment> seg;
  {
    std::lock_guard lock(spare_mu_);
    seg = std::move(t.spare);
  }
  if (seg == nullptr) {
    SF_ASSIGN_OR_RETURN(seg, MakeSegment(slot, thread_segment_bytes_));
  }
  seg->max_seq.store(gen, std::memory_order_relaxed);  // T2: its generation
  {
    std::lock_guard lock(thread_mu_);
    thread_segments_.push_back(seg);
  }
  t.gen = gen;
  t.activated.store(gen, std::memory_order_relaxed);
  t.next = seg->data() + persistence::kSegmentHeaderBytes;
  t.end = t.next + (seg->size() - persistence::kSegmentHeaderBytes) /
                       persistence::kThreadRecordBytes *
                       persistence::kThreadRecordBytes;
  t.active = std::move(seg);
  WantSpare(slot);
  if (thread_hook_set.load(std::memory_order_relaxed)) [[unlikely]] {
    std::function<void()> hook;
    {
      std::lock_guard lock(ThreadHookMu());
      hook = ThreadHook();
    }
    if (hook) hook();
  }
  return t.next;
}

void FilterLog::AdoptThreadSegment(std::shared_ptr<Segment> s) {
  uint64_t n = thread_next_number_.load(std::memory_order_relaxed);
  if (n <= s->header().number) {
    thread_next_number_.store(s->header().number + 1,
                              std::memory_order_relaxed);
  }
  s->max_seq.store(0, std::memory_order_relaxed);  // T2: recovered
  std::lock_guard lock(thread_mu_);
  thread_segments_.push_back(std::move(s));
}

uint64_t FilterLog::BeginThreadGeneration() {
  {
    // A record is written only to a registered segment of the generation
    // its writer read (a writer whose segment a checkpoint retired
    // registers a new one first), so with none registered there is
    // nothing to cover, and an idle filter's checkpoint skips the locks of
    // its clean shards. A segment registered after this look is retired by
    // a later checkpoint.
    std::lock_guard lock(thread_mu_);
    if (thread_segments_.empty()) return 0;
  }
  // Seq_cst: before every shard lock the checkpoint takes next (T2).
  return thread_gen_.fetch_add(1);
}

void FilterLog::RetireThreadSegments(uint64_t g) {
  std::lock_guard lock(thread_mu_);
  std::vector<std::shared_ptr<Segment>> keep;
  for (auto& seg : thread_segments_) {
    // T2: every record of it is in the committed checkpoint. Its writer,
    // if it is still a stripe's active segment, writes nothing more to
    // it: its next add reads a later generation and switches.
    if (seg->max_seq.load(std::memory_order_relaxed) <= g) {
      Unlink(*seg);
      // Still a stripe's active segment: its writer may stay idle, and
      // keep the unlinked file mapped, for as long as the process lives.
      if (seg.use_count() > 1) seg->ReleaseSpace();
      continue;
    }
    keep.push_back(std::move(seg));
  }
  thread_segments_ = std::move(keep);
}

void FilterLog::ReleaseIdleSpares(uint64_t covered,
                                  std::span<const uint32_t> written) {
  std::vector<bool> busy(shard_count_, false);
  for (uint32_t i : written) {
    if (i < shard_count_) busy[i] = true;
  }
  std::vector<std::shared_ptr<Segment>> idle;
  {
    std::lock_guard lock(spare_mu_);
    for (uint32_t i = 0; i < shard_count_; ++i) {
      if (!busy[i] && shards_[i].spare != nullptr) {
        idle.push_back(std::move(shards_[i].spare));
      }
    }
    for (uint32_t k = 0; threads_ != nullptr && k < kOwnedStripes; ++k) {
      ThreadLog& t = threads_[k];
      if (t.spare != nullptr &&
          (covered == 0 ||
           t.activated.load(std::memory_order_relaxed) < covered)) {
        idle.push_back(std::move(t.spare));
      }
    }
  }
  // No records (a spare is never written before it is taken, under
  // spare_mu_): nothing to keep. The last reference unmaps it.
  for (const auto& seg : idle) Unlink(*seg);
}

Status FilterLog::EnsureSpace(uint32_t shard, size_t hashes) {
  LogShard& L = shards_[shard];
  const uint64_t need = persistence::FilterJournalRecordBytes(hashes);
  if (L.active != nullptr && L.tail + need <= L.active->size()) {
    return Status::OK();
  }
  SF_RETURN_IF_ERROR(failure());
  SF_RETURN_IF_ERROR(EnsureEpoch());
  const uint64_t bytes = std::max<uint64_t>(
      segment_bytes_,
      (persistence::kSegmentHeaderBytes + need + 4095) / 4096 * 4096);
  std::shared_ptr<Segment> seg;
  {
    std::lock_guard lock(spare_mu_);
    if (L.spare != nullptr && L.spare->size() >= bytes)
      seg = std::move(L.spare);
  }
  if (seg == nullptr) {
    SF_ASSIGN_OR_RETURN(seg, MakeSegment(shard, bytes));
  }
  if (L.active != nullptr) {
    // Final before the next segment makes it not the newest (Retire).
    L.active->max_seq.store(L.active_max_seq, std::memory_order_relaxed);
  }
  {
    std::lock_guard lock(L.mu);
    L.segments.push_back(Listed{L.next_ordinal++, seg});
  }
  // J2: the first record written here is the segment's base.
  L.active = std::move(seg);
  L.tail = persistence::kSegmentHeaderBytes;
  WantSpare(shard);
  return Status::OK();
}

void FilterLog::WantSpare(uint32_t slot) {
  std::lock_guard lock(spare_mu_);
  if (spare_stop_) return;
  SpareWanted(slot) = true;
  if (!spare_running_) {
    // L6: an idle loop returned (under spare_mu_, which we hold now, so
    // all that is left of it is its return): join it, start another.
    if (spare_thread_.joinable()) spare_thread_.join();
    spare_running_ = true;
    spare_thread_ = std::thread([this] { SpareLoop(); });
  }
  spare_cv_.notify_one();
}

void FilterLog::SpareLoop() {
  std::unique_lock lock(spare_mu_);
  for (;;) {
    // Shards, then writer stripes (L7).
    const uint32_t slots =
        shard_count_ + (threads_ != nullptr ? kOwnedStripes : 0);
    uint32_t want = slots;
    const bool woken = spare_cv_.wait_for(lock, std::chrono::seconds(1), [&] {
      if (spare_stop_) return true;
      for (uint32_t i = 0; i < slots; ++i) {
        if (SpareWanted(i) && SpareOf(i) == nullptr) {
          want = i;
          return true;
        }
      }
      return false;
    });
    if (spare_stop_ || !woken) {
      spare_running_ = false;  // L6: idle for a second (or stopping)
      return;
    }
    SpareWanted(want) = false;
    lock.unlock();
    // A failure here only means the writer makes the segment itself.
    auto seg = MakeSegment(
        want, want < shard_count_ ? segment_bytes_ : thread_segment_bytes_);
    lock.lock();
    if (seg.ok()) SpareOf(want) = std::move(*seg);
  }
}

char* FilterLog::Reserve(uint32_t shard, uint64_t seq, size_t hashes) {
  LogShard& L = shards_[shard];
  char* p = L.active->data() + L.tail;
  // The records after this one go to lines no one has touched since the
  // segment was mapped: ask for them now, so the stores of a later add do
  // not hold its locked instructions (which drain the store buffer) for a
  // miss. Past the segment's end the hint is dropped (no fault).
  __builtin_prefetch(p + 256, 1);
  // J1, J4: a one-key record after the segment's first is short.
  L.tail += persistence::ReserveRecord(
      p, seq, hashes, L.tail == persistence::kSegmentHeaderBytes);
  L.active_max_seq = seq;
  return p;
}

Status FilterLog::Complete(uint32_t shard, uint64_t first_seq,
                           uint64_t last_seq) {
  LogShard& L = shards_[shard];
  // L2: wait for every lower seq, then move the watermark past ours.
  for (int spins = 0;; ++spins) {
    const uint64_t copied = L.copied.load(std::memory_order_acquire);
    if (copied == first_seq - 1) break;
    if (copied >= last_seq) return Status::OK();  // L5: in a checkpoint
    if (failed()) return failure();
    if (spins > 64) std::this_thread::yield();
  }
  L.copied.store(last_seq, std::memory_order_release);
  if (!sync_ || !mmap_) return Status::OK();
  return Sync(L, last_seq);
}

Status FilterLog::Sync(LogShard& L, uint64_t last_seq) {
  std::unique_lock lock(L.mu);
  while (L.synced < last_seq) {  // L3
    if (failed()) return failure();
    if (L.syncing) {
      L.cv.wait(lock);
      continue;
    }
    L.syncing = true;
    const uint64_t target = L.copied.load(std::memory_order_acquire);
    // Every record <= target is in a listed segment (its writer listed the
    // segment before it reserved the slot, and moved `copied` after).
    std::vector<std::shared_ptr<Segment>> todo;
    uint64_t newest = L.unsynced_from;
    for (const Listed& l : L.segments) {
      if (l.ordinal < L.unsynced_from) continue;
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
    L.syncing = false;
    if (!s.ok()) {
      Fail(s.WithContext("syncing the journal of " + name_));
      L.cv.notify_all();
      return failure();
    }
    // The newest segment synced stays to sync (more records land in it);
    // the older ones are complete. Segments listed since are not synced:
    // by ordinal, whatever Retire() removed from the list meanwhile.
    L.unsynced_from = std::max(L.unsynced_from, newest);
    L.synced = std::max(L.synced, target);
    L.cv.notify_all();
  }
  return Status::OK();
}

Status FilterLog::failure() const {
  if (!failed()) return Status::OK();
  std::lock_guard lock(fail_mu_);
  return fail_status_;
}

void FilterLog::Fail(const Status& cause) {
  std::lock_guard lock(fail_mu_);
  if (failed_.load(std::memory_order_relaxed)) return;
  fail_status_ = Status::IOError(
      "writes to " + name_ +
      " are stopped until a checkpoint of it succeeds (or it is reopened): " +
      cause.ToString());
  failed_.store(true, std::memory_order_release);
}

void FilterLog::Heal(uint32_t shard, uint64_t seq) {
  LogShard& L = shards_[shard];
  std::lock_guard lock(L.mu);
  if (L.copied.load(std::memory_order_relaxed) < seq) {
    L.copied.store(seq, std::memory_order_release);
  }
  L.synced = std::max(L.synced, seq);
  L.cv.notify_all();
}

void FilterLog::ClearFailure() {
  std::lock_guard lock(fail_mu_);
  fail_status_ = Status::OK();
  failed_.store(false, std::memory_order_release);
}

void FilterLog::Retire(uint32_t shard, uint64_t seq) {
  LogShard& L = shards_[shard];
  std::lock_guard lock(L.mu);
  // The newest segment may be the active one (written under the
  // reservation, which we do not hold): it stays. A syncer outside the
  // lock names segments by ordinal (L3), so removing any is safe for it.
  std::vector<Listed> keep;
  for (size_t i = 0; i < L.segments.size(); ++i) {
    const Listed& l = L.segments[i];
    const bool newest = i + 1 == L.segments.size();
    if (!newest && l.seg->max_seq.load(std::memory_order_relaxed) <= seq) {
      Unlink(*l.seg);  // dead: the checkpoint covers it
      continue;
    }
    keep.push_back(l);
  }
  L.segments = std::move(keep);
}

}  // namespace shardfilter::internal
