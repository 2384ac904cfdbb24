// DedupStore: an exact set of keys in RocksDB with an in-memory filter in
// front, in the same store directory as a Database's filters. The design
// and the byte-level layout are in docs/dedup.md.
//
//   auto db = Database::Open({.path = "/var/lib/sf"});
//   auto seen = DedupStore::Open(**db, "recommended", {.ttl_ms = 86'400'000});
//   Result<bool> fresh = (*seen)->InsertIfAbsent("user42:item7");
//
// Answers are exact: no false positives, no false negatives. The filter
// (a standalone cuckoo ShardedFilter by default; one per time partition
// with a TTL) answers "definitely absent" without a RocksDB read; a "maybe"
// is settled by a RocksDB Get (MultiGet in batches). The RocksDB set is the
// source of truth; the filters are rebuilt from it on open, so they never
// miss a stored key.
//
// TTL: the window W is cut into P partitions of g = W / P ms; bucket(t) =
// floor(t / g). With current bucket c (the largest bucket seen, from the
// clock), buckets c-P .. c are live: a key inserted at t is remembered
// while c <= bucket(t) + P, i.e. for more than W and at most W + g, then
// forgotten (a later InsertIfAbsent reports it new again). Its partition's
// filter is dropped and its RocksDB values deleted when it ages out.
//
// Keys are byte strings of 0..kMaxDedupKeyBytes bytes; set names 1..1024
// bytes. Errors: InvalidArgument (oversized key, bad options, options that
// contradict the stored set), Busy (the set is already open on this
// Database), NotFound (unknown set with create_if_missing
// false, or a read-only store without dedup sets), NotSupported (writes on
// a read-only store), Corruption (a stored value fails its checksum),
// IOError (RocksDB). A failed call changes nothing. Nothing prints.
//
// Thread safety: every method may be called concurrently. InsertIfAbsent,
// Remove and their batch forms are atomic per key: lock striping by key
// hash around check + write (a batch takes its stripes in ascending order),
// so of two threads inserting the same new key exactly one gets true.
// Contains takes no stripe lock. Lock order: (1) the partition ring
// (shared by operations, exclusive by rotation); (2) key stripes, ascending;
// (3) a partition's growth mutex. Expiry takes (2) without (1).
// The Database must stay open while the DedupStore is used: Close (or
// destroy) the DedupStore first.
#ifndef SHARDFILTER_ENGINE_DEDUP_STORE_H_
#define SHARDFILTER_ENGINE_DEDUP_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
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
class DedupCore;
}  // namespace internal

// Longest key a dedup set stores (RocksDB keys are the set name, a tag and
// the key bytes; a few KiB keeps memtable and SST blocks sane).
inline constexpr size_t kMaxDedupKeyBytes = 4096;
// Most time partitions per window.
inline constexpr uint32_t kMaxDedupPartitions = 1024;

struct DedupOptions {
  // Window in milliseconds: nullopt = the stored set's (none for a new set);
  // 0 = no expiry; otherwise keys expire as described above. Must match the
  // stored value when the set exists (a set's window is fixed at creation).
  std::optional<uint64_t> ttl_ms;
  // Partitions per window (TTL only): 0 = the stored value, or 8 for a new
  // set. ttl_ms must be a multiple of it. More partitions: finer expiry
  // (g = W / P) but more filters to consult per lookup.
  uint32_t partitions = 0;
  // Keys the filters are sized for: live at once without TTL, inserted per
  // window with TTL (each partition gets expected_keys / P). Going beyond
  // only chains extra filters (slower lookups), never loses exactness.
  uint64_t expected_keys = 1'000'000;
  // Target false-positive rate of the whole front (with TTL, each of the
  // P + 1 live partitions gets fpp / (P + 1)). In (0, 1).
  double fpp = 0.01;
  // kCuckoo (default) or kCounting remove keys from the filter too; with
  // kBloom a removed key's bits stay (a later lookup costs a RocksDB read).
  FilterType filter_type = FilterType::kCuckoo;
  // nullopt: the Database's durability_override, else its
  // default_durability. kNone: RocksDB writes without WAL (survive Close /
  // Flush, not a crash); kJournal: survive kill -9 (see journal_bytes);
  // kSync: one RocksDB write with its WAL fsynced before the call returns
  // (survive power loss). A session override on the Database wins over
  // this field.
  std::optional<Durability> durability;
  // Durability journal only: size of the set's own journal, a
  // memory-mapped file under the store directory (two halves; a multiple
  // of 8192 in [128 KiB, 2 GiB]). A call is acknowledged once its record
  // is copied into the mapping (in the page cache: it survives kill -9, not
  // a power loss), with no system call; each full half moves into RocksDB
  // as one WriteBatch. 0: no journal file, every call is one RocksDB write
  // with the WAL on (about 4x slower for single calls).
  uint64_t journal_bytes = 16 << 20;
  // Create the set when missing (ignored on a read-only Database).
  bool create_if_missing = true;
  // Milliseconds since an epoch; null = system_clock. Tests inject one.
  std::function<uint64_t()> clock;
  // Key lock stripes, a power of two in [1, 65536].
  uint32_t lock_stripes = 1024;
  // Largest table one of the set's filters may take (FilterSpec::max_bytes;
  // shardfilter-server's --max-filter-bytes): a set whose filters would be
  // larger is refused at creation (TooLarge, nothing created).
  // 0: the filters' default bound.
  uint64_t max_filter_bytes = 0;
};

// One live time partition (or the only one, without TTL).
struct DedupPartitionStats {
  uint64_t bucket = 0;        // time bucket (0 without TTL)
  uint64_t filter_items = 0;  // keys held by its filters
  uint64_t filter_bytes = 0;
  uint32_t filters = 0;    // chained filters (1 unless it overflowed)
  bool saturated = false;  // every lookup goes to RocksDB
};

// Counters since Open (relaxed: approximate while operations run).
struct DedupStats {
  uint64_t inserts = 0;                 // keys offered to InsertIfAbsent*
  uint64_t new_keys = 0;                // ... that were new
  uint64_t duplicates = 0;              // ... that were already present
  uint64_t removes = 0;                 // keys offered to Remove*
  uint64_t removed = 0;                 // ... that were present
  uint64_t lookups = 0;                 // keys offered to Contains*
  uint64_t rocksdb_reads = 0;           // keys read from RocksDB
  uint64_t reads_avoided = 0;           // filter said "definitely absent"
  uint64_t filter_false_positives = 0;  // "maybe" but absent (or expired)
  // false positives / (false positives + reads avoided): the FPR the
  // filter showed on keys that were absent.
  double observed_fpr = 0;
  uint64_t expired_keys = 0;        // entries deleted by expiry
  uint64_t expired_partitions = 0;  // partitions aged out
  uint64_t loaded_keys = 0;         // entries loaded into filters at Open
  uint64_t journal_replayed = 0;    // ops the journal held at Open
  uint64_t journal_flushes = 0;     // journal halves moved into RocksDB
  uint64_t open_ms = 0;             // time Open took (scan + rebuild)
  uint64_t current_bucket = 0;
  std::vector<DedupPartitionStats> partitions;
};

class DedupStore {
 public:
  // Opens (or creates) the set `name` on db's store, rebuilding its filters
  // from the stored keys and deleting keys that expired while it was
  // closed. A set is open at most once per Database: a second Open before
  // the first is closed is Busy (its journal has one writer).
  static Result<std::unique_ptr<DedupStore>> Open(Database& db,
                                                  std::string_view name,
                                                  const DedupOptions& options);
  // Deletes every stored value of the set (one synced write) and its
  // journal file. Busy while the set is open on this Database.
  static Status Drop(Database& db, std::string_view name);
  // Names of the stored sets, in byte order (empty when there are none).
  static Result<std::vector<std::string>> List(Database& db);

  // Calls Close (its status is lost: call Close to see it).
  ~DedupStore();
  DedupStore(const DedupStore&) = delete;
  DedupStore& operator=(const DedupStore&) = delete;

  // Moves the journal's records into RocksDB; with durability none,
  // flushes the set's column families so that what was acknowledged
  // survives. Later calls fail with NotSupported. Idempotent. Must not
  // race with other calls.
  Status Close();

  // True when the key was new (it is now stored), false when present.
  Result<bool> InsertIfAbsent(std::string_view key);
  Result<bool> Contains(std::string_view key);
  // True when the key was present (it is now gone), false when absent.
  // Checks the exact set first: a never-added key touches no filter.
  Result<bool> Remove(std::string_view key);

  // Batch forms: out[i] is 1/0 as the single forms' true/false for keys[i]
  // (within one InsertIfAbsentBatch, a repeated key is new at its first
  // occurrence only; within RemoveBatch, removed at its first). One
  // MultiGet for the filter's "maybe"s and one atomic WriteBatch. On error
  // nothing was written and *out is unspecified.
  Status InsertIfAbsentBatch(std::span<const std::string_view> keys,
                             std::vector<uint8_t>* out);
  Status ContainsBatch(std::span<const std::string_view> keys,
                       std::vector<uint8_t>* out);
  Status RemoveBatch(std::span<const std::string_view> keys,
                     std::vector<uint8_t>* out);

  // Ages out partitions that the clock has left behind (also done by every
  // operation that sees a new bucket). Returns entries deleted.
  Result<uint64_t> Expire();
  // Moves the journal's records into RocksDB and flushes the set's column
  // families (durability none: makes everything acknowledged so far
  // survive a crash).
  Status Flush();

  DedupStats Stats() const;
  const std::string& name() const;
  Durability durability() const;
  // The stored window (0 = none) and partitions.
  uint64_t ttl_ms() const;
  uint32_t partitions() const;

 private:
  explicit DedupStore(std::unique_ptr<internal::DedupCore> core);
  std::unique_ptr<internal::DedupCore> core_;
};

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_DEDUP_STORE_H_
