// The filters' memory-mapped journal (persistence/log/format.h,
// engine/internal/filter_log.h): record format, damage vs torn tail by boot
// id, replay in seq order up to the first gap (L2), no undo after a failed
// sync (L4), segment rotation and retirement,
// the old RocksDB journal family still replayed, and a simulated power loss
// under durability sync.
//
// Over 400 lines: the numbered journal cases share one fixture and fault hooks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/log/dedup_log.h"
#include "shardfilter/persistence/log/segment.h"
#include "shardfilter/persistence/values.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

// Damage in a filter's journal makes that filter unavailable, not the store
// (DESIGN.md invariant 6): the open succeeds and the filter "f" answers with
// the damage. Returns the open's error, else Get("f")'s status.
Status OpenFilterStatus(const DatabaseOptions& options) {
  auto db = Database::Open(options);
  if (!db.ok()) return db.status();
  return (*db)->Get("f").status();
}

namespace fs = std::filesystem;
using persistence::FilterJournalRecord;
using testing::MustOpen;
using testing::Spec;
using testing::TempDir;

DatabaseOptions NoCheckpoint(const std::string& path) {
  DatabaseOptions o = testing::Options(path);
  o.checkpoint_on_close = false;
  o.mapped_journal_min_bytes = 0;  // these small filters map (L6)
  return o;
}

// Every segment file under the store, sorted by path.
std::vector<std::string> Segments(const std::string& db) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e :
       fs::recursive_directory_iterator(db + "/filter-journal", ec)) {
    if (e.path().extension() == ".sfj") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Offsets (from the file start) of the records in a segment, in order.
std::vector<size_t> RecordOffsets(const std::string& bytes) {
  std::vector<size_t> out;
  size_t at = persistence::kSegmentHeaderBytes;
  while (at + 16 <= bytes.size()) {
    uint32_t len;
    std::memcpy(&len, bytes.data() + at, 4);
    if (len == 0) break;
    out.push_back(at);
    at += (len & 1) != 0 ? persistence::kShortRecordBytes : 16 + len + 8;
  }
  return out;
}

// Where the (first) hash of the record at `off` is: a short record's (J4)
// at +8, a long one's after its header, op and count.
size_t HashAt(const std::string& bytes, size_t off) {
  return off + ((bytes[off] & 1) != 0 ? 8 : 24);
}

struct BootReset {
  ~BootReset() { persistence::SetBootIdForTesting(""); }
};
struct SmallSegments {
  SmallSegments() { persistence::SetSegmentBytesForTesting(64 << 10); }
  ~SmallSegments() { persistence::SetSegmentBytesForTesting(0); }
};

// A counting filter of one shard with keys 0..n-1 added once, unchecked.
void Fill(const std::string& db, int n,
          FilterType type = FilterType::kCountingBloom,
          Durability d = Durability::kJournal) {
  auto database = MustOpen(NoCheckpoint(db));
  auto f = *database->Create("f", Spec(type, 100'000, 1, d));
  for (int i = 0; i < n; ++i) SF_ASSERT_OK(f->Add("k" + std::to_string(i)));
  SF_ASSERT_OK(database->Close());
}

TEST(FilterJournalTest, RecordsRoundTripAndPaddingStaysZero) {
  std::string area(4096, '\0');
  uint64_t h[3] = {7, 8, 9};
  persistence::PutRecordHeader(area.data(), 5, 8 + 8 * 3);
  persistence::CommitRecord(area.data(), 5, 1, h);
  const size_t second = persistence::FilterJournalRecordBytes(3);
  persistence::PutRecordHeader(area.data() + second, 6, 8 + 8 * 2);
  persistence::CommitRecord(area.data() + second, 6, 0, {});  // a "no op"
  std::vector<FilterJournalRecord> recs;
  SF_ASSERT_OK(
      persistence::DecodeSegmentRecords(area, 2, false, "test", &recs));
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].seq, 5u);
  EXPECT_EQ(recs[0].hashes, std::vector<uint64_t>({7, 8, 9}));
  EXPECT_EQ(recs[1].op, 0);
  // Reserved but never committed: skipped (a gap), not damage.
  persistence::UncommitRecord(area.data());
  recs.clear();
  uint64_t uncommitted = 0;
  SF_ASSERT_OK(persistence::DecodeSegmentRecords(area, 2, false, "test", &recs,
                                                 &uncommitted));
  EXPECT_EQ(recs.size(), 1u);
  EXPECT_EQ(uncommitted, 1u);
  // A kill inside the last header write: the end, not damage...
  const size_t third = second + persistence::FilterJournalRecordBytes(2);
  area[third] = 16;  // the length word only
  recs.clear();
  SF_ASSERT_OK(
      persistence::DecodeSegmentRecords(area, 2, false, "test", &recs));
  EXPECT_EQ(recs.size(), 1u);
  // ...but with data after it, damage.
  area[third + 200] = 1;
  recs.clear();
  EXPECT_EQ(
      persistence::DecodeSegmentRecords(area, 2, false, "test", &recs).code(),
      StatusCode::kCorruption);
}

// Format 2 (log/format.h J4): a one-key record after its segment's
// first takes 16 bytes, not 40 (each journalled add paid 40 bytes of page
// cache and disk), and keeps every property of the long form: its seq
// (implicit: the previous record's + 1), the reserved / committed states,
// damage within the boot, the quiet end after a reboot.
TEST(FilterJournalTest, OneKeyRecordsAreShortAndCheckedLikeLongOnes) {
  std::string area(4096, '\0');
  char* p = area.data();
  size_t at = 0;
  std::vector<size_t> offs;
  auto put = [&](uint64_t seq, int op, uint64_t hash, bool commit) {
    offs.push_back(at);
    const size_t n = persistence::ReserveRecord(p + at, seq, 1, at == 0);
    EXPECT_EQ(n, at == 0 ? persistence::FilterJournalRecordBytes(1)
                         : persistence::kShortRecordBytes);
    if (commit) {
      persistence::CommitRecord(p + at, seq, static_cast<uint8_t>(op),
                                op == 0 ? std::span<const uint64_t>()
                                        : std::span<const uint64_t>(&hash, 1));
    }
    at += n;
  };
  put(10, 1, 111, true);  // the first: long (the base, J2)
  put(11, 2, 222, true);
  put(12, 0, 0, true);     // a "no op"
  put(13, 1, 333, false);  // reserved, never committed
  put(14, 1, 444, true);
  auto decode = [&](uint32_t version, bool later, uint64_t* uncommitted) {
    std::vector<FilterJournalRecord> recs;
    Status st = persistence::DecodeSegmentRecords(area, version, later, "test",
                                                  &recs, uncommitted);
    return std::make_pair(st, recs);
  };
  uint64_t uncommitted = 0;
  auto [st, recs] = decode(2, false, &uncommitted);
  SF_ASSERT_OK(st);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(uncommitted, 1u);
  EXPECT_EQ(recs[0].seq, 10u);
  EXPECT_EQ(recs[0].hashes, std::vector<uint64_t>({111}));
  EXPECT_EQ(recs[1].seq, 11u);
  EXPECT_EQ(recs[1].op, 2);
  EXPECT_EQ(recs[1].hashes, std::vector<uint64_t>({222}));
  EXPECT_EQ(recs[2].seq, 12u);
  EXPECT_EQ(recs[2].op, 0);
  EXPECT_TRUE(recs[2].hashes.empty());
  EXPECT_EQ(recs[3].seq, 14u);
  EXPECT_EQ(recs[3].hashes, std::vector<uint64_t>({444}));
  // A version 1 segment holds no short records: damage there.
  EXPECT_EQ(decode(1, false, nullptr).first.code(), StatusCode::kCorruption);
  // Un-committed (a failed sync, L4): reserved again, hash left in place.
  persistence::UncommitRecord(p + offs[1]);
  uncommitted = 0;
  auto [st2, recs2] = decode(2, false, &uncommitted);
  SF_ASSERT_OK(st2);
  EXPECT_EQ(recs2.size(), 3u);
  EXPECT_EQ(uncommitted, 2u);
  // A flipped bit in a committed short record's hash: damage within the
  // boot, the end of the log after a reboot.
  area[offs[4] + 8] ^= 0x04;
  const Status damaged = decode(2, false, nullptr).first;
  EXPECT_EQ(damaged.code(), StatusCode::kCorruption);
  EXPECT_NE(damaged.message().find("checksum"), std::string::npos);
  auto [st3, recs3] = decode(2, true, nullptr);
  SF_ASSERT_OK(st3);
  EXPECT_EQ(recs3.size(), 1u);  // the reserved record 11 ends it there
  area[offs[4] + 8] ^= 0x04;
  // Its seq is bound into the check: the same bytes one record later fail.
  // (Record 11 re-committed, then moved one slot on, behind a reserved 11.)
  persistence::CommitRecord(p + offs[1], 11, 2, recs[1].hashes);
  std::string shifted(4096, '\0');
  std::memcpy(shifted.data(), p, offs[1]);
  persistence::ReserveRecord(shifted.data() + offs[1], 11, 1, false);
  std::memcpy(shifted.data() + offs[2], p + offs[1], 16);  // 11's at 12's
  std::vector<FilterJournalRecord> r;
  SF_ASSERT_OK(persistence::DecodeSegmentRecords(area, 2, false, "test", &r));
  EXPECT_EQ(
      persistence::DecodeSegmentRecords(shifted, 2, false, "test", &r).code(),
      StatusCode::kCorruption);
  // A short record first in its segment has no seq to follow: damage.
  std::string first(4096, '\0');
  std::memcpy(first.data(), p + offs[1], 16);
  EXPECT_EQ(
      persistence::DecodeSegmentRecords(first, 2, false, "test", &r).code(),
      StatusCode::kCorruption);
}

// The two-step commit (a journalled Bloom add computes the check while the
// table's line is on its way) writes the same bytes as CommitRecord, for
// short and long slots and for a no op.
TEST(FilterJournalTest, PreparedCommitWritesWhatCommitRecordWrites) {
  for (const bool first : {true, false}) {
    for (const uint8_t op : {uint8_t{0}, uint8_t{1}}) {
      std::string a(256, '\0'), b(256, '\0');
      const uint64_t seq = 41, hash = 0xfeedface12345678;
      persistence::ReserveRecord(a.data(), seq, 1, first);
      persistence::ReserveRecord(b.data(), seq, 1, first);
      persistence::CommitRecord(a.data(), seq, op,
                                op == 0 ? std::span<const uint64_t>()
                                        : std::span<const uint64_t>(&hash, 1));
      const uint64_t prepared =
          persistence::PrepareCommit(b.data(), seq, op, hash);
      EXPECT_EQ(prepared == 0, first);  // long slots are committed whole
      persistence::CommitPrepared(b.data(), seq, op, hash, prepared);
      EXPECT_EQ(a, b) << "first " << first << " op " << int{op};
    }
  }
}

// Through the engine: journalled single-key adds write short records after
// each segment's first (40 bytes each before format 2), and a store whose
// segments are format 1 (all records long) still opens with every op.
TEST(FilterJournalTest, JournalledAddsWriteShortRecordsAndVersion1StillLoads) {
  TempDir dir;
  Fill(dir.db(), 50);
  const std::string seg = Segments(dir.db()).at(0);
  std::string bytes = ReadFile(seg);
  auto offs = RecordOffsets(bytes);
  ASSERT_EQ(offs.size(), 50u);
  EXPECT_EQ(offs[1] - offs[0], persistence::FilterJournalRecordBytes(1));
  for (size_t i = 2; i < offs.size(); ++i) {
    EXPECT_EQ(offs[i] - offs[i - 1], persistence::kShortRecordBytes) << i;
  }
  // Rewrite the segment as format 1 would have: version 1, long records.
  auto header = persistence::DecodeSegmentHeader(bytes, "test");
  SF_ASSERT_OK(header.status());
  std::vector<FilterJournalRecord> recs;
  SF_ASSERT_OK(persistence::DecodeSegmentRecords(
      std::string_view(bytes).substr(persistence::kSegmentHeaderBytes), 2,
      false, "test", &recs));
  ASSERT_EQ(recs.size(), 50u);
  persistence::SegmentHeader h = *header;
  h.version = 1;
  std::string v1(bytes.size(), '\0');
  const std::string head = persistence::EncodeSegmentHeader(h);
  std::memcpy(v1.data(), head.data(), head.size());
  size_t at = persistence::kSegmentHeaderBytes;
  for (const FilterJournalRecord& r : recs) {
    persistence::PutRecordHeader(
        v1.data() + at, r.seq, static_cast<uint32_t>(8 + 8 * r.hashes.size()));
    persistence::CommitRecord(v1.data() + at, r.seq, r.op, r.hashes);
    at += persistence::FilterJournalRecordBytes(r.hashes.size());
  }
  WriteFile(seg, v1);
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Get("f");
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(f->Count("k" + std::to_string(i)), 1u) << i;
  }
}

TEST(FilterJournalTest, AddsLandInSegmentsNotInRocksDb) {
  TempDir dir;
  Fill(dir.db(), 100);
  EXPECT_EQ(Segments(dir.db()).size(), 1u);
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Get("f");
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(f->Count("k" + std::to_string(i)), 1u);
  EXPECT_EQ(db->counters().replayed_ops, 100u);
  auto report = db->Verify();
  SF_ASSERT_OK(report.status());
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->journal_entries, 100u);
}

// L6's footprint: a mapped shard keeps a spare segment made ahead while it
// is written and gives it back once a whole checkpoint interval passed
// without a mutation of it; its active segment stays. Before, an idle
// filter held a spare per shard (up to 8 MiB each, 32 MiB a filter) for
// as long as it was open.
TEST(FilterJournalTest, IdleShardsGiveTheirSparesBack) {
  TempDir dir;
  const auto wait_for = [&](size_t n) {
    for (int i = 0; i < 1000 && Segments(dir.db()).size() != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Segments(dir.db()).size() == n;
  };
  std::vector<std::string> keys[2];  // each shard's, by its router
  {
    auto db = MustOpen(NoCheckpoint(dir.db()));
    auto f = *db->Create("f", Spec(FilterType::kCountingBloom, 10'000, 2));
    for (int i = 0; keys[0].size() < 50 || keys[1].size() < 50; ++i) {
      std::string k = "k" + std::to_string(i);
      keys[f->ShardOf(f->Hash(k))].push_back(std::move(k));
    }
    for (int s = 0; s < 2; ++s) {
      for (int i = 0; i < 20; ++i) SF_ASSERT_OK(f->Add(keys[s][i]));
    }
    ASSERT_TRUE(wait_for(4));  // each shard's active segment and spare
    SF_ASSERT_OK(db->CheckpointAll().status());  // both written: kept
    EXPECT_EQ(Segments(dir.db()).size(), 4u);
    for (int i = 20; i < 30; ++i) SF_ASSERT_OK(f->Add(keys[1][i]));
    SF_ASSERT_OK(db->CheckpointAll().status());  // shard 0 idle since
    EXPECT_EQ(Segments(dir.db()).size(), 3u);
    SF_ASSERT_OK(db->CheckpointAll().status());  // both idle
    EXPECT_EQ(Segments(dir.db()).size(), 2u);
    // Both write on in their active segments.
    for (int s = 0; s < 2; ++s) {
      for (int i = 30; i < 50; ++i) SF_ASSERT_OK(f->Add(keys[s][i]));
    }
  }
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Get("f");
  EXPECT_EQ(db->counters().replayed_ops, 40u);  // after the last checkpoint
  for (int s = 0; s < 2; ++s) {
    for (int i = 0; i < 50; ++i) {
      if (s == 0 && i >= 20 && i < 30) continue;  // never added
      EXPECT_GE(f->Count(keys[s][i]), 1u) << s << " " << i;
    }
  }
}

// L6: small filters (a server's per-user keys) journal in RocksDB's WAL:
// no segment file, descriptor or mapping each. Before, each of these 300
// filters mapped 8 MiB segments (and a spare, and a thread): 2.4 GiB of
// preallocated files, past the default descriptor limit.
TEST(FilterJournalTest, SmallFiltersJournalInRocksDb) {
  TempDir dir;
  DatabaseOptions o = testing::Options(dir.db());  // the default threshold
  o.checkpoint_on_close = false;
  {
    auto db = MustOpen(o);
    for (int i = 0; i < 300; ++i) {
      auto f = db->Create("user:" + std::to_string(i),
                          Spec(FilterType::kBloom, 1000, 1));
      SF_ASSERT_OK(f.status());
      SF_ASSERT_OK((*f)->Add("seen-" + std::to_string(i)));
    }
    EXPECT_EQ(Segments(dir.db()).size(), 0u);
    SF_ASSERT_OK(db->Close());
  }
  auto db = MustOpen(o);
  for (int i = 0; i < 300; ++i) {
    auto f = db->Get("user:" + std::to_string(i));
    SF_ASSERT_OK(f.status());
    EXPECT_TRUE((*f)->MayContain("seen-" + std::to_string(i))) << i;
  }
  EXPECT_EQ(db->counters().replayed_ops, 300u);
}

// L6: a filter of at least mapped_journal_min_bytes maps segments of half
// its shard's table (here 1 shard of ~6 MB: ~3 MiB segments).
TEST(FilterJournalTest, LargeFilterMapsSegmentsSizedByItsTable) {
  TempDir dir;
  DatabaseOptions o = testing::Options(dir.db());
  o.checkpoint_on_close = false;
  auto db = MustOpen(o);
  auto f = *db->Create("big", Spec(FilterType::kBloom, 5'000'000, 1));
  SF_ASSERT_OK(f->Add("x"));
  const auto segments = Segments(dir.db());
  ASSERT_GE(segments.size(), 1u);
  const uint64_t table = f->Stats().total.bytes;
  for (const std::string& s : segments) {
    const uint64_t size = fs::file_size(s);
    EXPECT_LE(size, table / 2 + 4096) << s;
    EXPECT_GE(size, uint64_t{1} << 20) << s;
  }
  EXPECT_EQ(internal::MappedSegmentBytes(uint64_t{64} << 20, 1),
            uint64_t{8} << 20);
  EXPECT_EQ(internal::MappedSegmentBytes(4096, 1), uint64_t{1} << 20);
  EXPECT_EQ(internal::MappedSegmentBytes(uint64_t{64} << 20, 16),
            uint64_t{2} << 20);
}

// Damage, not a torn tail: a flipped bit with records after it is
// Corruption at open, and verify lists it.
TEST(FilterJournalTest, FlippedBitMidJournalIsCorruption) {
  TempDir dir;
  Fill(dir.db(), 200);
  const std::string seg = Segments(dir.db()).at(0);
  std::string bytes = ReadFile(seg);
  auto offs = RecordOffsets(bytes);
  ASSERT_EQ(offs.size(), 200u);
  bytes[HashAt(bytes, offs[100]) + 6] ^= 0x10;  // inside record 100's hash
  WriteFile(seg, bytes);
  const Status st = OpenFilterStatus(NoCheckpoint(dir.db()));
  ASSERT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("checksum"), std::string::npos);
  DatabaseOptions ro = NoCheckpoint(dir.db());
  ro.read_only = true;
  ro.report_journal_damage = true;
  auto vdb = MustOpen(ro);
  auto report = vdb->Verify();
  SF_ASSERT_OK(report.status());
  EXPECT_FALSE(report->ok());
  ASSERT_EQ(report->problems.size(), 1u);
  // The shard kept the ops before the damage (a prefix).
  auto f = *vdb->Get("f");
  EXPECT_EQ(f->Count("k99"), 1u);
}

TEST(FilterJournalTest, DamagedHeaderWordIsCorruption) {
  TempDir dir;
  Fill(dir.db(), 50);
  const std::string seg = Segments(dir.db()).at(0);
  std::string bytes = ReadFile(seg);
  auto offs = RecordOffsets(bytes);
  bytes[offs[10]] ^= 0x08;  // the length word
  WriteFile(seg, bytes);
  EXPECT_EQ(OpenFilterStatus(NoCheckpoint(dir.db())).code(),
            StatusCode::kCorruption);
}

TEST(FilterJournalTest, ZeroedTailOpensWithPrefix) {
  TempDir dir;
  Fill(dir.db(), 200);
  const std::string seg = Segments(dir.db()).at(0);
  std::string bytes = ReadFile(seg);
  auto offs = RecordOffsets(bytes);
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(offs[150]), bytes.end(),
            '\0');
  WriteFile(seg, bytes);
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Get("f");
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(f->Count("k" + std::to_string(i)), i < 150 ? 1u : 0u) << i;
  }
}

// After a reboot the page cache may have been written back in any order:
// the first bad record ends the log, with the prefix before it.
TEST(FilterJournalTest, AfterRebootBadRecordOrTruncationEndsTheLog) {
  BootReset reset;
  for (int mode = 0; mode < 2; ++mode) {
    persistence::SetBootIdForTesting("");
    TempDir dir;
    Fill(dir.db(), 200);
    const std::string seg = Segments(dir.db()).at(0);
    std::string bytes = ReadFile(seg);
    auto offs = RecordOffsets(bytes);
    if (mode == 0) {
      bytes[HashAt(bytes, offs[120]) + 6] ^= 0x01;
    } else {
      bytes.resize(offs[120] + 12);  // a torn, truncated file
    }
    WriteFile(seg, bytes);
    persistence::SetBootIdForTesting("");
    EXPECT_EQ(OpenFilterStatus(NoCheckpoint(dir.db())).code(),
              StatusCode::kCorruption)
        << "same boot, mode " << mode;
    persistence::SetBootIdForTesting("a-later-boot");
    auto db = MustOpen(NoCheckpoint(dir.db()));
    auto f = *db->Get("f");
    for (int i = 0; i < 200; ++i) {
      EXPECT_EQ(f->Count("k" + std::to_string(i)), i < 120 ? 1u : 0u)
          << "mode " << mode << " key " << i;
    }
  }
}

// An unavailable filter keeps its journal: a writable open removes only the
// epoch directories no filter names. Before: the open that found filter
// "f" unavailable (its descriptor damaged) deleted its segments as stale,
// so every acknowledged op since the last checkpoint was gone for good.
TEST(FilterJournalTest, UnavailableFilterKeepsItsSegments) {
  TempDir dir;
  Fill(dir.db(), 300);
  const std::vector<std::string> before = Segments(dir.db());
  ASSERT_FALSE(before.empty());
  std::string good_descriptor, key;
  {
    testing::RawStore raw(dir.db());
    ASSERT_TRUE(raw.ok());
    auto catalog = raw.Scan("catalog");
    ASSERT_EQ(catalog.size(), 1u);
    key = catalog[0].first;
    good_descriptor = catalog[0].second;
    std::string bad = good_descriptor;
    bad[bad.size() / 2] ^= 0x20;  // fails the descriptor's checksum
    raw.Put("catalog", key, bad);
  }
  {
    auto db = MustOpen(NoCheckpoint(dir.db()));
    EXPECT_TRUE(db->Get("f").status().IsCorruption());
    SF_ASSERT_OK(db->Create("g", Spec(FilterType::kCuckoo, 1000, 1)).status());
    SF_ASSERT_OK(db->Close());
  }
  for (const std::string& seg : before) EXPECT_TRUE(fs::exists(seg)) << seg;
  {
    testing::RawStore raw(dir.db());
    ASSERT_TRUE(raw.ok());
    raw.Put("catalog", key, good_descriptor);  // the repair
  }
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Get("f");
  for (int i = 0; i < 300; ++i)
    EXPECT_EQ(f->Count("k" + std::to_string(i)), 1u) << i;
}

// Case 7: replay applies a shard's ops in seq order and stops at the first
// gap (what follows a gap was never acknowledged). Before: the RocksDB
// journal's entry 4 was replayed without 3.
TEST(FilterJournalTest, ReplayStopsAtTheFirstGap) {
  TempDir dir;
  {
    FilterSpec spec = Spec(FilterType::kCountingBloom, 1000, 1);
    spec.retain_hashes = false;
    auto db = MustOpen(NoCheckpoint(dir.db()));
    SF_ASSERT_OK(db->Create("f", spec).status());
    SF_ASSERT_OK(db->Close());
  }
  auto hash = [](int i) {
    return HashKey("g" + std::to_string(i), kDefaultSeed);
  };
  {
    testing::RawStore raw(dir.db());
    ASSERT_TRUE(raw.ok());
    for (uint64_t seq : {1, 2, 4}) {
      uint64_t h = hash(static_cast<int>(seq));
      raw.Put("journal", persistence::JournalKey("f", 0, seq),
              persistence::EncodeJournalEntry(persistence::JournalOp::kAdd,
                                              {&h, 1}));
    }
  }
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Get("f");
  EXPECT_EQ(f->CountHash(hash(1)), 1u);  // the old journal family replays
  EXPECT_EQ(f->CountHash(hash(2)), 1u);
  EXPECT_EQ(f->CountHash(hash(4)), 0u);  // after the gap at 3
  EXPECT_EQ(f->Stats().shards[0].last_sequence, 2u);
  // New ops continue at 3, in a segment that supersedes nothing wrongly.
  SF_ASSERT_OK(f->Add("after"));
  SF_ASSERT_OK(db->Close());
  auto again = MustOpen(NoCheckpoint(dir.db()));
  auto g = *again->Get("f");
  EXPECT_EQ(g->Count("after"), 1u);
  EXPECT_EQ(g->CountHash(hash(2)), 1u);
}

// Counting and cuckoo ops take their seq and slot before they apply (so
// the record's check is computed during the table's miss): a failed op
// commits its slot as a no op. Those no ops keep the seqs contiguous and
// replay skips them: a reopen finds exactly the successful ops.
TEST(FilterJournalTest, FailedOrderedOpsAreNoOpsThatReplaySkips) {
  for (FilterType type : {FilterType::kCountingBloom, FilterType::kCuckoo}) {
    TempDir dir;
    {
      auto db = MustOpen(NoCheckpoint(dir.db()));
      auto f = *db->Create("f", Spec(type, 100'000, 1, Durability::kJournal));
      SF_ASSERT_OK(f->Add("a"));
      EXPECT_EQ(f->Remove("never-added").code(), StatusCode::kNotFound);
      SF_ASSERT_OK(f->Add("b"));
      SF_ASSERT_OK(f->Remove("a"));
      EXPECT_EQ(f->Remove("a").code(), StatusCode::kNotFound);
      SF_ASSERT_OK(f->Add("c"));
      SF_ASSERT_OK(db->Close());
    }
    const std::string seg = Segments(dir.db()).at(0);
    const std::string bytes = ReadFile(seg);
    std::vector<FilterJournalRecord> recs;
    SF_ASSERT_OK(persistence::DecodeSegmentRecords(
        std::string_view(bytes).substr(persistence::kSegmentHeaderBytes), 2,
        false, "test", &recs));
    ASSERT_EQ(recs.size(), 6u) << FilterTypeName(type);
    EXPECT_EQ(recs[1].op, 0);  // the failed removes
    EXPECT_EQ(recs[4].op, 0);
    auto db = MustOpen(NoCheckpoint(dir.db()));
    auto f = *db->Get("f");
    EXPECT_EQ(f->Count("a"), 0u) << FilterTypeName(type);
    EXPECT_EQ(f->Count("b"), 1u);
    EXPECT_EQ(f->Count("c"), 1u);
    SF_ASSERT_OK(f->Add("d"));  // seqs continue after the replayed ones
    SF_ASSERT_OK(db->Close());
    auto again = MustOpen(NoCheckpoint(dir.db()));
    EXPECT_EQ((*again->Get("f"))->Count("d"), 1u);
  }
}

// A record reserved but never committed (its writer was killed) with
// committed records after it, within one boot: not damage; replay stops
// there, and ops written after the reopen are not shadowed by the dropped
// ones (log/format.h J2).
TEST(FilterJournalTest, UncommittedRecordIsAGapNotDamage) {
  TempDir dir;
  Fill(dir.db(), 20);
  const std::string seg = Segments(dir.db()).at(0);
  std::string bytes = ReadFile(seg);
  auto offs = RecordOffsets(bytes);
  persistence::UncommitRecord(bytes.data() + offs[10]);
  WriteFile(seg, bytes);
  {
    auto db = MustOpen(NoCheckpoint(dir.db()));
    auto f = *db->Get("f");
    EXPECT_EQ(f->Count("k9"), 1u);
    EXPECT_EQ(f->Count("k10"), 0u);
    EXPECT_EQ(f->Count("k11"), 0u);
    SF_ASSERT_OK(f->Add("new"));
    SF_ASSERT_OK(f->Add("new"));
    SF_ASSERT_OK(db->Close());
  }
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Get("f");
  EXPECT_EQ(f->Count("new"), 2u);
  EXPECT_EQ(f->Count("k11"), 0u);
  EXPECT_EQ(f->Count("k9"), 1u);
}

// Case 8: a failed sync is never undone. The op is not acknowledged, the
// filter stops taking writes (IOError naming the cause); a reopen recovers
// exactly the acknowledged ops.
TEST(FilterJournalTest, FailedSyncStopsWritesAndNothingAcknowledgedIsLost) {
  for (FilterType type :
       {FilterType::kCountingBloom, FilterType::kCuckoo, FilterType::kBloom}) {
    TempDir dir;
    std::atomic<int> syncs{0};
    {
      auto db = MustOpen(NoCheckpoint(dir.db()));
      auto f = *db->Create("f", Spec(type, 10'000, 2, Durability::kSync));
      persistence::SetJournalFaultForTesting(
          [&](std::string_view what, const std::string&) {
            if (what == "sync" && ++syncs == 40) {
              return Status::IOError("injected EIO");
            }
            return Status::OK();
          });
      int acked = 0;
      Status failed;
      for (int i = 0; i < 100; ++i) {
        Status s = f->Add("k" + std::to_string(i));
        if (s.ok()) {
          ++acked;
          continue;
        }
        failed = s;
        break;
      }
      persistence::SetJournalFaultForTesting(nullptr);
      ASSERT_EQ(failed.code(), StatusCode::kIOError);
      EXPECT_EQ(acked, 39);
      Status later = f->Add("later");
      EXPECT_EQ(later.code(), StatusCode::kIOError);
      EXPECT_NE(later.message().find("injected EIO"), std::string::npos)
          << later.ToString();
      EXPECT_EQ(f->AddHashes(std::vector<uint64_t>{1, 2, 3}).code(),
                StatusCode::kIOError);
      (void)db->Close();  // NoCheckpoint: nothing heals it here
    }
    auto db = MustOpen(NoCheckpoint(dir.db()));
    auto f = *db->Get("f");
    for (int i = 0; i < 39; ++i) {
      EXPECT_EQ(f->Count("k" + std::to_string(i)), 1u) << i;
    }
    // The op whose sync failed was not acknowledged and is not recovered.
    if (type != FilterType::kBloom) {
      EXPECT_EQ(f->Count("k39"), 0u);
    }
    // Writable again after the reload.
    SF_ASSERT_OK(f->Add("again"));
    SF_ASSERT_OK(db->CheckpointAll().status());
  }
}

// L5: a checkpoint heals a stopped filter in place: the same Database takes
// writes again, with no reopen, and every op acknowledged before the stop
// and after the heal survives a reopen. Before: only a reopen (for the
// server, a restart) brought the filter back.
TEST(FilterJournalTest, CheckpointHealsAStoppedFilter) {
  for (FilterType type :
       {FilterType::kCountingBloom, FilterType::kCuckoo, FilterType::kBloom}) {
    TempDir dir;
    std::atomic<int> syncs{0};
    std::vector<std::string> acked;
    {
      auto db = MustOpen(NoCheckpoint(dir.db()));
      auto f = *db->Create("f", Spec(type, 10'000, 2, Durability::kSync));
      persistence::SetJournalFaultForTesting(
          [&](std::string_view what, const std::string&) {
            if (what == "sync" && ++syncs == 20) {
              return Status::IOError("injected EIO");
            }
            return Status::OK();
          });
      int stopped = 0;
      for (int i = 0; i < 200; ++i) {
        const std::string key = "k" + std::to_string(i);
        Status s = f->Add(key);
        if (s.ok()) {
          acked.push_back(key);
          continue;
        }
        ASSERT_EQ(s.code(), StatusCode::kIOError) << s.ToString();
        ++stopped;
        // Stopped: every write fails until a checkpoint succeeds.
        EXPECT_EQ(f->Add("x").code(), StatusCode::kIOError);
        EXPECT_EQ(f->AddHashes(std::vector<uint64_t>{1, 2}).code(),
                  StatusCode::kIOError);
        SF_ASSERT_OK(db->CheckpointAll().status());
      }
      persistence::SetJournalFaultForTesting(nullptr);
      EXPECT_EQ(stopped, 1);
      EXPECT_GT(acked.size(), 150u);
      SF_ASSERT_OK(f->Add("after"));
      acked.push_back("after");
      (void)db->Close();
    }
    auto db = MustOpen(NoCheckpoint(dir.db()));
    auto f = *db->Get("f");
    for (const std::string& key : acked) {
      EXPECT_GE(f->Count(key), 1u) << key << " type " << static_cast<int>(type);
    }
  }
}

// Space is reserved before the op is applied: a segment that cannot be
// created fails the op with nothing changed, and the filter keeps working.
TEST(FilterJournalTest, NoRoomForTheJournalChangesNothing) {
  TempDir dir;
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Create("f", Spec(FilterType::kCuckoo, 10'000, 1));
  persistence::SetJournalFaultForTesting([](std::string_view what,
                                            const std::string&) {
    return what == "create" ? Status::IOError("injected ENOSPC") : Status::OK();
  });
  Status s = f->Add("x");
  persistence::SetJournalFaultForTesting(nullptr);
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_EQ(f->Count("x"), 0u);
  SF_ASSERT_OK(f->Add("x"));
  EXPECT_EQ(f->Count("x"), 1u);
}

// Many segments per shard (batches and single ops), a checkpoint between:
// replay is exactly-once and the checkpoint deletes the dead segments.
TEST(FilterJournalTest, SegmentsRotateAndCheckpointsRetireThem) {
  SmallSegments small;
  TempDir dir;
  std::unique_ptr<ShardedFilter> want;
  {
    auto db = MustOpen(NoCheckpoint(dir.db()));
    auto f = *db->Create("f", Spec(FilterType::kCountingBloom, 200'000, 2));
    FilterSpec plain = f->spec();
    plain.durability.reset();
    want = ShardedFilter::Create(plain).value();
    std::mt19937_64 rng(1);
    std::vector<uint64_t> pool(50'000);
    for (uint64_t& h : pool) h = rng();
    auto round = [&](int n) {
      std::vector<uint64_t> batch;
      for (int i = 0; i < n; ++i) {
        uint64_t h = pool[rng() % pool.size()];
        if (i % 2 == 0) {
          batch.push_back(h);
        } else {
          SF_ASSERT_OK(f->AddHash(h));
          SF_ASSERT_OK(want->AddHash(h));
        }
      }
      SF_ASSERT_OK(f->AddHashes(batch));
      SF_ASSERT_OK(want->AddHashes(batch));
    };
    // ~300 KiB of records per shard (single-key ops are 16-byte records,
    // batches one long record per shard): several 64 KiB segments each.
    round(60'000);
    EXPECT_GT(Segments(dir.db()).size(), 4u);
    SF_ASSERT_OK(db->CheckpointAll().status());
    // The active one per shard, and the spares made ahead.
    EXPECT_LE(Segments(dir.db()).size(), 4u);
    round(60'000);
    (void)db;
  }
  auto db = MustOpen(NoCheckpoint(dir.db()));
  auto f = *db->Get("f");
  EXPECT_TRUE(f->Equals(*want));  // exactly once, through every segment
}

// A simulated power loss under durability sync: every segment is put back
// to what its last fdatasync covered, in a "later boot". Nothing
// acknowledged is lost, nothing is applied twice.
TEST(FilterJournalTest, SyncSurvivesPowerLoss) {
  BootReset reset;
  SmallSegments small;
  for (FilterType type : {FilterType::kCountingBloom, FilterType::kCuckoo}) {
    TempDir dir;
    std::mutex mu;
    std::map<std::string, std::string> disk;  // path -> bytes on "disk"
    persistence::SetJournalSyncedForTesting(
        [&](const std::string& path, std::string_view bytes) {
          std::lock_guard lock(mu);
          std::string& d = disk[path];
          if (d.size() < bytes.size()) d.resize(bytes.size());
          std::memcpy(d.data(), bytes.data(), bytes.size());
        });
    std::vector<std::map<int, int>> counts(4);
    auto db = MustOpen(NoCheckpoint(dir.db()));
    auto f = *db->Create("f", Spec(type, 100'000, 2, Durability::kSync));
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
      writers.emplace_back([&, t] {
        std::mt19937 rng(t);
        for (int i = 0; i < 300; ++i) {
          int k = t * 1000 + static_cast<int>(rng() % 40);
          std::string key = "p" + std::to_string(k);
          if (rng() % 3 == 0 && counts[t][k] > 0) {
            if (f->Remove(key).ok()) --counts[t][k];
          } else if (counts[t][k] < 3 && f->Add(key).ok()) {
            ++counts[t][k];
          }
        }
      });
    }
    for (auto& w : writers) w.join();
    persistence::SetJournalSyncedForTesting(nullptr);
    // The "disk": RocksDB as it is (its writes are synced), the segments
    // as their last sync left them.
    const std::string copy = dir.path() + "/after-power-loss";
    fs::copy(dir.db(), copy, fs::copy_options::recursive);
    for (const std::string& seg : Segments(dir.db())) {
      std::string bytes;
      {
        std::lock_guard lock(mu);
        bytes = disk[seg];
      }
      bytes.resize(ReadFile(seg).size(), '\0');
      WriteFile(copy + seg.substr(dir.db().size()), bytes);
    }
    persistence::SetBootIdForTesting("after-the-power-loss");
    auto lost = MustOpen(NoCheckpoint(copy));
    auto g = *lost->Get("f");
    for (int t = 0; t < 4; ++t) {
      for (const auto& [k, n] : counts[t]) {
        EXPECT_EQ(g->Count("p" + std::to_string(k)), static_cast<uint32_t>(n))
            << FilterTypeName(type) << " key " << k;
      }
    }
    persistence::SetBootIdForTesting("");
  }
}

}  // namespace
}  // namespace shardfilter
