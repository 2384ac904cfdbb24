// The pieces behind TieredFilter (engine/tiered_filter.h): the exact level
// (in memory or in the store), the query counters, spec resolution and the
// engine's access to a Database's store. Not part of the public API.
//
// Thread safety: ExactLevel implementations are fully concurrent (the memory
// one stripes a hash map over 64 shared mutexes; the store one is RocksDB's).
// TieredCounters: any number of threads add; Sum is approximate while they
// do. The free functions are pure.
#ifndef SHARDFILTER_ENGINE_INTERNAL_TIERED_INTERNAL_H_
#define SHARDFILTER_ENGINE_INTERNAL_TIERED_INTERNAL_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/tiered_filter.h"
#include "shardfilter/filters/detail/thread_stripe.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::internal {

// The key set with a count per key (0 = absent).
class ExactLevel {
 public:
  virtual ~ExactLevel() = default;
  virtual Result<uint32_t> Get(std::string_view key) const = 0;
  // counts->size() becomes keys.size().
  virtual Status MultiGet(std::span<const std::string_view> keys,
                          std::vector<uint32_t>* counts) const = 0;
  // Sets each key's count (0 deletes it), all or nothing for the store.
  virtual Status Put(
      std::span<const std::pair<std::string_view, uint32_t>> entries) = 0;
};

std::unique_ptr<ExactLevel> NewMemoryExactLevel();
// The exact level of tiered filter `name` in `db`, written with durability
// `d` (kNone and kJournal: WAL on, unsynced; kSync: fsynced). Every call
// first checks the Database is open (NotSupported otherwise).
std::unique_ptr<ExactLevel> NewStoreExactLevel(Database* db, std::string name,
                                               Durability d);

// Query outcomes: i < L = level i said "absent"; L = every level passed and
// the exact level found nothing (or, without exact level, "maybe present");
// L + 1 = the exact level found the key.
inline constexpr uint32_t kTieredOutcomes = kMaxTieredLevels + 2;

// Per-outcome query counts, on the querying thread's own stripe
// (filters/detail/thread_stripe.h). Relaxed: they are statistics.
struct TieredCounters {
  void Add(uint32_t outcome, uint64_t count) { counts.Add(outcome, count); }
  std::array<uint64_t, kTieredOutcomes> Sum() const;

  ThreadStripedCounts<kTieredOutcomes> counts;
};

// Checks and completes a spec: 1..8 levels, each resolved by ResolveSpec
// with durability `d` (nullopt: left unset), seeds derived (LevelSeed) where
// left at kDefaultSeed and pairwise distinct.
Result<TieredSpec> ResolveTieredSpec(const TieredSpec& spec,
                                     std::optional<Durability> d);

// The Database internals tiered filters need (friend of Database).
class TieredAccess {
 public:
  static persistence::Store* store(Database& db);
  // True once Close ran. Takes the catalog mutex.
  static bool closed(const Database& db);
  // A level's catalog filter (TieredFilter::LevelName): Database::Create
  // and Drop refuse those names to everyone else.
  static Result<std::shared_ptr<ShardedFilter>> CreateLevel(
      Database& db, std::string_view level_name, const FilterSpec& spec);
  static Status DropLevel(Database& db, std::string_view level_name);
};

}  // namespace shardfilter::internal

#endif  // SHARDFILTER_ENGINE_INTERNAL_TIERED_INTERNAL_H_
