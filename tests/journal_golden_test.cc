// Golden journal data (tests/data/golden/journal/, written by
// tests/golden/make_journal_golden.cc): the memory-mapped logs of an
// earlier build must replay with every later build, and the writers must
// keep writing the same bytes for the same operations. Checked:
//   - segments/: every file decodes to the records its operations
//     (tests/golden/journal_golden.h) acknowledged, within the boot that
//     wrote it and after a reboot;
//   - the current writers, given the same operations, write files
//     byte-identical to the committed ones;
//   - store/: a store left by a process that exited without closing, its
//     filters journalled in per-shard and thread segments and a dedup set
//     in its log, opens (writable and read-only, in the boot that wrote it
//     and in a later one) with every acknowledged op, and Verify finds no
//     problem.
#include "golden/journal_golden.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "golden/golden_manifest.h"
#include "shardfilter/engine/dedup_store.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

namespace fs = std::filesystem;
using golden::KeyOf;
using testing::TempDir;

std::string Golden() { return std::string(SF_GOLDEN_DIR) + "/journal"; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct BootReset {
  ~BootReset() { persistence::SetBootIdForTesting(""); }
};

// What replay reads from a per-shard segment: its committed records.
std::vector<persistence::FilterJournalRecord> Acknowledged(
    const golden::GoldenShardSegment& g) {
  std::vector<persistence::FilterJournalRecord> out;
  for (const golden::GoldenRecord& r : g.records) {
    if (r.state != golden::GoldenRecord::kCommitted) continue;
    persistence::FilterJournalRecord rec;
    rec.seq = r.seq;
    rec.op = r.op;
    rec.hashes = r.hashes;
    out.push_back(std::move(rec));
  }
  return out;
}

void ExpectRecords(const std::vector<persistence::FilterJournalRecord>& got,
                   const std::vector<persistence::FilterJournalRecord>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, want[i].seq) << i;
    EXPECT_EQ(got[i].op, want[i].op) << i;
    EXPECT_EQ(got[i].hashes, want[i].hashes) << i;
  }
}

TEST(JournalGoldenTest, SegmentsReplayTheirAcknowledgedRecords) {
  BootReset reset;
  for (const char* boot : {golden::kJournalBoot, "a-later-boot"}) {
    SCOPED_TRACE(boot);
    persistence::SetBootIdForTesting(boot);
    const bool later = std::string(boot) != golden::kJournalBoot;
    for (const golden::GoldenShardSegment& g : golden::GoldenShardSegments()) {
      SCOPED_TRACE(g.file);
      const std::string bytes = ReadFile(Golden() + "/segments/" + g.file);
      ASSERT_EQ(bytes.size(), golden::kJournalSegmentBytes);
      auto h = persistence::DecodeSegmentHeader(bytes, g.file);
      SF_ASSERT_OK(h.status());
      EXPECT_EQ(h->version, g.version);
      EXPECT_EQ(h->shard, g.shard);
      EXPECT_EQ(h->epoch, golden::kJournalEpoch);
      EXPECT_EQ(h->number, g.number);
      EXPECT_EQ(h->name, golden::kJournalFilter);
      EXPECT_EQ(h->boot_id, golden::kJournalBoot);
      std::vector<persistence::FilterJournalRecord> recs;
      uint64_t uncommitted = 0, base = 0;
      SF_ASSERT_OK(persistence::DecodeSegmentRecords(
          std::string_view(bytes).substr(persistence::kSegmentHeaderBytes),
          h->version, later, g.file, &recs, &uncommitted, &base));
      ExpectRecords(recs, Acknowledged(g));
      EXPECT_EQ(base, g.records.front().seq);
      if (!later) {
        EXPECT_EQ(uncommitted, 1u);  // each ends in one
      }
    }
    for (const golden::GoldenThreadSegment& g :
         golden::GoldenThreadSegments()) {
      SCOPED_TRACE(g.file);
      const std::string bytes = ReadFile(Golden() + "/segments/" + g.file);
      ASSERT_EQ(bytes.size(), golden::kJournalSegmentBytes);
      auto h = persistence::DecodeSegmentHeader(bytes, g.file);
      SF_ASSERT_OK(h.status());
      EXPECT_EQ(h->version, persistence::kThreadSegmentVersion);
      EXPECT_EQ(h->shard, g.stripe);
      uint32_t stripe = 0;
      uint64_t number = 0;
      ASSERT_TRUE(
          persistence::ParseThreadSegmentName(g.file, &stripe, &number));
      EXPECT_EQ(stripe, g.stripe);
      EXPECT_EQ(number, g.number);
      std::vector<persistence::ThreadRecord> recs;
      uint64_t uncommitted = 0;
      SF_ASSERT_OK(persistence::DecodeThreadRecords(
          std::string_view(bytes).substr(persistence::kSegmentHeaderBytes),
          later, golden::kJournalShards, g.file, &recs, &uncommitted));
      ASSERT_EQ(recs.size(), g.records.size());
      for (size_t i = 0; i < recs.size(); ++i) {
        EXPECT_EQ(recs[i].shard, g.records[i].shard) << i;
        EXPECT_EQ(recs[i].hash, g.records[i].hash) << i;
      }
      if (!later) {
        EXPECT_EQ(uncommitted, g.torn_hash != 0 ? 1u : 0u);
      }
    }
    auto log = persistence::DedupLog::OpenExisting(
        testing::LogEnv(), Golden() + "/segments/golden.sfdl",
        golden::kJournalSet);
    SF_ASSERT_OK(log.status());
    EXPECT_EQ((*log)->version(), 2u);
    EXPECT_EQ((*log)->from_earlier_boot(), later);
    std::vector<persistence::DedupLogRecord> recs;
    SF_ASSERT_OK((*log)->ReadAll(&recs));
    const auto all = golden::GoldenDedupRecords();
    ASSERT_EQ(recs.size(), 3u);  // region 0's first three were cleared
    for (size_t i = 0; i < recs.size(); ++i) {
      EXPECT_EQ(recs[i].seq, all[3 + i].seq);
      EXPECT_EQ(recs[i].ops, all[3 + i].ops);
    }
  }
}

TEST(JournalGoldenTest, WritersWriteTheCommittedBytes) {
  BootReset reset;
  TempDir dir;
  const std::string out = dir.path() + "/segments";
  fs::create_directories(out);
  SF_ASSERT_OK(golden::WriteGoldenJournals(testing::LogEnv(), out));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(Golden() + "/segments")) {
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    const std::string want = ReadFile(e.path().string());
    const std::string got = ReadFile(out + "/" + name);
    ASSERT_EQ(got.size(), want.size());
    size_t first_difference = want.size();
    for (size_t i = 0; i < want.size(); ++i) {
      if (got[i] != want[i]) {
        first_difference = i;
        break;
      }
    }
    EXPECT_EQ(first_difference, want.size()) << "bytes differ from there";
    ++files;
  }
  EXPECT_EQ(files, 6u);
  // Nothing else was written (no temporary file left behind).
  size_t written = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    (void)e;
    ++written;
  }
  EXPECT_EQ(written, files);
}

struct Range {
  std::string prefix;
  uint64_t from = 0, to = 0;
};

struct Manifest {
  std::map<std::string, std::string> specs;
  std::map<std::string, uint64_t> items;
  std::map<std::string, std::vector<Range>> keys, dedup_keys, dedup_gone;
  std::vector<std::string> dedup;
};

Manifest Load() {
  Manifest m;
  std::istringstream in(ReadFile(Golden() + "/manifest.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream l(line);
    std::string kind, name;
    l >> kind >> name;
    auto range = [&l] {
      Range r;
      l >> r.prefix >> r.from >> r.to;
      return r;
    };
    if (kind == "filter") {
      l >> m.specs[name];
    } else if (kind == "items") {
      l >> m.items[name];
    } else if (kind == "keys") {
      m.keys[name].push_back(range());
    } else if (kind == "dedup") {
      m.dedup.push_back(name);
    } else if (kind == "dedup-keys") {
      m.dedup_keys[name].push_back(range());
    } else if (kind == "dedup-gone") {
      m.dedup_gone[name].push_back(range());
    } else {
      ADD_FAILURE() << "unknown manifest line: " << line;
    }
  }
  return m;
}

std::string CopyStore(const TempDir& dir) {
  const std::string to = dir.path() + "/store";
  fs::copy(Golden() + "/store", to, fs::copy_options::recursive);
  return to;
}

DatabaseOptions StoreOptions(const std::string& path, bool read_only) {
  DatabaseOptions o = testing::Options(path);
  o.read_only = read_only;
  o.checkpoint_on_close = false;
  o.mapped_journal_min_bytes = 0;
  return o;
}

void CheckStore(Database& db, const Manifest& m, bool writable) {
  for (const auto& [name, spec] : m.specs) {
    SCOPED_TRACE(name);
    auto f = db.Get(name);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(golden::SpecText((*f)->spec()), spec);
    if ((*f)->type() != FilterType::kBloom) {
      EXPECT_EQ((*f)->Stats().total.items, m.items.at(name));
    }
    uint64_t missing = 0, checked = 0;
    for (const Range& r : m.keys.at(name)) {
      for (uint64_t i = r.from; i < r.to; ++i, ++checked) {
        missing += (*f)->MayContain(KeyOf(r.prefix, i)) ? 0 : 1;
      }
    }
    EXPECT_GT(checked, 0u);
    EXPECT_EQ(missing, 0u) << "acknowledged ops lost";
  }
  for (const std::string& name : m.dedup) {
    SCOPED_TRACE(name);
    DedupOptions o;
    o.create_if_missing = false;
    o.journal_bytes = 128 << 10;
    auto d = DedupStore::Open(db, name, o);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    if (writable) {
      EXPECT_GT((*d)->Stats().journal_replayed, 0u);
    }
    for (const Range& r : m.dedup_keys.at(name)) {
      for (uint64_t i = r.from; i < r.to; ++i) {
        auto c = (*d)->Contains(KeyOf(r.prefix, i));
        ASSERT_TRUE(c.ok() && *c) << KeyOf(r.prefix, i);
      }
    }
    for (const Range& r : m.dedup_gone.at(name)) {
      for (uint64_t i = r.from; i < r.to; ++i) {
        auto c = (*d)->Contains(KeyOf(r.prefix, i));
        ASSERT_TRUE(c.ok() && !*c) << KeyOf(r.prefix, i);
      }
    }
    SF_EXPECT_OK((*d)->Close());
  }
}

TEST(JournalGoldenTest, StoreWithMappedJournalsRecoversEverything) {
  BootReset reset;
  const Manifest m = Load();
  ASSERT_EQ(m.specs.size(), 3u) << "manifest not read";
  ASSERT_EQ(m.dedup.size(), 1u);
  // The boot that wrote the segments (their strict rules: J3, T3) and a
  // later one (a prefix of each log).
  for (const char* boot : {golden::kJournalBoot, "a-later-boot"}) {
    SCOPED_TRACE(boot);
    persistence::SetBootIdForTesting(boot);
    {
      TempDir dir;
      auto db = testing::MustOpen(StoreOptions(CopyStore(dir), true));
      ASSERT_NE(db, nullptr);
      CheckStore(*db, m, false);
      auto report = db->Verify();
      ASSERT_TRUE(report.ok()) << report.status().ToString();
      for (const std::string& p : report->problems) ADD_FAILURE() << p;
      EXPECT_GT(report->journal_entries, 0u);
      EXPECT_GT(report->dedup_journal_records, 0u);
    }
    TempDir dir;
    const std::string path = CopyStore(dir);
    for (int round = 0; round < 2; ++round) {  // then as rewritten
      SCOPED_TRACE(round);
      auto db = testing::MustOpen(StoreOptions(path, false));
      ASSERT_NE(db, nullptr);
      if (round == 0) {
        CheckStore(*db, m, true);
        EXPECT_GT(db->counters().replayed_ops, 0u);
      } else {
        for (const auto& [name, spec] : m.specs) {
          auto f = db->Get(name);
          ASSERT_TRUE(f.ok()) << f.status().ToString();
          for (const Range& r : m.keys.at(name)) {
            for (uint64_t i = r.from; i < r.to; ++i) {
              ASSERT_TRUE((*f)->MayContain(KeyOf(r.prefix, i)));
            }
          }
        }
      }
      SF_EXPECT_OK(db->CheckpointAll().status());
      SF_EXPECT_OK(db->Close());
    }
  }
}

}  // namespace
}  // namespace shardfilter
