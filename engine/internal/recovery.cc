// RecoverFilter and ScanFilterJournal (engine/internal/recovery.h).
#include "shardfilter/engine/internal/recovery.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/parallel.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/internal/table_arena.h"
#include "shardfilter/persistence/log/reader.h"

namespace shardfilter::internal {

using persistence::DescribeName;
using persistence::FilterDescriptor;
using persistence::JournalEntry;
using persistence::JournalOp;
using persistence::ShardRecord;

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
    std::shared_ptr<MemoryAccount> account, bool tolerate_damage,
    std::vector<uint64_t>* stale_after) {
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
  auto log = std::make_unique<FilterLog>(std::string(name), shards);
  SF_ASSIGN_OR_RETURN(const uint64_t epoch, store.GetFilterJournalEpoch(name));
  log->SetEpoch(epoch);
  persistence::Env& env = *store.log_env();
  const persistence::LogOwner owner{std::string(name), epoch, shards,
                                    DescribeName(name)};
  SF_ASSIGN_OR_RETURN(const persistence::EpochFiles files,
                      persistence::ListEpoch(env, store.path(), owner));
  // L7: the thread segments' adds, by shard, replayed after each shard's
  // sequenced ops (adds commute, and applying one the checkpoint holds
  // changes nothing: T2).
  std::vector<std::vector<uint64_t>> thread_adds(shards);
  std::vector<std::shared_ptr<persistence::Segment>> thread_segments;
  for (const std::string& path : files.threads) {
    std::shared_ptr<persistence::Segment> seg;
    std::vector<persistence::ThreadRecord> recs;
    Status damage;
    SF_RETURN_IF_ERROR(
        persistence::ReadThreadSegment(env, path, owner, &seg, &recs, &damage));
    // Damaged (T3): Corruption, or with tolerate_damage the adds before it.
    if (!tolerate_damage) SF_RETURN_IF_ERROR(damage);
    for (const persistence::ThreadRecord& r : recs) {
      thread_adds[r.shard].push_back(r.hash);
    }
    thread_segments.push_back(std::move(seg));
  }
  std::vector<Status> errors(shards);
  std::vector<uint64_t> last_seq(shards, 0), counts(shards, 0);
  std::vector<std::vector<std::shared_ptr<persistence::Segment>>> segments(
      shards);
  std::atomic<uint64_t> skipped{0};
  std::vector<uint64_t> stale_vec(shards, ~uint64_t{0});
  std::vector<uint64_t>& stale_after_ = stale_vec;
  // The shards' first links together, on huge pages where each alone would
  // not be (filters/internal/table_arena.h): a link 0 of the spec's size,
  // new or decoded, is cut from the arena by the task that makes it.
  auto link0_bytes = LinkTableBytes(spec, 0, ShardMaxBytes(spec));
  const TableArenaRef arena =
      MakeTableArena(link0_bytes.ok() ? *link0_bytes : 0, shards);
  ParallelFor(shards, [&](size_t i) {
    const TableArenaScope in_arena(arena.get());
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
      // L2: a shard's ops are replayed in seq order up to the first gap
      // (what follows a gap was never acknowledged), from the RocksDB
      // journal family's entries and the segments' records merged by seq
      // (a session may have used either path).
      persistence::ShardSegments loaded;
      SF_RETURN_IF_ERROR(loaded.Read(env, files.shards[i], owner,
                                     static_cast<uint32_t>(i),
                                     tolerate_damage));
      std::vector<std::pair<uint64_t, JournalEntry>> rocks;
      SF_RETURN_IF_ERROR(store.ReadJournal(
          name, i, r.sequence, [&](uint64_t seq, const JournalEntry& e) {
            rocks.emplace_back(seq, e);
            return Status::OK();
          }));
      std::vector<std::pair<uint64_t, JournalEntry>> mapped;
      for (persistence::FilterJournalRecord& rec : loaded.Collect(r.sequence)) {
        JournalEntry e;
        e.op = rec.op == 0 ? JournalOp::kAdd : static_cast<JournalOp>(rec.op);
        e.hashes = std::move(rec.hashes);  // a "no op": none
        mapped.emplace_back(rec.seq, std::move(e));
      }
      uint64_t& last = last_seq[i];
      last = r.sequence;
      size_t a = 0, b = 0;
      while (a < rocks.size() || b < mapped.size()) {
        const bool from_rocks =
            b == mapped.size() ||
            (a < rocks.size() && rocks[a].first < mapped[b].first);
        auto& [seq, e] = from_rocks ? rocks[a++] : mapped[b++];
        if (seq != last + 1) break;  // L2: a gap (or a stale duplicate)
        if (!e.hashes.empty()) {
          SF_RETURN_IF_ERROR(ReplayEntry(spec, sh, e, &counts[i], &skipped));
        }
        last = seq;
      }
      for (uint64_t h : thread_adds[i]) {  // L7
        Status added = ChainAdd(spec, sh, h);
        if (!added.ok()) return added.WithContext("replaying an add");
        ++counts[i];
      }
      // RocksDB entries past the end are unacknowledged debris: a writable
      // open deletes them before new ops reuse their seqs.
      if (!rocks.empty() && rocks.back().first > last) stale_after_[i] = last;
      segments[i] = loaded.Finish(last);
      return Status::OK();
    };
    errors[i] = run();
  });
  for (const Status& s : errors) SF_RETURN_IF_ERROR(s);
  for (uint32_t i = 0; i < shards; ++i) {
    for (auto& seg : segments[i]) log->AdoptSegment(i, std::move(seg));
    Shard& sh = ShardedFilterAccess::shard(*f, i);
    sh.last_seq.store(last_seq[i], std::memory_order_relaxed);
    // Replayed shards are dirty: their next checkpoint truncates the journal.
    sh.dirty.store(
        last_seq[i] > d.shards[i].sequence || !thread_adds[i].empty(),
        std::memory_order_relaxed);
    sh.NoteCheckpoint(d.shards[i].generation, d.shards[i].sequence,
                      d.shards[i].byte_length);
    *replayed += counts[i];
  }
  for (auto& seg : thread_segments) log->AdoptThreadSegment(std::move(seg));
  ShardedFilterAccess::SetLog(*f, std::move(log));
  if (stale_after != nullptr) *stale_after = std::move(stale_vec);
  *skipped_removes += skipped.load(std::memory_order_relaxed);
  return f;
}

Status ScanFilterJournal(const persistence::Store& store, std::string_view name,
                         const FilterDescriptor& d, uint64_t* records,
                         std::vector<std::string>* problems) {
  SF_ASSIGN_OR_RETURN(const uint64_t epoch, store.GetFilterJournalEpoch(name));
  persistence::Env& env = *store.log_env();
  const persistence::LogOwner owner{std::string(name), epoch,
                                    static_cast<uint32_t>(d.shards.size()),
                                    DescribeName(name)};
  auto files = persistence::ListEpoch(env, store.path(), owner);
  if (!files.ok()) {
    problems->push_back(files.status().ToString());
    return Status::OK();
  }
  for (const std::string& path : files->threads) {  // L7
    std::shared_ptr<persistence::Segment> seg;
    std::vector<persistence::ThreadRecord> recs;
    Status damage;
    Status s =
        persistence::ReadThreadSegment(env, path, owner, &seg, &recs, &damage);
    if (s.ok()) s = damage;
    if (!s.ok()) problems->push_back(s.ToString());
    *records += recs.size();
  }
  for (uint32_t i = 0; i < files->shards.size(); ++i) {
    for (const std::string& path : files->shards[i]) {
      std::shared_ptr<persistence::Segment> seg;
      std::vector<persistence::FilterJournalRecord> recs;
      uint64_t base = 0;
      Status damage;
      Status s = persistence::ReadShardSegment(env, path, owner, i, &seg, &recs,
                                               &base, &damage);
      if (s.ok()) s = damage;
      if (!s.ok()) problems->push_back(s.ToString());
      for (const auto& r : recs) {
        if (r.seq > d.shards[i].sequence) ++*records;
      }
    }
  }
  return Status::OK();
}

}  // namespace shardfilter::internal
