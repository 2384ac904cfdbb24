// The migration thread: cut, fill, drain, switch (engine/migration.h for
// the protocol, engine/internal/migration.h for the invariants M1-M5).
#include <chrono>
#include <shared_mutex>
#include <unordered_set>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/migration.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter::internal {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kFillBatch = 1 << 16;
// The drain phase stops looping (and the switch replays the rest with
// writers paused) once a pass replays fewer ops than this.
constexpr uint64_t kDrainTail = 4096;

uint64_t NanosSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t)
      .count();
}

// The ops the switch replays, per target shard in apply order: they become
// the target's first journal entries (its chunks were written before).
struct TailEntry {
  persistence::JournalOp op;
  std::vector<uint64_t> hashes;
};
using TailJournal = std::vector<std::vector<TailEntry>>;

// Replays every queued op on the target, shard by shard, each shard's ops
// in order (M2), as runs of adds and removes. A failed add (the target has
// no room) is returned; a remove that finds nothing cannot happen when
// source and target hold the same multiset and is ignored. With `tail`,
// the ops that succeeded are also appended there, per target shard, in the
// order they were applied.
Result<uint64_t> Drain(Migration& m, TailJournal* tail = nullptr) {
  uint64_t n = 0;
  std::vector<uint64_t> run;
  std::vector<Status> per_item;
  // M6: set semantics from a Bloom source into a multiset target.
  const bool set_into_multiset = m.source->type() == FilterType::kBloom &&
                                 m.target->type() != FilterType::kBloom;
  std::unordered_set<uint64_t> run_seen;
  for (uint32_t s = 0; s < m.queue_count(); ++s) {
    std::vector<QueuedOp> ops = m.Take(s);
    size_t i = 0;
    while (i < ops.size()) {
      const bool remove = ops[i].remove;
      run.clear();
      run_seen.clear();
      for (; i < ops.size() && ops[i].remove == remove; ++i) {
        if (set_into_multiset && !remove) {
          const uint64_t h = ops[i].hash;
          if (ops[i].maybe_present &&
              (run_seen.count(h) != 0 || m.target->MayContainHash(h))) {
            continue;  // the target holds the key already
          }
          run_seen.insert(h);
        }
        run.push_back(ops[i].hash);
      }
      if (run.empty()) continue;
      if (remove) {
        m.target->RemoveHashes(run, &per_item).ok();
      } else {
        Status st = m.target->AddHashes(run, &per_item);
        if (!st.ok()) {
          return st.WithContext("replaying an add on the migration target");
        }
      }
      if (tail == nullptr) continue;
      const auto op = remove ? persistence::JournalOp::kRemove
                             : persistence::JournalOp::kAdd;
      for (size_t k = 0; k < run.size(); ++k) {
        if (!per_item[k].ok()) continue;
        auto& entries = (*tail)[m.target->ShardOf(run[k])];
        if (entries.empty() || entries.back().op != op) {
          entries.push_back({op, {}});
        }
        entries.back().hashes.push_back(run[k]);
      }
    }
    n += ops.size();
  }
  m.replayed.fetch_add(n, std::memory_order_relaxed);
  m.queued_.fetch_sub(n, std::memory_order_relaxed);
  return n;
}

// Items held by the filter as its chains count them (the sum of the links'
// fill counters, S7/S8): no table scan, no lock.
uint64_t ChainItemsEstimate(ShardedFilter& f) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < f.shard_count(); ++i) {
    Shard& sh = ShardedFilterAccess::shard(f, i);
    for (uint32_t l = 0; l < sh.links_visible(); ++l) {
      n += sh.Fill(l);  // a figure (S9)
    }
  }
  return n;
}

// Builds the target by folding every source shard (M1: under the cut's
// locks). REQUIRES: LockAll(source) held.
Status FoldInto(Migration& m, ShardedFilter& src, uint32_t factor,
                std::shared_ptr<MemoryAccount> account) {
  const FilterSpec& ts = m.target_spec();
  // Invariant 8: every folded table against the budget before any fold.
  uint64_t need = 0;
  for (uint32_t i = 0; i < src.shard_count(); ++i) {
    Shard& sh = ShardedFilterAccess::shard(src, i);
    // num_bytes, not Stats(): this runs under the cut's locks.
    need += static_cast<const BloomFilter&>(*sh.link(0)).num_bytes() / factor;
  }
  SF_RETURN_IF_ERROR(account->Charge(need, "folding the migration target"));
  auto target = ShardedFilterAccess::MakeEmpty(src.name(), ts, account);
  for (uint32_t i = 0; i < src.shard_count(); ++i) {
    Shard& sh = ShardedFilterAccess::shard(src, i);
    const std::string what = "shard " + std::to_string(i);
    if (sh.links_visible() != 1) {
      return Status::InvalidArgument(
          what + " has grown to " + std::to_string(sh.links_visible()) +
          " links: only a filter whose shards have one link folds (its "
          "links have different sizes); migrate it from retained hashes");
    }
    const auto& link = static_cast<const BloomFilter&>(*sh.link(0));
    const uint64_t fill = sh.Fill(0);  // S9: exact under the cut's locks
    const uint64_t capacity = LinkCapacity(ts, 0);
    if (fill > capacity) {
      return Status::InvalidArgument(what + " holds " + std::to_string(fill) +
                                     " items, more than the folded capacity " +
                                     std::to_string(capacity));
    }
    SF_ASSIGN_OR_RETURN(auto folded, link.Fold(factor, capacity));
    LoadedChain chain;
    chain.links.push_back(std::move(folded));
    chain.fill.push_back(fill);
    InstallChain(ShardedFilterAccess::shard(*target, i), std::move(chain));
    m.items_done.fetch_add(fill, std::memory_order_relaxed);
  }
  m.target = std::move(target);
  return Status::OK();
}

// Writes the target's shards as chunks of a generation above every chunk
// the source committed (no key clash), then syncs the WAL, while writers go
// on (their ops queue up: the switch journals them). REQUIRES: checkpoints
// of the source are held off (FilterState::migrating), so that none writes
// that generation.
Result<PrewrittenTarget> Prewrite(DatabaseImpl& d, const std::string& name,
                                  ShardedFilter& target, uint64_t generation) {
  PrewrittenTarget pre;
  pre.generation = generation;
  for (uint32_t i = 0; i < target.shard_count(); ++i) {
    const std::string blob =
        ChainSerialize(ShardedFilterAccess::shard(target, i));
    SF_ASSIGN_OR_RETURN(
        auto record,
        d.store->WriteChunks(name, i, generation, blob, d.options.chunk_bytes));
    pre.records.push_back(record);
  }
  SF_RETURN_IF_ERROR(d.store->SyncWal());
  return pre;
}

// The switch (step 3): the rest of the queue, journalled for the target,
// then the install. REQUIRES: as InstallTarget.
Status Switch(DatabaseImpl& d, Migration& m, const std::string& name,
              const PrewrittenTarget& pre)
    SF_REQUIRES(d.mu, m.source_state->mu) {
  TailJournal tail(m.target->shard_count());
  SF_RETURN_IF_ERROR(Drain(m, &tail).status());
  persistence::JournalBatch batch;
  std::vector<uint64_t> last_seq(tail.size(), 0);
  for (uint32_t t = 0; t < tail.size(); ++t) {
    for (const TailEntry& e : tail[t]) {
      batch.Add(name, t, ++last_seq[t], e.op, e.hashes);
    }
  }
  const OpenFilter source{m.source, m.source_state};
  source.state->mu.AssertHeld();  // it is m.source_state->mu, held (above)
  return InstallTarget(d, name, source, std::move(m.target), &pre, &batch,
                       last_seq);
}

}  // namespace

uint64_t NextGeneration(const persistence::FilterDescriptor& d) {
  uint64_t generation = 0;
  for (const auto& r : d.shards)
    generation = std::max(generation, r.generation);
  return generation + 1;  // above every chunk committed: no key clash
}

Status InstallTarget(DatabaseImpl& d, const std::string& name,
                     const OpenFilter& source,
                     std::unique_ptr<ShardedFilter> built,
                     const PrewrittenTarget* pre,
                     persistence::JournalBatch* tail,
                     const std::vector<uint64_t>& tail_seq) {
  ShardedFilter& target = *built;
  const uint64_t generation =
      pre ? pre->generation : NextGeneration(source.state->committed);
  persistence::FilterDescriptor next = DescriptorFromSpec(target.spec());
  for (uint32_t i = 0; i < target.shard_count(); ++i) {
    if (pre != nullptr) {
      next.shards[i] = pre->records[i];
    } else {
      const std::string blob =
          ChainSerialize(ShardedFilterAccess::shard(target, i));
      SF_ASSIGN_OR_RETURN(next.shards[i],
                          d.store->WriteChunks(name, i, generation, blob,
                                               d.options.chunk_bytes));
    }
    next.shards[i].sequence = 0;
  }
  // The commit point. Before it a crash leaves the source (the chunks just
  // written are collected at the next open); after it, the target, with
  // the tail's journal entries replayed over its chunks.
  SF_RETURN_IF_ERROR(d.store->CommitMigration(name, next, tail));
  for (uint32_t i = 0; i < target.shard_count(); ++i) {
    Shard& sh = ShardedFilterAccess::shard(target, i);
    const uint64_t seq = i < tail_seq.size() ? tail_seq[i] : 0;
    sh.last_seq.store(seq, std::memory_order_relaxed);
    sh.dirty.store(seq > 0, std::memory_order_relaxed);
    sh.NoteCheckpoint(generation, 0, next.shards[i].byte_length);
  }
  ShardedFilterAccess::SetName(target, name);
  ShardedFilterAccess::Attach(target, d.journal.get(), false,
                              d.options.durability_override);
  std::shared_ptr<ShardedFilter> live(std::move(built));
  auto state = std::make_shared<FilterState>(std::move(next));
  d.filters[name] = OpenFilter{live, std::move(state)};
  source.state->dropped = true;  // no checkpoint of the source any more
  ShardedFilterAccess::SetForward(*source.filter, live);  // M4
  ShardedFilterAccess::SetMigration(*source.filter, nullptr);
  return Status::OK();
}

void RunMigration(DatabaseImpl& d, Migration& m, const std::string& name) {
  ShardedFilter& src = *m.source;
  bool attached = false;
  bool held_checkpoints = false;  // FilterState::migrating set by us
  // Rolls back: detaches from the source (M4) unless `locked` says the
  // caller holds its locks and detaches itself.
  auto fail = [&](Status s) {
    if (held_checkpoints) {
      MutexLock state(m.source_state->mu);
      m.source_state->migrating = false;
    }
    if (attached) {
      auto locks = ShardedFilterAccess::LockAll(src);
      ShardedFilterAccess::SetMigration(src, nullptr);
    }
    m.target.reset();
    m.Finish(
        m.abort.load() ? MigrationPhase::kAborted : MigrationPhase::kFailed,
        std::move(s));
  };
  const FilterSpec& ts = m.target_spec();
  std::unique_ptr<persistence::RetainedHashScan> scan;
  // 1. The target (fold: built at the cut).
  if (m.source_kind() == MigrationSource::kRetainedHashes) {
    auto account = d.NewAccount();
    auto shards =
        MakeShardFilters(ts, *account, "building the migration target");
    if (!shards.ok()) return fail(shards.status());
    m.target = ShardedFilterAccess::Make(name, ts, std::move(*shards),
                                         std::move(account));
  }
  // 2. The cut (M1). The progress total is an estimate taken before the
  // locks: the fill counters (distinct keys for Bloom, copies held for the
  // others), not Stats(), which scans every table (the pause would grow
  // with the filter's size).
  m.items_total.store(ChainItemsEstimate(src), std::memory_order_relaxed);
  {
    const auto t0 = Clock::now();
    auto locks = ShardedFilterAccess::LockAll(src);
    Status s;
    if (ShardedFilterAccess::detached(src) != kLive) {
      s = Status::Aborted("the filter was dropped or closed");
    } else if (m.source_kind() == MigrationSource::kRetainedHashes) {
      auto r = d.store->ScanRetainedHashes(name);
      if (r.ok()) {
        scan = std::move(*r);
      } else {
        s = r.status();
      }
    } else {
      s = FoldInto(m, src,
                   static_cast<uint32_t>(src.spec().capacity / ts.capacity),
                   d.NewAccount());
    }
    if (s.ok()) {
      ShardedFilterAccess::SetMigration(src, &m);
      attached = true;
    }
    m.pause_ns.fetch_add(NanosSince(t0), std::memory_order_relaxed);
    if (!s.ok()) {
      locks.clear();
      return fail(s);
    }
  }
  // 3. The fill.
  const bool bloom_source = src.type() == FilterType::kBloom;
  if (scan != nullptr) {
    std::vector<std::pair<uint64_t, int64_t>> pairs;
    std::vector<uint64_t> hashes;
    std::vector<Status> per_item;
    bool more = true;
    while (more) {
      if (m.abort.load()) return fail(Status::Aborted("migration aborted"));
      pairs.clear();
      Status s = scan->Next(kFillBatch, &pairs, &more);
      if (!s.ok()) return fail(s);
      hashes.clear();
      for (const auto& [h, count] : pairs) {
        // A Bloom filter is a set; other types hold each copy.
        const int64_t copies = bloom_source ? 1 : count;
        for (int64_t c = 0; c < copies; ++c) hashes.push_back(h);
      }
      s = m.target->AddHashes(hashes, &per_item);
      if (!s.ok()) {
        return fail(s.WithContext("the target cannot hold the source's keys"));
      }
      m.items_done.fetch_add(pairs.size(), std::memory_order_relaxed);
      // M3: adds commute; M6: not into a multiset before the fill ends.
      if (bloom_source && ts.type == FilterType::kBloom) {
        auto r = Drain(m);
        if (!r.ok()) return fail(r.status());
      }
    }
    scan.reset();  // releases the snapshot
  }
  // 4. Catch up with the ops acknowledged since the cut (M3).
  m.SetPhase(MigrationPhase::kDraining);
  for (int pass = 0; pass < 64; ++pass) {
    if (m.abort.load()) return fail(Status::Aborted("migration aborted"));
    auto r = Drain(m);
    if (!r.ok()) return fail(r.status());
    if (*r < kDrainTail) break;
  }
  // 5. The target's chunks, written while writers go on; checkpoints of
  // the source are held off meanwhile (they would write chunks too).
  uint64_t generation = 0;
  {
    MutexLock state(m.source_state->mu);
    if (!m.source_state->dropped) {
      m.source_state->migrating = true;
      held_checkpoints = true;
      generation = NextGeneration(m.source_state->committed);
    }
  }
  if (!held_checkpoints) return fail(Status::Aborted("the filter was dropped"));
  auto pre = Prewrite(d, name, *m.target, generation);
  if (!pre.ok()) return fail(pre.status());
  // 6. The switch (M5: catalog mutex, state mutex, shard locks).
  m.SetPhase(MigrationPhase::kSwitching);
  {
    MutexLock catalog(d.mu);
    auto it = d.filters.find(name);
    if (d.closed || it == d.filters.end() || it->second.filter != m.source) {
      return fail(
          Status::Aborted("the filter was dropped or the store closed"));
    }
    MutexLock state(m.source_state->mu);
    const auto t0 = Clock::now();
    auto locks = ShardedFilterAccess::LockAll(src);
    Status s = m.abort.load() ? Status::Aborted("migration aborted")
                              : Switch(d, m, name, *pre);
    if (!s.ok()) {
      m.source_state->migrating = false;  // state mutex held
      held_checkpoints = false;
    }
    if (!s.ok()) ShardedFilterAccess::SetMigration(src, nullptr);  // M4
    locks.clear();
    m.pause_ns.fetch_add(NanosSince(t0), std::memory_order_relaxed);
    if (!s.ok()) {
      attached = false;
      return fail(s);
    }
  }
  m.Finish(MigrationPhase::kDone, Status::OK());
}

}  // namespace shardfilter::internal
