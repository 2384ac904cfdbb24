// INFO commandstats / errorstats counted by Dispatch (command_stats.h):
// calls, failed and rejected calls, error codes, EXEC's queued commands,
// coalesced pipelines, CONFIG RESETSTAT, and which INFO forms show them.
#include <string>
#include <thread>
#include <vector>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

class StatsTest : public CommandsFixture {
 protected:
  void SetUp() override {
    CommandsFixture::SetUp();
    host_.count_stats = true;
  }
  // The line of one INFO field ("cmdstat_bf.add"), without its value
  // timings; "" when absent.
  std::string Line(const std::string& section, const std::string& field) {
    const std::string info = Run({"INFO", section});
    const size_t at = info.find("\n" + field + ":");
    if (at == std::string::npos) return "";
    return info.substr(at + 1, info.find("\r\n", at) - at - 1);
  }
  // calls=N,...,rejected_calls=R,failed_calls=F without usec fields.
  std::string Counts(const std::string& command) {
    const std::string line = Line("commandstats", "cmdstat_" + command);
    if (line.empty()) return "";
    const size_t calls = line.find("calls=");
    const size_t usec = line.find(",usec=");
    const size_t rejected = line.find(",rejected_calls=");
    return line.substr(calls, usec - calls) + line.substr(rejected);
  }
};

TEST_F(StatsTest, CallsFailuresRejections) {
  Run({"BF.ADD", "b", "x"});
  Run({"BF.ADD", "b", "y"});
  Run({"CF.ADD", "b", "x"});  // WRONGTYPE: a failed call
  Run({"BF.ADD", "b"});       // arity: rejected
  Run({"NOSUCH"});            // unknown: only an error
  EXPECT_EQ(Counts("bf.add"), "calls=2,rejected_calls=1,failed_calls=0");
  EXPECT_EQ(Counts("cf.add"), "calls=1,rejected_calls=0,failed_calls=1");
  EXPECT_EQ(Counts("ping"), "");  // never called: not listed
  const std::string line = Line("commandstats", "cmdstat_bf.add");
  EXPECT_NE(line.find(",usec="), std::string::npos);
  EXPECT_NE(line.find(",usec_per_call="), std::string::npos);
  EXPECT_EQ(Line("errorstats", "errorstat_ERR"), "errorstat_ERR:count=2");
  EXPECT_EQ(Line("errorstats", "errorstat_WRONGTYPE"),
            "errorstat_WRONGTYPE:count=1");
}

TEST_F(StatsTest, NestedErrorsAndAuth) {
  // An error inside an array fails the call: BF.MADD past the capacity of
  // a non-scaling filter answers an array holding errors.
  Run({"BF.ADD", "b", "x"});
  Run({"BF.INSERT", "n", "CAPACITY", "1", "NONSCALING", "ITEMS", "a"});
  Run({"BF.MADD", "n", "b", "c", "d", "e", "f", "g", "h", "i", "j"});
  EXPECT_EQ(Counts("bf.madd"), "calls=1,rejected_calls=0,failed_calls=1");
  host_.password = "pw";
  Run({"BF.EXISTS", "b", "x"});  // NOAUTH: rejected
  Run({"AUTH", "pw"});
  EXPECT_EQ(Counts("bf.exists"), "calls=0,rejected_calls=1,failed_calls=0");
  EXPECT_EQ(Line("errorstats", "errorstat_NOAUTH"), "errorstat_NOAUTH:count=1");
}

TEST_F(StatsTest, ExecCountsQueuedCommandsOnce) {
  Run({"MULTI"});
  Run({"BF.ADD", "t", "1"});
  Run({"CF.ADD", "t", "1"});  // fails when EXEC runs it
  Run({"EXEC"});
  EXPECT_EQ(Counts("bf.add"), "calls=1,rejected_calls=0,failed_calls=0");
  EXPECT_EQ(Counts("cf.add"), "calls=1,rejected_calls=0,failed_calls=1");
  EXPECT_EQ(Counts("exec"), "calls=1,rejected_calls=0,failed_calls=0");
  EXPECT_EQ(Line("errorstats", "errorstat_WRONGTYPE"),
            "errorstat_WRONGTYPE:count=1");
  // A command refused while queued is rejected; EXEC then aborts (failed).
  Run({"MULTI"});
  Run({"BF.ADD", "t"});
  Run({"EXEC"});
  EXPECT_EQ(Counts("bf.add"), "calls=1,rejected_calls=1,failed_calls=0");
  EXPECT_EQ(Counts("exec"), "calls=2,rejected_calls=0,failed_calls=1");
  EXPECT_EQ(Line("errorstats", "errorstat_EXECABORT"),
            "errorstat_EXECABORT:count=1");
}

TEST_F(StatsTest, CoalescedPipelineCountsEachCommand) {
  Run({"BF.ADD", "p", "0"});
  std::vector<std::vector<std::string>> owned;
  for (int i = 1; i <= 10; ++i)
    owned.push_back({"BF.ADD", "p", "i" + std::to_string(i)});
  owned.push_back({"BF.MADD", "p", "a", "b"});
  std::vector<std::vector<std::string_view>> views;
  for (const auto& r : owned) views.emplace_back(r.begin(), r.end());
  std::vector<commands::Args> requests(views.begin(), views.end());
  out_.clear();
  commands::CommandContext ctx{session_, *keyspace_, host_, writer_};
  EXPECT_EQ(commands::DispatchPipeline(ctx, requests), requests.size());
  EXPECT_EQ(Counts("bf.add"), "calls=11,rejected_calls=0,failed_calls=0");
  EXPECT_EQ(Counts("bf.madd"), "calls=1,rejected_calls=0,failed_calls=0");
}

TEST_F(StatsTest, ResetstatAndInfoForms) {
  Run({"BF.ADD", "b", "x"});
  Run({"NOSUCH"});
  // Default INFO leaves commandstats out (as Redis); errorstats is in.
  EXPECT_EQ(Run({"INFO"}).find("# Commandstats"), std::string::npos);
  EXPECT_EQ(Run({"INFO", "default"}).find("# Commandstats"), std::string::npos);
  EXPECT_NE(Run({"INFO"}).find("# Errorstats\r\nerrorstat_ERR:count=1"),
            std::string::npos);
  for (const char* form : {"commandstats", "all", "everything", "ALL"}) {
    EXPECT_NE(Run({"INFO", form}).find("cmdstat_bf.add:calls=1,"),
              std::string::npos)
        << form;
  }
  EXPECT_EQ(Run({"CONFIG", "RESETSTAT"}), "+OK\r\n");
  const std::string info = Run({"INFO", "commandstats", "errorstats"});
  EXPECT_EQ(info.find("cmdstat_bf.add"), std::string::npos) << info;
  EXPECT_EQ(info.find("errorstat_ERR"), std::string::npos) << info;
  // RESETSTAT itself ran after the reset, as in Redis.
  EXPECT_EQ(Counts("config"), "calls=1,rejected_calls=0,failed_calls=0");
}

TEST(CommandStatsTest, ConcurrentCountsAreExact) {
  commands::CommandStats stats;
  const commands::CommandSpec& add = *commands::FindCommand("bf.add");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        stats.RecordCall(add, 1000, i % 10 == 0);
        // Distinct codes per thread race to claim slots.
        stats.RecordError("E" + std::to_string(i % 20) + " x");
        if (t == 0 && i % 1000 == 0) {
          std::string ignored;
          stats.AppendErrorstats(&ignored);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::string text;
  stats.AppendCommandstats(&text);
  EXPECT_NE(text.find("cmdstat_bf.add:calls=40000,usec=40000,usec_per_call="
                      "1.00,rejected_calls=0,failed_calls=4000\r\n"),
            std::string::npos)
      << text;
  text.clear();
  stats.AppendErrorstats(&text);
  for (int c = 0; c < 20; ++c) {
    EXPECT_NE(text.find("errorstat_E" + std::to_string(c) + ":count=2000\r\n"),
              std::string::npos)
        << c << text;
  }
  // No space in the first 32 bytes: counted as ERR.
  stats.RecordError("Bad");
  text.clear();
  stats.AppendErrorstats(&text);
  EXPECT_NE(text.find("errorstat_ERR:count=1\r\n"), std::string::npos);
}

}  // namespace
}  // namespace shardfilter::testing
