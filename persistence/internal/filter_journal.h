// The filters' memory-mapped journal (docs/format-store.md, "The filter
// journal"): per shard, a sequence of segment files
//
//   <store>/filter-journal/<epoch, 16 hex>/<shard, 3 digits>-<n, 8 digits>.sfj
//
// An acknowledged op of durability journal is one record copied into a
// segment's shared mapping: the bytes are in the page cache once the copy
// ends, so they survive kill -9 without a system call; durability sync adds
// an fdatasync of the segment (engine/internal/filter_log.h shares it among
// concurrent writers).
//
// Segment layout (integers little-endian):
//
//   [0, 4096)   header: "SFFJSEG1" | u32 version (1) | u32 shard |
//               u64 epoch | u64 segment number | u64 file bytes | u32 boot id
//               length | boot id | u32 name length | filter name | u64 XXH3 of
//               the bytes before
//   [4096, ..)  records, back to back, 8-byte aligned, then zeros. Two
//   kinds, told apart by bit 0 of the record's first byte:
//   long (bit 0 clear; every record of a version 1 segment):
//     +0  u32 body length L (a multiple of 8, >= 8)
//     +4  u32 header check: low 32 bits of XXH3(L | seq), bit 0 forced to 1
//     +8  u64 seq
//     +16 body: u8 op (0 none, 1 add, 2 remove) | 3 zero bytes |
//               u32 count n | n x u64 hash | zeros up to L
//     +16+L u64 commit word: XXH3(L | seq | body), bit 0 forced to 1
//   short (bit 0 set; version 2 only): one op of at most one hash, 16 bytes
//     (a journalled single-key add was 40; bytes per op are what the page
//     cache and the disk pay for, docs/performance.md):
//     +0  u64 tag: bit 0 = 1 | bit 1 committed | bits 2-3 op | bits 4-31
//                  zero | bits 32-63 check: low 32 bits of
//                  XXH3(seq | hash) seeded by the format's seed + op
//     +8  u64 hash (0 for op 0)
//     Its seq is the previous record's + 1 (J4). Reserved, not committed:
//     tag 1, hash 0.
//
// Invariants (filter_log.h keeps them at run time):
//  J1. The 16-byte record header is written while the writer holds the
//      shard's reservation (so headers are back to back, in seq order, and
//      a zero header word is the end of what was ever written); the body is
//      copied after, and the commit word is stored last (release). So every
//      interleaving a kill can cut reads as: no record (zeros, or a torn
//      last header with only zeros after it), a reserved
//      but uncommitted record (commit word 0: never acknowledged), or a
//      whole one.
//  J2. A segment's base is the seq in its first record header (written
//      when the segment became active, before any later seq); a later
//      segment of the shard supersedes every record of an earlier one with
//      seq >= the later one's base (what replay dropped after a gap). So
//      segments can be made ahead of use, without knowing their base;
//      replay orders a shard's segments by base (activation order), not by
//      number.
//  J3. Within the boot that wrote a segment the page cache is exact: a
//      committed record that fails its check, a header that fails its
//      check, or non-zero bytes after the end are damage (Corruption). In a
//      later boot (a power loss may have written pages back in any order)
//      the segment ends quietly at the first record that is not whole.
//  J4. A segment's records have consecutive seqs (J1: seq and slot are
//      handed out together, one seq per record, and a writer's active
//      segment is always one it made, never a recovered one), so a short
//      record stores no seq; a segment's first record is always long (it
//      carries the base, J2). A short record's tag is written twice: as
//      reserved (1) under the reservation, then, after the hash, committed
//      (release), so a kill leaves it reserved or whole.
//
// Thread safety: the decoders are pure functions; a Segment's writes are
// coordinated by its owner (filter_log.h).
#ifndef SHARDFILTER_PERSISTENCE_INTERNAL_FILTER_JOURNAL_H_
#define SHARDFILTER_PERSISTENCE_INTERNAL_FILTER_JOURNAL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/log/env.h"

namespace shardfilter::persistence {

// Written: 2 (short records). Read: 1 and 2.
inline constexpr uint32_t kFilterJournalVersion = 2;
inline constexpr size_t kSegmentHeaderBytes = 4096;
inline constexpr size_t kRecordOverhead = 16 + 8 + 8;  // header, op, commit

// Bytes a record of n hashes takes.
// Bytes a long record of n hashes takes: the most any record of n hashes
// takes (what a writer makes room for).
inline size_t FilterJournalRecordBytes(size_t n) {
  return kRecordOverhead + 8 * n;
}
inline constexpr size_t kShortRecordBytes = 16;

struct SegmentHeader {
  uint32_t version = kFilterJournalVersion;
  uint32_t shard = 0;
  uint64_t epoch = 0;
  uint64_t number = 0;
  uint64_t file_bytes = 0;
  std::string boot_id;
  std::string name;
};

// op 0 is a reserved seq whose op did not happen (e.g. an add that
// failed after its Bloom reservation): it keeps seqs contiguous.
struct FilterJournalRecord {
  uint64_t seq = 0;
  uint8_t op = 0;  // 0 none, 1 add, 2 remove (JournalOp values)
  std::vector<uint64_t> hashes;
};

std::string EncodeSegmentHeader(const SegmentHeader& h);
// Corruption / NotSupported naming `what`.
Result<SegmentHeader> DecodeSegmentHeader(std::string_view bytes,
                                          const std::string& what);

// Reads the records area of a segment (the bytes after its header) of
// format `version` (its header's: short records only in 2).
// `later_boot`: J3's quiet end. Uncommitted records are skipped (their seq
// is absent: a gap); *uncommitted (optional) counts them; *base (optional)
// receives the seq of the first record header (J2), 0 when there is none.
// Corruption naming `what` and the offset for damage.
Status DecodeSegmentRecords(std::string_view records, uint32_t version,
                            bool later_boot, const std::string& what,
                            std::vector<FilterJournalRecord>* out,
                            uint64_t* uncommitted = nullptr,
                            uint64_t* base = nullptr);

// --- Writing (records area offsets are from the file's start) ---

// Writes the reservation of the record for `seq` at p (J1), a short one
// (J4) when it holds at most one hash and is not its segment's first
// (`first`), else the long header; returns the bytes it takes. REQUIRES: p
// 8-aligned, the record area zero, the segment of version 2.
size_t ReserveRecord(char* p, uint64_t seq, size_t hashes, bool first);
// Writes a long record's header at p (J1). REQUIRES: as above.
void PutRecordHeader(char* p, uint64_t seq, uint32_t body_len);
// Copies the body (at most the hashes reserved; a short record: at most
// one) and stores the commit word (tag) last (release).
void CommitRecord(char* p, uint64_t seq, uint8_t op,
                  std::span<const uint64_t> hashes);
// A one-key commit in two steps, so that a caller can compute the check
// while it waits for something else (a journalled Bloom add: the table's
// line, prefetched before the shard lock): PrepareCommit returns what
// CommitPrepared stores for this seq, op and hash (0 for a long record,
// which CommitPrepared commits as CommitRecord does).
uint64_t PrepareCommit(const char* p, uint64_t seq, uint8_t op, uint64_t hash);
void CommitPrepared(char* p, uint64_t seq, uint8_t op, uint64_t hash,
                    uint64_t prepared);
// The record reads as reserved, never committed (an op that was not
// acknowledged because its sync failed).
void UncommitRecord(char* p);

// The default column family's key naming a filter's journal epoch:
// 0xF7 'J' 'e' | u16 BE name length | name. Value: u8 version (1) |
// u64 epoch | u64 XXH3 of the 9 bytes before (persistence/internal/store.h).
std::string FilterJournalEpochKey(std::string_view name);
std::string EncodeFilterJournalEpoch(uint64_t epoch);
Result<uint64_t> DecodeFilterJournalEpoch(std::string_view value,
                                          const std::string& what);

// The directory of the filter journal under a store.
std::string FilterJournalDir(std::string_view store_path);
std::string FilterJournalEpochDir(std::string_view store_path, uint64_t epoch);
std::string SegmentPath(std::string_view store_path, uint64_t epoch,
                        uint32_t shard, uint64_t number);

// One segment file, mapped through the journal component's Env
// (persistence/log/env.h).
class Segment {
 public:
  // Creates the file (Env::CreateMapped: blocks allocated, so a full disk
  // is an error here, not a SIGBUS later; header synced; made under a
  // temporary name, renamed, directory synced). `prefault_write`
  // (MapOptions): a writer's first store to a page takes no fault; a sync
  // journal, whose first fdatasync would then write the whole segment,
  // does not ask for it.
  static Result<std::shared_ptr<Segment>> Create(Env& env,
                                                 const std::string& path,
                                                 const SegmentHeader& h,
                                                 bool prefault_write = false);
  // Maps an existing segment read-only.
  static Result<std::shared_ptr<Segment>> OpenExisting(Env& env,
                                                       const std::string& path);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const SegmentHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  char* data() const { return base_; }
  size_t size() const { return size_; }
  // The records area (the mapping past the header, or what the file holds).
  std::string_view records() const {
    return size_ <= kSegmentHeaderBytes
               ? std::string_view()
               : std::string_view(base_ + kSegmentHeaderBytes,
                                  size_ - kSegmentHeaderBytes);
  }
  // fdatasync (and the test fault hook, SetJournalFaultForTesting).
  Status Sync();
  // For an unlinked segment that nobody will write again but that a
  // reference may keep mapped (a thread segment retired while its writer is
  // idle, engine/internal/filter_log.h L7): frees its blocks and page cache
  // now (MappedFile::ReleaseSpace), not when the last reference unmaps it,
  // which for an idle writer may be never. Its pages read as zeros from
  // then on. Best effort.
  void ReleaseSpace();

  // Highest seq reserved in it, set by its writer when it stops being the
  // active segment (filter_log.h keeps the active one's in its LogShard);
  // for a loaded segment, the highest replayed from it.
  std::atomic<uint64_t> max_seq{0};

 private:
  Segment() = default;
  std::string path_;
  SegmentHeader header_;
  char* base_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<MappedFile> file_;      // a writable segment's
  std::unique_ptr<ReadOnlyFile> loaded_;  // a segment read back
};

// Tests: called before every segment creation ("create") and sync
// ("sync") with the path; a non-OK result is returned instead of doing it.
// After a successful sync (and at creation), `synced` (if set) receives the
// path and a copy of the mapping taken before the sync began: what a power
// loss right after it would keep at least (tests act out a power loss by
// writing back only that copy).
using JournalFaultFn =
    std::function<Status(std::string_view what, const std::string& path)>;
void SetJournalFaultForTesting(JournalFaultFn fn);
// Tests: segments of this many bytes (a multiple of 4096 above the header)
// for filters made after the call; 0 restores the default.
void SetSegmentBytesForTesting(uint64_t bytes);
uint64_t SegmentBytesForTesting();
using JournalSyncedFn =
    std::function<void(const std::string& path, std::string_view bytes)>;
void SetJournalSyncedForTesting(JournalSyncedFn fn);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_INTERNAL_FILTER_JOURNAL_H_
