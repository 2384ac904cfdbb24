// The host-independent command layer's view of filters and keys.
//
// Each host implements these interfaces: shardfilter-server over a Database
// directory (tools/server/db_keyspace.h), the Redis module (tools/module/)
// over Redis's own keyspace. The command layer (tools/commands/) includes no
// RocksDB or oneTBB header (engine/sharded_filter.h, whose specs and
// statistics SF.* reports, includes none), so the module can reuse it
// inside redis-server.
//
// Thread safety: the server calls a Keyspace and its handles from every
// event-loop thread at once, so its implementation must be thread-safe; the
// module calls them from Redis's main thread only.
#ifndef SHARDFILTER_TOOLS_COMMANDS_KEYSPACE_H_
#define SHARDFILTER_TOOLS_COMMANDS_KEYSPACE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/engine/tiered_filter.h"
#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/status.h"
#include "tools/commands/staging.h"

namespace shardfilter::commands {

// What a command asks to create, RedisBloom's parameters already resolved
// and mapped (tools/commands/bloom_commands.cc, cuckoo_commands.cc).
struct CreateParams {
  FilterType type = FilterType::kBloom;
  uint64_t capacity = 100;
  double error_rate = 0.01;  // Bloom (cuckoo: the width is chosen from it)
  bool scalable = true;
  uint32_t expansion = 2;       // capacity factor of the next link, >= 1
  uint32_t bucket_size = 0;     // cuckoo: 2, 4 or 8
  uint32_t max_iterations = 0;  // cuckoo: relocation budget
  // SF.CREATE / SF.MIGRATE only (RedisBloom's commands leave the host's
  // defaults). A host refuses what it cannot keep (the module: durability
  // and retained hashes, Redis persists its keys itself) with
  // InvalidArgument naming it.
  uint32_t shards = 0;  // 0: the host's default
  std::optional<Durability> durability;
  bool retain_hashes = false;
};

// SF.MIGRATION's report of a key's running or last migration.
struct MigrationReport {
  std::string phase;  // engine/migration.h MigrationPhaseName
  uint64_t items_total = 0;
  uint64_t items_done = 0;
  uint64_t ops_replayed = 0;
  uint64_t ops_queued = 0;
  double seconds = 0;
  std::string error;  // why it failed or was aborted; empty otherwise
};

// Figures BF.INFO / CF.INFO / BF.CARD report.
struct FilterSummary {
  FilterType type = FilterType::kBloom;
  uint64_t capacity = 0;  // declared + grown
  uint64_t bytes = 0;     // memory of the tables
  uint32_t links = 1;     // most links of any shard ("Number of filters")
  uint64_t items = 0;     // Bloom: adds that set a bit; cuckoo: held
  uint64_t deletes = 0;
  uint64_t buckets = 0;  // cuckoo
  bool scalable = true;
  uint32_t expansion = 0;
  uint32_t bucket_size = 0;     // cuckoo: the layout's slots per bucket
  uint32_t max_iterations = 0;  // cuckoo
};

// One filter. Mutations return only once the filter's durability mode
// allows the write to be acknowledged (journal: journalled; sync: synced).
class FilterHandle {
 public:
  virtual ~FilterHandle() = default;
  virtual FilterType type() const = 0;
  // true when the item was added, false when a Bloom filter already held
  // every bit of it (nothing changed, no capacity used; still journalled,
  // and acknowledged only as durable as an add: the bits it found may
  // belong to an add whose journal write has not completed). Counting and
  // cuckoo filters (multisets) add a copy: always true. Errors: Full (no
  // room, a non-scaling filter full, or the most copies of one item a
  // cuckoo or counting filter keeps: copies never grow a filter);
  // NotFound (dropped meanwhile); IOError (journal write failed);
  // ResourceExhausted (growth over the memory budget).
  virtual Result<bool> Add(std::string_view item) = 0;
  // Every item attempted; per_item[i] is item i's status and, where it is
  // OK, added[i] what Add would answer (an item repeated within the call
  // counts as added once).
  virtual void AddMany(std::span<const std::string_view> items,
                       std::vector<Status>* per_item,
                       std::vector<uint8_t>* added) = 0;
  virtual bool MayContain(std::string_view item) const = 0;
  // out[i] = 1 if item i may be present. REQUIRES: out.size() == size.
  virtual void MayContainMany(std::span<const std::string_view> items,
                              std::span<uint8_t> out) const = 0;
  virtual uint32_t Count(std::string_view item) const = 0;
  // OK, NotFound (definitely absent: nothing removed), NotSupported (Bloom).
  virtual Status Remove(std::string_view item) = 0;
  virtual FilterSummary Summary() const = 0;
  // SF.INFO / SF.SHARDS: the resolved spec and the full statistics.
  virtual FilterSpec Spec() const = 0;
  virtual ShardedStats Stats() const = 0;
  // What a mutation waits for before it returns (kSync: an fsync). Hosts
  // that answer from an event loop run such writes off it.
  virtual Durability durability() const { return Durability::kNone; }
};

// SF.DEDUPCREATE's parameters (engine/dedup_store.h DedupOptions).
struct DedupParams {
  uint64_t capacity = 1'000'000;  // keys the filters are sized for
  double error_rate = 0.01;       // of the filter in front of the set
  uint64_t ttl_ms = 0;            // 0: keys never expire
  uint32_t partitions = 0;        // with a TTL; 0: the engine's default (8)
  FilterType filter_type = FilterType::kCuckoo;
  std::optional<Durability> durability;  // nullopt: the host's default
};

// One dedup set: an exact set of keys ("new?" answers, optional TTL).
// Every call answers for all items or fails as a whole (nothing written).
class DedupHandle {
 public:
  virtual ~DedupHandle() = default;
  // out[i] = 1 when items[i] was new (it is now stored), 0 when present
  // (a repeat within the call is new at its first occurrence only).
  virtual Status Insert(std::span<const std::string_view> items,
                        std::vector<uint8_t>* out) = 0;
  virtual Status Contains(std::span<const std::string_view> items,
                          std::vector<uint8_t>* out) = 0;
  // out[i] = 1 when items[i] was present (it is now gone).
  virtual Status Remove(std::span<const std::string_view> items,
                        std::vector<uint8_t>* out) = 0;
  virtual DedupStats Stats() = 0;
  virtual uint64_t ttl_ms() = 0;
  virtual uint32_t partitions() = 0;
  virtual Durability durability() = 0;
};

// SF.TIERCREATE's parameters (engine/tiered_filter.h TieredSpec).
struct TieredParams {
  std::vector<CreateParams> levels;  // coarse to precise
  bool exact_level = false;
  std::optional<Durability> durability;  // nullopt: the host's default
};

// One tiered filter: levels of filters, optionally ending in the exact set.
class TieredHandle {
 public:
  virtual ~TieredHandle() = default;
  // per_item[i]: items[i]'s status (Full, ...). Returns the first error.
  virtual Status Add(std::span<const std::string_view> items,
                     std::vector<Status>* per_item) = 0;
  // out[i] = 1 when items[i] is (exact level) / may be present.
  virtual Status Contains(std::span<const std::string_view> items,
                          std::span<uint8_t> out) = 0;
  // NotFound (not held), NotSupported (a level cannot remove, no exact
  // level, or durability none).
  virtual Status Remove(std::string_view item) = 0;
  virtual TieredStats Stats() = 0;
  // As FilterHandle::durability (every level has the same).
  virtual Durability durability() { return Durability::kNone; }
};

// What a key holds, for TYPE, SCAN TYPE and WRONGTYPE.
enum class KeyKind { kNone, kFilter, kDedup, kTiered };

class Keyspace {
 public:
  virtual ~Keyspace() = default;
  // NotFound when no such key; InvalidArgument for a key the host cannot
  // hold (the commands treat both as absent); WrongType when the key holds
  // a dedup set or tiered filter.
  virtual Result<std::shared_ptr<FilterHandle>> Lookup(
      std::string_view key) = 0;
  // The TYPE name of what `key` holds ("none" when nothing).
  virtual std::string TypeOf(std::string_view key);
  // AlreadyExists, InvalidArgument (key, parameters), TooLarge (over the
  // host's limit of one filter), ResourceExhausted (over the memory budget).
  virtual Result<std::shared_ptr<FilterHandle>> Create(
      std::string_view key, const CreateParams& params) = 0;
  // True when it existed.
  virtual Result<bool> Delete(std::string_view key) = 0;
  // Every key, in byte order.
  virtual std::vector<std::string> Keys() = 0;
  virtual uint64_t Size() = 0;
  virtual Status Flush() = 0;
  // Makes every filter's state durable as a checkpoint (SAVE / BGSAVE).
  virtual Status Checkpoint() = 0;
  // Unix time of the last completed checkpoint (or of the open).
  virtual int64_t LastCheckpointUnix() = 0;
  // The filter as one byte string in shardfilter's dump format (the
  // engine's export: versioned, checksummed; a consistent snapshot).
  virtual Result<std::string> Dump(std::string_view key) = 0;
  // Creates `key` holding exactly the dumped filter. AlreadyExists;
  // InvalidArgument / Corruption / NotSupported for bad bytes (nothing is
  // created).
  virtual Status Restore(std::string_view key, std::string_view bytes) = 0;
  // Largest key the host holds (Database: 1..1024 bytes).
  virtual size_t MaxKeyBytes() const = 0;
  // LOADCHUNK staging and SCANDUMP copies (staging.h): `bytes` allocated
  // by the host and charged to its memory budget until the buffer is
  // destroyed. ResourceExhausted (nothing taken) when they do not fit: the
  // commands answer Redis's OOM error. The default charges
  // MemoryBudget::Default().
  virtual Result<std::unique_ptr<StagingBuffer>> NewStaging(
      uint64_t bytes, std::string_view what);
  // The largest dump one LOADCHUNK sequence may announce.
  virtual uint64_t MaxRestoreBytes() const { return uint64_t{64} << 30; }
  // True while the running command must be applied whatever this host's
  // limits for clients say (the module: the master's replication stream,
  // an AOF being loaded); the bound on pending restores does not apply.
  virtual bool MustObey() const { return false; }
  // True when the memory budget that refuses this host's creates and
  // growth (ResourceExhausted) is the process's limit under Redis's name
  // maxmemory (shardfilter-server's --maxmemory): those refusals answer
  // Redis's -OOM. False (the default; the module, whose MEMORY-BUDGET is its
  // own, below Redis's maxmemory, which Redis checks itself): they keep
  // RedisBloom's texts.
  virtual bool BudgetIsMaxmemory() const { return false; }
  // EXPIRE / TTL / PERSIST: the key's deadline, unix time in ms (nullopt:
  // none). A key past its deadline is absent to every call. NotFound when
  // there is no such key; NotSupported where the host keeps no deadlines
  // (the default; the module: Redis expires its keys itself).
  virtual Status SetExpiry(std::string_view key,
                           std::optional<int64_t> unix_ms) {
    (void)key;
    (void)unix_ms;
    return Status::NotSupported("key expiry is not available here");
  }
  virtual Result<std::optional<int64_t>> GetExpiry(std::string_view key) {
    (void)key;
    return Status::NotSupported("key expiry is not available here");
  }
  // SF.UNION: ORs the Bloom filters at `sources` into the one at `dest`
  // (ShardedFilter::UnionWith), durable as the host's writes are (the
  // server: a synced checkpoint of dest) when this returns. Every key is
  // checked first and nothing changes on an error: NotFound (a key holds
  // nothing), WrongType (a dedup set, tiered filter or another type's
  // value), InvalidArgument (not Bloom, or another shape), NotSupported
  // (dest retains hashes; the default: the host cannot).
  virtual Status Union(std::string_view dest,
                       std::span<const std::string_view> sources) {
    (void)dest;
    (void)sources;
    return Status::NotSupported("SF.UNION is not available here");
  }
  // SF.MIGRATE: starts rebuilding `key` online into a filter made from
  // `target` (writers keep going; the key names the new filter once done).
  // NotFound, InvalidArgument (no retained hashes to rebuild from, bad
  // target), AlreadyExists (one is running); NotSupported where the host
  // has no online migration (the default).
  virtual Status StartMigration(std::string_view key,
                                const CreateParams& target) {
    (void)key;
    (void)target;
    return Status::NotSupported("online migration is not available here");
  }
  // SF.MIGRATION: the running or last migration of `key`; NotFound when
  // none.
  virtual Result<MigrationReport> Migration(std::string_view key) {
    (void)key;
    return Status::NotSupported("online migration is not available here");
  }
  // Dedup sets and tiered filters share the keyspace with filters: one key
  // holds one of them (WrongType when it holds another kind; AlreadyExists
  // from a create when the key is taken by any kind). NotSupported where
  // the host has none (the default; the module).
  virtual Result<std::shared_ptr<DedupHandle>> LookupDedup(
      std::string_view key) {
    (void)key;
    return Status::NotSupported("dedup sets are not available here");
  }
  virtual Result<std::shared_ptr<DedupHandle>> CreateDedup(
      std::string_view key, const DedupParams& params) {
    (void)key;
    (void)params;
    return Status::NotSupported("dedup sets are not available here");
  }
  virtual Result<std::shared_ptr<TieredHandle>> LookupTiered(
      std::string_view key) {
    (void)key;
    return Status::NotSupported("tiered filters are not available here");
  }
  virtual Result<std::shared_ptr<TieredHandle>> CreateTiered(
      std::string_view key, const TieredParams& params) {
    (void)key;
    (void)params;
    return Status::NotSupported("tiered filters are not available here");
  }
};

// Redis's TYPE names for our filters: RedisBloom's module type names for
// Bloom and cuckoo, our own for counting Bloom; dedup sets and tiered
// filters: kDedupTypeName, kTieredTypeName (9 characters, as module types).
const char* TypeName(FilterType type);
inline constexpr const char* kDedupTypeName = "SFdedupst";
inline constexpr const char* kTieredTypeName = "SFtiered-";

}  // namespace shardfilter::commands

#endif  // SHARDFILTER_TOOLS_COMMANDS_KEYSPACE_H_
