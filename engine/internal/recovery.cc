// RecoverFilter and ScanFilterJournal (engine/internal/recovery.h).
#include "shardfilter/engine/internal/recovery.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/filter_factory.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/parallel.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/internal/table_arena.h"
#include "shardfilter/persistence/internal/boot_id.h"
#include "shardfilter/persistence/internal/dedup_log.h"
#include "shardfilter/persistence/internal/filter_journal.h"
#include "shardfilter/persistence/internal/thread_journal.h"

namespace shardfilter::internal {

using persistence::DescribeName;
using persistence::FilterDescriptor;
using persistence::JournalEntry;
using persistence::JournalOp;
using persistence::ShardRecord;

namespace {

// The segment files of the filter's epoch, per shard in segment order.
Result<std::vector<std::vector<std::string>>> ListSegments(
    persistence::Env& env, const std::string& store_path,
    std::string_view name, uint64_t epoch, uint32_t shards) {
  std::vector<std::vector<std::pair<uint64_t, std::string>>> found(shards);
  std::vector<std::vector<std::string>> out(shards);
  if (epoch == 0) return out;
  const std::string dir = persistence::FilterJournalEpochDir(store_path, epoch);
  // None when nothing was written yet.
  SF_ASSIGN_OR_RETURN(const std::vector<std::string> files, env.Children(dir));
  for (const std::string& file : files) {
    unsigned shard = 0;
    unsigned long long number = 0;
    char again[48];
    if (std::sscanf(file.c_str(), "%3u-%8llu.sfj", &shard, &number) != 2) {
      continue;
    }
    std::snprintf(again, sizeof again, "%03u-%08llu.sfj", shard, number);
    if (file != again) continue;  // e.g. a ".tmp" a kill left: not a segment
    if (shard >= shards) {
      return Status::Corruption(DescribeName(name) + ": journal segment " +
                                dir + "/" + file + " names shard " +
                                std::to_string(shard) + " of " +
                                std::to_string(shards));
    }
    found[shard].emplace_back(number, dir + "/" + file);
  }
  for (uint32_t i = 0; i < shards; ++i) {
    std::sort(found[i].begin(), found[i].end());
    for (auto& [n, path] : found[i]) out[i].push_back(std::move(path));
  }
  return out;
}

// The thread segments (L7) of the filter's epoch: their paths, in no
// particular order (their adds commute).
Result<std::vector<std::string>> ListThreadSegments(
    persistence::Env& env, const std::string& store_path, uint64_t epoch) {
  std::vector<std::string> out;
  if (epoch == 0) return out;
  const std::string dir = persistence::FilterJournalEpochDir(store_path, epoch);
  SF_ASSIGN_OR_RETURN(const std::vector<std::string> files, env.Children(dir));
  for (const std::string& file : files) {
    uint32_t stripe = 0;
    uint64_t number = 0;
    if (persistence::ParseThreadSegmentName(file, &stripe, &number)) {
      out.push_back(dir + "/" + file);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Opens and reads one thread segment (T3; with tolerate_damage, the
// records before the damage).
Status LoadThreadSegment(persistence::Env& env, const std::string& path,
                         uint64_t epoch,
                         std::string_view name, uint32_t shards,
                         bool tolerate_damage,
                         std::shared_ptr<persistence::Segment>* seg,
                         std::vector<persistence::ThreadRecord>* recs) {
  const std::string what = DescribeName(name) + " journal " + path;
  SF_ASSIGN_OR_RETURN(*seg, persistence::Segment::OpenExisting(env, path));
  const persistence::SegmentHeader& h = (*seg)->header();
  if (h.version != persistence::kThreadSegmentVersion) {
    return Status::Corruption(what + ": not a thread segment (version " +
                              std::to_string(h.version) + ")");
  }
  if (h.epoch != epoch || h.name != name) {
    return Status::Corruption(what + ": header names another filter");
  }
  const bool later_boot =
      h.boot_id != persistence::CurrentBootId().substr(0, 64);
  Status decoded;
  if (!later_boot && (*seg)->size() != h.file_bytes) {
    decoded = Status::Corruption(
        what + ": file is " + std::to_string((*seg)->size()) +
        " bytes, its header says " + std::to_string(h.file_bytes));
  } else {
    decoded = persistence::DecodeThreadRecords((*seg)->records(), later_boot,
                                               shards, what, recs);
  }
  return tolerate_damage ? Status::OK() : decoded;
}

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

// A shard's segments, opened and read (filter_journal.h J3 for damage; with
// tolerate_damage, reading stops at the damaged segment instead).
struct LoadedSegments {
  std::vector<std::shared_ptr<persistence::Segment>> segs;
  std::vector<std::vector<persistence::FilterJournalRecord>> recs;
  std::vector<uint64_t> bases;  // J2: first record header's seq, 0 if none
  std::vector<uint64_t> max;    // each segment's highest live record seq
  uint64_t MaxOf(size_t k) const { return k < max.size() ? max[k] : 0; }
  // A segment without records supersedes nothing.
  uint64_t BaseOf(size_t k) const {
    return k < bases.size() && bases[k] != 0 ? bases[k] : ~uint64_t{0};
  }
};

Status LoadSegments(persistence::Env& env,
                    const std::vector<std::string>& paths, uint32_t shard,
                    uint64_t epoch, std::string_view name, bool tolerate_damage,
                    LoadedSegments* out) {
  using persistence::Segment;
  const std::string boot = persistence::CurrentBootId().substr(0, 64);
  for (const std::string& path : paths) {
    const std::string what = DescribeName(name) + " journal " + path;
    SF_ASSIGN_OR_RETURN(std::shared_ptr<Segment> seg,
                        Segment::OpenExisting(env, path));
    const persistence::SegmentHeader& h = seg->header();
    if (h.epoch != epoch || h.shard != shard || h.name != name) {
      return Status::Corruption(what + ": header names another filter");
    }
    if (h.version == persistence::kThreadSegmentVersion) {
      return Status::Corruption(what +
                                ": a thread segment under a shard's "
                                "name");
    }
    const bool later_boot = h.boot_id != boot;
    std::vector<persistence::FilterJournalRecord> recs;
    uint64_t base = 0;
    Status decoded = Status::OK();
    if (!later_boot && seg->size() != h.file_bytes) {
      decoded = Status::Corruption(
          what + ": file is " + std::to_string(seg->size()) +
          " bytes, its header says " + std::to_string(h.file_bytes));
    } else {
      decoded = persistence::DecodeSegmentRecords(
          seg->records(), h.version, later_boot, what, &recs, nullptr, &base);
    }
    if (!decoded.ok() && !tolerate_damage) return decoded;
    out->segs.push_back(std::move(seg));
    out->recs.push_back(std::move(recs));
    out->bases.push_back(base);
    if (!decoded.ok()) break;  // the records before the damage, then a gap
  }
  // Activation order is base order (J2): segments are made ahead, so their
  // numbers need not follow it. Empty ones (base 0) go last.
  std::vector<size_t> order(out->segs.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return out->BaseOf(a) < out->BaseOf(b);
  });
  LoadedSegments sorted;
  for (size_t k : order) {
    sorted.segs.push_back(std::move(out->segs[k]));
    sorted.recs.push_back(std::move(out->recs[k]));
    sorted.bases.push_back(out->bases[k]);
  }
  *out = std::move(sorted);
  return Status::OK();
}

// The loaded records with seq > after, in seq order, as journal entries
// (a "no op" record as one without hashes); J2: a later segment supersedes
// an earlier one's records from its base on. Also notes each segment's
// highest record seq (LoadedSegments::MaxOf) for retirement.
void CollectSegments(LoadedSegments& l, uint64_t after,
                     std::vector<std::pair<uint64_t, JournalEntry>>* out) {
  l.max.assign(l.segs.size(), 0);
  for (size_t k = 0; k < l.recs.size(); ++k) {
    uint64_t until = ~uint64_t{0};
    for (size_t j = k + 1; j < l.segs.size(); ++j) {
      until = std::min(until, l.BaseOf(j));
    }
    for (persistence::FilterJournalRecord& rec : l.recs[k]) {
      if (rec.seq >= until) break;  // J2 (records are in seq order)
      l.max[k] = rec.seq;
      if (rec.seq <= after) continue;  // dead: in the checkpoint
      JournalEntry e;
      e.op = rec.op == 0 ? JournalOp::kAdd : static_cast<JournalOp>(rec.op);
      e.hashes = std::move(rec.hashes);
      out->emplace_back(rec.seq, std::move(e));
    }
  }
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
  SF_ASSIGN_OR_RETURN(std::vector<std::vector<std::string>> segment_paths,
                      ListSegments(env, store.path(), name, epoch, shards));
  // L7: the thread segments' adds, by shard, replayed after each shard's
  // sequenced ops (adds commute, and applying one the checkpoint holds
  // changes nothing: T2).
  SF_ASSIGN_OR_RETURN(const std::vector<std::string> thread_paths,
                      ListThreadSegments(env, store.path(), epoch));
  std::vector<std::vector<uint64_t>> thread_adds(shards);
  std::vector<std::shared_ptr<persistence::Segment>> thread_segments;
  for (const std::string& path : thread_paths) {
    std::shared_ptr<persistence::Segment> seg;
    std::vector<persistence::ThreadRecord> recs;
    SF_RETURN_IF_ERROR(LoadThreadSegment(env, path, epoch, name, shards,
                                         tolerate_damage, &seg, &recs));
    for (const persistence::ThreadRecord& r : recs) {
      thread_adds[r.shard].push_back(r.hash);
    }
    if (seg != nullptr) thread_segments.push_back(std::move(seg));
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
      LoadedSegments loaded;
      SF_RETURN_IF_ERROR(LoadSegments(env, segment_paths[i],
                                      static_cast<uint32_t>(i), epoch, name,
                                      tolerate_damage, &loaded));
      std::vector<std::pair<uint64_t, JournalEntry>> rocks;
      SF_RETURN_IF_ERROR(store.ReadJournal(
          name, i, r.sequence, [&](uint64_t seq, const JournalEntry& e) {
            rocks.emplace_back(seq, e);
            return Status::OK();
          }));
      std::vector<std::pair<uint64_t, JournalEntry>> mapped;
      CollectSegments(loaded, r.sequence, &mapped);
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
      for (size_t k = 0; k < loaded.segs.size(); ++k) {
        loaded.segs[k]->max_seq.store(std::min(last, loaded.MaxOf(k)),
                                      std::memory_order_relaxed);
      }
      segments[i] = std::move(loaded.segs);
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
  auto paths = ListSegments(env, store.path(), name, epoch,
                            static_cast<uint32_t>(d.shards.size()));
  if (!paths.ok()) {
    problems->push_back(paths.status().ToString());
    return Status::OK();
  }
  const std::string boot = persistence::CurrentBootId().substr(0, 64);
  auto thread_paths = ListThreadSegments(env, store.path(), epoch);
  if (!thread_paths.ok()) {
    problems->push_back(thread_paths.status().ToString());
    return Status::OK();
  }
  for (const std::string& path : *thread_paths) {  // L7
    std::shared_ptr<persistence::Segment> seg;
    std::vector<persistence::ThreadRecord> recs;
    Status s = LoadThreadSegment(env, path, epoch, name,
                                 static_cast<uint32_t>(d.shards.size()),
                                 /*tolerate_damage=*/false, &seg, &recs);
    if (!s.ok()) problems->push_back(s.ToString());
    *records += recs.size();
  }
  for (uint32_t i = 0; i < paths->size(); ++i) {
    for (const std::string& path : (*paths)[i]) {
      auto seg = persistence::Segment::OpenExisting(env, path);
      std::vector<persistence::FilterJournalRecord> recs;
      Status s = seg.status();
      if (s.ok()) {
        const auto& h = (*seg)->header();
        const bool later = h.boot_id != boot;
        s = persistence::DecodeSegmentRecords(
            (*seg)->records(), h.version, later,
            DescribeName(name) + " journal " + path, &recs);
        if (s.ok() && !later && (*seg)->size() != h.file_bytes) {
          s = Status::Corruption(DescribeName(name) + " journal " + path +
                                 ": shorter than its header says");
        }
      }
      if (!s.ok()) problems->push_back(s.ToString());
      for (const auto& r : recs) {
        if (r.seq > d.shards[i].sequence) ++*records;
      }
    }
  }
  return Status::OK();
}

}  // namespace shardfilter::internal
