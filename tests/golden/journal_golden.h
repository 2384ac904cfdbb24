// The golden journal files (tests/data/golden/journal/segments/): a fixed
// list of operations, written with the journal writers into one file per
// kind of log, so that the bytes every later build writes for the same
// operations can be compared with the committed ones
// (tests/journal_golden_test.cc), and the committed ones replayed.
//
//   000-00000001.sfj  a per-shard segment, version 2 (long and short
//                     records), shard 0, ending in a reserved record
//   000-00000002.sfj  the same shard's next segment, whose base supersedes
//                     that reserved seq, ending in an un-committed record
//   001-00000001.sfj  a version 1 segment (long records only), shard 1
//   t000-00000001.sfj a thread segment (version 3), stripe 0, ending in a
//                     record whose tag was never stored
//   t003-00000002.sfj a thread segment, stripe 3
//   golden.sfdl       a dedup log (version 2): two regions, one cleared
//
// Everything in them is fixed here (epoch, boot id, names, hashes), so the
// writer alone decides the bytes.
#ifndef SHARDFILTER_TESTS_GOLDEN_JOURNAL_GOLDEN_H_
#define SHARDFILTER_TESTS_GOLDEN_JOURNAL_GOLDEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/boot_id.h"
#include "shardfilter/persistence/log/dedup_log.h"
#include "shardfilter/persistence/log/paths.h"
#include "shardfilter/persistence/log/segment.h"

namespace shardfilter::golden {

inline constexpr uint64_t kJournalEpoch = 0x5eed0123456789abull;
inline constexpr char kJournalBoot[] = "golden-journal-boot";
inline constexpr char kJournalFilter[] = "golden";
inline constexpr char kJournalSet[] = "golden-set";
inline constexpr uint64_t kJournalSegmentBytes = 16384;
inline constexpr uint32_t kJournalShards = 2;

// Deterministic 64-bit values (splitmix64 of i).
inline uint64_t GoldenHash(uint64_t i) {
  uint64_t z = i * 0x9e3779b97f4a7c15ull + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One record of a per-shard segment as written: committed, left reserved
// (its writer killed), or committed and then un-committed (a failed sync).
struct GoldenRecord {
  enum State { kCommitted, kReserved, kUncommitted };
  uint64_t seq = 0;
  uint8_t op = 0;  // 0 no op, 1 add, 2 remove
  std::vector<uint64_t> hashes;
  State state = kCommitted;
  bool prepared = false;  // committed in two steps (PrepareCommit)
};

struct GoldenShardSegment {
  std::string file;
  uint32_t version = 2;
  uint32_t shard = 0;
  uint64_t number = 1;
  std::vector<GoldenRecord> records;
};

inline std::vector<GoldenShardSegment> GoldenShardSegments() {
  using R = GoldenRecord;
  std::vector<GoldenShardSegment> out;
  out.push_back({"000-00000001.sfj",
                 2,
                 0,
                 1,
                 {
                     R{1, 1, {GoldenHash(1)}},  // first: long (the base)
                     R{2, 1, {GoldenHash(2)}},  // short from here
                     R{3, 2, {GoldenHash(1)}},
                     R{4, 0, {}},  // a no op (a failed op's slot)
                     R{5,
                       1,
                       {GoldenHash(5), GoldenHash(6), GoldenHash(7),
                        GoldenHash(8), GoldenHash(9)}},  // a batch
                     R{6, 1, {GoldenHash(10)}, R::kCommitted, true},
                     R{7, 2, {GoldenHash(2)}, R::kCommitted, true},
                     R{8, 1, {GoldenHash(11)}, R::kReserved},
                 }});
  out.push_back({"000-00000002.sfj",
                 2,
                 0,
                 2,
                 {
                     R{8, 1, {GoldenHash(12)}},
                     R{9, 1, {GoldenHash(13)}, R::kCommitted, true},
                     R{10, 1, {GoldenHash(14), GoldenHash(15), GoldenHash(16)}},
                     R{11, 0, {}, R::kCommitted, true},
                     R{12, 1, {GoldenHash(17)}, R::kUncommitted},
                 }});
  out.push_back({"001-00000001.sfj",
                 1,
                 1,
                 1,
                 {
                     R{1, 1, {GoldenHash(20), GoldenHash(21)}},
                     R{2, 0, {}},
                     R{3, 2, {GoldenHash(20)}},
                     R{4, 1, {GoldenHash(22)}},
                     R{5, 1, {GoldenHash(23)}, R::kReserved},
                 }});
  return out;
}

struct GoldenThreadSegment {
  std::string file;
  uint32_t stripe = 0;
  uint64_t number = 1;
  std::vector<persistence::ThreadRecord> records;
  uint64_t torn_hash = 0;  // non-zero: a last record with no tag
};

inline std::vector<GoldenThreadSegment> GoldenThreadSegments() {
  std::vector<GoldenThreadSegment> out;
  GoldenThreadSegment a{"t000-00000001.sfj", 0, 1, {}, GoldenHash(39)};
  for (uint32_t i = 0; i < 6; ++i) {
    a.records.push_back({i % kJournalShards, GoldenHash(30 + i)});
  }
  out.push_back(a);
  GoldenThreadSegment b{"t003-00000002.sfj", 3, 2, {}, 0};
  for (uint32_t i = 0; i < 3; ++i) b.records.push_back({1, GoldenHash(40 + i)});
  out.push_back(b);
  return out;
}

inline persistence::DedupOp GoldenDedupOp(bool put, uint64_t i) {
  persistence::DedupOp op;
  op.kind = put ? persistence::DedupOp::kPut : persistence::DedupOp::kDelete;
  op.with_index = i % 2 == 0;
  op.key = "key-" + std::to_string(i);
  op.entry.insert_ms = 1'700'000'000'000ull + i;
  op.entry.bucket = i % 7;
  return op;
}

// The dedup log's appends, in order, by region phase: records 1-3 into
// region 0, a swap, 4-5 into region 1, region 0 cleared, a swap, 6 into
// region 0. What the file holds then: 4, 5, 6.
struct GoldenDedupRecord {
  uint64_t seq;
  std::vector<persistence::DedupOp> ops;
};
inline std::vector<GoldenDedupRecord> GoldenDedupRecords() {
  std::vector<GoldenDedupRecord> out;
  for (uint64_t seq = 1; seq <= 6; ++seq) {
    GoldenDedupRecord r{seq, {}};
    for (uint64_t k = 0; k < seq % 3 + 1; ++k) {
      r.ops.push_back(GoldenDedupOp(k != 1, seq * 10 + k));
    }
    out.push_back(std::move(r));
  }
  return out;
}
inline constexpr uint64_t kDedupRegionBytes = 64 * 1024;

// Writes every golden journal file into `dir` (which must exist) with the
// current writers, through `env`. Sets the boot id
// (persistence::SetBootIdForTesting) to kJournalBoot; the caller restores
// it.
inline Status WriteGoldenJournals(persistence::Env& env,
                                  const std::string& dir) {
  persistence::SetBootIdForTesting(kJournalBoot);
  for (const GoldenShardSegment& g : GoldenShardSegments()) {
    persistence::SegmentHeader h;
    h.version = g.version;
    h.shard = g.shard;
    h.epoch = kJournalEpoch;
    h.number = g.number;
    h.file_bytes = kJournalSegmentBytes;
    h.boot_id = kJournalBoot;
    h.name = kJournalFilter;
    SF_ASSIGN_OR_RETURN(
        auto seg, persistence::Segment::Create(env, dir + "/" + g.file, h));
    char* p = seg->data() + persistence::kSegmentHeaderBytes;
    bool first = true;
    for (const GoldenRecord& r : g.records) {
      size_t bytes = 0;
      if (g.version == 1) {
        persistence::PutRecordHeader(
            p, r.seq, static_cast<uint32_t>(8 + 8 * r.hashes.size()));
        bytes = persistence::FilterJournalRecordBytes(r.hashes.size());
      } else {
        bytes = persistence::ReserveRecord(p, r.seq, r.hashes.size(), first);
      }
      first = false;
      if (r.state != GoldenRecord::kReserved) {
        if (r.prepared) {
          const uint64_t hash = r.hashes.empty() ? 0 : r.hashes[0];
          const uint64_t tag = persistence::PrepareCommit(p, r.seq, r.op, hash);
          persistence::CommitPrepared(p, r.seq, r.op, hash, tag);
        } else {
          persistence::CommitRecord(p, r.seq, r.op, r.hashes);
        }
      }
      if (r.state == GoldenRecord::kUncommitted) {
        persistence::UncommitRecord(p);
      }
      p += bytes;
    }
    SF_RETURN_IF_ERROR(seg->Sync());
  }
  for (const GoldenThreadSegment& g : GoldenThreadSegments()) {
    persistence::SegmentHeader h;
    h.version = persistence::kThreadSegmentVersion;
    h.shard = g.stripe;
    h.epoch = kJournalEpoch;
    h.number = g.number;
    h.file_bytes = kJournalSegmentBytes;
    h.boot_id = kJournalBoot;
    h.name = kJournalFilter;
    SF_ASSIGN_OR_RETURN(auto seg,
                        persistence::Segment::Create(env, dir + "/" + g.file, h,
                                                     /*prefault_write=*/true));
    char* p = seg->data() + persistence::kSegmentHeaderBytes;
    for (const persistence::ThreadRecord& r : g.records) {
      persistence::CommitThreadRecord(
          p, persistence::ThreadRecordTag(r.shard, r.hash), r.hash);
      p += persistence::kThreadRecordBytes;
    }
    if (g.torn_hash != 0) {
      // A kill between the hash and the tag (T1).
      for (int i = 0; i < 8; ++i) {
        p[8 + i] = static_cast<char>(g.torn_hash >> (8 * i));
      }
    }
    SF_RETURN_IF_ERROR(seg->Sync());
  }
  SF_ASSIGN_OR_RETURN(
      auto log, persistence::DedupLog::Create(env, dir + "/golden.sfdl",
                                              kJournalSet, kDedupRegionBytes));
  const auto records = GoldenDedupRecords();
  for (const GoldenDedupRecord& r : records) {
    if (r.seq == 4) log->Swap();
    if (r.seq == 6) {
      log->Clear(0);
      log->Swap();
    }
    log->Append(r.seq, r.ops);
  }
  return Status::OK();
}

}  // namespace shardfilter::golden

#endif  // SHARDFILTER_TESTS_GOLDEN_JOURNAL_GOLDEN_H_
