// DedupTable: the dedup store's exact key sets in RocksDB (docs/dedup.md),
// in two column families of the store directory:
//
//   dedup       u16 len | set name | 0x00            -> meta  (kind 5)
//               u16 len | set name | 0x01 | key      -> entry (kind 4)
//   dedup_time  u16 len | set name | u64 BE bucket | key -> index (kind 6)
//
// Every value is framed like the rest of the store
// (persistence/values.h): version, kind, payload, XXH3. An entry's
// payload is u64 LE insert time (ms) | u64 LE bucket; an all-zero entry (every
// entry of a set without TTL) is written compact: format version 2, no payload.
// The meta's payload is u64 LE ttl_ms | u32 LE partitions; an index value has
// none. The time index exists only for sets with a TTL; it is a hint for expiry
// (the entry's bucket is the truth).
//
// The families are created on first use (Store::Dedup(true)), so a store
// that never held a dedup set keeps its original layout. This layer knows
// nothing of filters, locks or clocks: the engine (engine/dedup_store.h)
// drives it.
//
// Thread safety: all methods may be called concurrently (RocksDB is
// thread-safe). A read-only table refuses writes with NotSupported.
#ifndef SHARDFILTER_PERSISTENCE_DEDUP_TABLE_H_
#define SHARDFILTER_PERSISTENCE_DEDUP_TABLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace shardfilter::persistence {

class SyncMarker;

inline constexpr const char* kDedupCf = "dedup";
inline constexpr const char* kDedupTimeCf = "dedup_time";

// A stored key's record: when it was inserted and into which time bucket
// (0 for sets without TTL).
struct DedupEntry {
  uint64_t insert_ms = 0;
  uint64_t bucket = 0;
  bool operator==(const DedupEntry&) const = default;
};

// A set's fixed parameters, written when the set is created.
struct DedupMeta {
  uint64_t ttl_ms = 0;      // 0 = no expiry
  uint32_t partitions = 0;  // time buckets per window (0 when no TTL)
  bool operator==(const DedupMeta&) const = default;
};

// Key and value encodings (exposed for the format tests).
std::string DedupMetaKey(std::string_view set);
std::string DedupEntryKey(std::string_view set, std::string_view key);
std::string DedupEntryPrefix(std::string_view set);       // ... | 0x01
std::string DedupJournalMarkerKey(std::string_view set);  // ... | 0x02
std::string DedupTimeKey(std::string_view set, uint64_t bucket,
                         std::string_view key);
std::string EncodeDedupEntry(const DedupEntry& e);
Result<DedupEntry> DecodeDedupEntry(std::string_view value,
                                    std::string_view what);
std::string EncodeDedupMeta(const DedupMeta& m);
Result<DedupMeta> DecodeDedupMeta(std::string_view value,
                                  std::string_view what);

// How a write is made durable.
struct DedupWriteMode {
  bool wal = true;    // false: disableWAL (survives only a flush / Close)
  bool sync = false;  // fsync the WAL before returning
};

class DedupTable;

// Changes to one set, applied in one atomic RocksDB write.
class DedupBatch {
 public:
  explicit DedupBatch(const DedupTable& table);
  ~DedupBatch();
  // Puts the entry (and, when with_index, its time-index key).
  void Put(std::string_view set, std::string_view key, const DedupEntry& e,
           bool with_index);
  // Deletes the entry (and, when with_index, its time-index key).
  void Delete(std::string_view set, std::string_view key, const DedupEntry& old,
              bool with_index);
  // Deletes the time-index keys of buckets [begin, end).
  void DeleteIndexRange(std::string_view set, uint64_t begin, uint64_t end);
  // Deletes the set's journal marker (DedupTable::PutJournalMarker).
  void DeleteJournalMarker(std::string_view set);
  size_t count() const;

 private:
  friend class DedupTable;
  const DedupTable& table_;
  std::unique_ptr<rocksdb::WriteBatch> batch_;
  std::string set_;  // the set its changes name (empty: none yet)
};

class DedupTable {
 public:
  // Takes ownership of the two handles (destroyed with the table); `db`
  // must outlive the table.
  DedupTable(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* dedup,
             rocksdb::ColumnFamilyHandle* time, bool read_only);
  ~DedupTable();
  DedupTable(const DedupTable&) = delete;
  DedupTable& operator=(const DedupTable&) = delete;

  bool read_only() const { return read_only_; }
  // The store's sync marker (persistence/sync_marker.h), set before
  // the table is shared: a write of a set's changes with mode.sync is
  // acknowledged through it (W1), and refused once it failed (W5).
  void SetSyncMarker(SyncMarker* marker) { sync_marker_ = marker; }

  Result<std::optional<DedupMeta>> GetMeta(std::string_view set) const;
  // Synced write of the meta value.
  Status PutMeta(std::string_view set, const DedupMeta& m);
  // The journal marker: present while the set's journal file
  // (persistence/log/dedup_log.h) holds or may hold acknowledged records,
  // so that a deleted file is Corruption, not an empty journal. Put (synced)
  // once the file exists; deleted in the write that moves the file's
  // records into RocksDB before the file is removed.
  Status PutJournalMarker(std::string_view set);
  Result<bool> HasJournalMarker(std::string_view set) const;
  // Every value of the set (entries, meta, time index, journal marker) in
  // one synced write.
  Status DropSet(std::string_view set);
  // Names of the sets that have a meta value, in byte order.
  Result<std::vector<std::string>> ListSets() const;

  // The entry of `key`, nullopt when absent; Corruption naming the set when
  // the stored value fails its checks.
  Result<std::optional<DedupEntry>> Get(std::string_view set,
                                        std::string_view key) const;
  // out[i] for keys[i], by RocksDB MultiGet. The first bad value fails the
  // call. REQUIRES: out->size() == keys.size().
  Status MultiGet(std::string_view set, std::span<const std::string_view> keys,
                  std::vector<std::optional<DedupEntry>>* out) const;
  Status Write(DedupBatch* batch, DedupWriteMode mode);
  // Flushes the memtables of both families (makes WAL-less writes durable).
  Status Flush();

  // fn(key, entry) for every entry of the set, in key order; a bad value
  // fails the scan (Corruption naming set and key length).
  Status ScanEntries(std::string_view set,
                     const std::function<Status(std::string_view,
                                                const DedupEntry&)>& fn) const;
  // The largest bucket in the set's time index (nullopt when empty).
  Result<std::optional<uint64_t>> MaxBucket(std::string_view set) const;
  // fn(bucket, key) for every time-index key of buckets [begin, end).
  Status ScanIndex(
      std::string_view set, uint64_t begin, uint64_t end,
      const std::function<Status(uint64_t, std::string_view)>& fn) const;

 private:
  friend class DedupBatch;
  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* dedup_cf_;
  rocksdb::ColumnFamilyHandle* time_cf_;
  bool read_only_;
  SyncMarker* sync_marker_ = nullptr;  // the Store's; null: read-only
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_DEDUP_TABLE_H_
