// ShardedFilter: one logical filter of any type (Bloom, counting Bloom,
// cuckoo), partitioned into a power-of-two number of shards by hash bits.
//
// A key is hashed once (XXH3 with the filter's seed); its shard is the top
// log2(S) bits of hash * kRouterMultiplier (FilterSpec::router, below), so
// that within a shard the bits its filter uses for positions and
// fingerprints are as uniform as over all keys. Each shard owns a chain of
// Filters ("links"): the first is sized for ceil(capacity / S) items with the
// same seed and type parameters, so the whole behaves like one filter of the
// same total size (tests/sharded_filter_test.cc measures that). A scalable
// filter (the default) appends larger, tighter links to a shard that fills up,
// keeping the compound rate under fpp (engine/internal/shard_chain.h,
// tests/expansion_test.cc).
//
// A ShardedFilter is either standalone (ShardedFilter::Create: in memory
// only) or owned by a Database (engine/database.h), which journals its
// mutations per the filter's durability mode and checkpoints it.
//
// Thread safety: every public method may be called from any number of
// threads at once. Queries take no lock (the link filters are themselves
// concurrent, and a chain only grows: engine/internal/shard.h S1). A mutation
// takes only its shard's lock, shared; a checkpoint takes one shard's lock
// exclusive at a time, only while it copies that shard (see
// engine/internal/shard.h for the numbered invariants).
#ifndef SHARDFILTER_ENGINE_SHARDED_FILTER_H_
#define SHARDFILTER_ENGINE_SHARDED_FILTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/detail/shard_fast_path.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/detail/split_block.h"
#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

class MemoryBudget;

namespace internal {
class MemoryAccount;
struct Shard;
class FilterLog;
class JournalSink;
class Migration;
class ShardedFilterAccess;
}  // namespace internal

// What survives a crash (DESIGN.md invariant 4). Values are stored in the
// catalog: they never change meaning.
enum class Durability : uint8_t {
  // State as of the last completed checkpoint; mutations write nothing.
  kNone = 0,
  // Every acknowledged mutation is in the journal before the call returns:
  // a record copied into the shard's memory-mapped journal segment (no
  // system call), or, for filters that retain hashes, a RocksDB write (WAL
  // on). Survives kill -9; after a power loss, the last checkpoint plus per
  // shard a prefix of later ops (docs/format-store.md).
  kJournal = 1,
  // As kJournal, plus the journal is synced (fdatasync of the segment,
  // shared by concurrent writers of a shard; RocksDB: a synced write)
  // before the call returns: survives power loss.
  kSync = 2,
};

// "none", "journal", "sync"; "unknown" otherwise.
const char* DurabilityName(Durability d);
// Parses the names above; InvalidArgument otherwise.
Result<Durability> ParseDurability(std::string_view name);

// How a filter spreads keys over its shards (FilterSpec::router; stored
// with the filter, docs/format-store.md: a filter keeps its router for
// life). Values are stored: they never change meaning.
//  kMultiply: shard = the top log2(S) bits of hash * kRouterMultiplier
//    (mod 2^64). The keys of shard s are the hashes C^-1 * y for the y of
//    one run of 2^(64 - log2 S) consecutive values, so their low
//    64 - log2(S) bits take every value exactly once and their top bits
//    follow a Weyl sequence (equidistributed): the bits a shard's filter
//    uses (a block or bucket from the top 32 or 48 bits, bit positions or
//    a fingerprint from the low ones) are as uniform within a shard as
//    over all keys. One multiply: the shard is known ~10 cycles sooner
//    than through Remix, and an add's lock and table prefetch wait for
//    it (sharded_bench BM_OneAdd, 5e7 items, 2-16 shards: a Bloom add
//    routed by the multiply takes the 1-shard time, by Remix 1.3x it).
//  kRemix: the top log2(S) bits of Remix(hash) (filters/hash.h), two
//    multiplies and three shift-xors: every filter stored before the
//    router was recorded (those read back as kRemix).
enum class ShardRouter : uint8_t { kMultiply = 0, kRemix = 1 };
inline constexpr uint64_t kRouterMultiplier = 0x9E3779B97F4A7C15ULL;  // odd

// Most shards a filter may have. A shard costs one cache line of metadata,
// one journal key range and one checkpoint record.
inline constexpr uint32_t kMaxShards = 256;
static_assert(kMaxShards <= internal::kNoFastPathCount,
              "a Remix-routed filter's inline paths index kNoFastPaths");

// The shard count used when FilterSpec::shards is 0:
//   S = next power of two >= ceil(capacity / 1,000,000), clamped to
//   [1, 256]; and at least 2 once capacity >= 1,000,000 (so that a
//   checkpoint of a filter that matters never has to copy all of it at
//   once, and two cores can work on a batch).
// E.g. 10,000 -> 1; 1e6 -> 2; 5e6 -> 8; 1e8 -> 128; 1e9 -> 256.
uint32_t DefaultShardCount(uint64_t capacity);

// Everything that defines a filter. Stored whole in the catalog descriptor.
// Zero in an optional numeric field means "the type's default".
struct FilterSpec {
  FilterType type = FilterType::kBloom;
  // Items the whole filter is sized for (split evenly over the shards).
  uint64_t capacity = 1'000'000;
  // Target false-positive rate at capacity, in (0, 1).
  double fpp = 0.01;
  // Power of two in [1, 256]; 0 = DefaultShardCount(capacity).
  uint32_t shards = 0;
  // How keys are spread over the shards (ShardRouter above). New filters:
  // kMultiply; filters stored before it existed read back as kRemix.
  ShardRouter router = ShardRouter::kMultiply;
  // Hash seed (stored; keys are always rehashed with it).
  uint64_t seed = kDefaultSeed;
  // Per-filter durability; nullopt = the Database's default.
  std::optional<Durability> durability;
  // Bloom only: the bit layout of every link (filters/bloom_filter.h).
  // kAuto (default) resolves per link, from that link's capacity and rate:
  // split block near 1%, blocked where split block would cost more than 5%
  // more memory (a scalable filter's later links, at halved rates, may so
  // use another layout than its first). Other types: kAuto only.
  BloomLayout layout = BloomLayout::kAuto;
  // Bloom / counting: slots per key; 0 = optimal for fpp.
  uint32_t k = 0;
  // Cuckoo: 8, 12 or 16; 0 = chosen from fpp.
  uint32_t fingerprint_bits = 0;
  // Cuckoo: 2, 4 or 8 slots per bucket; 0 = the filter's default (4).
  uint32_t bucket_size = 0;
  // Cuckoo: relocations before an insert reports Full; 0 = default.
  uint32_t max_kicks = 0;
  // Upper bound on the memory of the whole filter (all shards and all their
  // links); 0 = the filters' default (64 GiB per shard). A create whose
  // tables would exceed it is TooLarge; growth stops there (Full).
  uint64_t max_bytes = 0;
  // Online expansion (docs/design.md, "Online expansion"). When true, a
  // shard whose newest link holds its capacity appends a link of capacity x
  // `expansion` and half the rate (a cuckoo link: what the earlier links
  // leave of the rate; the compound rate stays under `fpp` at any size),
  // up to 32 links per shard. When false, the filter holds one
  // link per shard and an add that finds it full (Bloom / counting: adds
  // held reached the capacity; cuckoo: that, or no room in the table)
  // returns Full and changes nothing. Scalable filters pay ~1.44 bits/item
  // (Bloom) or ~1 fingerprint bit (cuckoo) over a non-scaling one for the
  // first link's halved rate.
  bool scalable = true;
  // Capacity growth factor from one link to the next, in [1, 16];
  // 0 = the default, 2. Larger factors mean fewer links (faster queries)
  // but bigger, rarer allocations. With 1, Bloom and counting links double
  // from the 9th on (so that 32 links hold far more than 32 of the first).
  uint32_t expansion = 0;
  // Keep every key's hash in the store (the "hashes" column family: 8
  // bytes of key and 8 of count per distinct hash, written in the same
  // RocksDB write as the op's journal entry), so that the filter can later
  // be rebuilt into one of any type, capacity, FPR or shard count
  // (Database::StartMigration, `shardfilter migrate`). Needs a Database and
  // a journalled durability (the retained set is written with each op):
  // durability none is refused at Create, and a session override to none is
  // raised to journal for such filters.
  bool retain_hashes = false;
  // Cuckoo only: RedisBloom's geometry (its CF.RESERVE), instead of tables
  // sized from capacity and fpp. Link 0 of the whole filter has
  // nextpow2(capacity / bucket_size) buckets (at least 1), split evenly over
  // the shards (at least 1 bucket each); link i has expansion^i times link
  // 0's buckets; every link has 8-bit fingerprints (fingerprint_bits must
  // be 0 or 8; bucket_size 2, 4 or 8, 0 = 2) and holds as many items as it
  // has slots. Each link's rate when full is CuckooFpr(8, b, 1) (~2b/255:
  // 1.57% at b = 2), and fpp is set to it: the rate promised per link, as
  // RedisBloom's; a chain of n links promises at most n times it (not a
  // compound bound under a fixed fpp, unlike the other filters).
  bool cuckoo_pow2_buckets = false;
};

// What an add did, when it did not fail (a failure, e.g. Full, is a
// Status). Values are stable: the server's BF.ADD answers 1 for kAdded and
// 0 for kAlreadyPresent.
enum class AddOutcome : uint8_t {
  // The item was added: Bloom, it set at least one new bit; counting and
  // cuckoo (multisets), a copy was added (always this outcome).
  kAdded = 1,
  // Bloom only: every bit of the key was set already (the key, or keys that
  // cover its bits, were added before). Nothing changed in the filter, no
  // capacity was used and the filter did not grow. Under journal / sync the
  // add is still journalled before it is acknowledged: the bits it found
  // may belong to an add whose journal write has not completed yet.
  kAlreadyPresent = 0,
};

// One shard's figures.
struct ShardStats {
  uint32_t shard = 0;
  FilterStats filter;                  // the chain's merged figures
                                       // (internal/shard_chain.h)
  uint32_t links = 1;                  // links in the shard's chain
  uint64_t last_sequence = 0;          // last journal sequence assigned
                                       // (a Bloom filter's single-key adds
                                       // take none without a journal, nor
                                       // under durability journal on
                                       // memory-mapped segments)
  uint64_t checkpoint_sequence = 0;    // last sequence in the checkpoint
  uint64_t checkpoint_generation = 0;  // 0 = never checkpointed
  uint64_t checkpoint_bytes = 0;       // serialized size at that checkpoint
  bool dirty = false;                  // changed since the last checkpoint
};

// Aggregated figures plus one entry per shard. In `total`: capacity is the
// declared capacity plus the capacity of every link appended by growth;
// bytes, slots, items, deletes and estimated_cardinality are sums;
// fill_ratio is slot-weighted; estimated_fpr is the mean over shards (a
// query lands on a uniformly random shard) of each chain's compound rate;
// target_fpr is the declared (compound) target; bits_per_item = bytes * 8 /
// capacity.
struct ShardedStats {
  FilterStats total;
  std::vector<ShardStats> shards;
};

class ShardedFilter {
 public:
  // A standalone, in-memory sharded filter (durability is ignored: nothing
  // is persisted). InvalidArgument for bad parameters (shards not a power
  // of two or > 256, fpp outside (0, 1), capacity 0, a table past what the
  // type can address, ...), TooLarge for tables over spec.max_bytes, and
  // whatever the filter type's Create reports.
  static Result<std::unique_ptr<ShardedFilter>> Create(const FilterSpec& spec);
  // As Create, with the filter's tables (and every link it grows) charged
  // to `budget` (engine/memory_budget.h; null: MemoryBudget::Default()):
  // ResourceExhausted, allocating nothing, when they do not fit, and an add
  // that would grow the filter past it fails with ResourceExhausted. The
  // bytes go back to the budget when the filter is destroyed.
  static Result<std::unique_ptr<ShardedFilter>> Create(
      const FilterSpec& spec, std::shared_ptr<MemoryBudget> budget);

  ~ShardedFilter();
  ShardedFilter(const ShardedFilter&) = delete;
  ShardedFilter& operator=(const ShardedFilter&) = delete;

  // The catalog name ("" for a standalone filter).
  const std::string& name() const { return name_; }
  // After a migration (engine/migration.h) switched this filter's name to
  // a new filter, every method of this handle forwards to that filter (and
  // the accessors below describe it); re-Get the name to release this
  // filter's memory.
  //
  // The spec with every default resolved (shards and durability set).
  const FilterSpec& spec() const { return Live().spec_; }
  FilterType type() const { return Live().spec_.type; }
  uint64_t seed() const { return Live().spec_.seed; }
  uint32_t shard_count() const { return Live().shard_count_; }
  // The durability in force: the spec's, unless the owning Database was
  // opened with DatabaseOptions::durability_override.
  Durability durability() const { return Live().durability_; }

  // HashKey(key, seed()).
  uint64_t Hash(std::string_view key) const { return hasher_(key); }
  // The shard a hash belongs to (the filter's ShardRouter, above).
  uint32_t ShardOf(uint64_t hash) const { return Live().LocalShardOf(hash); }
  // Direct read access to one link of one shard's chain (tests, tools,
  // benchmarks). REQUIRES: shard < shard_count(), link <
  // shard_links(shard). Valid for the filter's lifetime (links are never
  // removed).
  const Filter& shard_filter(uint32_t shard, uint32_t link = 0) const;
  // Links in the shard's chain (1 until it grows).
  uint32_t shard_links(uint32_t shard) const;
  // The items that link of the shard holds (as shard_filter's REQUIRES):
  // Bloom, the distinct adds it took (its chain counts them, the link does
  // not); the other types, the link's own count of copies held. A figure
  // under concurrent adds.
  uint64_t shard_link_items(uint32_t shard, uint32_t link) const;

  // --- Single-key operations: touch one shard, no global lock. ---
  // Adds; Full when a cuckoo shard has no room (nothing changed). With a
  // journalled durability the entry is written (and synced, for kSync)
  // before this returns OK. NotSupported on a read-only Database; NotFound
  // after the filter was dropped; IOError when the journal could not take
  // the op (nothing changed) or its write / sync failed: then nothing is
  // undone, the filter's writes stop (every later mutation fails with that
  // IOError) and checkpoints are refused until the Database is reopened,
  // which reloads it from checkpoint + journal (engine/internal/
  // filter_log.h L4). An op that returned IOError may or may not survive.
  //
  // The common add of each type runs in the caller's code (TryFastAdd,
  // TryFastOrderedAdd), any other add is one call (AddHashSlow,
  // InsertHashSlow). Always inline: left to its heuristics, g++ 12 keeps
  // Add out of line in a caller's loop (a call per add, and so the call
  // TryFastAdd is inline to avoid).
  [[gnu::always_inline]] Status Add(std::string_view key) {
    return AddHash(Hash(key));
  }
  [[gnu::always_inline]] Status AddHash(uint64_t hash) {
    if (AddOutcome outcome; TryCommonAdd(hash, &outcome)) [[likely]] {
      return Status::OK();
    }
    return AddHashSlow(hash);
  }
  // As Add, reporting the outcome: kAdded, kAlreadyPresent (Bloom: no new
  // bit; nothing changed, no capacity used), or the error (Full, ...).
  [[gnu::always_inline]] Result<AddOutcome> Insert(std::string_view key) {
    return InsertHash(Hash(key));
  }
  [[gnu::always_inline]] Result<AddOutcome> InsertHash(uint64_t hash) {
    if (AddOutcome outcome; TryCommonAdd(hash, &outcome)) [[likely]] {
      return outcome;
    }
    return InsertHashSlow(hash);
  }
  // Removes one copy. NotSupported for a plain Bloom filter; NotFound when the
  // key is definitely absent (nothing changed, nothing journalled).
  Status Remove(std::string_view key) { return RemoveHash(Hash(key)); }
  Status RemoveHash(uint64_t hash);
  // Lock-free queries. A shard of one split-block Bloom link (the default
  // layout at ~1%, before any growth) is probed inline here, in the
  // caller's code (Q1, engine/detail/shard_fast_path.h): at DRAM sizes a
  // loop of one-at-a-time queries runs as fast as the CPU overlaps their
  // misses, and a call into the library and its dispatch cost that
  // overlap. Every other shard takes MayContainHashSlow. Always inline:
  // left to its heuristics, g++ 12 keeps MayContain out of line in a
  // caller's benchmark loop (a call per query: at 5e7 items 1.6x the raw
  // filter's time).
  [[gnu::always_inline]] bool MayContain(std::string_view key) const {
    return MayContainHash(Hash(key));
  }
  [[gnu::always_inline]] bool MayContainHash(uint64_t hash) const {
    const internal::ShardFastPath& p = InlineFastPath(hash);
    // Acquire: pairs with Q1's release; `blocks` was written before it.
    if (const std::atomic<uint64_t>* t =
            p.table.load(std::memory_order_acquire)) [[likely]] {
      return internal::SplitMayContain(
          t + internal::SplitBlockOffset(hash, p.blocks) / sizeof(uint64_t),
          static_cast<uint32_t>(hash));
    }
    // A counting shard of one link (Q1's `counters`): its kernel on the
    // entry's table, block count and multipliers, one 64-byte block as the
    // split-block probe.
    if constexpr (CountingBloomFilter::kTableQuery) {
      if (const std::atomic<uint64_t>* c =
              p.counters.load(std::memory_order_acquire)) {
        return CountingBloomFilter::MayContainInTable(c, p.blocks, p.mult, p.k,
                                                      hash);
      }
    }
    // Any other one-link shard (Q1's `link`): its type's inline query, a
    // counting link's here (k > 8), the others' through one_link_query_
    // (the cuckoo query's validated two-bucket read is too long to inline
    // into every caller).
    if (const Filter* link = p.link.load(std::memory_order_acquire)) {
      if (spec_.type == FilterType::kCountingBloom) {
        return static_cast<const CountingBloomFilter*>(link)
            ->MayContainHashInline(hash);
      }
      return one_link_query_(*link, hash);
    }
    return MayContainHashSlow(hash);
  }
  // Copies held (an upper bound), summed over the shard's links: Bloom
  // 0/1 (whatever the links), counting min counter, cuckoo
  // matching fingerprints.
  uint32_t Count(std::string_view key) const { return CountHash(Hash(key)); }
  uint32_t CountHash(uint64_t hash) const;

  // --- Batch operations ---
  // Items are grouped by shard; shard groups run in parallel (oneTBB); all
  // journal entries of one call go to RocksDB in one WriteBatch (one sync).
  // Unlike Filter::AddHashes, every item is attempted: the result is OK when
  // all succeeded, else the first failure in input order. `per_item`
  // (optional) receives one Status per input item, in input order;
  // `outcomes` (optional, adds only) one AddOutcome per item, meaningful
  // where per_item is OK (a Bloom key found present, or repeated within
  // the batch, is kAlreadyPresent after its first add).
  Status AddHashes(std::span<const uint64_t> hashes,
                   std::vector<Status>* per_item = nullptr,
                   std::vector<AddOutcome>* outcomes = nullptr);
  Status AddKeys(std::span<const std::string_view> keys,
                 std::vector<Status>* per_item = nullptr,
                 std::vector<AddOutcome>* outcomes = nullptr);
  // As AddHashes, for removes (NotSupported for Bloom, before anything runs).
  Status RemoveHashes(std::span<const uint64_t> hashes,
                      std::vector<Status>* per_item = nullptr);
  Status RemoveKeys(std::span<const std::string_view> keys,
                    std::vector<Status>* per_item = nullptr);
  // out[i] = 1 if item i may be present, else 0, in input order.
  // REQUIRES: out.size() == input size.
  void MayContainHashes(std::span<const uint64_t> hashes,
                        std::span<uint8_t> out) const;
  void MayContainKeys(std::span<const std::string_view> keys,
                      std::span<uint8_t> out) const;

  // Per-shard and aggregated figures (approximate while writers run).
  ShardedStats Stats() const;
  // Stats() without the figures a pass over every table gives
  // (Filter::Counts(): fill_ratio, estimated_fpr and estimated_cardinality
  // are 0 for Bloom and counting filters): constant time per shard, for
  // sizes and counts (BF.INFO, BF.CARD, MEMORY USAGE, INFO memory).
  ShardedStats Counts() const;

  // True when every shard filter Equals the other's (same spec and bits).
  bool Equals(const ShardedFilter& other) const;

  // ORs `other`'s bits into this filter (SF.UNION), shard by shard and link
  // by link: afterwards every key acknowledged in `other` before the call
  // is present here. Both must be Bloom filters of one shape: the same
  // shard count and seed (and, with more than one shard, router), and each
  // shard of `other` with no more links
  // than this one's, link i of the same layout, k, bits and seed (filters
  // made with the same parameters; a scaling source must not have grown
  // further than this one). InvalidArgument otherwise, and NotSupported
  // when this filter retains hashes (a migration rebuilds from them and
  // would lose the union's keys), is being migrated (the migration replays
  // recorded ops into its target, and a union is none), is read-only,
  // dropped or closed; nothing changes then. Link i's fill becomes the
  // number of keys its bits now imply (Swamidass and Baldi's estimate, 1%
  // up; never lower than before, never above capacity, S7), so the union
  // grows (or, non-scaling, says Full) once it holds its capacity, and a
  // repeated union changes nothing. Keys beyond a link's capacity that the
  // union itself brings stay in that link: its rate is then above its
  // target (Stats().estimated_fpr shows it), as for any Bloom union.
  // Not journalled: the changed shards are marked dirty and the union is
  // durable once the next checkpoint commits (Database::Union takes one
  // before it returns). Safe against concurrent adds and queries on both
  // filters (the OR is under each shard's lock shared, as an add, S2: a
  // checkpoint holds a shard's whole union or none of it).
  Status UnionWith(const ShardedFilter& other);
  // UnionWith's checks alone: OK when UnionWith would run (nothing is
  // changed here).
  Status CheckUnion(const ShardedFilter& other) const;

 private:
  friend class internal::ShardedFilterAccess;

  ShardedFilter(std::string name, FilterSpec resolved);
  // MayContainHash past the fast path (a forward, a chain, another type,
  // a Remix-routed filter's shard).
  bool MayContainHashSlow(uint64_t hash) const;
  // The filter calls go to: this one, or the migration target it forwards
  // to (acquire pairs with the switch's release: engine/migration.cc).
  ShardedFilter* Forward() const {
    return forward_.load(std::memory_order_acquire);
  }
  const ShardedFilter& Live() const {
    const ShardedFilter* f = this;
    while (ShardedFilter* next = f->Forward()) f = next;
    return *f;
  }
  uint32_t LocalShardOf(uint64_t hash) const {
    if (shard_shift_ >= 64) return 0;
    const uint64_t x =
        remix_router_ ? Remix(hash) : hash * kRouterMultiplier;  // ShardRouter
    return static_cast<uint32_t>(x >> shard_shift_);
  }
  // The fast-path entry the inline paths (MayContainHash, TryFastAdd,
  // TryFastOrderedAdd) use for `hash`: its shard's entry of fast_, routed by
  // the multiply alone. A filter of several shards routed by Remix
  // (ShardRouter::kRemix: stores from before the router was recorded) has
  // inline_fast_ = internal::kNoFastPaths, whose entries are all null, so
  // those paths hand every call to the slow path, which routes by Remix: the
  // common case pays neither the router's second branch nor its jump (16
  // shards: 9 routing instructions per query, against 13 with the choice of
  // router). One shard is entry 0, without the multiply: its load then waits
  // on nothing (through the multiply a 1-shard query at 5e7 takes 1.4x the
  // time: docs/performance.md, "Tried and not kept").
  [[gnu::always_inline]] const internal::ShardFastPath& InlineFastPath(
      uint64_t hash) const {
    if (shard_shift_ >= 64) return inline_fast_[0];
    return inline_fast_[(hash * kRouterMultiplier) >> shard_shift_];
  }
  // Hands a successful op to a running migration (M2 in
  // engine/internal/migration.h). REQUIRES: the shard's lock held (and
  // order_mu for ordered types).
  // `maybe_present`: a Bloom add that found the key present (AddOutcome).
  // Inline: the common case (no migration) is one relaxed load per op.
  void RecordForMigration(uint32_t shard, uint64_t hash, bool remove,
                          bool maybe_present = false) {
    if (internal::Migration* m = migration_.load(std::memory_order_relaxed))
        [[unlikely]] {
      RecordForMigration(m, shard, hash, remove, maybe_present);
    }
  }
  void RecordForMigration(internal::Migration* m, uint32_t shard, uint64_t hash,
                          bool remove, bool maybe_present);
  // UnionWith's checks on live filters; *links: the source's link count per
  // shard, read once (sharded_union.cc).
  Status CheckUnion(const ShardedFilter& other,
                    std::vector<uint32_t>* links) const;
  // Overlaps a batch's cache misses (sharded_batch.cc).
  class BatchPrefetch;
  // Stats() (scan) or Counts().
  ShardedStats Statistics(bool scan) const;
  // Starts the miss of what an op on `hash` in shard `index` will touch,
  // before any lock: a shard of one split-block link inline (Q1's table;
  // relaxed: a stale table only wastes the hint), others through the
  // newest link (read lock-free, as a query reads it: S1).
  void PrefetchShard(uint32_t index, uint64_t hash, bool for_write) const;
  // A batch of at most kSmallBatchItems on a filter without a journal:
  // the items one at a time through InsertHash / RemoveHash, each one's
  // block prefetched first. Same results as RunBatch's grouped path.
  static constexpr size_t kSmallBatchItems = 16;
  Status RunSmallBatch(bool remove, std::span<const uint64_t> hashes,
                       std::vector<Status>* per_item,
                       std::vector<AddOutcome>* outcomes);
  // Applies one op kind to a batch; shared by the four batch calls.
  Status RunBatch(bool remove, std::span<const uint64_t> hashes,
                  std::vector<Status>* per_item,
                  std::vector<AddOutcome>* outcomes = nullptr);
  // One slice of a batch through the memory-mapped journal
  // (sharded_batch.cc); out[i] is item i's result. Group j (shard
  // involved[j]) is order[group_begin[j] .. group_begin[j + 1]).
  void RunMappedSlice(bool remove, std::span<const uint64_t> slice,
                      std::span<const uint32_t> involved,
                      std::span<const uint32_t> group_begin,
                      std::span<const uint32_t> order, size_t base, Status* out,
                      std::vector<AddOutcome>* outcomes);
  // The common add of fast_add_'s type, in the caller's code: true when it
  // added (*outcome set); false, with nothing changed, for the slow path.
  [[gnu::always_inline]] bool TryCommonAdd(uint64_t hash, AddOutcome* outcome) {
    if (fast_add_ == FastAdd::kBloom) return TryFastAdd(hash, outcome);
    if (fast_add_ == FastAdd::kCounting
            ? TryFastOrderedAdd<CountingBloomFilter>(hash)
            : fast_add_ == FastAdd::kCuckoo &&
                  TryFastOrderedAdd<CuckooFilter>(hash)) {
      *outcome = AddOutcome::kAdded;
      return true;
    }
    return false;
  }
  // The fast adds' check, under a shard's lock: no forward, detach or
  // migration. All three are set while every shard lock is held exclusive
  // (LockAll), so none starts before the caller unlocks (relaxed loads
  // suffice). A detach or migration shows in fast_blocked_, one load; a
  // forward needs none: SetForward clears every fast-path entry's table,
  // link and counters before it stores forward_, and both fast adds load
  // their entry's table or link again under the lock (ShardFastAdd,
  // ShardFastOrderedAdd), so an add that finds it non-null took its lock
  // before the switch (Q1). Each instruction on these paths counts: at 5e7
  // items one-at-a-time adds run as fast as consecutive adds' misses
  // overlap, and past a number of instructions per add that overlap drops
  // by one miss (docs/performance.md, "The sharded handle against its
  // link").
  bool PlainUnderShardLock() const {
    return !fast_blocked_.load(std::memory_order_relaxed);
  }
  // fast_blocked_ from detached_ and migration_. REQUIRES: LockAll held.
  void UpdateFastBlocked() {
    fast_blocked_.store(
        detached_.load(std::memory_order_relaxed) != 0 ||
            migration_.load(std::memory_order_relaxed) != nullptr,
        std::memory_order_relaxed);
  }
  // InsertHash's common case, inline in the caller's code: a live,
  // writable Bloom filter without a journal or a running migration, whose
  // shard is one split-block link with room (ShardFastAdd, engine/detail/
  // shard_fast_path.h), locked through the thread's reader slot (S2, S5).
  // True when it added (*outcome set); false, with nothing changed, for
  // InsertHashSlow to decide from scratch: everything else, and anything
  // found changed once the shard's lock is held. Inline because at DRAM
  // sizes a loop of adds runs as fast as the CPU overlaps consecutive adds'
  // misses, and a call into the library costs that overlap (the raw add
  // behind one call takes 1.25-1.3x its time; inline, the handle's add
  // runs a fifth fewer instructions, callgrind; its time against its link:
  // docs/performance.md, "The sharded handle against its link"). Always
  // inline: as MayContain.
  [[gnu::always_inline]] bool TryFastAdd(uint64_t hash, AddOutcome* outcome) {
    const internal::ShardFastPath& fast = InlineFastPath(hash);
    // Acquire (Q1: `blocks` is written before the table's release); the
    // add itself, ShardFastAdd, loads it again under the lock.
    const std::atomic<uint64_t>* const t =
        fast.table.load(std::memory_order_acquire);
    if (t == nullptr) return false;
    // The block's miss starts before the lock's and the fill's stores.
    __builtin_prefetch(
        t + internal::SplitBlockOffset(hash, fast.blocks) / sizeof(uint64_t),
        1);
    internal::ShardHead& h = *fast.head;
    internal::ReaderSlot* const slot = h.mu.TryLockSharedSlot();  // S2, S5
    if (slot == nullptr) return false;
    bool done = false;
    // No sequence: an unjournalled Bloom add takes none (ShardHead's
    // last_seq; its effect shows in the fill, which Mutations counts).
    if (PlainUnderShardLock()) [[likely]] {
      if (bool added; internal::ShardFastAdd(fast, hash, &added)) [[likely]] {
        // Stored only when clear: the shard's first line stays shared
        // between adding threads (mu orders it with the checkpoint's
        // clear, which cannot run while this add holds mu shared).
        if (!h.dirty.load(std::memory_order_relaxed)) {
          h.dirty.store(true, std::memory_order_relaxed);
        }
        *outcome = added ? AddOutcome::kAdded : AddOutcome::kAlreadyPresent;
        done = true;
      }
    }
    internal::ShardMutex::UnlockSharedSlot(slot);
    return done;
  }
  // As TryFastAdd, for a counting or cuckoo filter (fast_add_ kCounting,
  // kCuckoo; LinkFilter its type): a shard of one link with room
  // (ShardFastOrderedAdd), under the shard's order_mu alone (S3: the capped
  // add and its sequence together; S2: every exclusive holder of an
  // ordered shard's `mu` holds its order_mu too, so this add needs no
  // shared `mu`). A writer holding or waiting for `mu` sends the add to
  // InsertHashSlow, whose shared lock waits for it (S5: a stream of these
  // adds does not starve a checkpoint on order_mu). True when added;
  // false, with nothing changed, for InsertHashSlow to decide from
  // scratch. Keep it short: at DRAM sizes this loop runs in one of two
  // modes, a miss more or less in flight, and past a count of instructions
  // per add it drops to the slow one, about 1.25x slower (docs/performance.md,
  // "The sharded handle against its link"). Hence no reader slot's shared
  // lock, one flag for PlainUnderShardLock and the counting block computed
  // before the lock: so the counting handle's add at 5e7 runs in the fast
  // mode, 1.23x its own link's on the same table, with room for about 24
  // instructions more (sharded_bench BM_HandleAgainstLink, native).
  template <typename LinkFilter>
  [[gnu::always_inline]] bool TryFastOrderedAdd(uint64_t hash) {
    const internal::ShardFastPath& fast = InlineFastPath(hash);
    const Filter* const link = fast.link.load(std::memory_order_acquire);
    if (link == nullptr) return false;
    // The table's misses start before the lock's CAS.
    const auto& prepared_link = static_cast<const LinkFilter&>(*link);
    const auto prepared = internal::PrepareOrderedAdd(prepared_link, hash);
    internal::ShardHead& h = *fast.head;
    if (h.mu.WriterPending()) return false;  // S5
    h.order_mu.lock();                       // S2, S3
    bool done = false;
    if (PlainUnderShardLock()) [[likely]] {
      if (internal::ShardFastOrderedAdd(fast, hash, prepared_link, prepared))
          [[likely]] {
        h.TakeOrderedSeq();
        h.dirty.store(true, std::memory_order_relaxed);
        done = true;
      }
    }
    h.order_mu.unlock();
    return done;
  }
  // InsertHash and AddHash past their common case; both are InsertSlow,
  // inline in them (sharded_filter.cc only), so that neither costs a call
  // more than InsertHashSlow alone.
  Result<AddOutcome> InsertHashSlow(uint64_t hash);
  Status AddHashSlow(uint64_t hash);
  inline Result<AddOutcome> InsertSlow(uint64_t hash);
  Status CheckWritable() const {
    if (read_only_) [[unlikely]] {
      return ReadOnlyError();
    }
    return Status::OK();
  }
  static Status ReadOnlyError();
  // The journalled single-key paths (engine/sharded_journal.cc, FilterLog
  // L1-L4). REQUIRES: the shard's lock held shared, the filter live.
  Result<AddOutcome> JournalledInsert(uint32_t index, internal::Shard& s,
                                      uint64_t hash);
  Status JournalledRemove(uint32_t index, internal::Shard& s, uint64_t hash);
  bool Journalled() const {
    return journal_ != nullptr && durability_ != Durability::kNone;
  }
  // fast_add_ from what it depends on; whoever changes one of them calls
  // it (the constructor, ShardedFilterAccess::Attach).
  void UpdateFastAdd() {
    fast_add_ = FastAdd::kNone;
    if (read_only_ || Journalled()) return;
    if (spec_.type == FilterType::kBloom) fast_add_ = FastAdd::kBloom;
    if (spec_.type == FilterType::kCountingBloom) {
      fast_add_ = FastAdd::kCounting;
    }
    if (spec_.type == FilterType::kCuckoo) fast_add_ = FastAdd::kCuckoo;
  }

  // Unique in the process (Database::Version tells filters apart by it).
  const uint64_t id_;
  std::string name_;
  FilterSpec spec_;
  // HashKey with spec_.seed, its seed's share precomputed (filters/hash.h).
  KeyHasher hasher_;
  // A one-link shard's query, for spec_.type: each type's inline path in a
  // function of its own, so that none pays for another's registers (one
  // function with the three inlined pushed six registers on every query).
  bool (*one_link_query_)(const Filter& link, uint64_t hash) = nullptr;
  uint32_t shard_count_ = 1;
  uint64_t shard_shift_ = 64;  // 64 - log2(S); 64 means one shard
  bool remix_router_ = false;  // spec_.router == ShardRouter::kRemix
  std::unique_ptr<internal::Shard[]> shards_;
  // Shard i's query fast path (Q1); shards_[i].fast points to entry i.
  std::unique_ptr<internal::ShardFastPath[]> fast_;
  // fast_, or internal::kNoFastPaths for a filter of several shards routed
  // by Remix (InlineFastPath). Set by the constructor, constant.
  const internal::ShardFastPath* inline_fast_ = nullptr;
  // What this filter holds of its memory budget (each shard points to it
  // for growth); set before the filter is shared.
  std::shared_ptr<internal::MemoryAccount> account_;
  // Set by Database: where journal entries go (null: standalone or
  // durability none). Not owned; outlives this filter's use by Database.
  internal::JournalSink* journal_ = nullptr;
  // The journal's run-time state (segments, watermarks, stopped state):
  // made at recovery or Attach, before the filter is shared.
  std::unique_ptr<internal::FilterLog> log_;
  bool read_only_ = false;
  // Which common case InsertHash and AddHash may try first: TryFastAdd
  // (Bloom) or TryFastOrderedAdd (counting, cuckoo), for a writable filter
  // without a journal. Set with those, before the filter is shared
  // (UpdateFastAdd); constant afterwards.
  enum class FastAdd : uint8_t { kNone, kBloom, kCounting, kCuckoo };
  FastAdd fast_add_ = FastAdd::kNone;
  // detached_ != 0 or migration_ != null (PlainUnderShardLock): written
  // with them (UpdateFastBlocked), under the same locks; read as they are.
  std::atomic<bool> fast_blocked_{false};
  // *spec_.durability or the session override; set before the filter is
  // shared (constructor, Attach), constant afterwards.
  Durability durability_ = Durability::kNone;
  // kLive, kDropped (Database::Drop) or kClosed (Database::Close). Set
  // while every shard lock is held exclusive; read by mutations under their
  // shard's lock, which orders the two, so relaxed loads suffice.
  std::atomic<uint8_t> detached_{0};
  // The running migration of this filter, or null. Set and cleared while
  // every shard lock is held exclusive; read by mutations under their
  // shard's lock, which orders the two (relaxed suffices).
  std::atomic<internal::Migration*> migration_{nullptr};
  // Set once, at a migration's switch, while every shard lock is held
  // exclusive: forward_owner_ is written first, then forward_ (release).
  std::shared_ptr<ShardedFilter> forward_owner_;
  std::atomic<ShardedFilter*> forward_{nullptr};
};

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_SHARDED_FILTER_H_
