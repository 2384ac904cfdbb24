// Retained key hashes (FilterSpec::retain_hashes): the multiset of hashes a
// filter holds, kept in the "hashes" column family so that a filter can be
// rebuilt into another of any type, capacity, rate or shard count
// (engine/migration.h) without the original keys.
//
//   key   = u16 len | name | u64 hash (big-endian: a prefix scan visits one
//           filter's hashes in hash order)
//   value = i64 little-endian count: adds minus removes of that hash
//
// Ops reach the family as RocksDB merges (+1 per add, -1 per remove) in the
// same WriteBatch as the op's journal entry (persistence/store.h,
// JournalBatch::Retain), so the retained multiset always equals the
// journalled ops: what recovery rebuilds. A count of 0 or less means
// "absent"; keys of count 0 are removed by RocksDB's compactions (the
// family's compaction filter, retained_hashes.cc R1), so churn does not
// grow the family without bound. The merge operator sums counts; a value that
// is not 8 bytes fails the read as Corruption.
//
// Thread safety: RetainedHashScan is used by one thread at a time; it reads
// a RocksDB snapshot taken when the scan was created (its iterator is made
// at the first Next()), so concurrent writes neither appear in nor disturb
// it.
#ifndef SHARDFILTER_PERSISTENCE_RETAINED_HASHES_H_
#define SHARDFILTER_PERSISTENCE_RETAINED_HASHES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardfilter/filters/status.h"

namespace rocksdb {
class ColumnFamilyOptions;
class DB;
class ColumnFamilyHandle;
class Iterator;
class Slice;
class Snapshot;
}  // namespace rocksdb

namespace shardfilter::persistence {

inline constexpr const char* kHashesCf = "hashes";

// The family's options: the summing merge operator (same name on every
// open, as RocksDB requires) and whole-key SST Bloom filters.
rocksdb::ColumnFamilyOptions HashesCfOptions();

// NamePrefix(name) | BE64(hash).
std::string RetainedHashKey(std::string_view name, uint64_t hash);
// An i64 little-endian count as a merge operand / value.
std::string EncodeRetainedCount(int64_t count);

// A consistent, ordered scan of one filter's retained hashes.
class RetainedHashScan {
 public:
  ~RetainedHashScan();
  RetainedHashScan(const RetainedHashScan&) = delete;
  RetainedHashScan& operator=(const RetainedHashScan&) = delete;

  // Appends up to `max` (hash, count) pairs with count > 0 to *out; returns
  // false in *more once the scan is exhausted. Corruption for a malformed
  // key or value (naming the filter).
  Status Next(size_t max, std::vector<std::pair<uint64_t, int64_t>>* out,
              bool* more);
  // Hashes returned so far (count > 0 only).
  uint64_t returned() const { return returned_; }

 private:
  friend class Store;
  RetainedHashScan(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                   std::string name, std::string start);
  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* cf_ = nullptr;
  const rocksdb::Snapshot* snapshot_ = nullptr;
  std::string name_;
  std::string prefix_;
  std::string start_;  // first key to visit
  std::string end_;    // upper bound (kept alive for the iterator)
  std::unique_ptr<rocksdb::Slice> upper_;
  std::unique_ptr<rocksdb::Iterator> it_;
  bool started_ = false;
  uint64_t returned_ = 0;
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_RETAINED_HASHES_H_
