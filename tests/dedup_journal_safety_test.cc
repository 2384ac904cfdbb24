// The dedup journal (persistence/log/dedup_log.h) tells a torn record
// from a damaged one by its commit word: a flipped bit in the last record
// (zeros after it) is Corruption, not a torn tail; a kill at any point of an
// Append reads as no record or the whole one; a deleted journal file is
// noticed (the set's journal marker); version-1 files still read with their
// old rule.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/filters/hash.h"
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
constexpr uint64_t kCheckSeed = 0x5f64656475706c67;  // dedup_log.cc

DedupOp Put(std::string key) {
  return {DedupOp::kPut, false, std::move(key), DedupEntry{}};
}
std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
size_t RecordsAt(int r) { return 4096 + r * kRegion + 64; }
size_t RecordSpan(const std::string& bytes, size_t at) {
  uint32_t len = 0;
  std::memcpy(&len, bytes.data() + at, 4);
  return (16 + len + 7) & ~size_t{7};
}

class DedupLogSafetyTest : public ::testing::Test {
 protected:
  std::string Path() { return dir_.path() + "/j/log.sfdl"; }
  void Write(int records) {
    auto log = DedupLog::Create(testing::LogEnv(), Path(), "set", kRegion);
    SF_ASSERT_OK(log.status());
    for (int i = 1; i <= records; ++i) {
      (*log)->Append(i, {Put("key-" + std::to_string(i))});
    }
  }
  Result<std::vector<DedupLogRecord>> Read() {
    SF_ASSIGN_OR_RETURN(
        auto log, DedupLog::OpenExisting(testing::LogEnv(), Path(), "set"));
    std::vector<DedupLogRecord> out;
    SF_RETURN_IF_ERROR(log->ReadAll(&out));
    return out;
  }
  TempDir dir_;
};

// Before: the last record's damage (zeros after it) was taken for a torn
// tail and its acknowledged ops dropped silently.
TEST_F(DedupLogSafetyTest, FlippedBitInTheLastRecordIsCorruption) {
  Write(3);
  const std::string good = ReadFile(Path());
  size_t last = RecordsAt(0);
  for (int i = 0; i < 2; ++i) last += RecordSpan(good, last);
  const size_t span = RecordSpan(good, last);
  for (size_t off = 0; off < span; off += 3) {
    if (off < 8 && off >= 4) continue;  // the commit word's high half
    for (int bit : {0, 5}) {
      std::string bytes = good;
      bytes[last + off] ^= static_cast<char>(1 << bit);
      WriteFile(Path(), bytes);
      auto got = Read();
      // A flip in the padding changes nothing read; anything else is
      // Corruption, never a quiet end after two records.
      if (got.ok()) {
        EXPECT_EQ(got->size(), 3u) << "offset " << off << " bit " << bit;
      } else {
        EXPECT_TRUE(got.status().IsCorruption()) << got.status().ToString();
      }
    }
  }
  // The body itself: always Corruption.
  std::string bytes = good;
  bytes[last + 16 + 20] ^= 0x01;
  WriteFile(Path(), bytes);
  EXPECT_TRUE(Read().status().IsCorruption());
}

// Every point at which a kill can stop Append (it writes body, padding and
// check, then the commit word in one store) reads as 3 records (the fourth
// not acknowledged) or as 4, never as an error.
TEST_F(DedupLogSafetyTest, EveryInterleavingOfAppendReadsWholeOrNothing) {
  Write(3);
  const std::string before = ReadFile(Path());
  Write(4);  // the same three records, then a fourth
  const std::string after = ReadFile(Path());
  size_t at = RecordsAt(0);
  for (int i = 0; i < 3; ++i) at += RecordSpan(after, at);
  const size_t span = RecordSpan(after, at);
  ASSERT_EQ(before.substr(0, at), after.substr(0, at));
  // Store order: body and padding [16, span), check [8, 16), commit [0, 8).
  std::vector<size_t> order;
  for (size_t i = 16; i < span; ++i) order.push_back(at + i);
  for (size_t i = 8; i < 16; ++i) order.push_back(at + i);
  for (size_t k = 0; k <= order.size(); ++k) {
    std::string bytes = before;
    for (size_t j = 0; j < k; ++j) bytes[order[j]] = after[order[j]];
    WriteFile(Path(), bytes);
    auto got = Read();
    ASSERT_TRUE(got.ok()) << "after " << k
                          << " bytes: " << got.status().ToString();
    EXPECT_EQ(got->size(), 3u);
  }
  WriteFile(Path(), after);  // the commit word stored: the whole record
  auto got = Read();
  SF_ASSERT_OK(got.status());
  EXPECT_EQ(got->size(), 4u);
}

// A version-1 file (as builds before the commit word wrote them), built by
// hand: still read, with the old torn-tail rule.
std::string V1File(int records, bool torn_last) {
  auto u32 = [](std::string* s, uint32_t v) {
    for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
  };
  auto u64 = [](std::string* s, uint64_t v) {
    for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>(v >> (8 * i)));
  };
  std::string h = "SFDLOG01";
  u32(&h, 1);
  u32(&h, 0);
  u64(&h, kRegion);
  u32(&h, 3);
  h += "set";
  const std::string boot = persistence::CurrentBootId();
  u32(&h, static_cast<uint32_t>(boot.size()));
  h += boot;
  u64(&h, HashKey(h, kCheckSeed));
  std::string file(4096 + 2 * kRegion, '\0');
  file.replace(0, h.size(), h);
  for (int r = 0; r < 2; ++r) {
    std::string rh = "SFDLREG1";
    u64(&rh, 1);
    u64(&rh, HashKey(rh, kCheckSeed));
    file.replace(4096 + r * kRegion, rh.size(), rh);
  }
  size_t at = RecordsAt(0);
  for (int i = 1; i <= records; ++i) {
    const std::string key = "key-" + std::to_string(i);
    std::string body;
    u64(&body, 1);  // generation
    u64(&body, static_cast<uint64_t>(i));
    u32(&body, 1);
    body.push_back(1);  // put
    body.push_back(0);
    u64(&body, 0);
    u64(&body, 0);
    u32(&body, static_cast<uint32_t>(key.size()));
    body += key;
    std::string rec;
    u32(&rec, static_cast<uint32_t>(body.size()));
    u32(&rec, static_cast<uint32_t>(HashKey(body, kCheckSeed)));
    rec += body;
    if (torn_last && i == records) rec.resize(rec.size() - 3);
    file.replace(at, rec.size(), rec);
    at += rec.size();
  }
  return file;
}

TEST_F(DedupLogSafetyTest, VersionOneFilesStillRead) {
  std::filesystem::create_directories(dir_.path() + "/j");
  WriteFile(Path(), V1File(5, false));
  auto got = Read();
  SF_ASSERT_OK(got.status());
  ASSERT_EQ(got->size(), 5u);
  EXPECT_EQ((*got)[4].ops[0].key, "key-5");
  WriteFile(Path(), V1File(5, true));  // v1: a bad last record is torn
  got = Read();
  SF_ASSERT_OK(got.status());
  EXPECT_EQ(got->size(), 4u);
}

// ---- A deleted journal file (through DedupStore) ----

class DedupJournalFileTest : public ::testing::Test {
 protected:
  DedupOptions Opts() {
    DedupOptions o;
    o.journal_bytes = 128 * 1024;
    o.expected_keys = 10000;
    return o;
  }
  // A child inserts 100 keys (acknowledged, in the journal only) and dies.
  void InsertAndDie() {
    pid_t pid = fork();
    if (pid == 0) {
      auto db = Database::Open(Options(dir_.db()));
      if (!db.ok()) _exit(3);
      auto d = DedupStore::Open(**db, "s", Opts());
      if (!d.ok()) _exit(4);
      for (int i = 0; i < 100; ++i) {
        if (!(*d)->InsertIfAbsent("k" + std::to_string(i)).value()) _exit(5);
      }
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  TempDir dir_;
};

// Before: the set opened with none of the 100 acknowledged keys.
TEST_F(DedupJournalFileTest, DeletedJournalIsCorruption) {
  InsertAndDie();
  const std::string path = persistence::DedupLogPath(dir_.db(), "s");
  const std::string bytes = ReadFile(path);
  ASSERT_FALSE(bytes.empty());
  std::filesystem::remove(path);
  {
    auto db = MustOpen(Options(dir_.db()));
    auto d = DedupStore::Open(*db, "s", Opts());
    ASSERT_TRUE(d.status().IsCorruption()) << d.status().ToString();
    EXPECT_NE(d.status().ToString().find("is missing"), std::string::npos);
    auto report = db->Verify();
    SF_ASSERT_OK(report.status());
    ASSERT_EQ(report->problems.size(), 1u);
    EXPECT_NE(report->problems[0].find("is missing"), std::string::npos);
  }
  {
    DatabaseOptions ro = Options(dir_.db());
    ro.read_only = true;
    auto db = MustOpen(ro);
    auto d = DedupStore::Open(*db, "s", {});
    EXPECT_TRUE(d.status().IsCorruption()) << d.status().ToString();
  }
  // Put back, everything is there; a clean close keeps the marker and the
  // file, a later open in another durability removes both.
  WriteFile(path, bytes);
  {
    auto db = MustOpen(Options(dir_.db()));
    auto d = DedupStore::Open(*db, "s", Opts());
    SF_ASSERT_OK(d.status());
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE((*d)->Contains("k" + std::to_string(i)).value());
    }
  }
  {
    auto db = MustOpen(Options(dir_.db()));
    DedupOptions o = Opts();
    o.journal_bytes = 0;
    auto d = DedupStore::Open(*db, "s", o);
    SF_ASSERT_OK(d.status());
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  auto db = MustOpen(Options(dir_.db()));
  DedupOptions o = Opts();
  o.journal_bytes = 0;
  auto d = DedupStore::Open(*db, "s", o);
  SF_ASSERT_OK(d.status());  // no file, no marker: fine
  EXPECT_TRUE((*d)->Contains("k7").value());
}

}  // namespace
}  // namespace shardfilter
