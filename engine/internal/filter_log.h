// FilterLog: the run-time side of one ShardedFilter's journal, a user of
// the journal component (persistence/log/, docs/design.md "The journal
// component"): per shard, the reservation of seqs and record slots (L1)
// and the acknowledgement watermark (L2) over the component's segments
// (log/segment.h, format.h sections 1 and 2), their group commit and
// retirement (log/segment_list.h C1-C4) and spares made ahead
// (log/spares.h); per writer stripe, the thread segments (L7). For a
// filter that journals in RocksDB's journal family (retained hashes, a
// small table) only L2 and L4 apply.
//
// Invariants (the code cites them):
//  L1. Reservation: a shard's seqs and record slots are handed out by one
//      reserver at a time (the shard's order_mu for counting and cuckoo,
//      which also covers the apply; `reserve_mu` for Bloom), seq and slot
//      together, so slot order is seq order (log/format.h J1). Space is
//      reserved BEFORE the op is applied (EnsureSpace / a Bloom add's slot),
//      so the only failure after an op changed memory is a sync I/O error.
//  L2. Watermark: `copied` = s means every op of the shard with seq <= s
//      has its record committed (or, on the RocksDB path, its WriteBatch
//      written). Only the writer of seq s moves it, from s - 1 to its last
//      seq: so it moves in seq order, and an op is acknowledged only once
//      every lower seq of its shard is durable. A kill therefore leaves
//      unacknowledged ops only above the first missing seq, and replay,
//      which applies a shard's records in seq order and stops at the first
//      gap, restores every acknowledged op and no op out of order. Writers
//      commit all their records before waiting, and a batch waits shard by
//      shard in ascending order, so waits never cycle.
//  L3. Group commit (sync): a shard's SegmentList syncs its segments by
//      log/segment_list.h C1 and C2, reading L2's watermark as what the
//      records <= it are in: concurrent writers share one fdatasync.
//  L4. Never undo: an op that changed memory and then failed to become
//      durable stops the filter (log/segment_list.h C4, WriteStop): every
//      later mutation fails with IOError naming the cause, and the writers
//      whose ops were not acknowledged un-commit their records, so that a
//      reload (reopen) from checkpoint + journal recovers exactly the
//      acknowledged ops. Such an op's outcome
//      is unknown to its caller (as after a timeout): it may or may not
//      survive. On the memory-mapped path space is reserved first (L1), so a
//      full disk fails the op before it changes anything and does not stop
//      the filter; only a failed sync, or a failed RocksDB write of a
//      filter that retains hashes, does.
//  L5. Healing: a checkpoint of a stopped filter writes every shard (each
//      under its exclusive lock, S2, reading last_seq) and, once that
//      commit is durable, raises each shard's `copied` and `synced` to the
//      checkpoint's seq and clears the stop. No seq is handed out between
//      the shard's snapshot and the clear: every mutation checks the stop
//      under the shard's shared lock before it takes one. So the next op
//      of the shard is checkpoint seq + 1, its wait (L2) ends at once, and
//      the records left below the checkpoint (un-committed or never
//      synced) are dead to replay. Ops still waiting with seqs the
//      checkpoint covers are acknowledged: their effect is in it.
//  L6. Footprint: a filter maps segments only when its table is at least
//      DatabaseOptions::mapped_journal_min_bytes (1 MiB); a smaller one
//      journals in RocksDB's journal family (one shared WAL), so that many
//      small filters (a server's per-user keys) cost no file descriptor,
//      mapping, page cache or thread each: the process's descriptor limit
//      and map count (vm.max_map_count) bound how many segments can exist.
//      A mapped shard's segments are half its table, 1 to 8 MiB and 32 MiB
//      per filter at most, so that the active one and the spare together
//      cost about the table (or 2 MiB). Spares (log/spares.h R1, R2): the
//      spare thread exits once no shard has wanted a spare for a second; a
//      slot idle through a whole checkpoint interval gives its spare back
//      at the checkpoint's end (ReleaseIdleSpares), and makes its next
//      segment itself if it writes again: an idle filter holds its active
//      segments only.
//
//  L7. Thread segments (persistence/log/format.h T1-T3): a
//      Bloom filter of durability journal on the memory-mapped path
//      journals a single-key add of a thread that owns a counter stripe
//      (filters/detail/thread_stripe.h) in that stripe's own segment, not
//      its shard's: no seq, no reservation lock, no watermark, so two
//      writers share no line per op (docs/performance.md, "Two threads").
//      Space before the apply (ThreadSlot, L1's rule), the record after it,
//      then the ack. Every other add (a thread without a stripe, a batch,
//      counting and cuckoo ops, durability sync, whose group commit is per
//      shard) keeps the shard's segments; replay applies both (adds
//      commute). A checkpoint retires thread segments by generation (T2:
//      BeginThreadGeneration before it looks at any shard, every shard's
//      exclusive lock taken, RetireThreadSegments once it committed). A
//      retired segment that is still a stripe's active one stays mapped
//      until its writer's next add, which an idle writer may never make:
//      retirement frees its blocks and page cache at once
//      (Segment::ReleaseSpace), so it costs a mapping and a descriptor,
//      not disk. Footprint: each stripe that has written since the last
//      checkpoint but one holds its active segment and a spare, an eighth
//      of the table each (1 to 8 MiB); a stripe idle longer holds neither
//      on disk (its retired segment's blocks freed, its spare removed:
//      ReleaseIdleSpares), so the threads that once wrote a filter (a
//      server's pool) do not each hold a spare of up to 8 MiB for as long
//      as it lives.
//  T2. Coverage by generation: a writer reads the log's generation under
//      its shard's lock and writes only to a segment of that generation. A
//      checkpoint raises the generation to g + 1, then takes every shard's
//      exclusive lock (writing each dirty one), so every record of a
//      generation <= g was applied before its shard was written. Once that
//      checkpoint committed, the segments of generations <= g are dead and
//      are removed (log/segment_list.h C3). (A checkpoint that finds no
//      thread segment registered skips all this: a writer registers a
//      segment of the generation it read before it writes a record there.)
//      Generations live in memory only: replaying a record the checkpoint
//      holds already changes nothing (adds are idempotent), so a kill
//      between the commit and the removal costs only the replay.
//
// Thread safety: as described per member; all public methods may be called
// concurrently.
#ifndef SHARDFILTER_ENGINE_INTERNAL_FILTER_LOG_H_
#define SHARDFILTER_ENGINE_INTERNAL_FILTER_LOG_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "shardfilter/engine/internal/journal_sink.h"
#include "shardfilter/filters/detail/spin.h"  // SpinLock (L1)
#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/log/env.h"
#include "shardfilter/persistence/log/format.h"
#include "shardfilter/persistence/log/segment.h"
#include "shardfilter/persistence/log/segment_list.h"
#include "shardfilter/persistence/log/spares.h"

namespace shardfilter::persistence {
class Store;
}

namespace shardfilter::internal {

// Hashes per journal record at most (a batch writes several records).
inline constexpr size_t kMaxRecordHashes = 16384;

// The segment size L6 gives a shard of a filter with `shards` shards.
uint64_t MappedSegmentBytes(uint64_t shard_table_bytes, uint32_t shards);

class FilterLog {
 public:
  FilterLog(std::string name, uint32_t shards);
  ~FilterLog();

  // Attach (before the filter is shared): `mmap` selects the segments
  // (else ops go to the RocksDB journal family and only L2 / L4 apply).
  // `shard_table_bytes`: one shard's table (link 0), which sizes the
  // segments (L6).
  // `thread_segments`: L7's (a Bloom filter, mmap and not sync).
  void Configure(JournalSink* sink, bool mmap, bool sync,
                 uint64_t shard_table_bytes, bool thread_segments = false);
  bool mmap() const { return mmap_; }

  // Recovery (before sharing): the filter's epoch (0: none yet), the
  // segments read for a shard with the highest seq replayed from each, and
  // the last seq recovered (the watermark's start).
  void SetEpoch(uint64_t epoch) { epoch_.store(epoch); }
  void AdoptSegment(uint32_t shard, std::shared_ptr<persistence::Segment> s);
  void SetRecovered(uint32_t shard, uint64_t last_seq);

  // --- The mutation path (L1); REQUIRES: the shard's reservation held ---
  SpinLock& reserve_mu(uint32_t shard) { return shards_[shard].reserve_mu; }
  // Makes room in the active segment for a record of `hashes` hashes
  // (creating the epoch, or switching to the next segment: the spare one a
  // background thread made ahead, else a new one).
  Status EnsureSpace(uint32_t shard, size_t hashes);
  // Writes the record's reservation for `seq` (J1; a one-key record after
  // the segment's first is short, J4) and returns its slot. REQUIRES:
  // EnsureSpace for at least this many hashes since the last Reserve.
  char* Reserve(uint32_t shard, uint64_t seq, size_t hashes);

  // --- After the records are committed (or written to RocksDB) ---
  // L2 then, under sync, L3. Non-OK: the op is not acknowledged (the filter
  // is stopped); the caller un-commits its slots (L4).
  Status Complete(uint32_t shard, uint64_t first_seq, uint64_t last_seq);

  // L4: OK unless the filter is stopped.
  Status failure() const {
    return stop_.stopped() ? stop_.status() : Status::OK();
  }
  bool failed() const { return stop_.stopped(); }
  void Fail(const Status& cause) { stop_.Stop(name_, cause); }
  // L5, after a checkpoint of the stopped filter committed: every op of
  // `shard` with seq <= `seq` is durable in it.
  void Heal(uint32_t shard, uint64_t seq);
  // L5, once every shard is healed: mutations are taken again.
  void ClearFailure() { stop_.Clear(); }

  // After a checkpoint covering `seq` committed: removes the shard's
  // segments (other than the active one) whose records are all <= seq
  // (log/segment_list.h C3).
  void Retire(uint32_t shard, uint64_t seq);

  // --- Thread segments (L7; log/format.h) ---
  // Whether single-key Bloom adds go to thread segments (set by Configure).
  bool thread_logged() const { return threads_ != nullptr; }
  // The slot of the stripe's next record, in a segment of the current
  // generation (T2), made or switched to when needed; the record is
  // written there by CommitThreadRecord, then ThreadCommitted. Errors
  // (a full disk) before anything changed. REQUIRES: the calling thread
  // owns `stripe` (< kOwnedStripes), thread_logged(), and holds the lock
  // (shared) of the shard it will name (T2).
  Result<char*> ThreadSlot(uint32_t stripe) {
    ThreadLog& t = threads_[stripe];
    // Relaxed: the shard lock orders this load after a checkpoint's raise
    // whose exclusive lock of that shard came before ours (T2).
    if (t.gen == thread_gen_.load(std::memory_order_relaxed) && t.next != t.end)
        [[likely]] {
      return t.next;
    }
    return ThreadSlotSlow(stripe);
  }
  void ThreadCommitted(uint32_t stripe) {
    threads_[stripe].next += persistence::kThreadRecordBytes;
  }
  // Recovery (before sharing): a thread segment that was read and
  // replayed (retired by the first checkpoint, T2).
  void AdoptThreadSegment(std::shared_ptr<persistence::Segment> s);
  // T2: a checkpoint's first step. Returns g: once the checkpoint (which
  // must look at every shard under its exclusive lock) committed, records
  // of generations <= g are in it. 0 when no thread segment is
  // registered (none made since the last retirement, none recovered):
  // nothing to retire, and no shard need be locked for it.
  uint64_t BeginThreadGeneration();
  // T2: removes the thread segments of generations <= g (C3).
  void RetireThreadSegments(uint64_t g);
  // L6, L7: a committed checkpoint's last step. Removes the spares (made
  // ahead, never written: ours to remove) of the slots idle through the
  // interval before it: every shard not in `written` (the shards this
  // checkpoint wrote: the others had no mutation since the last one), and
  // every writer stripe that activated no segment since the previous
  // checkpoint raised the generation to `covered` (BeginThreadGeneration's
  // result; 0, no thread segment registered since the last retirement,
  // means no stripe has added since). Such a slot makes its next segment
  // itself if it writes again (a file made, once, on that write).
  void ReleaseIdleSpares(uint64_t covered, std::span<const uint32_t> written);

  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // L2: every op of `shard` with seq <= this has its record committed
  // (tests wait on it to order a writer against a held sync).
  uint64_t watermark(uint32_t shard) const {
    return shards_[shard].copied.load(std::memory_order_acquire);
  }

 private:
  struct alignas(64) LogShard {
    // The first line holds what every op of the shard writes: two writer
    // threads spread over all shards, so each written line is a transfer
    // between their cores about half the time (shard.h's layout note).
    SpinLock reserve_mu;              // L1 (Bloom)
    std::atomic<uint64_t> copied{0};  // L2
    uint64_t tail = 0;                // L1: next slot offset
    // L1: the highest seq reserved in `active`; stored into its
    // Segment::max_seq when it stops being active (Retire reads only
    // segments that are not the newest), so an op writes no Segment line.
    uint64_t active_max_seq = 0;
    std::shared_ptr<persistence::Segment> active;  // L1
    std::atomic<uint64_t> next_number{1};
    // Its segments in activation order: L3's group commit, C3's retire.
    persistence::SegmentList segments;
  };

  // A writer stripe's thread segment state (L7). Written by the stripe's
  // owner only.
  struct alignas(64) ThreadLog {
    uint64_t gen = 0;  // the active segment's generation (T2)
    // `gen` for ReleaseIdleSpares, which reads it from the checkpoint's
    // thread (relaxed: the spares' lock orders taking the spare, and a
    // stale value only keeps or drops a spare a segment's making
    // replaces).
    std::atomic<uint64_t> activated{0};
    char* next = nullptr;  // the next record's slot in it
    char* end = nullptr;   // its end (records are 16 bytes, the area a
                           // multiple of 4096 after the header)
    std::shared_ptr<persistence::Segment> active;
  };

  Result<char*> ThreadSlotSlow(uint32_t stripe);
  Status EnsureEpoch();
  // `slot`: a shard, or shard_count_ + a stripe for a thread segment (the
  // spares' numbering too).
  Result<std::shared_ptr<persistence::Segment>> MakeSegment(uint32_t slot,
                                                            uint64_t bytes);
  // The slot's spare (made ahead), else a new segment of `bytes`.
  Result<std::shared_ptr<persistence::Segment>> NextSegment(uint32_t slot,
                                                            uint64_t bytes);

  const std::string name_;
  const uint32_t shard_count_;
  std::unique_ptr<LogShard[]> shards_;
  JournalSink* sink_ = nullptr;  // the Database's; outlives the log
  std::string store_path_;
  // The store's (persistence/log/env.h): every file operation.
  std::shared_ptr<persistence::Env> env_;
  bool mmap_ = false;
  bool sync_ = false;
  uint64_t segment_bytes_ = 0;
  std::mutex epoch_mu_;
  std::atomic<uint64_t> epoch_{0};  // set once, under epoch_mu_
  // Made ahead of use (L6; null until Configure chose segments).
  std::unique_ptr<persistence::SpareSegments> spares_;
  // L7 (null unless Configure chose thread segments): kOwnedStripes.
  std::unique_ptr<ThreadLog[]> threads_;
  uint64_t thread_segment_bytes_ = 0;
  // T2: the generation new records are written in; raised by checkpoints.
  std::atomic<uint64_t> thread_gen_{1};
  std::atomic<uint64_t> thread_next_number_{1};
  // Every thread segment not yet retired (made or recovered), each with
  // its generation in Segment::max_seq (0: recovered).
  persistence::SegmentList thread_segments_;
  persistence::WriteStop stop_;  // L4
};

// Tests: called by a writer each time it has made a thread segment its
// active one (L7: registered for retirement, the generation read), while
// it holds its shard's lock and before its add is applied; null: none.
void SetThreadSegmentActivatedForTesting(std::function<void()> fn);

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_FILTER_LOG_H_
