// The filters' per-thread journal segments (docs/format-store.md, "Thread
// segments"): the log a writer thread keeps of its journalled single-key
// Bloom adds, beside the per-shard segments of filter_journal.h, in the
// same epoch directory:
//
//   <store>/filter-journal/<epoch, 16 hex>/t<stripe, 3 digits>-<n, 8
//   digits>.sfj
//
// Why a log per thread: a per-shard log orders a shard's ops by a sequence
// and acknowledges an op only once every lower one is copied (filter_log.h
// L2). That is one cache line per op that every writer of the shard
// writes; with random keys the other core last wrote it about half the
// time, and one such line per op caps two writers at 1.19x one on this VM
// (sharded_bench BM_SharedLinesFloor). A Bloom add needs no order: adds
// commute, and applying one twice changes nothing (a key already present
// sets no bit and counts no fill, shard_chain.h S8). So a thread's records
// carry their shard and no sequence, and a writer touches only lines of
// its own (its segment, its stripe of the fill, filters/internal/
// thread_stripe.h). Counting and cuckoo ops must be replayed in their
// shard's order (not idempotent, S3) and stay on the per-shard segments.
//
// Segment layout: the per-shard segment's 4096-byte header
// (filter_journal.h) with version 3 and the writer's stripe in its shard
// field, then 16-byte records back to back, then zeros:
//
//     +0  u64 tag: bit 0 = 1 | bit 1 = 1 (committed) | bits 2-3 op (1 add)
//                  | bits 4-11 shard | bits 12-31 zero | bits 32-63 check:
//                  low 32 bits of XXH3(u64 shard | u64 hash) seeded by the
//                  format's seed + 16 + op
//     +8  u64 hash
//
// Invariants (filter_log.h keeps them at run time):
//  T1. One writer per segment: the thread owning the stripe (at most one
//      live thread at a time, thread_stripe.h). It stores the hash, then
//      the tag (release), and only then acknowledges the add; so a kill
//      leaves each record whole, or (the last one only) a tag of 0, whose
//      hash may be written: never acknowledged.
//  T2. Coverage by generation: a writer reads the log's generation under
//      its shard's lock and writes only to a segment of that generation. A
//      checkpoint raises the generation to g + 1, then takes every shard's
//      exclusive lock (writing each dirty one), so every record of a
//      generation <= g was applied before its shard was written. Once that
//      checkpoint committed, the segments of generations <= g are dead and
//      are unlinked. (A checkpoint that finds no thread segment registered
//      skips all this: a writer registers a segment of the generation it
//      read before it writes a record there.) Generations live in memory
//      only: replaying a record the checkpoint holds already changes
//      nothing (adds are idempotent), so a kill between the commit and the
//      unlink costs only the replay.
//  T3. As J3: within the boot that wrote a segment the page cache is
//      exact, so a committed record that fails its check, a shard outside
//      the filter or non-zero bytes after the end are damage (Corruption);
//      in a later boot the segment ends quietly at the first record that
//      is not whole. After a power loss, each thread's records are a prefix
//      of what it acknowledged: the promise of durability `journal` for
//      these adds is a prefix per writer thread, where per-shard segments
//      give a prefix per shard (docs/design.md).
//
// Thread safety: pure functions.
#ifndef SHARDFILTER_PERSISTENCE_INTERNAL_THREAD_JOURNAL_H_
#define SHARDFILTER_PERSISTENCE_INTERNAL_THREAD_JOURNAL_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/detail/xxh3_short.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::persistence {

inline constexpr uint32_t kThreadSegmentVersion = 3;
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
  // filter_journal.cc's seed ("sfiltflj") + 16 + op.
  constexpr uint64_t kSeed = 0x6a6c66746c696673ull + 16 + kAdd;
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

// The path of stripe `stripe`'s segment `number` of an epoch.
std::string ThreadSegmentPath(std::string_view store_path, uint64_t epoch,
                              uint32_t stripe, uint64_t number);
// Parses a thread segment's file name ("t007-00000012.sfj"): false for any
// other name (a per-shard segment, a ".tmp" a kill left).
bool ParseThreadSegmentName(std::string_view file, uint32_t* stripe,
                            uint64_t* number);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_INTERNAL_THREAD_JOURNAL_H_
