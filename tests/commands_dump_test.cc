// BF/CF.SCANDUMP and LOADCHUNK: a filter dumped in chunks and loaded under
// another name answers alike; bad headers, order and types are refused; the
// bytes a connection holds between commands (LOADCHUNK staging, SCANDUMP
// copies) are charged to the store's memory budget and bounded.
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "commands_test_util.h"
#include "shardfilter/engine/memory_budget.h"

namespace shardfilter::testing {
namespace {

class DumpTest : public CommandsFixture {
 protected:
  // Parses "*2\r\n:<iter>\r\n$<n>\r\n<data>\r\n" (or a null bulk).
  static std::pair<int64_t, std::string> Chunk(const std::string& reply) {
    EXPECT_EQ(reply.rfind("*2\r\n:", 0), 0u) << reply;
    const size_t nl = reply.find("\r\n", 5);
    const int64_t iter = std::stoll(reply.substr(5, nl - 5));
    const size_t bulk = nl + 2;
    if (reply.compare(bulk, 3, "$-1") == 0) return {iter, ""};
    const size_t nl2 = reply.find("\r\n", bulk);
    const size_t len = std::stoul(reply.substr(bulk + 1, nl2 - bulk - 1));
    return {iter, reply.substr(nl2 + 2, len)};
  }

  // SCANDUMP src to the end; LOADCHUNK every chunk into dst.
  size_t Copy(const std::string& family, const std::string& src,
              const std::string& dst) {
    std::vector<std::pair<int64_t, std::string>> chunks;
    int64_t iter = 0;
    for (;;) {
      auto [next, data] =
          Chunk(Run({family + ".SCANDUMP", src, std::to_string(iter)}));
      if (next == 0) break;
      chunks.emplace_back(next, std::move(data));
      iter = next;
    }
    for (const auto& [it, data] : chunks) {
      EXPECT_EQ(Run({family + ".LOADCHUNK", dst, std::to_string(it), data}),
                "+OK\r\n");
    }
    return chunks.size();
  }
};

TEST_F(DumpTest, BloomRoundTripsThroughSeveralChunks) {
  // ~24 MB of table: two 16 MB chunks after the header.
  ASSERT_EQ(Run({"BF.RESERVE", "b", "0.01", "20000000"}), "+OK\r\n");
  ASSERT_EQ(Run({"BF.MADD", "b", "a", "b", "c"}), "*3\r\n:1\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Copy("BF", "b", "b2"), 3u);
  EXPECT_EQ(Run({"BF.MEXISTS", "b2", "a", "b", "c", "zz"}),
            "*4\r\n:1\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"BF.INFO", "b2"}), Run({"BF.INFO", "b"}));
  EXPECT_EQ(Run({"BF.SCANDUMP", "missing", "0"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"BF.SCANDUMP", "b", "x"}),
            "-Second argument must be numeric\r\n");
}

TEST_F(DumpTest, CuckooRoundTripsAndKeepsCounts) {
  ASSERT_EQ(Run({"CF.INSERT", "c", "ITEMS", "a", "a", "b"}),
            "*3\r\n:1\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Copy("CF", "c", "c2"), 2u);
  EXPECT_EQ(Run({"CF.COUNT", "c2", "a"}), ":2\r\n");
  EXPECT_EQ(Run({"CF.INFO", "c2"}), Run({"CF.INFO", "c"}));
  // The end of a cuckoo dump is [0, nil], as RedisBloom's.
  Run({"CF.SCANDUMP", "c", "0"});
  const std::string last = Run({"CF.SCANDUMP", "c", "1000000000"});
  EXPECT_EQ(last, "*2\r\n:0\r\n$-1\r\n");
}

TEST_F(DumpTest, LoadRefusesBadInput) {
  ASSERT_EQ(Run({"BF.ADD", "b", "a"}), ":1\r\n");
  ASSERT_EQ(Run({"CF.ADD", "c", "a"}), ":1\r\n");
  auto [one, header] = Chunk(Run({"BF.SCANDUMP", "b", "0"}));
  ASSERT_EQ(one, 1);
  auto [end, body] = Chunk(Run({"BF.SCANDUMP", "b", "1"}));
  EXPECT_EQ(Run({"BF.LOADCHUNK", "b", "1", header}), "-ERR item exists\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "c", "1", header}),
            "-WRONGTYPE Operation against a key holding the wrong kind of "
            "value\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", "1", "garbage"}),
            "-ERR received bad data\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", "x", header}),
            "-ERR Second argument must be numeric\r\n");
  // A chunk without its header: the key is missing, as RedisBloom says;
  // out of order: refused.
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", std::to_string(end), body}),
            "-ERR not found\r\n");
  ASSERT_EQ(Run({"BF.LOADCHUNK", "n", "1", header}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", std::to_string(end + 5), body})
                .rfind("-ERR invalid chunk position", 0),
            0u);
  // Damaged bytes: refused by the dump's checksum, nothing created.
  std::string damaged = body;
  damaged[damaged.size() / 2] ^= 0x40;
  ASSERT_EQ(Run({"BF.LOADCHUNK", "n", "1", header}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.LOADCHUNK", "n", std::to_string(end), damaged})
                .rfind("-ERR could not load the dump", 0),
            0u);
  EXPECT_EQ(Run({"EXISTS", "n"}), ":0\r\n");
  // A Bloom dump is not a cuckoo filter.
  ASSERT_EQ(Run({"CF.LOADCHUNK", "n", "1", header}), "+OK\r\n");
  EXPECT_EQ(Run({"CF.LOADCHUNK", "n", std::to_string(end), body}),
            "-ERR the dump is not a cuckoo filter's\r\n");
  EXPECT_EQ(Run({"EXISTS", "n"}), ":0\r\n");
}

// A store whose filters, staging and dump copies share a 64 MiB budget, and
// any number of connections (sessions).
class DumpBudgetTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kMiB = 1 << 20;

  void SetUp() override {
    budget_ = std::make_shared<MemoryBudget>(64 * kMiB);
    DatabaseOptions o;
    o.path = dir_.db();
    o.memory_budget = budget_;
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    keyspace_ = std::make_unique<server::DbKeyspace>(
        db_.get(), server::DbKeyspaceOptions{});
  }
  void TearDown() override {
    sessions_.clear();
    keyspace_.reset();
    if (db_ != nullptr) {
      EXPECT_TRUE(db_->Close().ok());
    }
  }

  commands::Session& Connection(size_t i) {
    while (sessions_.size() <= i) {
      sessions_.push_back(std::make_unique<commands::Session>());
    }
    if (sessions_[i] == nullptr) {
      sessions_[i] = std::make_unique<commands::Session>();
    }
    return *sessions_[i];
  }
  void Disconnect(size_t i) { sessions_.at(i).reset(); }

  std::string Run(size_t conn, std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    resp::RespWriter writer(&out, 2);
    commands::CommandContext ctx{Connection(conn), *keyspace_, host_, writer};
    commands::Dispatch(ctx, views);
    return out;
  }

  static std::string Header(uint64_t total) {
    std::string h = "SFDUMP01";
    for (int i = 0; i < 8; ++i)
      h.push_back(static_cast<char>(total >> (8 * i)));
    return h;
  }

  static constexpr const char* kOom =
      "-OOM command not allowed when used memory > 'maxmemory'.\r\n";

  TempDir dir_;
  std::shared_ptr<MemoryBudget> budget_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<server::DbKeyspace> keyspace_;
  FakeHost host_;
  std::vector<std::unique_ptr<commands::Session>> sessions_;
};

TEST_F(DumpBudgetTest, LoadChunkStagingIsChargedUntilDoneOrAbandoned) {
  const uint64_t base = budget_->used();
  ASSERT_EQ(Run(0, {"BF.LOADCHUNK", "a", "1", Header(30 * kMiB)}), "+OK\r\n");
  EXPECT_GE(budget_->used(), base + 30 * kMiB);
  ASSERT_EQ(Run(1, {"BF.LOADCHUNK", "b", "1", Header(30 * kMiB)}), "+OK\r\n");
  // A third does not fit in the budget: Redis's OOM error, nothing taken.
  const uint64_t held = budget_->used();
  EXPECT_EQ(Run(2, {"BF.LOADCHUNK", "c", "1", Header(30 * kMiB)}), kOom);
  EXPECT_EQ(budget_->used(), held);
  // A newer restore on connection 0 gives the older one's bytes back.
  ASSERT_EQ(Run(0, {"BF.LOADCHUNK", "a2", "1", Header(kMiB)}), "+OK\r\n");
  EXPECT_LE(budget_->used(), base + 31 * kMiB);
  ASSERT_EQ(Run(2, {"BF.LOADCHUNK", "c", "1", Header(30 * kMiB)}), "+OK\r\n");
  // So does a connection that goes away midway.
  Disconnect(1);
  Disconnect(2);
  EXPECT_LE(budget_->used(), base + kMiB);
  Disconnect(0);
  EXPECT_EQ(budget_->used(), base);
  // A restore that completes keeps only its filter's tables.
  ASSERT_EQ(Run(3, {"BF.RESERVE", "src", "0.01", "1000000"}), "+OK\r\n");
  const uint64_t with_src = budget_->used();
  const std::string header = Run(3, {"BF.SCANDUMP", "src", "0"});
  const std::string body = Run(3, {"BF.SCANDUMP", "src", "1"});
  // "*2\r\n:<it>\r\n$16\r\n<16 bytes>\r\n"
  const std::string h = header.substr(header.find("$16\r\n") + 5, 16);
  const size_t nl = body.find("\r\n", 5);
  const std::string end = body.substr(5, nl - 5);
  const size_t bulk = body.find("\r\n", nl + 2) + 2;
  const std::string data = body.substr(bulk, body.size() - bulk - 2);
  ASSERT_EQ(Run(4, {"BF.LOADCHUNK", "copy", "1", h}), "+OK\r\n");
  ASSERT_EQ(Run(4, {"BF.LOADCHUNK", "copy", end, data}), "+OK\r\n");
  EXPECT_EQ(Run(4, {"BF.EXISTS", "copy", "zz"}), ":0\r\n");
  Disconnect(3);  // its SCANDUMP copy
  // The restored filter's tables (a decoded shard is charged its blob's
  // size, a little over its table's).
  const double table = static_cast<double>(with_src - base);
  EXPECT_NEAR(static_cast<double>(budget_->used()),
              static_cast<double>(with_src) + table, table / 100);
}

TEST_F(DumpBudgetTest, PendingRestoresAreBounded) {
  for (size_t i = 0; i < 32; ++i) {
    ASSERT_EQ(
        Run(i, {"BF.LOADCHUNK", "k" + std::to_string(i), "1", Header(1000)}),
        "+OK\r\n")
        << i;
  }
  EXPECT_EQ(Run(32, {"BF.LOADCHUNK", "k32", "1", Header(1000)})
                .rfind("-ERR too many restores in progress", 0),
            0u);
  Disconnect(5);
  EXPECT_EQ(Run(32, {"BF.LOADCHUNK", "k32", "1", Header(1000)}), "+OK\r\n");
}

TEST_F(DumpBudgetTest, ScanDumpCopyIsChargedAndRefusedWhenItDoesNotFit) {
  // ~24 MB of table; its dump copy does not fit twice in 64 MiB.
  ASSERT_EQ(Run(0, {"BF.RESERVE", "b", "0.01", "20000000"}), "+OK\r\n");
  const uint64_t with_filter = budget_->used();
  ASSERT_EQ(Run(0, {"BF.SCANDUMP", "b", "0"}).rfind("*2\r\n:1\r\n", 0), 0u);
  EXPECT_GE(budget_->used(), 2 * with_filter - kMiB);
  EXPECT_EQ(Run(1, {"BF.SCANDUMP", "b", "0"}), kOom);
  // The last chunk served gives the copy back.
  EXPECT_EQ(Run(0, {"BF.SCANDUMP", "b", "1000000000"}),
            "*2\r\n:0\r\n$0\r\n\r\n");
  EXPECT_EQ(budget_->used(), with_filter);
  ASSERT_EQ(Run(1, {"BF.SCANDUMP", "b", "0"}).rfind("*2\r\n:1\r\n", 0), 0u);
  Disconnect(1);
  EXPECT_EQ(budget_->used(), with_filter);
}

}  // namespace
}  // namespace shardfilter::testing
