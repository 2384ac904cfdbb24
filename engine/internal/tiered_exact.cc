#include <unordered_map>

#include "shardfilter/engine/internal/database_impl.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/tiered_internal.h"
#include "shardfilter/filters/internal/thread_annotations.h"
#include "shardfilter/persistence/tiered_table.h"

namespace shardfilter::internal {

namespace {

// In memory: 64 stripes, each a hash map under a shared mutex. Stripe =
// top 6 bits of XXH3(key, 0): independent of anything the levels use.
class MemoryExactLevel final : public ExactLevel {
 public:
  Result<uint32_t> Get(std::string_view key) const override {
    const Stripe& s = stripes_[StripeOf(key)];
    ReaderLock lock(s.mu);
    auto it = s.map.find(key);
    return it == s.map.end() ? 0u : it->second;
  }
  Status MultiGet(std::span<const std::string_view> keys,
                  std::vector<uint32_t>* counts) const override {
    counts->resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) (*counts)[i] = *Get(keys[i]);
    return Status::OK();
  }
  Status Put(
      std::span<const std::pair<std::string_view, uint32_t>> entries) override {
    for (const auto& [key, count] : entries) {
      Stripe& s = stripes_[StripeOf(key)];
      WriterLock lock(s.mu);
      if (count == 0) {
        auto it = s.map.find(key);
        if (it != s.map.end()) s.map.erase(it);
      } else {
        s.map.insert_or_assign(std::string(key), count);
      }
    }
    return Status::OK();
  }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return HashKey(s, 1); }
  };
  struct alignas(64) Stripe {
    mutable SharedMutex mu;
    std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> map
        SF_GUARDED_BY(mu);
  };
  static uint32_t StripeOf(std::string_view key) {
    return static_cast<uint32_t>(HashKey(key, 0) >> 58);
  }
  Stripe stripes_[64];
};

class StoreExactLevel final : public ExactLevel {
 public:
  StoreExactLevel(Database* db, std::string name, Durability d)
      : db_(db),
        table_(TieredAccess::store(*db)),
        name_(std::move(name)),
        sync_(d == Durability::kSync) {}

  Result<uint32_t> Get(std::string_view key) const override {
    SF_RETURN_IF_ERROR(CheckOpen());
    return table_.Get(name_, key);
  }
  Status MultiGet(std::span<const std::string_view> keys,
                  std::vector<uint32_t>* counts) const override {
    SF_RETURN_IF_ERROR(CheckOpen());
    return table_.MultiGet(name_, keys, counts);
  }
  Status Put(
      std::span<const std::pair<std::string_view, uint32_t>> entries) override {
    SF_RETURN_IF_ERROR(CheckOpen());
    return table_.Put(name_, entries, sync_);
  }

 private:
  Status CheckOpen() const {
    if (TieredAccess::closed(*db_)) {
      return Status::NotSupported("the database is closed");
    }
    return Status::OK();
  }
  Database* db_;
  persistence::TieredTable table_;
  std::string name_;
  bool sync_;
};

}  // namespace

std::unique_ptr<ExactLevel> NewMemoryExactLevel() {
  return std::make_unique<MemoryExactLevel>();
}

std::unique_ptr<ExactLevel> NewStoreExactLevel(Database* db, std::string name,
                                               Durability d) {
  return std::make_unique<StoreExactLevel>(db, std::move(name), d);
}

std::array<uint64_t, kTieredOutcomes> TieredCounters::Sum() const {
  std::array<uint64_t, kTieredOutcomes> out{};
  for (uint32_t i = 0; i < kTieredOutcomes; ++i) out[i] = counts.Load(i);
  return out;
}

Result<TieredSpec> ResolveTieredSpec(const TieredSpec& spec,
                                     std::optional<Durability> d) {
  if (spec.levels.empty() || spec.levels.size() > kMaxTieredLevels) {
    return Status::InvalidArgument(
        "a tiered filter has 1.." + std::to_string(kMaxTieredLevels) +
        " filter levels, not " + std::to_string(spec.levels.size()));
  }
  TieredSpec out = spec;
  out.durability = d;
  for (uint32_t i = 0; i < out.levels.size(); ++i) {
    FilterSpec level = out.levels[i];
    if (level.seed == kDefaultSeed) level.seed = LevelSeed(spec.seed, i);
    level.durability = d;
    Result<FilterSpec> r = ResolveSpec(level, d.value_or(Durability::kNone));
    if (!r.ok()) {
      return r.status().WithContext("tiered level " + std::to_string(i));
    }
    if (!d.has_value()) r->durability.reset();
    out.levels[i] = *r;
    for (uint32_t j = 0; j < i; ++j) {
      if (out.levels[j].seed == out.levels[i].seed) {
        return Status::InvalidArgument(
            "tiered levels " + std::to_string(j) + " and " + std::to_string(i) +
            " share a seed: their false positives would not be independent");
      }
    }
  }
  return out;
}

persistence::Store* TieredAccess::store(Database& db) {
  return db.impl_->store.get();
}

Result<std::shared_ptr<ShardedFilter>> TieredAccess::CreateLevel(
    Database& db, std::string_view level_name, const FilterSpec& spec) {
  return db.CreateNamed(level_name, spec);
}

Status TieredAccess::DropLevel(Database& db, std::string_view level_name) {
  return db.DropNamed(level_name);
}

bool TieredAccess::closed(const Database& db) {
  MutexLock lock(db.impl_->mu);
  return db.impl_->closed;
}

}  // namespace shardfilter::internal
