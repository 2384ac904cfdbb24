// The sync marker (persistence/sync_marker.h W1-W5): its bytes,
// its alternating pages, a damaged marker, a dedup set that lost writes
// acknowledged under durability sync with the write-ahead log (unavailable
// until dropped), a marker write that fails; and the write-ahead log's torn
// tail (persistence/wal_tail.h).
#include "shardfilter/persistence/sync_marker.h"

#include <gtest/gtest.h>
#include <rocksdb/file_system.h>
#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fault_fs.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/persistence/test_env.h"
#include "shardfilter/persistence/wal_tail.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

namespace fs = std::filesystem;
using persistence::kSyncMarkerFile;
using persistence::kSyncMarkerPageBytes;
using persistence::ReadSyncMarker;
using persistence::SyncMarker;
using testing::MustOpen;
using testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f),
                     std::istreambuf_iterator<char>());
}
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
rocksdb::FileSystem* DefaultFs() {
  return rocksdb::FileSystem::Default().get();
}

TEST(SyncMarkerTest, PageBytesArePinned) {
  persistence::SyncMarkerState s;
  s.generation = 7;
  s.slots.assign(persistence::kSyncMarkerSlots, 0);
  s.slots[2] = 0x0102030405060708;
  const std::string p = persistence::EncodeSyncMarkerPage(s);
  ASSERT_EQ(p.size(), kSyncMarkerPageBytes);
  EXPECT_EQ(p.substr(0, 8), "SFSYNCD1");
  EXPECT_EQ(p.substr(8, 8), std::string("\x01\0\0\0\xf7\x0f\0\0", 8));
  EXPECT_EQ(p.substr(16, 8), std::string("\x07\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(p.substr(24, 40), std::string(40, '\0'));
  EXPECT_EQ(p.substr(64 + 16, 8), "\x08\x07\x06\x05\x04\x03\x02\x01");
  const uint64_t check =
      XXH3_64bits_withSeed(p.data(), kSyncMarkerPageBytes - 8,
                           0x6b72616d636e7973);  // "syncmark"
  std::string le;
  for (int i = 0; i < 8; ++i) le.push_back(static_cast<char>(check >> (8 * i)));
  EXPECT_EQ(p.substr(kSyncMarkerPageBytes - 8), le);
  // A version from the future is refused, not misread.
  std::string future = p;
  future[8] = 2;
  const uint64_t c2 = XXH3_64bits_withSeed(
      future.data(), kSyncMarkerPageBytes - 8, 0x6b72616d636e7973);
  for (int i = 0; i < 8; ++i) {
    future[kSyncMarkerPageBytes - 8 + i] = static_cast<char>(c2 >> (8 * i));
  }
  EXPECT_TRUE(persistence::DecodeSyncMarkerPage(future, "page")
                  .status()
                  .IsNotSupported());
}

// W2: generations alternate between the pages; a torn page leaves the
// other, older one; neither whole (or a wrong size) is Corruption.
TEST(SyncMarkerTest, ATornPageFallsBackToTheOther) {
  TempDir dir;
  const std::string file = dir.path() + "/" + kSyncMarkerFile;
  {
    auto m = SyncMarker::Open(DefaultFs(), dir.path(), std::nullopt);
    SF_ASSERT_OK(m.status());
    (*m)->Acknowledge(3, 10);  // generation 2, page 0
    (*m)->Acknowledge(5, 20);  // generation 3, page 1
    (*m)->Acknowledge(5, 15);  // covered: no page written
    SF_ASSERT_OK((*m)->failure());
  }
  auto r = ReadSyncMarker(DefaultFs(), dir.path());
  SF_ASSERT_OK(r.status());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->generation, 3u);
  EXPECT_EQ((*r)->slots[3], 10u);
  EXPECT_EQ((*r)->slots[5], 20u);
  std::string bytes = ReadFile(file);
  ASSERT_EQ(bytes.size(), 2 * kSyncMarkerPageBytes);
  std::string torn = bytes;
  torn[kSyncMarkerPageBytes + 100] ^= 1;
  WriteFile(file, torn);
  r = ReadSyncMarker(DefaultFs(), dir.path());
  SF_ASSERT_OK(r.status());
  EXPECT_EQ((*r)->generation, 2u);
  EXPECT_EQ((*r)->slots[3], 10u);
  EXPECT_EQ((*r)->slots[5], 0u);
  torn[100] ^= 1;
  WriteFile(file, torn);
  r = ReadSyncMarker(DefaultFs(), dir.path());
  EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find(kSyncMarkerFile), std::string::npos);
  WriteFile(file, bytes.substr(0, 4096));
  EXPECT_TRUE(ReadSyncMarker(DefaultFs(), dir.path()).status().IsCorruption());
}

// A store whose marker is damaged does not open (the damaged file named,
// nothing changed): it could not tell whether the log lost synced writes.
TEST(SyncMarkerTest, DamagedMarkerIsCorruptionAndChangesNothing) {
  TempDir dir;
  {
    auto db = MustOpen(testing::Options(dir.db()));
    ASSERT_NE(db, nullptr);
    SF_ASSERT_OK(db->Close());
  }
  const std::string file = dir.db() + "/" + kSyncMarkerFile;
  ASSERT_TRUE(fs::exists(file));
  std::string bytes = ReadFile(file);
  bytes[100] ^= 1;
  bytes[kSyncMarkerPageBytes + 100] ^= 1;
  WriteFile(file, bytes);
  for (bool read_only : {true, false}) {
    DatabaseOptions o = testing::Options(dir.db());
    o.read_only = read_only;
    auto db = Database::Open(o);
    ASSERT_FALSE(db.ok());
    EXPECT_TRUE(db.status().IsCorruption()) << db.status().ToString();
    EXPECT_NE(db.status().message().find(kSyncMarkerFile), std::string::npos);
  }
  EXPECT_EQ(ReadFile(file), bytes);
}

// The newest *.log of the store, cut to half its length.
void CutLogInHalf(const std::string& db) {
  std::string log;
  for (const auto& e : fs::directory_iterator(db)) {
    if (e.path().extension() == ".log" && e.path().string() > log) {
      log = e.path().string();
    }
  }
  ASSERT_FALSE(log.empty());
  fs::resize_file(log, fs::file_size(log) / 2);
}

std::vector<std::string> Keys(int from, int to) {
  std::vector<std::string> k;
  for (int i = from; i < to; ++i) k.push_back("key-" + std::to_string(i));
  return k;
}

Status InsertAll(DedupStore& s, const std::vector<std::string>& keys) {
  std::vector<std::string_view> v(keys.begin(), keys.end());
  std::vector<uint8_t> fresh;
  return s.InsertIfAbsentBatch(v, &fresh);
}

// W3, W4: a set that lost synced writes with the log is unavailable, at
// this open and every later one, until it is dropped; the others work.
TEST(SyncMarkerTest, SetThatLostSyncedWritesIsUnavailableUntilDropped) {
  TempDir dir;
  DedupOptions sync;
  sync.durability = Durability::kSync;
  {
    auto db = MustOpen(testing::Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto s = DedupStore::Open(*db, "s", sync);
    SF_ASSERT_OK(s.status());
    for (int b = 0; b < 3; ++b) {
      SF_ASSERT_OK(InsertAll(**s, Keys(b * 2000, (b + 1) * 2000)));
    }
    SF_ASSERT_OK((*s)->Close());
    SF_ASSERT_OK(db->Close());
  }
  CutLogInHalf(dir.db());
  {
    auto db = MustOpen(testing::Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto s = DedupStore::Open(*db, "s", sync);
    ASSERT_TRUE(s.status().IsCorruption()) << s.status().ToString();
    EXPECT_NE(s.status().message().find("dedup set \"s\" lost writes "
                                        "acknowledged under durability sync"),
              std::string::npos)
        << s.status().ToString();
    auto t = DedupStore::Open(*db, "t", sync);
    SF_ASSERT_OK(t.status());
    EXPECT_TRUE(*(*t)->InsertIfAbsent("x"));
    SF_ASSERT_OK((*t)->Close());
    auto report = db->Verify();
    SF_ASSERT_OK(report.status());
    ASSERT_EQ(report->problems.size(), 1u);
    EXPECT_NE(report->problems[0].find("dedup set \"s\""), std::string::npos);
    SF_ASSERT_OK(db->Close());
  }
  {
    // Recorded by that writable open: still unavailable.
    auto db = MustOpen(testing::Options(dir.db()));
    ASSERT_NE(db, nullptr);
    EXPECT_TRUE(DedupStore::Open(*db, "s", sync).status().IsCorruption());
    SF_ASSERT_OK(DedupStore::Drop(*db, "s"));
    auto s = DedupStore::Open(*db, "s", sync);
    SF_ASSERT_OK(s.status());
    EXPECT_TRUE(*(*s)->InsertIfAbsent("key-1"));
    SF_ASSERT_OK((*s)->Close());
    SF_ASSERT_OK(db->Close());
  }
  auto db = MustOpen(testing::Options(dir.db()));
  ASSERT_NE(db, nullptr);
  auto s = DedupStore::Open(*db, "s", sync);
  SF_ASSERT_OK(s.status());
  EXPECT_TRUE(*(*s)->Contains("key-1"));
  auto report = db->Verify();
  SF_ASSERT_OK(report.status());
  EXPECT_TRUE(report->ok());
}

// W5: a marker write that fails acknowledges the write it was for (durable:
// its log was synced), then refuses every later sync write through the log
// until the store is reopened; no answer is wrong meanwhile.
TEST(SyncMarkerTest, FailedMarkerWriteStopsLaterSyncWrites) {
  TempDir dir;
  testing::FaultEnv fe;
  DedupOptions sync;
  sync.durability = Durability::kSync;
  {
    testing::EnvScope scope(fe);
    auto db = MustOpen(testing::Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto s = DedupStore::Open(*db, "s", sync);
    SF_ASSERT_OK(s.status());
    EXPECT_TRUE(*(*s)->InsertIfAbsent("a"));
    fe.fs->FailSyncs(kSyncMarkerFile);
    EXPECT_TRUE(*(*s)->InsertIfAbsent("b"));
    auto c = (*s)->InsertIfAbsent("c");
    EXPECT_EQ(c.status().code(), StatusCode::kIOError) << c.status().ToString();
    EXPECT_NE(c.status().message().find("sync marker"), std::string::npos);
    EXPECT_TRUE(*(*s)->Contains("b"));
    EXPECT_FALSE(*(*s)->Contains("c"));
    fe.fs->FailSyncs("");
    SF_ASSERT_OK((*s)->Close());
    SF_ASSERT_OK(db->Close());
  }
  auto db = MustOpen(testing::Options(dir.db()));
  ASSERT_NE(db, nullptr);
  auto s = DedupStore::Open(*db, "s", sync);
  SF_ASSERT_OK(s.status());
  EXPECT_TRUE(*(*s)->Contains("a"));
  EXPECT_TRUE(*(*s)->Contains("b"));
  EXPECT_FALSE(*(*s)->Contains("c"));
  EXPECT_TRUE(*(*s)->InsertIfAbsent("c"));
}

// --- The log's torn tail (wal_tail.h) ---

// A physical record: a stand-in checksum (not checked here), length, type.
std::string Physical(uint8_t type, const std::string& payload) {
  std::string r(4, '\xab');
  r.push_back(static_cast<char>(payload.size() & 0xff));
  r.push_back(static_cast<char>(payload.size() >> 8));
  r.push_back(static_cast<char>(type));
  return r + payload;
}
// A batch payload: sequence, count, then `n` filler bytes.
std::string Batch(uint64_t seq, uint32_t count, size_t n) {
  std::string p;
  for (int i = 0; i < 8; ++i) p.push_back(static_cast<char>(seq >> (8 * i)));
  for (int i = 0; i < 4; ++i) p.push_back(static_cast<char>(count >> (8 * i)));
  return p + std::string(n, 'x');
}

TEST(WalTailTest, FindsWhereTheLogIsCut) {
  using persistence::FindWalTornTail;
  const std::string a = Physical(1, Batch(5, 2, 30));
  const std::string b = Physical(1, Batch(7, 3, 30));
  EXPECT_FALSE(FindWalTornTail(a + b).has_value());
  EXPECT_FALSE(FindWalTornTail("").has_value());
  // Cut inside the second record: its head names the lost sequences.
  auto t = FindWalTornTail((a + b).substr(0, a.size() + 20));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->offset, a.size());
  EXPECT_EQ(t->first_seq, 7u);
  EXPECT_EQ(t->count, 3u);
  EXPECT_FALSE(t->zeros);
  // Cut inside its header.
  t = FindWalTornTail((a + b).substr(0, a.size() + 3));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->offset, a.size());
  // Zeros where a record should be (unwritten blocks after a power loss).
  t = FindWalTornTail(a + std::string(100, '\0'));
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->zeros);
  EXPECT_EQ(t->offset, a.size());
  // A record in fragments: first fills block 0, last in block 1. Cut at
  // the block's end it is torn from where it began; whole it is not.
  const std::string first = Physical(2, Batch(9, 4, 32768 - a.size() - 7 - 12));
  ASSERT_EQ(a.size() + first.size(), 32768u);
  const std::string last = Physical(4, std::string(50, 'y'));
  t = FindWalTornTail(a + first);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->offset, a.size());
  EXPECT_EQ(t->first_seq, 9u);
  EXPECT_FALSE(FindWalTornTail(a + first + last).has_value());
  // Fewer than 7 bytes left in a block are zero padding, not a record.
  const std::string fill = Physical(1, Batch(20, 1, 32768 - 7 - 12 - 3));
  ASSERT_EQ(fill.size(), 32768u - 3);
  EXPECT_FALSE(FindWalTornTail(fill + std::string(3, '\0') + a).has_value());
}

}  // namespace
}  // namespace shardfilter
