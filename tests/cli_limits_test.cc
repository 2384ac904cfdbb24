// The CLI's side of resource limits and honest counting: what `add` reports
// for keys already present, copy bounds, the memory budget.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <sys/stat.h>

#include <string>

#include "cli_test_util.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/filters/hash.h"

namespace shardfilter {
namespace {

class CliLimitsTest : public testing::CliDirTest {
 protected:
  testing::CliRun Sf(std::vector<std::string> args,
                     const std::string& in = "") {
    args.insert(args.begin(), {"--db", Path("db")});
    return Run(args, in);
  }
  static std::string Lines(const std::string& key, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += key + "\n";
    return s;
  }
  static std::string Field(const std::string& info, const std::string& row) {
    size_t at = info.find("\n" + row + " ");
    if (at == std::string::npos) return "";
    at = info.find_first_not_of(' ', at + row.size() + 1);
    return info.substr(at, info.find('\n', at) - at);
  }
};

// Case 1: 3,000 adds of one key into a non-scaling Bloom filter of
// capacity 1,000: before, 1,000 succeeded and 2,000 failed with Full.
TEST_F(CliLimitsTest, BloomRepeatedKeyIsAlreadyPresentNotFull) {
  ASSERT_EQ(Sf({"create", "b", "--type", "bloom", "--capacity", "1000", "--fpp",
                "0.01", "--nonscaling"})
                .code,
            0);
  auto r = Sf({"add", "b"}, Lines("same", 3000));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("3000 keys, 1 added, 0 failed, 2999 already present"),
            std::string::npos)
      << r.err;
  auto info = Sf({"info", "b"});
  EXPECT_EQ(Field(info.out, "items"), "1") << info.out;
  // Case 8: info says what `items` counts, and why a young scalable filter
  // measures about half its target rate.
  EXPECT_NE(Field(info.out, "items_counts").find("distinct keys"),
            std::string::npos)
      << info.out;
}

TEST_F(CliLimitsTest, BloomReAddingAFileKeepsOneLink) {
  ASSERT_EQ(Sf({"create", "s", "--type", "bloom", "--capacity", "10000",
                "--fpp", "0.01"})
                .code,
            0);
  std::string keys;
  for (int i = 0; i < 10000; ++i) keys += std::to_string(i) + "\n";
  for (int round = 0; round < 6; ++round) {
    ASSERT_EQ(Sf({"add", "s", "--quiet"}, keys).code, 0);
  }
  auto info = Sf({"info", "s"});
  EXPECT_EQ(Field(info.out, "current_capacity"), "10000") << info.out;
  EXPECT_NE(Field(info.out, "link0_fpr").find("0.005 (link 0 runs at half"),
            std::string::npos)
      << info.out;
}

// Case 2: before, 41 copies grew the filter to 6.3M capacity and 64 MiB,
// and 81 copies tried to allocate 51 GB (OOM-killed).
TEST_F(CliLimitsTest, CuckooCopiesAreBoundedAndNeverGrow) {
  ASSERT_EQ(Sf({"create", "cu", "--type", "cuckoo", "--capacity", "100000",
                "--fpp", "0.001"})
                .code,
            0);
  const std::string before = Sf({"info", "cu"}).out;
  auto r = Sf({"add", "cu"}, Lines("same", 81));
  EXPECT_EQ(r.code, 1) << r.err;  // some keys failed
  EXPECT_NE(r.err.find("81 keys, 7 added, 74 failed (Full)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("key #8 'same': Full: the key already holds 7 copies"),
            std::string::npos)
      << r.err;
  const std::string after = Sf({"info", "cu"}).out;
  EXPECT_EQ(Field(after, "current_capacity"), "100000") << after;
  EXPECT_EQ(Field(after, "bytes"), Field(before, "bytes"));
  EXPECT_EQ(Field(after, "items"), "7");
}

// Case 3 at the CLI: a create past the memory budget is refused (exit 3)
// before anything is allocated, and changes nothing.
TEST_F(CliLimitsTest, CreatePastTheMemoryBudgetIsRefused) {
  auto r = Sf({"create", "huge", "--type", "bloom", "--capacity", "1e11",
               "--fpp", "0.01", "--memory-budget", "4G"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("ResourceExhausted: creating filter"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("memory budget of 4294967296 bytes"), std::string::npos)
      << r.err;
  EXPECT_EQ(Sf({"list"}).out, "");
  // With the default budget (half of this machine's memory) too.
  r = Sf({"create", "huge", "--type", "cuckoo", "--capacity", "1e11", "--fpp",
          "0.01"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("ResourceExhausted"), std::string::npos) << r.err;
  r = Sf({"create", "x", "--type", "bloom", "--capacity", "10", "--fpp", "0.01",
          "--memory-budget", "lots"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--memory-budget"), std::string::npos) << r.err;
}

TEST_F(CliLimitsTest, AddStopsGrowingAtTheMemoryBudget) {
  ASSERT_EQ(Sf({"create", "s", "--type", "bloom", "--capacity", "10000",
                "--fpp", "0.01", "--shards", "1"})
                .code,
            0);
  std::string keys;
  for (int i = 0; i < 200000; ++i) keys += std::to_string(i) + "\n";
  auto r = Sf({"add", "s", "--memory-budget", "64k"}, keys);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("ResourceExhausted: growing a shard's chain"),
            std::string::npos)
      << r.err;
}

// ---- Case 7: the smaller ones ----

// Before: the export's rename replaced a FIFO (or /dev/full) with a
// regular file.
TEST_F(CliLimitsTest, ExportRefusesTargetsThatAreNotRegularFiles) {
  ASSERT_EQ(Sf({"create", "f", "--type", "bloom", "--capacity", "100", "--fpp",
                "0.01"})
                .code,
            0);
  const std::string fifo = Path("pipe");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto r = Sf({"export", "f", fifo});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("is not a regular file"), std::string::npos) << r.err;
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A regular file or a new path is fine.
  EXPECT_EQ(Sf({"export", "f", Path("f.sfex")}).code, 0);
  EXPECT_EQ(Sf({"export", "f", Path("f.sfex")}).code, 0);
}

// Before: two shard blobs swapped, trailer recomputed, was accepted (false
// negatives for every key of those shards).
TEST_F(CliLimitsTest, ExportWithSwappedShardBlobsIsRejected) {
  FilterSpec spec;
  spec.type = FilterType::kBloom;
  spec.capacity = 1000;
  spec.shards = 2;
  auto f = ShardedFilter::Create(spec);
  ASSERT_TRUE(f.ok());
  for (int i = 0; i < 500; ++i) ASSERT_TRUE((*f)->Add(std::to_string(i)).ok());
  const std::string good = ExportShardedFilter(**f);
  ASSERT_TRUE(LoadExportedFilter(good).ok());
  auto u64 = [](const std::string& b, size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{uint8_t(b[at + i])} << (8 * i);
    return v;
  };
  auto reseal = [](std::string* b) {
    const uint64_t sum = Checksum64(b->data(), b->size() - 8);
    for (int i = 0; i < 8; ++i) (*b)[b->size() - 8 + i] = char(sum >> (8 * i));
  };
  // Records: [u64 length, blob, u64 seeded checksum] (version 2).
  const size_t a = kExportHeaderSize;
  const size_t len_a = 16 + u64(good, a);
  const size_t len_b = 16 + u64(good, a + len_a);
  std::string swapped = good.substr(0, a) + good.substr(a + len_a, len_b) +
                        good.substr(a, len_a) + good.substr(a + len_a + len_b);
  reseal(&swapped);
  auto r = LoadExportedFilter(swapped);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find("does not check as shard 0"),
            std::string::npos)
      << r.status().ToString();
  // Version 1 files (no per-shard checksum) are still read.
  std::string v1 = good.substr(0, a);
  v1[4] = 1;
  for (size_t at = a, i = 0; i < 2; ++i) {
    const size_t len = u64(good, at);
    v1 += good.substr(at, 8 + len);
    at += 16 + len;
  }
  v1 += std::string(8, '\0');
  reseal(&v1);
  auto old = LoadExportedFilter(v1);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  for (int i = 0; i < 500; ++i)
    EXPECT_TRUE((*old)->MayContain(std::to_string(i)));
}

// Before: the refused dedup still created the dedup column families.
TEST_F(CliLimitsTest, RefusedDedupChangesNothing) {
  ASSERT_EQ(Sf({"create", "f", "--type", "bloom", "--capacity", "100", "--fpp",
                "0.01"})
                .code,
            0);
  auto r = Sf({"dedup", "seen", "--fpp", "1e-30"}, "a\n");
  EXPECT_NE(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("0.000000"), std::string::npos) << r.err;
  std::vector<std::string> families;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), Path("db"),
                                              &families)
                  .ok());
  for (const std::string& cf : families) {
    EXPECT_EQ(cf.find("dedup"), std::string::npos) << cf;
  }
}

// Before: dedup said "key #0" for the first key, where add says "key #1".
TEST_F(CliLimitsTest, DedupNumbersKeysFromOne) {
  const std::string big(5000, 'x');
  auto r = Sf({"dedup", "seen"}, "a\n" + big + "\n");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("key #2: dedup key of 5000 bytes"), std::string::npos)
      << r.err;
}

TEST_F(CliLimitsTest, ImportFilterOnADirectoryIsAClearError) {
  auto r = Sf({"import-filter", dir_, "g"});
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.err.find("basic_filebuf"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
}

// Before: "at rate 0.000000".
TEST_F(CliLimitsTest, TinyRatesArePrintedReadably) {
  auto r = Sf({"create", "c", "--type", "cuckoo", "--capacity", "1000", "--fpp",
               "1e-30"});
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(r.err.find("0.000000"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at rate 5e-31"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("half the target rate 1e-30"), std::string::npos)
      << r.err;
}

// Before: `--to-name ''` silently rebuilt the filter in place.
TEST_F(CliLimitsTest, EmptyToNameIsRefused) {
  ASSERT_EQ(Sf({"create", "f", "--type", "bloom", "--capacity", "100", "--fpp",
                "0.01", "--retain-hashes"})
                .code,
            0);
  auto r = Sf({"migrate", "f", "--capacity", "200", "--to-name", ""});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--to-name needs a filter name"), std::string::npos)
      << r.err;
}

TEST_F(CliLimitsTest, CreateHelpStatesTheDefaultShardCount) {
  auto r = Run({"create", "--help"});
  EXPECT_NE(r.out.find("1M -> 2"), std::string::npos) << r.out;
  EXPECT_EQ(DefaultShardCount(1'000'000), 2u);
  EXPECT_EQ(DefaultShardCount(10'000), 1u);
  EXPECT_EQ(DefaultShardCount(5'000'000), 8u);
}

}  // namespace
}  // namespace shardfilter
