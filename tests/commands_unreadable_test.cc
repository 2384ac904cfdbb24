// Keys that exist but cannot be loaded (over the memory budget, damaged
// stored data) through the command layer on the server's keyspace: every
// command that looks such a key up answers "ERR key 'k' cannot be loaded:
// <reason>", never absent (0, "none", a create that answers "item exists");
// DEL still removes it (docs/server.md "Keys", docs/design.md "Errors are
// never answers").
#include <memory>
#include <string>
#include <vector>

#include "commands_test_util.h"
#include "shardfilter/engine/memory_budget.h"

namespace shardfilter::testing {
namespace {

constexpr std::string_view kUnreadable = "-ERR key '";

class UnreadableKeysTest : public CommandsFixture {
 protected:
  // Reopens the store with a memory budget of `budget_bytes` (the keys made
  // so far stay on disk; each loads on its first use).
  void ReopenWithBudget(uint64_t budget_bytes) {
    keyspace_.reset();
    ASSERT_TRUE(db_->Close().ok());
    db_.reset();
    DatabaseOptions o;
    o.path = dir_.db();
    o.memory_budget = std::make_shared<MemoryBudget>(budget_bytes);
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    keyspace_ = std::make_unique<server::DbKeyspace>(db_.get(), ks_options_);
  }

  // The reply must be the unreadable-key error for `key`, naming the reason.
  void ExpectUnreadable(const std::vector<std::string>& args,
                        const std::string& key, const std::string& reason) {
    const std::string got = Run(args);
    const std::string want =
        std::string(kUnreadable) + key + "' cannot be loaded: ";
    EXPECT_TRUE(got.rfind(want, 0) == 0 &&
                got.find(reason) != std::string::npos)
        << args[0] << " " << key << " answered " << Escape(got);
  }

  static std::string Escape(const std::string& s) {
    std::string r;
    for (char ch : s) r += ch == '\r' ? "\\r" : ch == '\n' ? "\\n" : std::string(1, ch);
    return r;
  }
};

// A Bloom filter "b" and a cuckoo filter "c" larger than the budget they
// are reopened under: both exist, neither can be loaded.
TEST_F(UnreadableKeysTest, FilterOverTheMemoryBudgetIsAnErrorForEveryCommand) {
  ASSERT_EQ(Run({"BF.RESERVE", "b", "0.01", "100000"}), "+OK\r\n");
  ASSERT_EQ(Run({"BF.ADD", "b", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"CF.RESERVE", "c", "100000"}), "+OK\r\n");
  ASSERT_EQ(Run({"CF.ADD", "c", "x"}), ":1\r\n");
  ReopenWithBudget(4096);
  const std::string budget = "memory budget";
  for (const std::string key : {"b", "c"}) {
    // Queries: never 0 for a filter that is there.
    ExpectUnreadable({"BF.EXISTS", key, "x"}, key, budget);
    ExpectUnreadable({"BF.MEXISTS", key, "x", "y"}, key, budget);
    ExpectUnreadable({"CF.EXISTS", key, "x"}, key, budget);
    ExpectUnreadable({"CF.MEXISTS", key, "x", "y"}, key, budget);
    ExpectUnreadable({"CF.COUNT", key, "x"}, key, budget);
    ExpectUnreadable({"SF.EXISTS", key, "x"}, key, budget);
    ExpectUnreadable({"SF.MEXISTS", key, "x", "y"}, key, budget);
    ExpectUnreadable({"SF.COUNT", key, "x"}, key, budget);
    ExpectUnreadable({"BF.CARD", key}, key, budget);
    ExpectUnreadable({"BF.INFO", key}, key, budget);
    ExpectUnreadable({"CF.INFO", key}, key, budget);
    ExpectUnreadable({"SF.INFO", key}, key, budget);
    ExpectUnreadable({"SF.SHARDS", key}, key, budget);
    // Writes: never "item exists" (the create they fall back to), never a
    // write to a new filter.
    ExpectUnreadable({"BF.ADD", key, "y"}, key, budget);
    ExpectUnreadable({"BF.MADD", key, "y", "z"}, key, budget);
    ExpectUnreadable({"BF.INSERT", key, "ITEMS", "y"}, key, budget);
    ExpectUnreadable({"BF.INSERT", key, "NOCREATE", "ITEMS", "y"}, key,
                     budget);
    ExpectUnreadable({"BF.RESERVE", key, "0.01", "100"}, key, budget);
    ExpectUnreadable({"CF.ADD", key, "y"}, key, budget);
    ExpectUnreadable({"CF.ADDNX", key, "y"}, key, budget);
    ExpectUnreadable({"CF.INSERT", key, "ITEMS", "y"}, key, budget);
    ExpectUnreadable({"CF.INSERTNX", key, "ITEMS", "y"}, key, budget);
    ExpectUnreadable({"CF.RESERVE", key, "1000"}, key, budget);
    ExpectUnreadable({"CF.DEL", key, "x"}, key, budget);
    ExpectUnreadable({"SF.ADD", key, "y"}, key, budget);
    ExpectUnreadable({"SF.MADD", key, "y", "z"}, key, budget);
    ExpectUnreadable({"SF.REMOVE", key, "x"}, key, budget);
    ExpectUnreadable({"SF.MIGRATE", key, "bloom", "1000"}, key, budget);
    ExpectUnreadable({"SF.UNION", key, "b"}, key, budget);
    ExpectUnreadable({"BF.SCANDUMP", key, "0"}, key, budget);
    ExpectUnreadable({"CF.SCANDUMP", key, "0"}, key, budget);
    ExpectUnreadable({"BF.LOADCHUNK", key, "1", "SFDUMP01xxxxxxxx"}, key,
                     budget);
    // Generic key commands: the key is there, its type is unknown.
    ExpectUnreadable({"TYPE", key}, key, budget);
    ExpectUnreadable({"EXISTS", key}, key, budget);
    ExpectUnreadable({"EXPIRE", key, "100"}, key, budget);
    ExpectUnreadable({"TTL", key}, key, budget);
    ExpectUnreadable({"PERSIST", key}, key, budget);
  }
  // The other kinds' commands: the key holds a filter.
  EXPECT_EQ(Run({"SF.DEDUPEXISTS", "b", "x"}).rfind("-WRONGTYPE", 0), 0u);
  EXPECT_EQ(Run({"SF.DEDUPADD", "b", "x"}).rfind("-WRONGTYPE", 0), 0u);
  EXPECT_EQ(Run({"SF.TIEREXISTS", "b", "x"}).rfind("-WRONGTYPE", 0), 0u);
  // SCAN without TYPE lists the names; with TYPE it needs every type.
  const std::string scan = Run({"SCAN", "0", "COUNT", "100"});
  EXPECT_EQ(scan.rfind("*2\r\n$1\r\n0\r\n*2\r\n", 0), 0u) << scan;
  EXPECT_NE(scan.find("$1\r\nb\r\n"), std::string::npos) << scan;
  EXPECT_NE(scan.find("$1\r\nc\r\n"), std::string::npos) << scan;
  EXPECT_EQ(Run({"SCAN", "0", "TYPE", "MBbloom--"}).rfind(kUnreadable, 0), 0u);
  // Nothing was created or changed meanwhile; DEL removes them.
  EXPECT_EQ(Run({"DBSIZE"}), ":2\r\n");
  EXPECT_EQ(Run({"DEL", "b", "c"}), ":2\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "b", "x"}), ":0\r\n");
  EXPECT_EQ(Run({"TYPE", "c"}), "+none\r\n");
}

// The pipelined groups (consecutive queries / adds of one key run as one
// batch) answer each command with the error.
TEST_F(UnreadableKeysTest, PipelinedGroupsAnswerEachCommandWithTheError) {
  ASSERT_EQ(Run({"BF.RESERVE", "b", "0.01", "100000"}), "+OK\r\n");
  ASSERT_EQ(Run({"CF.RESERVE", "c", "100000"}), "+OK\r\n");
  ReopenWithBudget(4096);
  for (const auto& [cmd, key] :
       std::vector<std::pair<std::string, std::string>>{{"BF.EXISTS", "b"},
                                                        {"BF.MEXISTS", "b"},
                                                        {"CF.EXISTS", "c"},
                                                        {"CF.MEXISTS", "c"},
                                                        {"BF.ADD", "b"},
                                                        {"BF.MADD", "b"},
                                                        {"CF.ADD", "c"}}) {
    const std::vector<std::vector<std::string>> requests = {
        {cmd, key, "x"}, {cmd, key, "y"}, {cmd, key, "z"}};
    std::vector<std::vector<std::string_view>> views;
    for (const auto& r : requests) views.emplace_back(r.begin(), r.end());
    std::vector<commands::Args> args(views.begin(), views.end());
    out_.clear();
    commands::CommandContext ctx{session_, *keyspace_, host_, writer_};
    ASSERT_EQ(commands::DispatchPipeline(ctx, args), 3u);
    const std::string line = std::string(kUnreadable) + key + "' cannot be loaded: ";
    size_t at = 0;
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(out_.compare(at, line.size(), line), 0)
          << cmd << " reply " << i << ": " << out_;
      at = out_.find("\r\n", at) + 2;
    }
    EXPECT_EQ(at, out_.size()) << cmd << ": " << out_;
  }
  EXPECT_EQ(Run({"DBSIZE"}), ":2\r\n");
}

// A filter whose stored chunk is damaged (Corruption, unavailable for good)
// answers the same way, naming the damage.
TEST_F(UnreadableKeysTest, DamagedFilterIsAnErrorNamingTheDamage) {
  ASSERT_EQ(Run({"BF.RESERVE", "b", "0.01", "100000"}), "+OK\r\n");
  ASSERT_EQ(Run({"BF.ADD", "b", "x"}), ":1\r\n");
  keyspace_.reset();
  ASSERT_TRUE(db_->Close().ok());  // checkpoints: the table is in chunks
  db_.reset();
  {
    RawStore raw(dir_.db());
    ASSERT_TRUE(raw.ok());
    auto chunks = raw.Scan("shards");
    ASSERT_FALSE(chunks.empty());
    auto& [k, v] = chunks[0];
    v[v.size() / 2] ^= 0x40;
    raw.Put("shards", k, v);
  }
  OpenStore();
  ExpectUnreadable({"BF.EXISTS", "b", "x"}, "b", "checksum");
  ExpectUnreadable({"BF.ADD", "b", "y"}, "b", "checksum");
  ExpectUnreadable({"CF.EXISTS", "b", "x"}, "b", "checksum");
  ExpectUnreadable({"TYPE", "b"}, "b", "checksum");
  EXPECT_EQ(Run({"KEYS", "*"}), "*1\r\n$1\r\nb\r\n");
  EXPECT_EQ(Run({"DEL", "b"}), ":1\r\n");
  EXPECT_EQ(Run({"BF.ADD", "b", "y"}), ":1\r\n");  // a new, empty filter
}

// Dedup sets and tiered filters that cannot be loaded: their commands
// answer the error (never 0, never a new set), the other kinds' commands
// WRONGTYPE, and the generic ones the error.
TEST_F(UnreadableKeysTest, DedupSetsAndTieredFiltersOverTheBudget) {
  ASSERT_EQ(Run({"SF.DEDUPCREATE", "d", "CAPACITY", "100000"}), "+OK\r\n");
  ASSERT_EQ(Run({"SF.DEDUPADD", "d", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"SF.TIERCREATE", "t", "LEVEL", "bloom", "100000"}),
            "+OK\r\n");
  ASSERT_EQ(Run({"SF.TIERADD", "t", "x"}), ":1\r\n");
  // A dedup set's front filters are not the Database's (no budget): its
  // limit is the server's --max-filter-bytes.
  ks_options_.max_filter_bytes = 4096;
  ReopenWithBudget(4096);
  const std::string budget = "memory budget";
  const std::string limit = "memory limit";
  ExpectUnreadable({"SF.DEDUPEXISTS", "d", "x"}, "d", limit);
  ExpectUnreadable({"SF.DEDUPMEXISTS", "d", "x", "y"}, "d", limit);
  ExpectUnreadable({"SF.DEDUPADD", "d", "y"}, "d", limit);
  ExpectUnreadable({"SF.DEDUPMADD", "d", "y", "z"}, "d", limit);
  ExpectUnreadable({"SF.DEDUPDEL", "d", "x"}, "d", limit);
  ExpectUnreadable({"SF.DEDUPINFO", "d"}, "d", limit);
  ExpectUnreadable({"SF.TIEREXISTS", "t", "x"}, "t", budget);
  ExpectUnreadable({"SF.TIERMEXISTS", "t", "x", "y"}, "t", budget);
  ExpectUnreadable({"SF.TIERADD", "t", "y"}, "t", budget);
  ExpectUnreadable({"SF.TIERMADD", "t", "y", "z"}, "t", budget);
  ExpectUnreadable({"SF.TIERDEL", "t", "x"}, "t", budget);
  ExpectUnreadable({"SF.TIERINFO", "t"}, "t", budget);
  for (const std::string key : {"d", "t"}) {
    EXPECT_EQ(Run({"BF.ADD", key, "x"}).rfind("-WRONGTYPE", 0), 0u);
    EXPECT_EQ(Run({"SF.CREATE", key, "bloom", "10"}), "-ERR item exists\r\n");
  }
  // Their kind is known without loading them.
  EXPECT_EQ(Run({"TYPE", "d"}), "+SFdedupst\r\n");
  EXPECT_EQ(Run({"TYPE", "t"}), "+SFtiered-\r\n");
  EXPECT_EQ(Run({"EXISTS", "d", "t"}), ":2\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":2\r\n");
}

}  // namespace
}  // namespace shardfilter::testing
