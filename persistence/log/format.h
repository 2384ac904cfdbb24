// The journal component's file formats, documented once (in the manner of
// LevelDB's db/log_format.h): the three kinds of memory-mapped log, what
// their records look like, how a record is published, and how a reader
// tells a record a kill or a power loss cut short from damage. The files'
// places are in log/paths.h; docs/format-store.md points here.
//
// ---------------------------------------------------------------------
// What every log shares
// ---------------------------------------------------------------------
// Integers little-endian. A file starts with a 4096-byte header that names
// its format version, the boot that wrote it (/proc/sys/kernel/random/
// boot_id, at most 64 bytes) and what it belongs to, and ends in a
// checksum (XXH3); the header is synced before the file takes its name
// (Env::CreateMapped). Then records, each 8-byte aligned, back to back,
// then zeros (the file is allocated whole at creation).
//
// P1. Publication. A writer copies a record into the mapping and stores its
//     publishing word last, with one aligned 8-byte release store: a long
//     record's commit word, a short or thread record's tag, a dedup
//     record's commit word. A kill stops the process between two
//     instructions, so every interleaving leaves each record unpublished
//     (publishing word 0, or "reserved") or whole: the page cache is
//     exact.
// P2. The boot rule. Within the boot that wrote a file (its header names
//     it) a published record that fails its check, or bytes after the end
//     that are not zero, are damage: Corruption. In a later boot (a power
//     loss may have written pages back in any order) the log ends quietly
//     at the first record that is not whole: what survives is a prefix.
//     (LaterBoot below.)
// P3. Made ahead. A file is made whole (allocated, header synced, renamed)
//     before anything is written to it, so a log can hold a file made ahead
//     of use and never written: zeros after its header, no records.
//
// ---------------------------------------------------------------------
// 1. Per-shard segments of the filter journal (versions 1 and 2)
// ---------------------------------------------------------------------
// <store>/filter-journal/<epoch>/<shard>-<n>.sfj. An op of a counting,
// cuckoo or Bloom filter, in its shard's order (engine/internal/
// filter_log.h L1-L6).
//
//   [0, 4096)   header: "SFFJSEG1" | u32 version | u32 shard | u64 epoch |
//               u64 segment number | u64 file bytes | u32 boot id length |
//               boot id | u32 name length | filter name | u64 XXH3 (seed
//               kFormatSeed) of the bytes before
//   [4096, ..)  records. Two kinds, told apart by bit 0 of the first byte:
//   long (bit 0 clear; every record of a version 1 segment):
//     +0  u32 body length L (a multiple of 8, >= 8)
//     +4  u32 header check: low 32 bits of XXH3(L | seq), bit 0 forced to 1
//     +8  u64 seq
//     +16 body: u8 op (0 none, 1 add, 2 remove) | 3 zero bytes |
//               u32 count n | n x u64 hash | zeros up to L
//     +16+L u64 commit word: XXH3(L | seq | body), bit 0 forced to 1
//   short (bit 0 set; version 2 only): one op of at most one hash, 16 bytes
//     (a long one-key record is 40: bytes per op are what the page cache
//     and the disk pay for, docs/performance.md):
//     +0  u64 tag: bit 0 = 1 | bit 1 committed | bits 2-3 op | bits 4-31
//                  zero | bits 32-63 check: low 32 bits of
//                  XXH3(seq | hash) seeded by kFormatSeed + op
//     +8  u64 hash (0 for op 0)
//     Its seq is the previous record's + 1 (J4). Reserved, not committed:
//     tag 1, hash 0.
//
//  J1. The 16-byte record header is written while the writer holds the
//      shard's reservation (so headers are back to back, in seq order, and
//      a zero header word is the end of what was ever written); the body is
//      copied after, and the commit word is stored last (P1). So every
//      interleaving a kill can cut reads as: no record (zeros, or a torn
//      last header with only zeros after it), a reserved but uncommitted
//      record (commit word 0: never acknowledged), or a whole one.
//  J2. A segment's base is the seq in its first record header (written
//      when the segment became active, before any later seq); a later
//      segment of the shard supersedes every record of an earlier one with
//      seq >= the later one's base (what replay dropped after a gap). So
//      segments can be made ahead of use (P3), without knowing their base;
//      replay orders a shard's segments by base (activation order), not by
//      number.
//  J3. P2: within the boot that wrote a segment, a committed record that
//      fails its check, a header that fails its check with data after it,
//      or non-zero bytes after the end are damage (Corruption); in a later
//      boot the segment ends quietly at the first record that is not whole.
//  J4. A segment's records have consecutive seqs (J1: seq and slot are
//      handed out together, one seq per record, and a writer's active
//      segment is always one it made, never a recovered one), so a short
//      record stores no seq; a segment's first record is always long (it
//      carries the base, J2). A short record's tag is written twice: as
//      reserved (1) under the reservation, then, after the hash, committed
//      (release), so a kill leaves it reserved or whole.
//
// ---------------------------------------------------------------------
// 2. Thread segments of the filter journal (version 3)
// ---------------------------------------------------------------------
// <store>/filter-journal/<epoch>/t<stripe>-<n>.sfj: the log a writer
// thread keeps of its journalled single-key Bloom adds (filter_log.h L7).
// Bloom adds commute and applying one twice changes nothing, so its
// records carry their shard and no seq, and a writer touches only lines of
// its own. The per-shard header above with version 3 and the writer's
// stripe in its shard field, then 16-byte records back to back, then zeros:
//
//     +0  u64 tag: bit 0 = 1 | bit 1 = 1 (committed) | bits 2-3 op (1 add)
//                  | bits 4-11 shard | bits 12-31 zero | bits 32-63 check:
//                  low 32 bits of XXH3(u64 shard | u64 hash) seeded by
//                  kFormatSeed + 16 + op
//     +8  u64 hash
//
//  T1. One writer per segment: the thread owning the stripe (at most one
//      live thread at a time, filters/detail/thread_stripe.h). It stores
//      the hash, then the tag (P1), and only then acknowledges the add; so
//      a kill leaves each record whole, or (the last one only) a tag of 0,
//      whose hash may be written: never acknowledged.
//  T3. P2, as J3: within the boot, a committed record that fails its check,
//      a shard outside the filter or non-zero bytes after the end are
//      damage; in a later boot the segment ends quietly at the first record
//      that is not whole. After a power loss, each thread's records are a
//      prefix of what it acknowledged.
//  (T2, retirement by generation, is the log's run-time rule:
//  log/segment_list.h, engine/internal/filter_log.h L7.)
//
// ---------------------------------------------------------------------
// 3. Dedup logs (version 2 written, 1 read)
// ---------------------------------------------------------------------
// <store>/dedup-journal/<xxh3 of set name, hex>.sfdl: a dedup set's ops of
// durability journal (persistence/log/dedup_log.h), moved into RocksDB a
// region at a time (persistence/dedup_journal.h).
//
//   [0, 4096)        file header: "SFDLOG01" | u32 version | u32 reserved
//                    (0) | u64 region bytes R | u32 name length | set name
//                    | u32 boot id length | boot id | u64 XXH3 of the bytes
//                    before (HashKey, seed "_dedupl g")
//   [4096 + r*R, +R) region r (r = 0, 1):
//     [0, 64)        region header: "SFDLREG1" | u64 generation |
//                    u64 XXH3 of the 16 bytes before | zeros
//     [64, R)        records, back to back (each 8-byte aligned), then
//                    zeros. Version 2:
//                    u64 commit word (body length L | ~L << 32) |
//                    u64 XXH3(body, seed "_dedupl g" ^ commit word) | body
//                    | zeros to a multiple of 8
//                    Version 1: u32 L | u32 low 32 bits of XXH3(body) | body
//                    body = u64 generation | u64 seq | u32 op count | ops
//                    op   = u8 kind (1 put, 2 delete) | u8 flags (bit 0:
//                           with time index) | u64 insert ms | u64 bucket |
//                           u32 key length | key
//
//  D1. P1: the commit word is stored last. Version 1 stored its check before
//      the length and could not tell a torn last record from a damaged one;
//      its files are read with its old rule (a bad record followed by zeros
//      only is the torn tail). The commit word holds L and ~L, so no damage
//      short of 32 flipped bits turns a published word into 0.
//  D2. A record belongs to its region while its generation equals the
//      region header's. Clearing a region (after its records reached
//      RocksDB) bumps the header's generation first, then zeroes every
//      commit word in order, then the rest: a kill in between leaves only
//      stale or unpublished records.
//  D3. Seqs grow across both regions; a record's ops apply in order,
//      records in seq order.
//  D4. P2 for a dedup log: the header is synced at creation, the records
//      never (durability journal survives the process, not the machine).
#ifndef SHARDFILTER_PERSISTENCE_LOG_FORMAT_H_
#define SHARDFILTER_PERSISTENCE_LOG_FORMAT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/detail/xxh3_short.h"
#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/boot_id.h"  // P2

namespace shardfilter::persistence {

// --- Shared ---

inline constexpr size_t kSegmentHeaderBytes = 4096;
// The filter journal's checksum seed ("sfiltflj").
inline constexpr uint64_t kFormatSeed = 0x6a6c66746c696673ull;
// Boot ids are stored up to this many bytes.
inline constexpr size_t kMaxBootIdBytes = 64;
// P2: whether a file that names `written_boot` was written before the
// current boot (CurrentBootId, which tests replace to act out a reboot).
bool LaterBoot(std::string_view written_boot);
// The boot id a file made now records.
std::string BootIdToRecord();

// --- 1 and 2: the filter journal's segment header ---

// Per-shard segments: written 2 (short records), read 1 and 2. Thread
// segments: 3.
inline constexpr uint32_t kFilterJournalVersion = 2;
inline constexpr uint32_t kThreadSegmentVersion = 3;

struct SegmentHeader {
  uint32_t version = kFilterJournalVersion;
  uint32_t shard = 0;  // the stripe of a thread segment
  uint64_t epoch = 0;
  uint64_t number = 0;
  uint64_t file_bytes = 0;
  std::string boot_id;
  std::string name;
};

std::string EncodeSegmentHeader(const SegmentHeader& h);
// Corruption / NotSupported naming `what`.
Result<SegmentHeader> DecodeSegmentHeader(std::string_view bytes,
                                          const std::string& what);

// --- 1: per-shard records ---

inline constexpr size_t kRecordOverhead = 16 + 8 + 8;  // header, op, commit
// Bytes a long record of n hashes takes: the most any record of n hashes
// takes (what a writer makes room for).
inline size_t FilterJournalRecordBytes(size_t n) {
  return kRecordOverhead + 8 * n;
}
inline constexpr size_t kShortRecordBytes = 16;

// op 0 is a reserved seq whose op did not happen (e.g. an add that
// failed after its Bloom reservation): it keeps seqs contiguous.
struct FilterJournalRecord {
  uint64_t seq = 0;
  uint8_t op = 0;  // 0 none, 1 add, 2 remove (JournalOp values)
  std::vector<uint64_t> hashes;
};

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

// Writing (the slot p is inside a segment's records area):
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

// --- 2: thread records ---

inline constexpr size_t kThreadRecordBytes = 16;
// Shards a thread record can name (bits 4-11).
inline constexpr uint32_t kThreadRecordShards = 256;

struct ThreadRecord {
  uint32_t shard = 0;
  uint64_t hash = 0;
};

// The committed tag of an add of `hash` to `shard` (T1). Inline: a
// journalled add computes it while its table line is on its way.
inline uint64_t ThreadRecordTag(uint32_t shard, uint64_t hash) {
  constexpr uint64_t kAdd = 1;
  constexpr uint64_t kSeed = kFormatSeed + 16 + kAdd;
  unsigned char b[16];
  const uint64_t s = shard;
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<unsigned char>(s >> (8 * i));
    b[8 + i] = static_cast<unsigned char>(hash >> (8 * i));
  }
  const uint64_t check = detail::Xxh3Len0to16(b, sizeof b, kSeed);
  return (check << 32) | (s << 4) | (kAdd << 2) | 3u;
}

// T1: the hash, then the tag (release). REQUIRES: p 8-aligned, 16 zero
// bytes, shard < kThreadRecordShards, the caller the segment's one writer.
inline void CommitThreadRecord(char* p, uint64_t tag, uint64_t hash) {
  // Little-endian hosts only (the format's order; x86-64 and arm64).
  reinterpret_cast<std::atomic<uint64_t>*>(p + 8)->store(
      hash, std::memory_order_relaxed);
  reinterpret_cast<std::atomic<uint64_t>*>(p)->store(tag,
                                                     std::memory_order_release);
}

// Reads a thread segment's records area (the bytes after its header): the
// adds in it, in the order written. `later_boot`: T3's quiet end. A last
// record left uncommitted counts in *uncommitted (optional). Corruption
// naming `what` and the offset for damage, including a shard >= `shards`.
Status DecodeThreadRecords(std::string_view records, bool later_boot,
                           uint32_t shards, const std::string& what,
                           std::vector<ThreadRecord>* out,
                           uint64_t* uncommitted = nullptr);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_FORMAT_H_
