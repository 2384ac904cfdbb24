// TieredFilter: an ordered list of sharded filters from coarse to precise
// (e.g. FPR 0.1, then 0.01), each with its own hash seed, optionally ending
// in an exact level: the key set itself. Design and figures: docs/tiered.md.
//
//   auto t = TieredFilter::Create(db.get(), "blacklist",
//       {.levels = {{.capacity = 1'000'000, .fpp = 0.1},
//                   {.capacity = 1'000'000, .fpp = 0.01}},
//        .exact_level = true});
//   (*t)->Add("10.0.0.1");
//   Result<bool> bad = (*t)->Contains("10.0.0.2");  // false, no FP
//
// Add reaches every level, then the exact level; a query stops at the first
// level that says "absent" (most absent keys stop at the small first level),
// and only keys every filter level passed are looked up in the exact level.
// Levels hash the key each with their own seed (derived from the base seed
// as LevelSeed(seed, i) unless the level spec sets one), so their false
// positives are independent and the filters' compound FPR is the product of
// the levels' rates; with the exact level the answer has no false positive.
//
// A standalone tiered filter (Create(spec)) keeps everything in memory, its
// exact level in a hash set. A persistent one lives in a Database: level i
// is the ordinary catalog filter LevelName(name, i) (listed by
// Database::List, checkpointed and journalled like any filter), and the
// descriptor and exact level are in the store
// (persistence/tiered_table.h). An Add is acknowledged after every
// level and then the exact level were written with the filter's durability, so
// that no crash leaves an acknowledged key absent from a level.
//
// Thread safety: every method may be called from any number of threads at
// once. Queries take no lock. Adds and removes of filters that support
// removal serialise per key on one of 1024 hash-striped mutexes (so that the
// exact level's count and the levels' copies move together); Bloom-only
// filters' adds take no lock. A persistent tiered filter must not be used
// after its Database was closed (calls then return NotSupported) or
// destroyed; Database::Close must not race with calls on it.
#ifndef SHARDFILTER_ENGINE_TIERED_FILTER_H_
#define SHARDFILTER_ENGINE_TIERED_FILTER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

namespace internal {
class ExactLevel;
struct TieredCounters;
class TieredAccess;
}  // namespace internal

// Most filter levels of a tiered filter.
inline constexpr uint32_t kMaxTieredLevels = 8;

// Level i's default seed: Remix(base + i), a bijection of the base seed for
// each i and distinct across levels (Remix is a bijection).
inline constexpr uint64_t LevelSeed(uint64_t base, uint32_t level) {
  return Remix(base + level);
}

struct TieredSpec {
  // The filter levels, coarse (queried first) to precise; 1..8 of them.
  // Each is a full FilterSpec (type, capacity, fpp, shards, ...). A level
  // whose seed is left at kDefaultSeed gets LevelSeed(seed, i); seeds must
  // be pairwise distinct. Each level's durability is replaced by the one
  // below.
  std::vector<FilterSpec> levels;
  // Ends in an exact level (the key set): no false positive, and removes
  // become possible when every level supports them.
  bool exact_level = false;
  // Base seed of the derived level seeds.
  uint64_t seed = kDefaultSeed;
  // Durability of every level and of the exact level; nullopt = the
  // Database's default. Ignored by standalone filters.
  std::optional<Durability> durability;
};

// One filter level's figures. Counters count queries since creation / open.
struct TieredLevelStats {
  uint32_t level = 0;
  FilterType type = FilterType::kBloom;
  uint64_t seed = 0;
  uint64_t capacity = 0;
  uint64_t bytes = 0;        // memory of the level's tables
  double target_fpr = 0;     // its spec's fpp
  double estimated_fpr = 0;  // from its current fill (ShardedStats)
  uint64_t reached = 0;      // queries that asked this level
  uint64_t settled = 0;      // ... that it answered "absent"
  uint64_t passed = 0;       // reached - settled
  // False passes / absent queries that reached the level, where "absent" is
  // known from a later level's "absent" or the exact level's. -1 when
  // unknowable (the last level of a filter without exact level).
  double measured_fpr = -1;
};

struct TieredStats {
  std::vector<TieredLevelStats> levels;
  bool exact_level = false;
  uint64_t queries = 0;
  uint64_t exact_reached = 0;  // lookups in the exact level
  uint64_t exact_absent = 0;   // ... that found nothing (false positives
                               // of the filter levels, all caught)
  uint64_t exact_found = 0;
  uint64_t filter_bytes = 0;  // sum of the levels' bytes
  // Product of the levels' target / estimated rates: the filter levels'
  // compound FPR. The whole filter's FPR is 0 with an exact level.
  double compound_target_fpr = 0;
  double compound_estimated_fpr = 0;
  // exact_absent / absent queries: the filter levels' measured compound FPR
  // (-1 without an exact level).
  double compound_measured_fpr = -1;
};

class TieredFilter {
 public:
  // A standalone in-memory tiered filter. InvalidArgument for a bad spec
  // (no levels, more than 8, duplicate seeds, a level's bad parameters).
  static Result<std::shared_ptr<TieredFilter>> Create(const TieredSpec& spec);

  // Creates a persistent tiered filter in `db`: the levels (as catalog
  // filters LevelName(name, i)), then its descriptor, each synced. Errors as
  // Create(spec), plus AlreadyExists, NotSupported (read-only) and the
  // Database's. Level filters left by a crashed Create are replaced.
  static Result<std::shared_ptr<TieredFilter>> Create(Database* db,
                                                      std::string_view name,
                                                      const TieredSpec& spec);
  // The open tiered filter of that name (one object per Database and name:
  // repeated calls return the same one). NotFound when there is none;
  // Corruption when a level is missing or is not the recorded filter.
  static Result<std::shared_ptr<TieredFilter>> Open(Database* db,
                                                    std::string_view name);
  // Deletes the descriptor and exact level (one synced write), then the
  // levels. Open handles then fail their mutations with NotFound.
  static Status Drop(Database* db, std::string_view name);
  // "<name>\x00level/<i>": the catalog name of level i.
  static std::string LevelName(std::string_view name, uint32_t level);
  // The bytes that mark a level's name ("\0level/"). Database::Create,
  // Drop, SetExpiry and ImportFilter refuse names holding them (they are
  // the tiered filters' own), and so does shardfilter-server's keyspace.
  static constexpr std::string_view kLevelMark{"\0level/", 7};

  ~TieredFilter();
  TieredFilter(const TieredFilter&) = delete;
  TieredFilter& operator=(const TieredFilter&) = delete;

  const std::string& name() const { return name_; }  // "" if standalone
  uint32_t level_count() const { return static_cast<uint32_t>(levels_.size()); }
  const ShardedFilter& level(uint32_t i) const { return *levels_[i]; }
  bool has_exact_level() const { return exact_ != nullptr; }
  // Every level is counting or cuckoo and there is an exact level.
  bool supports_remove() const { return counted_; }

  // Adds to every level, then the exact level. The first failure (Full,
  // IOError, NotFound after Drop, ...) is returned; levels already written
  // are undone where the type can undo (extra positives otherwise, never a
  // false negative). With supports_remove() the exact level keeps a count,
  // so that adds and removes pair up as in the levels.
  Status Add(std::string_view key);
  // As Add for each key (levels in batches); per_item as in ShardedFilter.
  Status AddKeys(std::span<const std::string_view> keys,
                 std::vector<Status>* per_item = nullptr);
  // Removes one copy: the exact level must hold the key (else NotFound),
  // its count is decremented first, then one copy is removed from every
  // level. NotSupported unless supports_remove(), and for persistent
  // filters with durability none (after a crash their exact level may be
  // ahead of the levels' checkpoint, and removing a key a level lost could
  // remove another key's copy).
  Status Remove(std::string_view key);

  // True when the key is (exact level) / may be (no exact level) present.
  // Errors only from the exact level (IOError, Corruption, NotSupported
  // after Database::Close).
  Result<bool> Contains(std::string_view key) const;
  // out[i] = Contains(keys[i]), level by level in batches (the filters'
  // prefetching batch queries; one MultiGet for the exact level).
  // REQUIRES: out.size() == keys.size().
  Status ContainsKeys(std::span<const std::string_view> keys,
                      std::span<uint8_t> out) const;

  TieredStats Stats() const;

 private:
  friend class internal::TieredAccess;
  TieredFilter();
  // Builds the object around ready levels and exact level.
  static std::shared_ptr<TieredFilter> Assemble(
      std::string name, std::vector<std::shared_ptr<ShardedFilter>> levels,
      std::unique_ptr<internal::ExactLevel> exact);
  // Add of one key whose per-level hashes are given; REQUIRES: its stripe
  // held when counted_.
  Status AddHashed(std::string_view key, std::span<const uint64_t> hashes);
  // Removes the add from levels [0, upto) that can undo it.
  void Undo(std::span<const uint64_t> hashes, size_t upto);
  std::mutex& StripeOf(uint64_t level0_hash) const;

  std::string name_;
  std::vector<std::shared_ptr<ShardedFilter>> levels_;
  std::unique_ptr<internal::ExactLevel> exact_;  // null: no exact level
  bool counted_ = false;                         // supports_remove()
  bool none_durability_ = false;
  std::unique_ptr<internal::TieredCounters> counters_;
  // 1024 mutexes when counted_: one per key stripe (top bits of the level 0
  // hash), held across a key's whole add or remove.
  std::unique_ptr<std::mutex[]> stripes_;
};

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_TIERED_FILTER_H_
