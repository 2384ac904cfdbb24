#include "shardfilter/engine/internal/checkpointer.h"

#include <atomic>
#include <chrono>
#include <shared_mutex>
#include <string>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/filter_factory.h"
#include "shardfilter/engine/internal/parallel.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"

namespace shardfilter::internal {

using persistence::DescribeName;
using persistence::FilterDescriptor;
using persistence::JournalEntry;
using persistence::JournalOp;
using persistence::ShardRecord;

Status CheckpointFilter(persistence::Store* store, ShardedFilter& f,
                        FilterState* state, uint32_t chunk_bytes,
                        CheckpointStats* stats) {
  FilterDescriptor next = state->committed;
  std::vector<uint32_t> changed;
  auto redirty = [&] {
    for (uint32_t s : changed) {
      ShardedFilterAccess::shard(f, s).dirty.store(true,
                                                   std::memory_order_relaxed);
    }
  };
  for (uint32_t i = 0; i < f.shard_count(); ++i) {
    Shard& sh = ShardedFilterAccess::shard(f, i);
    // Relaxed read without the lock: a mutation that sets dirty after this
    // load is journalled with a sequence above what we would record, so it
    // is postponed to the next checkpoint, never lost.
    if (!sh.dirty.load(std::memory_order_relaxed)) {
      ++stats->shards_skipped;
      continue;
    }
    std::string blob;
    uint64_t seq;
    auto t0 = std::chrono::steady_clock::now();
    {
      auto lock = LockExclusive(sh);  // S2: no op is half done; S5
      blob = ChainSerialize(sh);      // S6: no growth runs either
      seq = sh.last_seq.load(std::memory_order_relaxed);
      sh.dirty.store(false, std::memory_order_relaxed);
    }
    uint64_t held = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    if (held > stats->max_lock_hold_ns) stats->max_lock_hold_ns = held;
    changed.push_back(i);
    auto record = store->WriteChunks(f.name(), i, next.shards[i].generation + 1,
                                     blob, chunk_bytes);
    if (!record.ok()) {
      redirty();
      return record.status();
    }
    record->sequence = seq;
    next.shards[i] = *record;
    stats->chunks_written += record->chunk_count;
    stats->bytes_written += record->byte_length;
  }
  if (changed.empty()) return Status::OK();
  Status s = store->CommitCheckpoint(f.name(), next, changed);
  if (!s.ok()) {
    redirty();
    return s;
  }
  state->committed = next;
  for (uint32_t i : changed) {
    Shard& sh = ShardedFilterAccess::shard(f, i);
    sh.checkpoint_generation.store(next.shards[i].generation,
                                   std::memory_order_relaxed);
    sh.checkpoint_sequence.store(next.shards[i].sequence,
                                 std::memory_order_relaxed);
    sh.checkpoint_bytes.store(next.shards[i].byte_length,
                              std::memory_order_relaxed);
  }
  stats->shards_written += static_cast<uint32_t>(changed.size());
  ++stats->filters_checkpointed;
  return Status::OK();
}

namespace {

// Replays one journal entry. Adds must succeed (the original did, and
// replay applies ops in their original order: S3); a remove that finds
// nothing can only follow an add whose journal write was lost before it was
// acknowledged (see docs/format-store.md) and is counted, not applied.
// Adds go through the chain, so they grow it exactly as the original adds
// did (shard_chain.h, "Determinism").
Status ReplayEntry(const FilterSpec& spec, Shard& shard, const JournalEntry& e,
                   uint64_t* replayed, std::atomic<uint64_t>* skipped) {
  for (uint64_t h : e.hashes) {
    if (e.op == JournalOp::kAdd) {
      Status s = ChainAdd(spec, shard, h);
      if (!s.ok()) return s.WithContext("replaying an add");
    } else {
      Status s = ChainRemove(shard, h);
      if (s.code() == StatusCode::kNotFound) {
        skipped->fetch_add(1, std::memory_order_relaxed);
      } else if (s.code() == StatusCode::kNotSupported) {
        return Status::Corruption("journal holds a remove for a " +
                                  std::string(FilterTypeName(spec.type)) +
                                  " filter");
      } else if (!s.ok()) {
        return s.WithContext("replaying a remove");
      }
    }
    ++*replayed;
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<ShardedFilter>> RecoverFilter(
    const persistence::Store& store, std::string_view name,
    const FilterDescriptor& d, uint64_t* replayed, uint64_t* skipped_removes,
    std::shared_ptr<MemoryAccount> account) {
  FilterSpec spec = SpecFromDescriptor(d);
  const uint32_t shards = spec.shards;
  // Invariant 8: the whole filter against the budget before any shard is
  // read: a checkpointed shard costs about its blob, a new one its link.
  uint64_t need = 0;
  for (uint32_t i = 0; i < shards && i < d.shards.size(); ++i) {
    if (d.shards[i].generation != 0) {
      need += d.shards[i].byte_length;
    } else {
      auto bytes = LinkTableBytes(spec, 0, ShardMaxBytes(spec));
      if (bytes.ok()) need += *bytes;  // else MakeShardFilter reports it
    }
  }
  SF_RETURN_IF_ERROR(account->Charge(need, "loading " + DescribeName(name)));
  // Each shard is installed and replayed by one task before the filter is
  // shared (the ParallelFor join orders it with what follows).
  auto f = ShardedFilterAccess::MakeEmpty(std::string(name), spec,
                                          std::move(account));
  std::vector<Status> errors(shards);
  std::vector<uint64_t> last_seq(shards, 0), counts(shards, 0);
  std::atomic<uint64_t> skipped{0};
  ParallelFor(shards, [&](size_t i) {
    const ShardRecord& r = d.shards[i];
    std::string what = DescribeName(name) + " shard " + std::to_string(i);
    Shard& sh = ShardedFilterAccess::shard(*f, static_cast<uint32_t>(i));
    auto run = [&]() -> Status {
      LoadedChain chain;
      if (r.generation == 0) {
        SF_ASSIGN_OR_RETURN(auto link, MakeShardFilter(spec));
        chain.links.push_back(std::move(link));
        chain.fill.push_back(0);
      } else {
        SF_ASSIGN_OR_RETURN(std::string blob, store.LoadShardBlob(name, i, r));
        SF_ASSIGN_OR_RETURN(chain, DecodeChain(spec, blob, what));
      }
      InstallChain(sh, std::move(chain));
      last_seq[i] = r.sequence;
      return store.ReadJournal(
          name, i, r.sequence, [&](uint64_t seq, const JournalEntry& e) {
            last_seq[i] = seq;
            return ReplayEntry(spec, sh, e, &counts[i], &skipped);
          });
    };
    errors[i] = run();
  });
  for (const Status& s : errors) SF_RETURN_IF_ERROR(s);
  for (uint32_t i = 0; i < shards; ++i) {
    Shard& sh = ShardedFilterAccess::shard(*f, i);
    sh.last_seq.store(last_seq[i], std::memory_order_relaxed);
    // Replayed shards are dirty: their next checkpoint truncates the journal.
    sh.dirty.store(last_seq[i] > d.shards[i].sequence,
                   std::memory_order_relaxed);
    sh.checkpoint_generation.store(d.shards[i].generation,
                                   std::memory_order_relaxed);
    sh.checkpoint_sequence.store(d.shards[i].sequence,
                                 std::memory_order_relaxed);
    sh.checkpoint_bytes.store(d.shards[i].byte_length,
                              std::memory_order_relaxed);
    *replayed += counts[i];
  }
  *skipped_removes += skipped.load(std::memory_order_relaxed);
  return f;
}

}  // namespace shardfilter::internal
