// The dedup store's own journal (persistence/log/dedup_log.h,
// persistence/dedup_journal.h): the log format round trip, torn tails,
// damage and foreign files, the fuzzed decoder; and through DedupStore:
// a process that dies without closing leaves acknowledged inserts and
// removes that the next open replays (or a read-only open sees), region
// flushes and oversized batches stay exact against a model, a damaged
// journal is refused and changes nothing, Drop and re-create clean up.
//
// Over 400 lines: the journal's format cases and its crash-replay cases share
// one fixture.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/persistence/log/dedup_log.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using persistence::DedupEntry;
using persistence::DedupLog;
using persistence::DedupLogRecord;
using persistence::DedupOp;
using testing::MustOpen;
using testing::Options;
using testing::TempDir;

constexpr uint64_t kRegion = 64 * 1024;

DedupOp Put(std::string key, uint64_t bucket = 0, bool index = false) {
  return {DedupOp::kPut, index, std::move(key), DedupEntry{bucket * 7, bucket}};
}
DedupOp Del(std::string key, uint64_t bucket = 0, bool index = false) {
  return {DedupOp::kDelete, index, std::move(key),
          DedupEntry{bucket * 7, bucket}};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Offset of region r's first record in the file.
size_t RecordsAt(int r) { return 4096 + r * kRegion + 64; }

class DedupLogTest : public ::testing::Test {
 protected:
  std::string Path() { return dir_.path() + "/j/log.sfdl"; }
  // A log holding `records` (seq 1..n) in region 0.
  void Write(const std::vector<std::vector<DedupOp>>& records) {
    auto log = DedupLog::Create(testing::LogEnv(), Path(), "set", kRegion);
    SF_ASSERT_OK(log.status());
    uint64_t seq = 1;
    for (const auto& ops : records) (*log)->Append(seq++, ops);
  }
  Result<std::vector<DedupLogRecord>> Read(std::string_view set = "set") {
    SF_ASSIGN_OR_RETURN(auto log,
                        DedupLog::OpenExisting(testing::LogEnv(), Path(), set));
    std::vector<DedupLogRecord> out;
    SF_RETURN_IF_ERROR(log->ReadAll(&out));
    return out;
  }
  TempDir dir_;
};

TEST_F(DedupLogTest, RoundTripAcrossRegionsInSeqOrder) {
  {
    auto log = DedupLog::Create(testing::LogEnv(), Path(), "set", kRegion);
    SF_ASSERT_OK(log.status());
    DedupLog& l = **log;
    EXPECT_TRUE(l.Empty(0) && l.Empty(1));
    l.Append(1, {Put("a"), Del("b", 3, true)});
    l.Append(2, {Put(std::string(4096, 'x'), 9, true)});
    EXPECT_EQ(l.Swap(), 0);
    l.Append(3, {Put("")});
    EXPECT_FALSE(l.Empty(0));
    l.Clear(0);  // region 0 flushed: 1 and 2 are gone, 4 lands there
    EXPECT_EQ(l.Swap(), 1);
    l.Append(4, {Del("a")});
  }
  auto got = Read();
  SF_ASSERT_OK(got.status());
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].seq, 3u);  // region 1 first: its records are older
  EXPECT_EQ((*got)[0].ops, std::vector<DedupOp>{Put("")});
  EXPECT_EQ((*got)[1].seq, 4u);
  EXPECT_EQ((*got)[1].ops, std::vector<DedupOp>{Del("a")});
}

TEST_F(DedupLogTest, FitsCountsWholeRecords) {
  auto log = DedupLog::Create(testing::LogEnv(), Path(), "set", kRegion);
  SF_ASSERT_OK(log.status());
  std::vector<DedupOp> ops = {Put(std::string(1000, 'k'))};
  const size_t bytes = persistence::DedupLogRecordBytes(ops);
  uint64_t n = 0;
  while ((*log)->Fits(bytes)) (*log)->Append(++n, ops);
  EXPECT_EQ(n, (*log)->capacity() / bytes);
  log->reset();
  auto got = Read();
  SF_ASSERT_OK(got.status());
  EXPECT_EQ(got->size(), n);
}

// Bytes of the version-2 record at `at` (commit word low half = length).
size_t RecordSpan(const std::string& bytes, size_t at) {
  uint32_t len = 0;
  std::memcpy(&len, bytes.data() + at, 4);
  return (16 + len + 7) & ~size_t{7};
}

TEST_F(DedupLogTest, TornTailIsIgnored) {
  Write({{Put("a")}, {Put("b")}, {Put("c")}});
  std::string bytes = ReadFile(Path());
  // A fourth record whose copy a kill cut short: the first bytes of its
  // body and its check, but no commit word yet (Append stores it last).
  size_t at = RecordsAt(0);
  for (int i = 0; i < 3; ++i) at += RecordSpan(bytes, at);
  bytes[at + 8] = 0x5a;
  bytes[at + 16] = 1;
  bytes[at + 17] = 0x2a;
  WriteFile(Path(), bytes);
  auto got = Read();
  SF_ASSERT_OK(got.status());
  EXPECT_EQ(got->size(), 3u);
}

TEST_F(DedupLogTest, DamageBeforeTheEndIsCorruption) {
  Write({{Put("a")}, {Put("b")}, {Put("c")}});
  std::string bytes = ReadFile(Path());
  bytes[RecordsAt(0) + 8 + 20] ^= 0x01;  // inside record 1's body
  WriteFile(Path(), bytes);
  auto got = Read();
  EXPECT_TRUE(got.status().IsCorruption()) << got.status().ToString();
}

TEST_F(DedupLogTest, BadFilesAreRefused) {
  Write({{Put("a")}});
  const std::string good = ReadFile(Path());
  // Another set's journal (a name-hash collision or a copied file).
  EXPECT_TRUE(Read("other").status().IsCorruption());
  struct Case {
    const char* what;
    std::function<void(std::string*)> damage;
  };
  std::vector<Case> cases = {
      {"bad magic", [](std::string* b) { (*b)[0] = 'X'; }},
      {"header checksum", [](std::string* b) { (*b)[12] ^= 1; }},
      {"truncated header", [](std::string* b) { b->resize(100); }},
      {"truncated file", [](std::string* b) { b->resize(b->size() - 4096); }},
      {"region header", [](std::string* b) { (*b)[4096 + 9] ^= 1; }},
      {"empty", [](std::string* b) { b->clear(); }},
  };
  for (const Case& c : cases) {
    std::string bytes = good;
    c.damage(&bytes);
    WriteFile(Path(), bytes);
    auto got = Read();
    EXPECT_TRUE(got.status().IsCorruption())
        << c.what << ": " << got.status().ToString();
  }
  std::filesystem::remove(Path());
  EXPECT_TRUE(Read().status().IsNotFound());
  EXPECT_TRUE(DedupLog::Create(testing::LogEnv(), Path(), "set", 1000)
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(DedupLog::Create(testing::LogEnv(), Path(), "set", 4096)
                  .status()
                  .IsInvalidArgument());
}

// After a reboot the page cache may have written the mapping back in any
// order: a bad record then ends what survived (the valid prefix replays);
// within the boot that wrote the file it is damage.
TEST_F(DedupLogTest, AfterARebootABadRecordEndsTheLog) {
  persistence::SetBootIdForTesting("boot-a");
  Write({{Put("a")}, {Put("b")}, {Put("c")}});
  std::string bytes = ReadFile(Path());
  const size_t second = RecordsAt(0) + RecordSpan(bytes, RecordsAt(0));
  bytes[second + 16 + 20] ^= 0x10;  // record 2's body: record 3 follows
  WriteFile(Path(), bytes);
  EXPECT_TRUE(Read().status().IsCorruption());  // same boot: damage
  persistence::SetBootIdForTesting("boot-b");   // the machine restarted
  auto got = Read();
  SF_ASSERT_OK(got.status());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].ops, std::vector<DedupOp>{Put("a")});
  persistence::SetBootIdForTesting("");
  EXPECT_FALSE(persistence::CurrentBootId().empty());  // Linux has one
}

// Random flips and truncations of a valid log never crash the reader: it
// returns a prefix of the records or an error.
TEST_F(DedupLogTest, FuzzedLogsNeverCrash) {
  std::vector<std::vector<DedupOp>> records;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) {
    std::vector<DedupOp> ops;
    for (uint64_t j = 0; j <= rng() % 3; ++j) {
      std::string key(rng() % 40, static_cast<char>('a' + j));
      ops.push_back(rng() % 2 ? Put(key, rng() % 5, true) : Del(key));
    }
    records.push_back(ops);
  }
  Write(records);
  const std::string good = ReadFile(Path());
  const size_t used_end = RecordsAt(0) + 3000;
  for (int round = 0; round < 300; ++round) {
    std::string bytes = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      // Mostly inside the records, sometimes in the headers.
      size_t at = rng() % 4 == 0
                      ? rng() % (RecordsAt(0))
                      : RecordsAt(0) + rng() % (used_end - RecordsAt(0));
      bytes[at] = static_cast<char>(rng());
    }
    if (rng() % 5 == 0) bytes.resize(rng() % bytes.size());
    WriteFile(Path(), bytes);
    auto got = Read();
    if (!got.ok()) continue;
    ASSERT_LE(got->size(), records.size());
    for (size_t i = 0; i < got->size(); ++i) {
      // A record that reads back is the one written (its checksum held),
      // or the flip landed where it makes no difference.
      EXPECT_EQ((*got)[i].seq, i + 1);
    }
  }
}

// ---- Through DedupStore ----

class DedupJournalStoreTest : public ::testing::Test {
 protected:
  DedupOptions Opts(uint64_t journal_bytes = 128 * 1024) {
    DedupOptions o;
    o.journal_bytes = journal_bytes;
    o.expected_keys = 10000;
    return o;
  }
  // Runs fn in a child that opens the set, then dies without closing
  // anything (as kill -9 would leave it). Returns the child's exit code.
  int RunAndDie(const DedupOptions& o,
                const std::function<bool(DedupStore&)>& fn) {
    pid_t pid = fork();
    if (pid == 0) {
      auto db = Database::Open(Options(dir_.db()));
      if (!db.ok()) _exit(3);
      auto d = DedupStore::Open(**db, "s", o);
      if (!d.ok()) _exit(4);
      _exit(fn(**d) ? 0 : 5);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string JournalPath() {
    return persistence::DedupLogPath(dir_.db(), "s");
  }
  TempDir dir_;
};

std::string Key(int i) { return "key-" + std::to_string(i); }

TEST_F(DedupJournalStoreTest, ReplaysWhatADeadProcessAcknowledged) {
  ASSERT_EQ(
      RunAndDie(Opts(16 << 20),
                [](DedupStore& d) {
                  for (int i = 0; i < 1000; ++i) {
                    if (!d.InsertIfAbsent(Key(i)).value()) return false;
                  }
                  for (int i = 0; i < 1000; i += 3) {
                    if (!d.Remove(Key(i)).value()) return false;
                  }
                  std::vector<std::string_view> keys = {"b1", "b2", "key-5"};
                  std::vector<uint8_t> out;
                  return d.InsertIfAbsentBatch(keys, &out).ok() &&
                         out == std::vector<uint8_t>{1, 1, 0} &&
                         d.Stats().journal_flushes == 0;
                }),
      0);
  ASSERT_TRUE(std::filesystem::exists(JournalPath()));
  // A read-only open sees the journal without replaying it.
  {
    DatabaseOptions ro = Options(dir_.db());
    ro.read_only = true;
    auto db = MustOpen(ro);
    auto d = DedupStore::Open(*db, "s", {});
    SF_ASSERT_OK(d.status());
    for (int i = 0; i < 1000; ++i) {
      ASSERT_EQ((*d)->Contains(Key(i)).value(), i % 3 != 0) << i;
    }
    EXPECT_TRUE((*d)->Contains("b2").value());
  }
  auto db = MustOpen(Options(dir_.db()));
  auto d = DedupStore::Open(*db, "s", Opts());
  SF_ASSERT_OK(d.status());
  EXPECT_EQ((*d)->Stats().journal_replayed, 1000u + 334u + 2u);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ((*d)->Contains(Key(i)).value(), i % 3 != 0) << i;
    ASSERT_EQ((*d)->InsertIfAbsent(Key(i)).value(), i % 3 == 0) << i;
  }
  EXPECT_FALSE((*d)->InsertIfAbsent("b1").value());
}

// A small journal flushes many times; with removes and re-inserts the set
// stays equal to a model, before and after a reopen.
TEST_F(DedupJournalStoreTest, RegionFlushesStayExact) {
  auto db = MustOpen(Options(dir_.db()));
  std::set<std::string> model;
  std::mt19937_64 rng(11);
  {
    auto d = DedupStore::Open(*db, "s", Opts());
    SF_ASSERT_OK(d.status());
    for (int step = 0; step < 30000; ++step) {
      std::string k = Key(static_cast<int>(rng() % 3000));
      switch (rng() % 5) {
        case 0:
          ASSERT_EQ((*d)->Remove(k).value(), model.erase(k) == 1) << step;
          break;
        case 1:
          ASSERT_EQ((*d)->Contains(k).value(), model.count(k) == 1) << step;
          break;
        case 2: {
          std::vector<std::string> ks = {k,
                                         Key(static_cast<int>(rng() % 3000))};
          std::vector<std::string_view> views(ks.begin(), ks.end());
          std::vector<uint8_t> out;
          SF_ASSERT_OK((*d)->RemoveBatch(views, &out));
          for (size_t i = 0; i < ks.size(); ++i) {
            ASSERT_EQ(out[i], model.erase(ks[i]) == 1 ? 1 : 0) << step;
          }
          break;
        }
        default:
          ASSERT_EQ((*d)->InsertIfAbsent(k).value(), model.insert(k).second)
              << step;
      }
    }
    EXPECT_GT((*d)->Stats().journal_flushes, 5u);
  }
  auto d = DedupStore::Open(*db, "s", Opts());
  SF_ASSERT_OK(d.status());
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ((*d)->Contains(Key(i)).value(), model.count(Key(i)) == 1) << i;
  }
}

// A batch too large for a journal half goes to RocksDB directly, after the
// journal (J1): order is kept for keys in both.
TEST_F(DedupJournalStoreTest, OversizedBatchKeepsOrder) {
  std::vector<std::string> big;
  for (int i = 0; i < 100; ++i) big.push_back(std::string(2000, 'a') + Key(i));
  ASSERT_EQ(
      RunAndDie(
          Opts(),
          [&](DedupStore& d) {
            // Logged (about 30 per half: the halves flush).
            for (const auto& k : big) {
              if (!d.InsertIfAbsent(k).value()) return false;
            }
            std::vector<std::string_view> all(big.begin(), big.end());
            std::vector<uint8_t> out;
            // 200 KB of deletes: straight to RocksDB.
            if (!d.RemoveBatch(all, &out).ok() ||
                out != std::vector<uint8_t>(100, 1)) {
              return false;
            }
            if (!d.InsertIfAbsent(big[0]).value()) return false;
            std::vector<std::string_view> half(big.begin() + 50, big.end());
            if (!d.InsertIfAbsentBatch(half, &out).ok() ||
                out != std::vector<uint8_t>(50, 1)) {
              return false;
            }
            return d.Remove(big[99]).value() && d.Stats().journal_flushes > 0;
          }),
      0);
  auto db = MustOpen(Options(dir_.db()));
  auto d = DedupStore::Open(*db, "s", Opts());
  SF_ASSERT_OK(d.status());
  for (int i = 0; i < 100; ++i) {
    bool want = i == 0 || (i >= 50 && i < 99);
    ASSERT_EQ((*d)->Contains(big[i]).value(), want) << i;
  }
}

TEST_F(DedupJournalStoreTest, DamagedJournalIsRefusedAndChangesNothing) {
  ASSERT_EQ(RunAndDie(Opts(),
                      [](DedupStore& d) {
                        for (int i = 0; i < 200; ++i) {
                          if (!d.InsertIfAbsent(Key(i)).value()) return false;
                        }
                        return true;
                      }),
            0);
  std::string bytes = ReadFile(JournalPath());
  const std::string good = bytes;
  {
    auto db = MustOpen(Options(dir_.db()));
    auto report = db->Verify();
    SF_ASSERT_OK(report.status());
    EXPECT_EQ(report->dedup_journal_records, 200u);
    EXPECT_TRUE(report->ok());
  }
  bytes[RecordsAt(0) + 8 + 30] ^= 0x40;  // the first record's body
  WriteFile(JournalPath(), bytes);
  {
    auto db = MustOpen(Options(dir_.db()));
    auto report = db->Verify();
    SF_ASSERT_OK(report.status());
    ASSERT_EQ(report->problems.size(), 1u);
    EXPECT_NE(report->problems[0].find("dedup journal"), std::string::npos);
    auto d = DedupStore::Open(*db, "s", Opts());
    ASSERT_TRUE(d.status().IsCorruption()) << d.status().ToString();
    EXPECT_NE(d.status().ToString().find("dedup journal"), std::string::npos);
  }
  EXPECT_EQ(ReadFile(JournalPath()), bytes);  // left for inspection
  // Undamaged again, everything is there.
  WriteFile(JournalPath(), good);
  auto db = MustOpen(Options(dir_.db()));
  auto d = DedupStore::Open(*db, "s", Opts());
  SF_ASSERT_OK(d.status());
  for (int i = 0; i < 200; ++i) ASSERT_TRUE((*d)->Contains(Key(i)).value());
}

TEST_F(DedupJournalStoreTest, DropRemovesTheJournalAndRecreateStartsEmpty) {
  ASSERT_EQ(
      RunAndDie(Opts(),
                [](DedupStore& d) { return d.InsertIfAbsent("x").value(); }),
      0);
  const std::string debris = ReadFile(JournalPath());
  auto db = MustOpen(Options(dir_.db()));
  SF_ASSERT_OK(DedupStore::Drop(*db, "s"));
  EXPECT_FALSE(std::filesystem::exists(JournalPath()));
  // A crash between the drop and the file's removal leaves it behind: the
  // next creation removes it unread.
  WriteFile(JournalPath(), debris);
  auto d = DedupStore::Open(*db, "s", Opts());
  SF_ASSERT_OK(d.status());
  EXPECT_EQ((*d)->Stats().journal_replayed, 0u);
  EXPECT_FALSE((*d)->Contains("x").value());
}

TEST_F(DedupJournalStoreTest, OtherDurabilitiesReplayThenWriteRocksDB) {
  ASSERT_EQ(
      RunAndDie(Opts(),
                [](DedupStore& d) { return d.InsertIfAbsent("x").value(); }),
      0);
  auto db = MustOpen(Options(dir_.db()));
  DedupOptions o = Opts();
  o.durability = Durability::kSync;
  auto d = DedupStore::Open(*db, "s", o);
  SF_ASSERT_OK(d.status());
  EXPECT_EQ((*d)->Stats().journal_replayed, 1u);
  EXPECT_FALSE(std::filesystem::exists(JournalPath()));
  EXPECT_TRUE((*d)->Contains("x").value());
  EXPECT_TRUE((*d)->InsertIfAbsent("y").value());
}

// The journal has one writer: a second instance of an open set is Busy
// (it would replay and replace the file under the first), and so is Drop;
// once closed, the set opens again.
TEST_F(DedupJournalStoreTest, ASetIsOpenOncePerDatabase) {
  auto db = MustOpen(Options(dir_.db()));
  auto first = DedupStore::Open(*db, "s", Opts());
  SF_ASSERT_OK(first.status());
  ASSERT_TRUE((*first)->InsertIfAbsent("k").value());
  auto second = DedupStore::Open(*db, "s", Opts());
  EXPECT_TRUE(second.status().IsBusy()) << second.status().ToString();
  EXPECT_TRUE(DedupStore::Drop(*db, "s").IsBusy());
  auto other = DedupStore::Open(*db, "t", Opts());  // another set is fine
  SF_ASSERT_OK(other.status());
  SF_ASSERT_OK((*first)->Close());
  auto again = DedupStore::Open(*db, "s", Opts());
  SF_ASSERT_OK(again.status());
  EXPECT_TRUE((*again)->Contains("k").value());
  again->reset();  // the destructor closes too
  SF_ASSERT_OK(DedupStore::Drop(*db, "s"));
  // A failed Open leaves the set closed.
  auto bad = DedupStore::Open(*db, "s", Opts(1000));
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  SF_ASSERT_OK(DedupStore::Open(*db, "s", Opts()).status());
}

TEST_F(DedupJournalStoreTest, BadJournalSizesAreRefused) {
  auto db = MustOpen(Options(dir_.db()));
  for (uint64_t bytes : {uint64_t{1000}, uint64_t{64 * 1024},
                         uint64_t{128 * 1024 + 4096}, uint64_t{4} << 30}) {
    auto d = DedupStore::Open(*db, "s", Opts(bytes));
    EXPECT_TRUE(d.status().IsInvalidArgument()) << bytes;
  }
  auto none = DedupStore::Open(*db, "s", Opts(0));  // no journal file
  SF_ASSERT_OK(none.status());
  EXPECT_TRUE((*none)->InsertIfAbsent("k").value());
  EXPECT_FALSE(std::filesystem::exists(JournalPath()));
}

}  // namespace
}  // namespace shardfilter
