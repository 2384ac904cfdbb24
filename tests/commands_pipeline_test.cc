// DispatchPipeline must answer exactly as Dispatch run one request at a
// time, while coalescing runs of adds to one key into one engine call.
#include <string>
#include <vector>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

using Requests = std::vector<std::vector<std::string>>;

class PipelineTest : public CommandsFixture {
 protected:
  // Replies of `requests` run through DispatchPipeline on this fixture's
  // store, and one by one through Dispatch on a second, fresh store.
  std::pair<std::string, std::string> Both(const Requests& requests,
                                           size_t* ran = nullptr) {
    std::vector<std::vector<std::string_view>> views;
    for (const auto& r : requests) views.emplace_back(r.begin(), r.end());
    std::vector<commands::Args> args(views.begin(), views.end());
    out_.clear();
    commands::CommandContext ctx{session_, *keyspace_, host_, writer_};
    const size_t n = commands::DispatchPipeline(ctx, args);
    if (ran != nullptr) *ran = n;
    const std::string batched = out_;

    TempDir other_dir;
    DatabaseOptions o;
    o.path = other_dir.db();
    auto db = Database::Open(o);
    EXPECT_TRUE(db.ok());
    server::DbKeyspace other(db->get(), ks_options_);
    commands::Session session;
    std::string out;
    resp::RespWriter writer(&out, 2);
    commands::CommandContext ctx2{session, other, host_, writer};
    for (const auto& v : views) {
      commands::Dispatch(ctx2, v);
      if (session.close_after_reply) break;
    }
    EXPECT_TRUE((*db)->Close().ok());
    return {batched, out};
  }
};

TEST_F(PipelineTest, CoalescedAddsAnswerAsSequentialOnes) {
  const Requests requests = {
      {"BF.RESERVE", "ns", "0.01", "4", "NONSCALING"},
      {"BF.ADD", "k", "a"},  // creates k (not batched: missing key)
      {"BF.ADD", "k", "a"},
      {"BF.ADD", "k", "b"},
      {"bf.madd", "k", "a", "c", "d", "c"},
      {"BF.ADD", "k", "d"},
      {"BF.ADD", "k2", "a"},
      {"BF.ADD", "ns", "1"},
      {"BF.ADD", "ns", "2"},
      {"BF.MADD", "ns", "3", "4", "5", "6"},
      {"BF.ADD", "ns", "1"},
      {"BF.ADD", "ns", "7"},
      {"CF.ADD", "c", "x"},
      {"CF.ADD", "c", "same"},
      {"CF.ADD", "c", "same"},
      {"CF.ADD", "c", "same"},
      {"CF.ADD", "c", "same"},
      {"CF.ADD", "c", "same"},  // the 5th copy: Filter is full
      {"CF.ADD", "k", "x"},     // WRONGTYPE
      {"CF.ADD", "k", "y"},
      {"BF.EXISTS", "k", "d"},
      {"BF.MEXISTS", "k", "a", "b", "zz"},
      {"CF.COUNT", "c", "same"},
  };
  const auto [batched, sequential] = Both(requests);
  EXPECT_EQ(batched, sequential);
  EXPECT_NE(batched.find("-ERR non scaling filter is full"), std::string::npos);
  EXPECT_NE(batched.find("-Filter is full"), std::string::npos);
  EXPECT_NE(batched.find("-WRONGTYPE"), std::string::npos);
}

TEST_F(PipelineTest, StopsAfterQuitAndRespectsMulti) {
  const Requests requests = {
      {"BF.ADD", "k", "a"},
      {"MULTI"},
      {"BF.ADD", "k", "b"},
      {"BF.ADD", "k", "c"},
      {"EXEC"},
      {"BF.ADD", "k", "b"},
      {"QUIT"},
      {"BF.ADD", "k", "z"},
  };
  size_t ran = 0;
  const auto [batched, sequential] = Both(requests, &ran);
  EXPECT_EQ(batched, sequential);
  EXPECT_EQ(ran, 7u);
  EXPECT_EQ(
      batched,
      ":1\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n:1\r\n:0\r\n+OK\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "k", "z"}), ":0\r\n");  // after QUIT: not run
}

TEST_F(PipelineTest, Resp3RepliesMatch) {
  writer_.SetProtocol(3);
  const Requests requests = {
      {"HELLO", "3"},       {"BF.ADD", "k", "a"},       {"BF.ADD", "k", "a"},
      {"BF.ADD", "k", "b"}, {"BF.MADD", "k", "b", "c"}, {"CF.ADD", "c", "a"},
      {"CF.ADD", "c", "a"},
  };
  auto [batched, sequential] = Both(requests);
  // The sequential run started in RESP2 and switched at HELLO 3: compare
  // from the first reply after HELLO.
  EXPECT_EQ(batched.substr(batched.find("#t")),
            sequential.substr(sequential.find("#t")));
}

TEST_F(PipelineTest, RunsOfQueriesAnswerAsSequentialOnes) {
  const Requests requests = {
      {"BF.MADD", "b", "a", "b", "c"},
      {"CF.ADD", "c", "x"},
      {"CF.ADD", "c", "x"},
      {"BF.EXISTS", "b", "a"},
      {"BF.EXISTS", "b", "zz"},
      {"bf.mexists", "b", "c", "zz", "b"},
      {"BF.EXISTS", "b", "b"},
      {"BF.EXISTS", "b", "a", "extra"},  // arity error: not in the run
      {"BF.EXISTS", "b", "c"},
      {"BF.EXISTS", "missing", "a"},  // a missing key: 0
      {"BF.EXISTS", "missing", "b"},
      {"BF.EXISTS", "c", "x"},  // a cuckoo key: 0, as RedisBloom
      {"BF.MEXISTS", "c", "x", "y"},
      {"CF.EXISTS", "c", "x"},
      {"CF.MEXISTS", "c", "x", "nope"},
      {"CF.EXISTS", "c", "nope"},
      {"CF.EXISTS", "b", "a"},  // a Bloom key: 0
      {"CF.EXISTS", "b", "b"},
      {"BF.ADD", "b", "late"},  // a write between two runs
      {"BF.EXISTS", "b", "late"},
      {"BF.EXISTS", "b", "a"},
  };
  const auto [batched, sequential] = Both(requests);
  EXPECT_EQ(batched, sequential);
  EXPECT_NE(batched.find("-ERR wrong number of arguments"), std::string::npos);
  // RESP3: booleans, in arrays for the M-forms.
  writer_.SetProtocol(3);
  out_.clear();
  std::vector<std::vector<std::string_view>> views = {
      {"BF.EXISTS", "b", "a"},
      {"BF.MEXISTS", "b", "zz", "c"},
      {"CF.EXISTS", "c", "x"},
      {"CF.EXISTS", "c", "nope"}};
  std::vector<commands::Args> args(views.begin(), views.end());
  commands::CommandContext ctx{session_, *keyspace_, host_, writer_};
  commands::DispatchPipeline(ctx,
                             std::span<const commands::Args>(args.data(), 2));
  commands::DispatchPipeline(
      ctx, std::span<const commands::Args>(args.data() + 2, 2));
  EXPECT_EQ(out_, "#t\r\n*2\r\n#f\r\n#t\r\n#t\r\n#f\r\n");
}

// The point of coalescing: 16 pipelined BF.ADDs to one (single-shard)
// filter are one journal write, not 16.
TEST_F(PipelineTest, RunOfAddsIsOneJournalWrite) {
  ASSERT_EQ(Run({"BF.RESERVE", "k", "0.01", "1000"}), "+OK\r\n");
  ASSERT_EQ(Run({"CF.RESERVE", "c", "1000"}), "+OK\r\n");
  Requests requests;
  for (int i = 0; i < 16; ++i)
    requests.push_back({"BF.ADD", "k", std::to_string(i)});
  for (int i = 0; i < 16; ++i)
    requests.push_back({"CF.ADD", "c", std::to_string(i)});
  std::vector<std::vector<std::string_view>> views;
  for (const auto& r : requests) views.emplace_back(r.begin(), r.end());
  std::vector<commands::Args> args(views.begin(), views.end());
  const uint64_t before = db_->counters().journal_writes;
  commands::CommandContext ctx{session_, *keyspace_, host_, writer_};
  out_.clear();
  ASSERT_EQ(commands::DispatchPipeline(ctx, args), 32u);
  EXPECT_EQ(db_->counters().journal_writes - before, 2u);
  std::string want;
  for (int i = 0; i < 32; ++i) want += ":1\r\n";
  EXPECT_EQ(out_, want);
}

}  // namespace
}  // namespace shardfilter::testing
