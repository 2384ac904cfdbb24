// TieredFilter: adds, removes, queries and statistics. Creation, opening
// and dropping of persistent tiered filters are in tiered_catalog.cc.
#include "shardfilter/engine/tiered_filter.h"

#include <array>
#include <numeric>

#include "shardfilter/engine/internal/tiered_internal.h"

namespace shardfilter {

using internal::ExactLevel;
using internal::TieredCounters;

namespace {

constexpr uint32_t kStripeBits = 10;  // 1024 key stripes

using LevelHashes = std::array<uint64_t, kMaxTieredLevels>;

std::string LevelContext(uint32_t i) {
  return "tiered level " + std::to_string(i);
}

}  // namespace

TieredFilter::TieredFilter() : counters_(std::make_unique<TieredCounters>()) {}
TieredFilter::~TieredFilter() = default;

std::shared_ptr<TieredFilter> TieredFilter::Assemble(
    std::string name, std::vector<std::shared_ptr<ShardedFilter>> levels,
    std::unique_ptr<ExactLevel> exact) {
  std::shared_ptr<TieredFilter> t(new TieredFilter());
  t->name_ = std::move(name);
  t->levels_ = std::move(levels);
  t->exact_ = std::move(exact);
  bool removable = t->exact_ != nullptr;
  for (const auto& l : t->levels_) removable &= l->type() != FilterType::kBloom;
  t->counted_ = removable;
  t->none_durability_ =
      !t->name_.empty() && t->levels_[0]->durability() == Durability::kNone;
  if (removable)
    t->stripes_ = std::make_unique<std::mutex[]>(1u << kStripeBits);
  return t;
}

Result<std::shared_ptr<TieredFilter>> TieredFilter::Create(
    const TieredSpec& spec) {
  SF_ASSIGN_OR_RETURN(TieredSpec resolved,
                      internal::ResolveTieredSpec(spec, std::nullopt));
  std::vector<std::shared_ptr<ShardedFilter>> levels;
  for (uint32_t i = 0; i < resolved.levels.size(); ++i) {
    Result<std::unique_ptr<ShardedFilter>> f =
        ShardedFilter::Create(resolved.levels[i]);
    if (!f.ok()) return f.status().WithContext(LevelContext(i));
    levels.push_back(std::move(*f));
  }
  return Assemble("", std::move(levels),
                  spec.exact_level ? internal::NewMemoryExactLevel() : nullptr);
}

std::mutex& TieredFilter::StripeOf(uint64_t level0_hash) const {
  return stripes_[level0_hash >> (64 - kStripeBits)];
}

void TieredFilter::Undo(std::span<const uint64_t> hashes, size_t upto) {
  for (size_t j = 0; j < upto; ++j) {
    // Bloom bits cannot be cleared: an extra positive, never a false
    // negative. The others drop the copy this add put in.
    if (levels_[j]->type() != FilterType::kBloom) {
      levels_[j]->RemoveHash(hashes[j]).ok();
    }
  }
}

Status TieredFilter::AddHashed(std::string_view key,
                               std::span<const uint64_t> hashes) {
  uint32_t count = 0;
  if (counted_) {
    SF_ASSIGN_OR_RETURN(count, exact_->Get(key));
    if (count == UINT32_MAX) {
      return Status::Full(
          "the exact level's count of this key is at its "
          "maximum");
    }
  }
  for (size_t i = 0; i < levels_.size(); ++i) {
    Status s = levels_[i]->AddHash(hashes[i]);
    if (!s.ok()) {
      Undo(hashes, i);
      return s.WithContext(LevelContext(static_cast<uint32_t>(i)));
    }
  }
  if (exact_ != nullptr) {
    std::pair<std::string_view, uint32_t> entry{key, count + 1};
    Status s = exact_->Put({&entry, 1});
    if (!s.ok()) {
      Undo(hashes, levels_.size());
      return s;
    }
  }
  return Status::OK();
}

Status TieredFilter::Add(std::string_view key) {
  LevelHashes h;
  for (size_t i = 0; i < levels_.size(); ++i) h[i] = levels_[i]->Hash(key);
  std::span<const uint64_t> hashes(h.data(), levels_.size());
  if (!counted_) return AddHashed(key, hashes);
  std::lock_guard lock(StripeOf(h[0]));
  return AddHashed(key, hashes);
}

Status TieredFilter::AddKeys(std::span<const std::string_view> keys,
                             std::vector<Status>* per_item) {
  std::vector<Status> local;
  std::vector<Status>& st = per_item != nullptr ? *per_item : local;
  st.assign(keys.size(), Status::OK());
  if (counted_) {  // per key, under its stripe
    for (size_t i = 0; i < keys.size(); ++i) st[i] = Add(keys[i]);
  } else {
    // Level by level in batches; a key that fails a level leaves the batch
    // (and its earlier levels' copies are undone where possible).
    const size_t n = keys.size(), levels = levels_.size();
    std::vector<uint64_t> h(n * levels);  // h[k * levels + i]
    for (size_t k = 0; k < n; ++k) {
      for (size_t i = 0; i < levels; ++i) {
        h[k * levels + i] = levels_[i]->Hash(keys[k]);
      }
    }
    std::vector<size_t> alive(n);
    std::iota(alive.begin(), alive.end(), 0);
    std::vector<uint64_t> batch;
    std::vector<Status> level_st;
    for (size_t i = 0; i < levels && !alive.empty(); ++i) {
      batch.resize(alive.size());
      for (size_t j = 0; j < alive.size(); ++j) {
        batch[j] = h[alive[j] * levels + i];
      }
      levels_[i]->AddHashes(batch, &level_st).ok();
      size_t w = 0;
      for (size_t j = 0; j < alive.size(); ++j) {
        size_t k = alive[j];
        if (level_st[j].ok()) {
          alive[w++] = k;
        } else {
          st[k] =
              level_st[j].WithContext(LevelContext(static_cast<uint32_t>(i)));
          Undo({&h[k * levels], levels}, i);
        }
      }
      alive.resize(w);
    }
    if (exact_ != nullptr && !alive.empty()) {
      std::vector<std::pair<std::string_view, uint32_t>> entries;
      entries.reserve(alive.size());
      for (size_t k : alive) entries.emplace_back(keys[k], 1);
      Status s = exact_->Put(entries);
      if (!s.ok()) {
        for (size_t k : alive) {
          st[k] = s;
          Undo({&h[k * levels], levels}, levels);
        }
      }
    }
  }
  for (const Status& s : st) {
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status TieredFilter::Remove(std::string_view key) {
  if (!counted_) {
    return Status::NotSupported(
        "tiered remove needs an exact level and counting or cuckoo levels "
        "only (Bloom bits cannot be cleared)");
  }
  if (none_durability_) {
    return Status::NotSupported(
        "tiered remove is not supported with durability none (after a crash "
        "the exact level may be ahead of the levels' checkpoint)");
  }
  LevelHashes h;
  for (size_t i = 0; i < levels_.size(); ++i) h[i] = levels_[i]->Hash(key);
  std::lock_guard lock(StripeOf(h[0]));
  SF_ASSIGN_OR_RETURN(uint32_t count, exact_->Get(key));
  if (count == 0) return Status::NotFound("the key is not in the exact level");
  // Exact level first: were we to stop after it, the levels would keep an
  // extra copy (extra positives only). Every level holds at least `count`
  // copies (adds write the levels before the exact level), so each level
  // removes one of this key's own copies.
  std::pair<std::string_view, uint32_t> entry{key, count - 1};
  SF_RETURN_IF_ERROR(exact_->Put({&entry, 1}));
  Status first;
  for (size_t i = 0; i < levels_.size(); ++i) {
    Status s = levels_[i]->RemoveHash(h[i]);
    if (!s.ok() && first.ok()) {
      first = s.WithContext(LevelContext(static_cast<uint32_t>(i)) +
                            " (removed from the exact level; this level "
                            "keeps a copy: extra positives only)");
    }
  }
  return first;
}

Result<bool> TieredFilter::Contains(std::string_view key) const {
  const uint32_t L = level_count();
  for (uint32_t i = 0; i < L; ++i) {
    if (!levels_[i]->MayContain(key)) {
      counters_->Add(i, 1);
      return false;
    }
  }
  if (exact_ == nullptr) {
    counters_->Add(L, 1);
    return true;
  }
  SF_ASSIGN_OR_RETURN(uint32_t count, exact_->Get(key));
  counters_->Add(count > 0 ? L + 1 : L, 1);
  return count > 0;
}

Status TieredFilter::ContainsKeys(std::span<const std::string_view> keys,
                                  std::span<uint8_t> out) const {
  const uint32_t L = level_count();
  std::array<uint64_t, internal::kTieredOutcomes> tally{};
  std::vector<uint32_t> alive(keys.size());
  std::iota(alive.begin(), alive.end(), 0u);
  std::vector<uint64_t> h;
  std::vector<uint8_t> r;
  for (uint32_t i = 0; i < L && !alive.empty(); ++i) {
    h.resize(alive.size());
    r.resize(alive.size());
    for (size_t j = 0; j < alive.size(); ++j) {
      h[j] = levels_[i]->Hash(keys[alive[j]]);
    }
    levels_[i]->MayContainHashes(h, r);
    size_t w = 0;
    for (size_t j = 0; j < alive.size(); ++j) {
      if (r[j]) {
        alive[w++] = alive[j];
      } else {
        out[alive[j]] = 0;
        ++tally[i];
      }
    }
    alive.resize(w);
  }
  Status result;
  if (exact_ == nullptr) {
    for (uint32_t k : alive) out[k] = 1;
    tally[L] += alive.size();
  } else if (!alive.empty()) {
    std::vector<std::string_view> ks;
    ks.reserve(alive.size());
    for (uint32_t k : alive) ks.push_back(keys[k]);
    std::vector<uint32_t> counts;
    result = exact_->MultiGet(ks, &counts);
    for (size_t j = 0; j < alive.size(); ++j) {
      // On error the survivors answer "present": never a false negative.
      bool found = !result.ok() || counts[j] > 0;
      out[alive[j]] = found ? 1 : 0;
      if (result.ok()) ++tally[found ? L + 1 : L];
    }
  }
  for (uint32_t o = 0; o < internal::kTieredOutcomes; ++o) {
    if (tally[o] != 0) counters_->Add(o, tally[o]);
  }
  return result;
}

TieredStats TieredFilter::Stats() const {
  const uint32_t L = level_count();
  const std::array<uint64_t, internal::kTieredOutcomes> n = counters_->Sum();
  TieredStats t;
  t.exact_level = exact_ != nullptr;
  t.compound_target_fpr = 1;
  t.compound_estimated_fpr = 1;
  uint64_t queries = 0;
  for (uint32_t o = 0; o <= L + 1; ++o) queries += n[o];
  t.queries = queries;
  uint64_t reached = queries;
  for (uint32_t i = 0; i < L; ++i) {
    ShardedStats ss = levels_[i]->Stats();
    TieredLevelStats ls;
    ls.level = i;
    ls.type = levels_[i]->type();
    ls.seed = levels_[i]->seed();
    ls.capacity = ss.total.capacity;
    ls.bytes = ss.total.bytes;
    ls.target_fpr = levels_[i]->spec().fpp;
    ls.estimated_fpr = ss.total.estimated_fpr;
    ls.reached = reached;
    ls.settled = n[i];
    ls.passed = reached - n[i];
    reached -= n[i];
    // Absent keys that passed level i: those a later level settled, plus
    // (with an exact level) those the exact level did not find.
    uint64_t false_passes = 0;
    for (uint32_t o = i + 1; o < L; ++o) false_passes += n[o];
    if (exact_ != nullptr) false_passes += n[L];
    bool knowable = exact_ != nullptr || i + 1 < L;
    if (knowable && false_passes + n[i] > 0) {
      ls.measured_fpr = static_cast<double>(false_passes) /
                        static_cast<double>(false_passes + n[i]);
    }
    t.filter_bytes += ls.bytes;
    t.compound_target_fpr *= ls.target_fpr;
    t.compound_estimated_fpr *= ls.estimated_fpr;
    t.levels.push_back(ls);
  }
  if (exact_ != nullptr) {
    t.exact_reached = n[L] + n[L + 1];
    t.exact_absent = n[L];
    t.exact_found = n[L + 1];
    uint64_t absent = queries - n[L + 1];
    if (absent > 0) {
      t.compound_measured_fpr =
          static_cast<double>(n[L]) / static_cast<double>(absent);
    }
  }
  return t;
}

}  // namespace shardfilter
