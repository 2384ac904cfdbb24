// Damaged stores: every kind of stored value flipped, truncated, deleted or
// stamped with a future version. Each open must fail with a clear error
// that names what is wrong, and never crash or drop data silently.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/values.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Options;
using testing::RawStore;
using testing::Spec;
using testing::TempDir;

using KV = std::pair<std::string, std::string>;

// A store with one counting filter "f" of 4 shards: a checkpoint of several
// chunks per shard plus journal entries after it.
void BuildStore(const std::string& path) {
  DatabaseOptions o = Options(path);
  o.chunk_bytes = 4096;
  o.checkpoint_on_close = false;
  o.journal_in_rocksdb = true;  // the cases damage the journal family
  auto db = MustOpen(o);
  ASSERT_NE(db, nullptr);
  auto f = *db->Create("f", Spec(FilterType::kCountingBloom, 20'000, 4));
  for (int i = 0; i < 2000; ++i) SF_ASSERT_OK(f->Add("a" + std::to_string(i)));
  SF_ASSERT_OK(db->Checkpoint("f").status());
  for (int i = 0; i < 200; ++i) SF_ASSERT_OK(f->Add("b" + std::to_string(i)));
  SF_ASSERT_OK(db->Close());
}

struct Case {
  const char* name;
  const char* cf;
  // Picks the entry to damage (index into the column family's scan) and
  // rewrites it; returns false to delete it instead.
  std::function<bool(KV*)> damage;
  StatusCode code;
  std::vector<std::string> message_parts;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Status OpenDamaged(const Case& c, size_t pick) {
  TempDir dir;
  BuildStore(dir.db());
  {
    RawStore raw(dir.db());
    EXPECT_TRUE(raw.ok());
    auto entries = raw.Scan(c.cf);
    EXPECT_FALSE(entries.empty());
    KV kv = entries[pick % entries.size()];
    if (c.damage(&kv)) {
      raw.Put(c.cf, kv.first, kv.second);
    } else {
      raw.Delete(c.cf, kv.first);
    }
  }
  // The store opens; the damaged filter is unavailable with the reason
  // (one bad filter does not take the store down: DESIGN.md invariant 6).
  auto db = Database::Open(Options(dir.db()));
  Status s = db.ok() ? (*db)->Get("f").status() : db.status();
  if (db.ok()) {
    EXPECT_EQ((*db)->Unavailable().size(), s.ok() ? 0u : 1u);
    db->reset();
  }
  if (s.ok()) return Status::OK();
  // A read-only open must report the same.
  DatabaseOptions ro = Options(dir.db());
  ro.read_only = true;
  auto rodb = Database::Open(ro);
  Status rs = rodb.ok() ? (*rodb)->Get("f").status() : rodb.status();
  EXPECT_FALSE(rs.ok());
  EXPECT_EQ(rs.code(), s.code());
  return s;
}

bool Flip(KV* kv, size_t at) {
  kv->second[at % kv->second.size()] ^= 0x40;
  return true;
}

const Case kCases[] = {
    {"DescriptorFlip",
     "catalog",
     [](KV* kv) { return Flip(kv, 20); },
     StatusCode::kCorruption,
     {"filter \"f\" descriptor", "checksum"}},
    {"DescriptorTruncated",
     "catalog",
     [](KV* kv) {
       kv->second.resize(kv->second.size() - 9);
       return true;
     },
     StatusCode::kCorruption,
     {"filter \"f\" descriptor"}},
    {"DescriptorFutureVersion",
     "catalog",
     [](KV* kv) {
       kv->second[0] = 7;
       return true;
     },
     StatusCode::kNotSupported,
     {"filter \"f\" descriptor", "version 7"}},
    {"ChunkFlip",
     "shards",
     [](KV* kv) { return Flip(kv, 1000); },
     StatusCode::kCorruption,
     {"filter \"f\" shard", "generation 1 chunk", "checksum mismatch"}},
    {"ChunkTruncated",
     "shards",
     [](KV* kv) {
       kv->second.resize(kv->second.size() / 2);
       return true;
     },
     StatusCode::kCorruption,
     {"filter \"f\" shard", "chunk"}},
    {"ChunkDeleted",
     "shards",
     [](KV*) { return false; },
     StatusCode::kCorruption,
     {"filter \"f\" shard", "chunk", "missing"}},
    {"ChunkFutureVersion",
     "shards",
     [](KV* kv) {
       kv->second[0] = 2;
       return true;
     },
     StatusCode::kNotSupported,
     {"chunk", "version 2", "newer"}},
    {"ChunkReframedWithOtherBytes",
     "shards",
     [](KV* kv) {
       // A well-formed chunk with the wrong content: only the whole-shard
       // xxh3 in the descriptor catches it.
       std::string payload = kv->second.substr(2, kv->second.size() - 10);
       payload[payload.size() / 2] ^= 1;
       kv->second = persistence::EncodeChunk(payload);
       return true;
     },
     StatusCode::kCorruption,
     {"filter \"f\" shard", "shard checksum"}},
    {"ChunkReframedShorter",
     "shards",
     [](KV* kv) {
       kv->second = persistence::EncodeChunk("short");
       return true;
     },
     StatusCode::kCorruption,
     {"filter \"f\" shard", "bytes"}},
    {"JournalFlip",
     "journal",
     [](KV* kv) { return Flip(kv, 9); },
     StatusCode::kCorruption,
     {"filter \"f\" shard", "journal sequence", "checksum"}},
    {"JournalTruncated",
     "journal",
     [](KV* kv) {
       kv->second.resize(5);
       return true;
     },
     StatusCode::kCorruption,
     {"journal sequence", "truncated"}},
    {"JournalFutureVersion",
     "journal",
     [](KV* kv) {
       kv->second[0] = 3;
       return true;
     },
     StatusCode::kNotSupported,
     {"journal sequence", "version 3"}},
    {"JournalCountMismatch",
     "journal",
     [](KV* kv) {
       std::string p = kv->second.substr(2, kv->second.size() - 10);
       p[1] = 5;  // count = 5, one hash stored
       kv->second =
           persistence::FrameValue(persistence::ValueKind::kJournal, p);
       return true;
     },
     StatusCode::kCorruption,
     {"journal sequence", "count says 5"}},
};

class CorruptionTest : public ::testing::TestWithParam<Case> {};

TEST_P(CorruptionTest, OpenFailsNamingTheDamage) {
  const Case& c = GetParam();
  // Damage the first and a middle value of the family.
  for (size_t pick : {size_t{0}, size_t{5}}) {
    Status s = OpenDamaged(c, pick);
    ASSERT_FALSE(s.ok()) << c.name << " pick " << pick << ": opened";
    EXPECT_EQ(s.code(), c.code) << s.ToString();
    for (const std::string& part : c.message_parts) {
      EXPECT_NE(s.message().find(part), std::string::npos)
          << "\"" << part << "\" not in: " << s.ToString();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllValues, CorruptionTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) {
                           return std::string(info.param.name);
                         });

TEST(CorruptionVerifyTest, VerifyListsDamageThatOpenDoesNotRead) {
  // Debris is not read by recovery; Verify still checks its checksum.
  TempDir dir;
  BuildStore(dir.db());
  {
    RawStore raw(dir.db());
    std::string bad = persistence::EncodeChunk("x");
    bad[2] ^= 1;
    raw.Put("shards", persistence::ChunkKey("f", 1, 9, 0), bad);
  }
  DatabaseOptions ro = Options(dir.db());
  ro.read_only = true;
  auto db = MustOpen(ro);
  ASSERT_NE(db, nullptr);
  auto report = db->Verify();
  SF_ASSERT_OK(report.status());
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_NE(report->problems[0].find("shard 1 generation 9 chunk 0"),
            std::string::npos)
      << report->problems[0];
  EXPECT_EQ(report->orphan_values, 1u);
  EXPECT_EQ(report->filters, 1u);
  EXPECT_EQ(report->shard_blobs, 4u);
  EXPECT_GT(report->journal_entries, 0u);
}

// Filters load on first use. Open reads the catalog only; a damaged filter
// is found when it is used (or by Unavailable()), and the others are never
// held back by it.
TEST(LazyLoadTest, OpenLoadsNothingAndDamageStaysWithItsFilter) {
  TempDir dir;
  BuildStore(dir.db());  // "f", damaged below
  std::string exported;
  {
    auto db = MustOpen(Options(dir.db()));
    auto g = *db->Create("g", Spec(FilterType::kCuckoo, 1000, 2));
    SF_ASSERT_OK(g->Add("x"));
    exported = *ExportFilter(*db, "g");
    SF_ASSERT_OK(db->Close());
  }
  {
    RawStore raw(dir.db());
    ASSERT_TRUE(raw.ok());
    for (auto& [k, v] : raw.Scan("shards")) {
      v[v.size() / 2] ^= 0x40;  // the first chunk: f's (keys sort by name)
      raw.Put("shards", k, v);
      break;
    }
  }
  auto db = MustOpen(Options(dir.db()));
  EXPECT_TRUE(db->Loaded().empty());
  EXPECT_EQ(db->List(), (std::vector<std::string>{"f", "g"}));
  EXPECT_EQ(db->counters().replayed_ops, 0u);
  auto g = db->Get("g");
  SF_ASSERT_OK(g.status());
  EXPECT_TRUE((*g)->MayContain("x"));
  EXPECT_EQ(db->Loaded(), std::vector<std::string>{"g"});
  // The damaged one answers with its damage, every time.
  for (int i = 0; i < 2; ++i) {
    auto f = db->Get("f");
    EXPECT_TRUE(f.status().IsCorruption()) << f.status().ToString();
  }
  ASSERT_EQ(db->Unavailable().size(), 1u);
  // Neither Create nor Import replaces it. Before, an import of that name
  // deleted the damaged filter's data before writing its own.
  EXPECT_EQ(db->Create("f", Spec(FilterType::kBloom, 10, 1)).status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(ImportFilter(*db, "f", exported).code(),
            StatusCode::kAlreadyExists);
  SF_ASSERT_OK(db->Close());
  auto again = MustOpen(Options(dir.db()));
  EXPECT_TRUE(again->Get("f").status().IsCorruption());
  // An import over a name not loaded yet is refused as well.
  EXPECT_EQ(ImportFilter(*again, "g", exported).code(),
            StatusCode::kAlreadyExists);
  EXPECT_TRUE((*again->Get("g"))->MayContain("x"));
}

}  // namespace
}  // namespace shardfilter
