// DedupLog: a dedup set's own journal, a memory-mapped file in the store
// directory (`<store>/dedup-journal/<xxh3 of set name, hex>.sfdl`). An
// acknowledged InsertIfAbsent / Remove in durability journal is one record
// copied into the mapping: the bytes are in the page cache as soon as the
// copy ends, so they survive kill -9 of the process (not a power loss: the
// promise of durability journal) without a system call per operation.
// persistence/internal/dedup_journal.h moves the records into RocksDB in large
// batches and serves reads of the ops not moved yet.
//
// File layout (all integers little-endian):
//
//   [0, 4096)        file header: "SFDLOG01" | u32 version (2; 1 is still
//                    read) | u32 reserved (0) | u64 region bytes R |
//                    u32 name length | set name |
//                    u32 boot id length | boot id | u64 XXH3 of the bytes
//                    before
//   [4096 + r*R, +R) region r (r = 0, 1):
//     [0, 64)        region header: "SFDLREG1" | u64 generation |
//                    u64 XXH3 of the 16 bytes before | zeros
//     [64, R)        records, back to back (each 8-byte aligned), then
//                    zeros. Version 2:
//                    u64 commit word (body length L | ~L << 32) |
//                    u64 XXH3(body, seed kCheckSeed ^ commit word) | body |
//                    zeros to a multiple of 8
//                    Version 1: u32 L | u32 low 32 bits of XXH3(body) | body
//                    body = u64 generation | u64 seq | u32 op count | ops
//                    op   = u8 kind (1 put, 2 delete) | u8 flags (bit 0:
//                           with time index) | u64 insert ms | u64 bucket |
//                           u32 key length | key
//
// Publication (version 2): Append writes the body, the padding and the
// check, then the commit word with one aligned 8-byte release store. A
// kill stops the process between two instructions, so every interleaving
// leaves either an unpublished record (commit word 0: the end of the
// region, never acknowledged) or a whole one. A published record that
// fails its check is therefore damage, even when it is the last one and
// zeros follow it: Corruption. (Version 1 stored the check before the
// length and could not tell a torn last record from a damaged one; its
// files are still read with its old rule: a bad record followed by zeros
// only is the torn tail.) The commit word holds L and ~L, so no damage
// short of 32 flipped bits turns a published word into 0.
//
// A record belongs to its region while its generation equals the region
// header's. Clearing a region (after its records reached RocksDB) bumps the
// header's generation first, then zeroes every commit word in order, then
// the rest, so a crash in between leaves only stale or unpublished records.
//
// Seqs grow across both regions; a record's ops apply in order, records in
// seq order. Appends are serialized by the caller (one writer at a time).
//
// After a reboot: the header names the boot (Linux boot_id) that wrote the
// file, and is made durable (msync + fsync of file and directory) when the
// file is created. The records are not synced: durability journal promises
// to survive the process, not the machine. If the machine went down, pages
// of the mapping may have been written back in any order, so when the boot
// differs from the current one a bad record is the end of what survived,
// not damage: the valid prefix is replayed and the rest is dropped (the
// acknowledged work a power loss may lose in this mode). Within one boot
// the page cache is exact, and a bad published record is Corruption.
//
// A deleted file is noticed by the set's journal marker in RocksDB
// (persistence/internal/dedup_table.h, HasJournalMarker):
// persistence/internal/dedup_journal.h keeps it while a file holds or may hold
// acknowledged records.
//
// Thread safety: none; persistence/internal/dedup_journal.h serializes access.
#ifndef SHARDFILTER_PERSISTENCE_INTERNAL_DEDUP_LOG_H_
#define SHARDFILTER_PERSISTENCE_INTERNAL_DEDUP_LOG_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/internal/boot_id.h"
#include "shardfilter/persistence/internal/dedup_table.h"
#include "shardfilter/persistence/log/env.h"

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

// The log file of `set` under the store directory `store_path`.
std::string DedupLogPath(std::string_view store_path, std::string_view set);

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
  // True when the file was written before the machine's last boot (see the
  // top): reading stops quietly at the first bad record.
  bool from_earlier_boot() const { return from_earlier_boot_; }
  // Bytes of records a region can hold.
  uint64_t capacity() const { return region_bytes_ - kRegionHeader; }

  // The valid records of region r, in order; Corruption for damage (see
  // the top). Appends nothing to *out on error.
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
  // Forgets region r's records (generation bump, then zeroing).
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

#endif  // SHARDFILTER_PERSISTENCE_INTERNAL_DEDUP_LOG_H_
