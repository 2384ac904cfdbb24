// `shardfilter export` / `import-filter` and engine/export.h: a round trip
// is bit for bit; foreign, corrupt, truncated and future files are refused
// with exit code 3 and nothing created.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "cli_test_util.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "test_util.h"

namespace shardfilter::testing {
namespace {

class CliExportTest : public CliDirTest {
 protected:
  std::string Db(const std::string& n) { return Path(n); }
  // Creates and fills filter `name` of `type` in store "a".
  void Fill(const std::string& name, const std::string& type,
            std::vector<std::string> extra = {},
            const std::string& capacity = "20000") {
    std::vector<std::string> args = {"--db",   Db("a"), "create",     name,
                                     "--type", type,    "--capacity", capacity,
                                     "--fpp",  "0.01"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliRun r = Run(args);
    ASSERT_EQ(r.code, 0) << r.err;
    std::string keys;
    for (int i = 0; i < 5000; ++i) keys += "key" + std::to_string(i) + "\n";
    r = Run({"--db", Db("a"), "add", name, "--quiet"}, keys);
    ASSERT_EQ(r.code, 0) << r.err;
    if (type != "bloom") {
      r = Run({"--db", Db("a"), "remove", name, "key1", "key2", "--quiet"});
      ASSERT_EQ(r.code, 0) << r.err;
    }
  }
  // Every shard of b/name Equals a/name's.
  void ExpectSame(const std::string& name) {
    auto a = Database::Open(testing::StoreAt(Db("a"), true));
    auto b = Database::Open(testing::StoreAt(Db("b"), true));
    ASSERT_OK(a.status());
    ASSERT_OK(b.status());
    auto fa = (*a)->Get(name);
    auto fb = (*b)->Get(name);
    ASSERT_OK(fa.status());
    ASSERT_OK(fb.status());
    ASSERT_EQ((*fa)->shard_count(), (*fb)->shard_count());
    for (uint32_t i = 0; i < (*fa)->shard_count(); ++i) {
      ASSERT_EQ((*fa)->shard_links(i), (*fb)->shard_links(i)) << i;
      for (uint32_t l = 0; l < (*fa)->shard_links(i); ++l) {
        EXPECT_TRUE((*fa)->shard_filter(i, l).Equals((*fb)->shard_filter(i, l)))
            << i << " " << l;
      }
      if (name == "grown") {
        EXPECT_GT((*fa)->shard_links(i), 2u) << i;
      }
    }
    EXPECT_TRUE((*fa)->Equals(**fb));
  }
  // Importing `bytes` fails with exit 3, naming `what`, creating nothing.
  void ExpectRefused(const std::string& bytes, const std::string& what) {
    WriteFile(Path("bad.sfex"), bytes);
    CliRun r = Run({"--db", Db("b"), "import-filter", Path("bad.sfex"), "x"});
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    CliRun list = Run({"--db", Db("b"), "list"});
    EXPECT_EQ(list.out.find("x\n"), std::string::npos) << list.out;
  }
};

TEST_F(CliExportTest, RoundTripIsBitForBitForEveryType) {
  Fill("bloom", "bloom", {"--shards", "4"});
  Fill("classic", "bloom", {"--layout", "classic", "--shards", "2"});
  Fill("counting", "counting", {"--shards", "4"});
  Fill("cuckoo", "cuckoo", {"--shards", "8", "--fingerprint-bits", "12"});
  // Past capacity: every shard's chain has grown several links.
  Fill("grown", "cuckoo", {"--shards", "2"}, "600");
  Fill("fixed", "bloom", {"--nonscaling"}, "6000");
  for (std::string name :
       {"bloom", "classic", "counting", "cuckoo", "grown", "fixed"}) {
    SCOPED_TRACE(name);
    const std::string file = Path(name + ".sfex");
    CliRun r = Run({"--db", Db("a"), "export", name, file});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_FALSE(std::filesystem::exists(file + ".tmp"));
    r = Run({"--db", Db("b"), "import-filter", file, name});
    ASSERT_EQ(r.code, 0) << r.err;
    ExpectSame(name);
    // Exporting the import gives the same bytes.
    r = Run({"--db", Db("b"), "export", name, file + "2"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(ReadFile(file), ReadFile(file + "2"));
  }
  CliRun v = Run({"--db", Db("b"), "verify"});
  EXPECT_EQ(v.code, 0) << v.out;
  CliRun e = Run({"--db", Db("b"), "exists", "cuckoo", "key10", "key4999"});
  EXPECT_EQ(e.out, "1\n1\n");
}

TEST_F(CliExportTest, ExportToStdoutAndImportFromStdin) {
  Fill("f", "cuckoo");
  CliRun r = Run({"--db", Db("a"), "export", "f", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run({"--db", Db("b"), "import-filter", "-", "f"}, r.out);
  ASSERT_EQ(r.code, 0) << r.err;
  ExpectSame("f");
}

TEST_F(CliExportTest, EveryTruncationAndBitFlipIsRefused) {
  Fill("f", "counting", {"--shards", "2"}, "3000");
  ASSERT_EQ(Run({"--db", Db("a"), "export", "f", Path("f.sfex")}).code, 0);
  const std::string good = ReadFile(Path("f.sfex"));
  ASSERT_GT(good.size(), 200u);
  ASSERT_EQ(Run({"--db", Db("b"), "create", "other", "--type", "bloom",
                 "--capacity", "10", "--fpp", "0.1"})
                .code,
            0);
  // The engine directly, for speed: every prefix, and a flip in every byte.
  auto db = Database::Open(testing::StoreAt(Db("b")));
  ASSERT_OK(db.status());
  for (size_t n = 0; n < good.size(); ++n) {
    Status s = ImportFilter(**db, "x", std::string_view(good).substr(0, n));
    ASSERT_FALSE(s.ok()) << n;
    if (n >= 4) {
      EXPECT_TRUE(s.IsCorruption()) << n << " " << s.ToString();
    }
  }
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x10;
    Status s = ImportFilter(**db, "x", bad);
    ASSERT_FALSE(s.ok()) << i;
    EXPECT_NE(s.code(), StatusCode::kAlreadyExists) << i;
  }
  EXPECT_EQ((*db)->List(), std::vector<std::string>{"other"});
  ASSERT_OK((*db)->Close());
  CliRun v = Run({"--db", Db("b"), "verify"});
  EXPECT_EQ(v.code, 0) << v.out;
  // And through the CLI: exit 3, clear messages.
  ExpectRefused(good.substr(0, good.size() - 1), "Corruption");
  ExpectRefused(good + "x", "Corruption");
  std::string flipped = good;
  flipped[100] ^= 1;
  ExpectRefused(flipped, "checksum mismatch");
  ExpectRefused("hello, world\n", "not a shardfilter export");
  std::string future = good;
  future[4] = kExportVersion + 1;
  ExpectRefused(future, "NotSupported");
}

TEST_F(CliExportTest, ShardThatDoesNotMatchTheHeaderIsCorruption) {
  Fill("f", "bloom", {}, "300");
  ASSERT_EQ(Run({"--db", Db("a"), "export", "f", Path("f.sfex")}).code, 0);
  std::string bytes = ReadFile(Path("f.sfex"));
  // Header says classic layout; the shard is blocked. Re-seal the checksum.
  bytes[9] = static_cast<char>((bytes[9] & ~0x18) | 1);  // layout: classic
  uint64_t sum = Checksum64(bytes.data(), bytes.size() - 8);
  for (int i = 0; i < 8; ++i)
    bytes[bytes.size() - 8 + i] = char(sum >> (8 * i));
  ExpectRefused(bytes, "layout does not match");
  // Header says another seed.
  bytes = ReadFile(Path("f.sfex"));
  bytes[32] ^= 1;
  sum = Checksum64(bytes.data(), bytes.size() - 8);
  for (int i = 0; i < 8; ++i)
    bytes[bytes.size() - 8 + i] = char(sum >> (8 * i));
  ExpectRefused(bytes, "does not match");
}

TEST_F(CliExportTest, ExistingNameAndUnknownFilter) {
  Fill("f", "bloom");
  ASSERT_EQ(Run({"--db", Db("a"), "export", "f", Path("f.sfex")}).code, 0);
  CliRun r = Run({"--db", Db("a"), "import-filter", Path("f.sfex"), "f"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("AlreadyExists"), std::string::npos) << r.err;
  r = Run({"--db", Db("a"), "export", "nope", Path("n.sfex")});
  EXPECT_EQ(r.code, 3);
  EXPECT_FALSE(std::filesystem::exists(Path("n.sfex")));
  r = Run({"--db", Db("a"), "import-filter", Path("missing"), "g"});
  EXPECT_EQ(r.code, 3);
  r = Run({"--db", Db("a"), "export", "f"});
  EXPECT_EQ(r.code, 2);
}

TEST(ExportEngine, StandaloneFilterAndDurabilityOverride) {
  FilterSpec spec;
  spec.type = FilterType::kCuckoo;
  spec.capacity = 1000;
  spec.shards = 4;
  auto f = ShardedFilter::Create(spec);
  ASSERT_OK(f.status());
  for (int i = 0; i < 500; ++i) ASSERT_OK((*f)->Add(std::to_string(i)));
  const std::string bytes = ExportShardedFilter(**f);
  auto parsed = ParseExport(bytes);
  ASSERT_OK(parsed.status());
  EXPECT_EQ(parsed->shards.size(), 4u);
  EXPECT_EQ(parsed->spec.capacity, 1000u);
  char tmpl[] = "/tmp/shardfilter_export_engine.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  {
    auto db = Database::Open(testing::StoreAt(std::string(tmpl) + "/db"));
    ASSERT_OK(db.status());
    ASSERT_OK(ImportFilter(**db, "c", bytes, Durability::kSync));
    auto g = (*db)->Get("c");
    ASSERT_OK(g.status());
    EXPECT_TRUE((*g)->Equals(**f));
    EXPECT_EQ((*g)->durability(), Durability::kSync);
    ASSERT_OK((*g)->Add("after-import"));  // journalled like any filter
    ASSERT_OK((*db)->Close());
    auto again = Database::Open(testing::StoreAt(std::string(tmpl) + "/db"));
    ASSERT_OK(again.status());
    auto h = (*again)->Get("c");
    ASSERT_OK(h.status());
    EXPECT_TRUE((*h)->MayContain("after-import"));
    EXPECT_TRUE((*h)->MayContain("499"));
  }
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace shardfilter::testing
