// ShardedFilter: the journalled single-key mutation paths. The order of
// steps is what engine/internal/filter_log.h L1-L4 and Shard S2/S3 need:
//
//   memory-mapped journal (filters that do not retain hashes):
//     reserve journal space, take the seq and the record slot together (L1:
//     counting / cuckoo under order_mu, which also covers the apply; Bloom
//     under the shard's reservation lock) -> compute the record's check
//     (PrepareCommit: while the table's line, prefetched before the shard
//     lock, is on its way) -> apply (a failed op's slot becomes a no op) ->
//     release order_mu -> copy the record, commit word last (J1) -> wait
//     until every lower seq of the shard is committed, move the watermark
//     (L2) -> sync: share an fdatasync (L3) -> acknowledge.
//   thread segments (L7: Bloom, durability journal, a thread with a stripe):
//     space in the stripe's segment -> the record's check -> apply ->
//     record (T1) -> acknowledge.
//   RocksDB journal family (filters that retain hashes: the retained
//     set is written in the same WriteBatch):
//     apply and take the seq (under order_mu for ordered types) -> write the
//     batch (outside order_mu) -> L2 -> acknowledge.
//
// Nothing is ever undone (L4): a failure after the apply stops the filter.
#include <mutex>

#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/journal_sink.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/detail/thread_stripe.h"
#include "shardfilter/persistence/log/paths.h"
#include "shardfilter/persistence/log/segment.h"

namespace shardfilter {

using internal::FilterLog;
using internal::Shard;
using persistence::JournalBatch;
using persistence::JournalOp;

namespace {

bool NeedsOrder(FilterType t) { return t != FilterType::kBloom; }

uint8_t OpByte(JournalOp op) { return static_cast<uint8_t>(op); }

}  // namespace

Result<AddOutcome> ShardedFilter::JournalledInsert(uint32_t index, Shard& s,
                                                   uint64_t hash) {
  FilterLog& log = *log_;
  SF_RETURN_IF_ERROR(log.failure());  // L4
  AddOutcome outcome = AddOutcome::kAdded;
  uint64_t seq = 0;
  if (log.mmap()) {
    if (log.thread_logged()) {
      // L7: a Bloom add of a thread with a stripe of its own goes to that
      // stripe's segment (log/format.h): no seq, no lock of the log's,
      // no wait. Space first (nothing changed if it fails), the record's
      // check computed while the table's line (prefetched before the shard
      // lock) is on its way, then the apply, the record, the ack (T1). A
      // failed add writes no record. A key already present is journalled
      // too (AddOutcome): its bits may be another writer's, not yet
      // journalled.
      static_assert(kMaxShards <= persistence::kThreadRecordShards);
      if (const uint32_t k = internal::ThisThreadStripe();
          k < internal::kOwnedStripes) [[likely]] {
        SF_ASSIGN_OR_RETURN(char* const slot, log.ThreadSlot(k));
        const uint64_t tag = persistence::ThreadRecordTag(index, hash);
        SF_RETURN_IF_ERROR(
            internal::ChainAddAt(spec_, s, fast_[index], hash, &outcome));
        RecordForMigration(index, hash, false,
                           outcome == AddOutcome::kAlreadyPresent);
        // Stored only when clear: under `mu` shared no checkpoint clears
        // it, and a store every add would write the shard's first line.
        if (!s.dirty.load(std::memory_order_relaxed)) {
          s.dirty.store(true, std::memory_order_relaxed);
        }
        persistence::CommitThreadRecord(slot, tag, hash);
        log.ThreadCommitted(k);
        journal_->Count(1);
        return outcome;
      }
    }
    char* slot = nullptr;
    uint64_t prepared = 0;  // a short record's tag
    Status applied;
    if (NeedsOrder(spec_.type)) {
      std::lock_guard order(s.order_mu);  // S3, L1
      SF_RETURN_IF_ERROR(log.EnsureSpace(index, 1));
      // Seq and slot before the apply, both under order_mu (so seq order
      // is still apply order, S3), and the commit's check computed while
      // the table's line is on its way, as for Bloom below. A failed add
      // commits its slot as a no op.
      seq = s.TakeOrderedSeq();
      slot = log.Reserve(index, seq, 1);
      prepared =
          persistence::PrepareCommit(slot, seq, OpByte(JournalOp::kAdd), hash);
      applied = internal::ChainAddOrdered(spec_, s, hash, &outcome);
      if (applied.ok()) RecordForMigration(index, hash, false);
    } else {
      {
        std::lock_guard reserve(log.reserve_mu(index));  // L1
        SF_RETURN_IF_ERROR(log.EnsureSpace(index, 1));
        seq = s.last_seq.fetch_add(1, std::memory_order_relaxed) + 1;
        slot = log.Reserve(index, seq, 1);
      }
      // The commit's check is computed now, while the table's line
      // (prefetched before the shard lock) is on its way; after the add it
      // followed the miss.
      prepared =
          persistence::PrepareCommit(slot, seq, OpByte(JournalOp::kAdd), hash);
      // Bloom adds commute: applied outside the reservation. A failed add
      // (Full) still commits its slot, as "no op", so seqs stay contiguous.
      applied = internal::ChainAddAt(spec_, s, fast_[index], hash, &outcome);
      if (applied.ok()) {
        RecordForMigration(index, hash, false,
                           outcome == AddOutcome::kAlreadyPresent);
      }
    }
    if (applied.ok()) {
      // A Bloom key already present is journalled too (AddOutcome).
      s.dirty.store(true, std::memory_order_relaxed);
      persistence::CommitPrepared(slot, seq, OpByte(JournalOp::kAdd), hash,
                                  prepared);
    } else {
      persistence::CommitRecord(slot, seq, 0, {});
    }
    Status done = log.Complete(index, seq, seq);  // L2, L3
    if (!done.ok()) {
      persistence::UncommitRecord(slot);  // L4: not acknowledged
      return done;
    }
    if (!applied.ok()) return applied;
    journal_->Count(1);
    return outcome;
  }
  if (NeedsOrder(spec_.type)) {
    std::lock_guard order(s.order_mu);  // S3
    SF_RETURN_IF_ERROR(internal::ChainAddOrdered(spec_, s, hash, &outcome));
    seq = s.TakeOrderedSeq();
    RecordForMigration(index, hash, false);
  } else {
    SF_RETURN_IF_ERROR(
        internal::ChainAddAt(spec_, s, fast_[index], hash, &outcome));
    seq = s.last_seq.fetch_add(1, std::memory_order_relaxed) + 1;
    RecordForMigration(index, hash, false,
                       outcome == AddOutcome::kAlreadyPresent);
  }
  s.dirty.store(true, std::memory_order_relaxed);
  JournalBatch batch;
  batch.Add(name_, index, seq, JournalOp::kAdd, {&hash, 1});
  if (spec_.retain_hashes) batch.Retain(name_, JournalOp::kAdd, {&hash, 1});
  Status st = journal_->Write(&batch, durability_ == Durability::kSync);
  if (!st.ok()) {
    log.Fail(st.WithContext("writing the journal"));  // L4: no undo
    return log.failure();
  }
  SF_RETURN_IF_ERROR(log.Complete(index, seq, seq));  // L2
  return outcome;
}

Status ShardedFilter::JournalledRemove(uint32_t index, Shard& s,
                                       uint64_t hash) {
  FilterLog& log = *log_;
  SF_RETURN_IF_ERROR(log.failure());  // L4
  uint64_t seq = 0;
  char* slot = nullptr;
  uint64_t prepared = 0;  // a short record's tag
  Status applied;
  {
    std::lock_guard order(s.order_mu);  // S3, L1
    if (log.mmap()) {
      // As JournalledInsert: seq, slot and check before the apply.
      SF_RETURN_IF_ERROR(log.EnsureSpace(index, 1));
      seq = s.TakeOrderedSeq();
      slot = log.Reserve(index, seq, 1);
      prepared = persistence::PrepareCommit(slot, seq,
                                            OpByte(JournalOp::kRemove), hash);
      applied = internal::ChainRemove(s, hash);
      if (applied.ok()) RecordForMigration(index, hash, true);
    } else {
      SF_RETURN_IF_ERROR(internal::ChainRemove(s, hash));
      seq = s.TakeOrderedSeq();
      RecordForMigration(index, hash, true);
    }
  }
  if (log.mmap()) {
    if (applied.ok()) {
      s.dirty.store(true, std::memory_order_relaxed);
      persistence::CommitPrepared(slot, seq, OpByte(JournalOp::kRemove), hash,
                                  prepared);
    } else {
      persistence::CommitRecord(slot, seq, 0, {});  // a no op (NotFound)
    }
    Status done = log.Complete(index, seq, seq);
    if (!done.ok()) {
      persistence::UncommitRecord(slot);  // L4
      return done;
    }
    if (!applied.ok()) return applied;
    journal_->Count(1);
    return done;
  }
  s.dirty.store(true, std::memory_order_relaxed);
  JournalBatch batch;
  batch.Add(name_, index, seq, JournalOp::kRemove, {&hash, 1});
  if (spec_.retain_hashes) {
    batch.Retain(name_, JournalOp::kRemove, {&hash, 1});
  }
  Status st = journal_->Write(&batch, durability_ == Durability::kSync);
  if (!st.ok()) {
    log.Fail(st.WithContext("writing the journal"));  // L4: no undo
    return log.failure();
  }
  return log.Complete(index, seq, seq);  // L2
}

}  // namespace shardfilter
