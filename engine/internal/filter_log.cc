// FilterLog (engine/internal/filter_log.h): a ShardedFilter's journal over
// the journal component's segments (persistence/log/).
#include "shardfilter/engine/internal/filter_log.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "shardfilter/filters/detail/thread_stripe.h"
#include "shardfilter/persistence/log/paths.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::internal {

using persistence::Segment;
using persistence::SegmentHeader;

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

// The spares (and their thread) go first: made ahead, never written, they
// are removed (log/spares.h R1).
FilterLog::~FilterLog() { spares_.reset(); }

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
  if (mmap && spares_ == nullptr) {
    // Slots: the shards, then the writer stripes (L7).
    spares_ = std::make_unique<persistence::SpareSegments>(
        env_, shard_count_ + kOwnedStripes, [this](uint32_t slot) {
          return MakeSegment(slot, slot < shard_count_ ? segment_bytes_
                                                       : thread_segment_bytes_);
        });
  }
}

void FilterLog::AdoptSegment(uint32_t shard, std::shared_ptr<Segment> s) {
  LogShard& L = shards_[shard];
  if (L.next_number.load() <= s->header().number) {
    L.next_number.store(s->header().number + 1);
  }
  L.segments.Adopt(std::move(s));  // loaded ones are not ours to sync
}

void FilterLog::SetRecovered(uint32_t shard, uint64_t last_seq) {
  LogShard& L = shards_[shard];
  L.copied.store(last_seq, std::memory_order_relaxed);
  L.segments.MarkSynced(last_seq);
}

Status FilterLog::EnsureEpoch() {
  std::lock_guard lock(epoch_mu_);
  if (epoch_.load(std::memory_order_relaxed) != 0) return Status::OK();
  SF_ASSIGN_OR_RETURN(uint64_t e, sink_->JournalEpoch(name_));
  if (e == 0) {
    e = persistence::NewJournalEpoch();
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
  h.boot_id = persistence::BootIdToRecord();
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

Result<std::shared_ptr<Segment>> FilterLog::NextSegment(uint32_t slot,
                                                        uint64_t bytes) {
  std::shared_ptr<Segment> seg = spares_->Take(slot, bytes);
  if (seg == nullptr) {
    SF_ASSIGN_OR_RETURN(seg, MakeSegment(slot, bytes));
  }
  spares_->Want(slot);
  return seg;
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
  SF_ASSIGN_OR_RETURN(
      std::shared_ptr<Segment> seg,
      NextSegment(shard_count_ + stripe, thread_segment_bytes_));
  seg->max_seq.store(gen, std::memory_order_relaxed);  // T2: its generation
  thread_segments_.Add(seg);
  t.gen = gen;
  t.activated.store(gen, std::memory_order_relaxed);
  t.next = seg->data() + persistence::kSegmentHeaderBytes;
  t.end = t.next + (seg->size() - persistence::kSegmentHeaderBytes) /
                       persistence::kThreadRecordBytes *
                       persistence::kThreadRecordBytes;
  t.active = std::move(seg);
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
  thread_segments_.Adopt(std::move(s));
}

uint64_t FilterLog::BeginThreadGeneration() {
  // A record is written only to a registered segment of the generation
  // its writer read (a writer whose segment a checkpoint retired
  // registers a new one first), so with none registered there is nothing
  // to cover, and an idle filter's checkpoint skips the locks of its clean
  // shards. A segment registered after this look is retired by a later
  // checkpoint.
  if (thread_segments_.empty()) return 0;
  // Seq_cst: before every shard lock the checkpoint takes next (T2).
  return thread_gen_.fetch_add(1);
}

void FilterLog::RetireThreadSegments(uint64_t g) {
  // T2: every record of them is in the committed checkpoint. A writer whose
  // active segment is one of them writes nothing more to it: its next add
  // reads a later generation and switches.
  if (env_ != nullptr) thread_segments_.RetireGenerations(g, *env_);
}

void FilterLog::ReleaseIdleSpares(uint64_t covered,
                                  std::span<const uint32_t> written) {
  if (spares_ == nullptr) return;
  std::vector<bool> busy(shard_count_, false);
  for (uint32_t i : written) {
    if (i < shard_count_) busy[i] = true;
  }
  spares_->Release([&](uint32_t slot) {
    if (slot < shard_count_) return !busy[slot];
    if (threads_ == nullptr) return true;
    const ThreadLog& t = threads_[slot - shard_count_];
    return covered == 0 ||
           t.activated.load(std::memory_order_relaxed) < covered;
  });
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
  SF_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg, NextSegment(shard, bytes));
  if (L.active != nullptr) {
    // Final before the next segment makes it not the newest (Retire).
    L.active->max_seq.store(L.active_max_seq, std::memory_order_relaxed);
  }
  L.segments.Add(seg);  // before any slot of it is reserved (L3)
  // J2: the first record written here is the segment's base.
  L.active = std::move(seg);
  L.tail = persistence::kSegmentHeaderBytes;
  return Status::OK();
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
  return L.segments.SyncThrough(last_seq, L.copied, stop_, name_);  // L3
}

void FilterLog::Heal(uint32_t shard, uint64_t seq) {
  LogShard& L = shards_[shard];
  L.segments.MarkSynced(seq, &L.copied);  // L5
}

void FilterLog::Retire(uint32_t shard, uint64_t seq) {
  if (env_ != nullptr) shards_[shard].segments.RetireThrough(seq, *env_);
}

}  // namespace shardfilter::internal
