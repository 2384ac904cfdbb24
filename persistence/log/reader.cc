// The filter journal's reader (log/reader.h).
#include "shardfilter/persistence/log/reader.h"

#include <algorithm>
#include <utility>

#include "shardfilter/persistence/log/paths.h"

namespace shardfilter::persistence {

Result<EpochFiles> ListEpoch(Env& env, std::string_view store_path,
                             const LogOwner& owner) {
  EpochFiles out;
  out.shards.resize(owner.shards);
  if (owner.epoch == 0) return out;
  const std::string dir = FilterJournalEpochDir(store_path, owner.epoch);
  SF_ASSIGN_OR_RETURN(const std::vector<std::string> files, env.Children(dir));
  std::vector<std::vector<std::pair<uint64_t, std::string>>> found(
      owner.shards);
  for (const std::string& file : files) {
    uint32_t shard = 0;
    uint64_t number = 0;
    if (ParseThreadSegmentName(file, &shard, &number)) {
      out.threads.push_back(dir + "/" + file);
      continue;
    }
    if (!ParseSegmentName(file, &shard, &number)) continue;
    if (shard >= owner.shards) {
      return Status::Corruption(owner.what + ": journal segment " + dir + "/" +
                                file + " names shard " + std::to_string(shard) +
                                " of " + std::to_string(owner.shards));
    }
    found[shard].emplace_back(number, dir + "/" + file);
  }
  for (uint32_t i = 0; i < owner.shards; ++i) {
    std::sort(found[i].begin(), found[i].end());
    for (auto& [n, path] : found[i]) out.shards[i].push_back(std::move(path));
  }
  std::sort(out.threads.begin(), out.threads.end());
  return out;
}

namespace {

// Opens a segment and checks that it is the owner's (epoch and name), of
// the kind asked for; P2: whether it was written in an earlier boot.
Status OpenOwned(Env& env, const std::string& path, const LogOwner& owner,
                 bool thread, const std::string& what,
                 std::shared_ptr<Segment>* seg, bool* later_boot) {
  SF_ASSIGN_OR_RETURN(*seg, Segment::OpenExisting(env, path));
  const SegmentHeader& h = (*seg)->header();
  if (thread && h.version != kThreadSegmentVersion) {
    return Status::Corruption(what + ": not a thread segment (version " +
                              std::to_string(h.version) + ")");
  }
  if (!thread && h.version == kThreadSegmentVersion) {
    return Status::Corruption(what + ": a thread segment under a shard's name");
  }
  if (h.epoch != owner.epoch || h.name != owner.name) {
    return Status::Corruption(what + ": header names another filter");
  }
  *later_boot = LaterBoot(h.boot_id);
  return Status::OK();
}

// J3, T3: within the boot that wrote it, a file shorter (or longer) than
// its header says is damage; after a reboot what survived is read.
Status CheckSize(const Segment& seg, bool later_boot, const std::string& what) {
  if (later_boot || seg.size() == seg.header().file_bytes) return Status::OK();
  return Status::Corruption(what + ": file is " + std::to_string(seg.size()) +
                            " bytes, its header says " +
                            std::to_string(seg.header().file_bytes));
}

}  // namespace

Status ReadShardSegment(Env& env, const std::string& path,
                        const LogOwner& owner, uint32_t shard,
                        std::shared_ptr<Segment>* seg,
                        std::vector<FilterJournalRecord>* out, uint64_t* base,
                        Status* damage) {
  const std::string what = owner.what + " journal " + path;
  bool later_boot = false;
  SF_RETURN_IF_ERROR(
      OpenOwned(env, path, owner, /*thread=*/false, what, seg, &later_boot));
  if ((*seg)->header().shard != shard) {
    return Status::Corruption(what + ": header names another filter");
  }
  *base = 0;
  *damage = CheckSize(**seg, later_boot, what);
  if (damage->ok()) {
    *damage = DecodeSegmentRecords((*seg)->records(), (*seg)->header().version,
                                   later_boot, what, out, nullptr, base);
  }
  return Status::OK();
}

Status ReadThreadSegment(Env& env, const std::string& path,
                         const LogOwner& owner, std::shared_ptr<Segment>* seg,
                         std::vector<ThreadRecord>* out, Status* damage) {
  const std::string what = owner.what + " journal " + path;
  bool later_boot = false;
  SF_RETURN_IF_ERROR(
      OpenOwned(env, path, owner, /*thread=*/true, what, seg, &later_boot));
  *damage = CheckSize(**seg, later_boot, what);
  if (damage->ok()) {
    *damage = DecodeThreadRecords((*seg)->records(), later_boot, owner.shards,
                                  what, out);
  }
  return Status::OK();
}

Status ShardSegments::Read(Env& env, const std::vector<std::string>& paths,
                           const LogOwner& owner, uint32_t shard,
                           bool tolerate_damage) {
  for (const std::string& path : paths) {
    std::shared_ptr<Segment> seg;
    std::vector<FilterJournalRecord> recs;
    uint64_t base = 0;
    Status damage;
    SF_RETURN_IF_ERROR(
        ReadShardSegment(env, path, owner, shard, &seg, &recs, &base, &damage));
    if (!damage.ok() && !tolerate_damage) return damage;
    segs_.push_back(std::move(seg));
    recs_.push_back(std::move(recs));
    bases_.push_back(base);
    if (!damage.ok()) break;  // the records before the damage, then a gap
  }
  // J2: activation order is base order (segments are made ahead, so their
  // numbers need not follow it). Empty ones (base 0) go last.
  std::vector<size_t> order(segs_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return BaseOf(a) < BaseOf(b); });
  std::vector<std::shared_ptr<Segment>> segs;
  std::vector<std::vector<FilterJournalRecord>> recs;
  std::vector<uint64_t> bases;
  for (size_t k : order) {
    segs.push_back(std::move(segs_[k]));
    recs.push_back(std::move(recs_[k]));
    bases.push_back(bases_[k]);
  }
  segs_ = std::move(segs);
  recs_ = std::move(recs);
  bases_ = std::move(bases);
  return Status::OK();
}

std::vector<FilterJournalRecord> ShardSegments::Collect(uint64_t after) {
  std::vector<FilterJournalRecord> out;
  max_.assign(segs_.size(), 0);
  for (size_t k = 0; k < recs_.size(); ++k) {
    uint64_t until = ~uint64_t{0};
    for (size_t j = k + 1; j < segs_.size(); ++j) {
      until = std::min(until, BaseOf(j));
    }
    for (FilterJournalRecord& rec : recs_[k]) {
      if (rec.seq >= until) break;  // J2 (records are in seq order)
      max_[k] = rec.seq;
      if (rec.seq <= after) continue;  // dead: in the checkpoint
      out.push_back(std::move(rec));
    }
  }
  return out;
}

std::vector<std::shared_ptr<Segment>> ShardSegments::Finish(uint64_t last) {
  for (size_t k = 0; k < segs_.size(); ++k) {
    const uint64_t max = k < max_.size() ? max_[k] : 0;
    segs_[k]->max_seq.store(std::min(last, max), std::memory_order_relaxed);
  }
  return std::move(segs_);
}

}  // namespace shardfilter::persistence
