// DedupLog: a dedup set's own journal, one memory-mapped file of the
// journal component (its bytes: log/format.h section 3, D1-D4; its place:
// log/paths.h, DedupLogPath), made and read through the Env (log/env.h).
// An acknowledged InsertIfAbsent / Remove in durability journal is one
// record copied into the mapping: the bytes are in the page cache as soon
// as the copy ends, so they survive kill -9 of the process (not a power
// loss: the promise of durability journal) without a system call per
// operation. persistence/dedup_journal.h moves the records into
// RocksDB in large batches and serves reads of the ops not moved yet.
//
// Appends are serialized by the caller (one writer at a time). A deleted
// file is noticed by the set's journal marker in RocksDB
// (persistence/dedup_table.h, HasJournalMarker):
// persistence/dedup_journal.h keeps it while a file holds or may
// hold acknowledged records.
//
// Thread safety: none; persistence/dedup_journal.h serializes access.
#ifndef SHARDFILTER_PERSISTENCE_LOG_DEDUP_LOG_H_
#define SHARDFILTER_PERSISTENCE_LOG_DEDUP_LOG_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/dedup_table.h"
#include "shardfilter/persistence/log/env.h"
#include "shardfilter/persistence/log/format.h"
#include "shardfilter/persistence/log/paths.h"

namespace shardfilter::persistence {

// Smallest and largest region sizes (the file holds two).
inline constexpr uint64_t kMinDedupLogRegion = 64 * 1024;
inline constexpr uint64_t kMaxDedupLogRegion = uint64_t{1} << 30;

// One change of a dedup set, as DedupBatch would apply it.
struct DedupOp {
  enum Kind : uint8_t { kPut = 1, kDelete = 2 };
  Kind kind = kPut;
  bool with_index = false;  // also put / delete the time-index key
  std::string key;
  DedupEntry entry;  // kPut: the new entry; kDelete: the entry deleted
  bool operator==(const DedupOp&) const = default;
};

struct DedupLogRecord {
  uint64_t seq = 0;
  std::vector<DedupOp> ops;
};

// Bytes a record with these ops takes in a region.
size_t DedupLogRecordBytes(const std::vector<DedupOp>& ops);

class DedupLog {
 public:
  // Creates (replacing any file there) an empty log with two regions of
  // `region_bytes` (a multiple of 4096 in [kMinDedupLogRegion,
  // kMaxDedupLogRegion]) through `env` (Env::CreateMapped: its blocks
  // allocated up front so that a full disk is an error here, not a SIGBUS
  // later; its headers synced before it takes its name).
  static Result<std::unique_ptr<DedupLog>> Create(Env& env,
                                                  const std::string& path,
                                                  std::string_view set,
                                                  uint64_t region_bytes);
  // Maps an existing log read-only (recovery, read-only stores). NotFound
  // when there is no file; Corruption when the header is damaged, the file
  // is shorter than its header says, or it belongs to another set.
  static Result<std::unique_ptr<DedupLog>> OpenExisting(Env& env,
                                                        const std::string& path,
                                                        std::string_view set);
  ~DedupLog();
  DedupLog(const DedupLog&) = delete;
  DedupLog& operator=(const DedupLog&) = delete;

  uint64_t region_bytes() const { return region_bytes_; }
  // True when the file was written before the machine's last boot (P2, D4):
  // reading stops quietly at the first bad record.
  bool from_earlier_boot() const { return from_earlier_boot_; }
  // Bytes of records a region can hold.
  uint64_t capacity() const { return region_bytes_ - kRegionHeader; }

  // The valid records of region r, in order; Corruption for damage (P2,
  // D1). Appends nothing to *out on error.
  Status Read(int r, std::vector<DedupLogRecord>* out) const;
  // The file's format version (1: read only; 2: written).
  uint32_t version() const { return version_; }
  // Both regions' records, in seq order.
  Status ReadAll(std::vector<DedupLogRecord>* out) const;

  // Appending (writable logs only).
  int active() const { return active_; }
  bool Fits(size_t record_bytes) const {
    return used_[active_] + record_bytes <= capacity();
  }
  bool Empty(int r) const { return used_[r] == 0; }
  // Copies the record into the active region. REQUIRES: Fits.
  void Append(uint64_t seq, const std::vector<DedupOp>& ops);
  // Makes the other region active and returns the one that was.
  // REQUIRES: the other region is Empty.
  int Swap();
  // Forgets region r's records (D2: generation bump, then zeroing).
  void Clear(int r);

 private:
  static constexpr uint64_t kFileHeader = 4096;
  static constexpr uint64_t kRegionHeader = 64;

  DedupLog() = default;
  char* Region(int r) const {
    return base_ + kFileHeader + static_cast<uint64_t>(r) * region_bytes_;
  }
  void WriteRegionHeader(int r, uint64_t gen);
  Status ReadV1(int r, std::vector<DedupLogRecord>* out) const;

  std::string path_;
  char* base_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<MappedFile> file_;      // a writable log's
  std::unique_ptr<ReadOnlyFile> loaded_;  // a log read back
  uint64_t region_bytes_ = 0;
  bool writable_ = false;
  uint32_t version_ = 2;
  bool from_earlier_boot_ = false;
  int active_ = 0;
  uint64_t gen_[2] = {0, 0};   // the regions' generations
  uint64_t used_[2] = {0, 0};  // record bytes in each region
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_DEDUP_LOG_H_
