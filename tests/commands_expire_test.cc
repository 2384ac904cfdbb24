// EXPIRE / TTL / PERSIST on filter keys (the server's host): Redis 7's
// replies and errors, deadlines kept across a restart, an expired filter
// absent to every command and dropped from the store.
#include <chrono>
#include <string>
#include <thread>

#include "commands_test_util.h"
#include "shardfilter/persistence/filter_expiry.h"

namespace shardfilter::testing {
namespace {

using ExpireCommandsTest = CommandsFixture;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_F(ExpireCommandsTest, RepliesAndOptions) {
  EXPECT_EQ(Run({"EXPIRE", "none", "10"}), ":0\r\n");
  EXPECT_EQ(Run({"TTL", "none"}), ":-2\r\n");
  EXPECT_EQ(Run({"PERSIST", "none"}), ":0\r\n");
  ASSERT_EQ(Run({"BF.ADD", "k", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":-1\r\n");
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), ":-1\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "x"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "YY"}), "-ERR Unsupported option YY\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "NX", "XX"}),
            "-ERR NX and XX, GT or LT options at the same time are not "
            "compatible\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "10", "GT", "LT"}),
            "-ERR GT and LT options at the same time are not compatible\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "9223372036854775807"}),
            "-ERR invalid expire time in 'expire' command\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "XX"}), ":0\r\n");  // no deadline
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "GT"}), ":0\r\n");  // infinite
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "NX"}), ":1\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":100\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "50", "NX"}), ":0\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "50", "GT"}), ":0\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "GT"}), ":1\r\n");
  EXPECT_EQ(Run({"EXPIRE", "k", "300", "LT"}), ":0\r\n");
  EXPECT_EQ(Run({"PEXPIRE", "k", "150000", "LT"}), ":1\r\n");
  const std::string pttl = Run({"PTTL", "k"});
  const int64_t left = std::stoll(pttl.substr(1));
  EXPECT_GT(left, 140000);
  EXPECT_LE(left, 150000);
  const int64_t at = NowMs() / 1000 + 1000;
  EXPECT_EQ(Run({"EXPIREAT", "k", std::to_string(at)}), ":1\r\n");
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), ":" + std::to_string(at) + "\r\n");
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}),
            ":" + std::to_string(at * 1000) + "\r\n");
  EXPECT_EQ(Run({"PERSIST", "k"}), ":1\r\n");
  EXPECT_EQ(Run({"PERSIST", "k"}), ":0\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":-1\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "k", "a"}), ":1\r\n");
}

TEST_F(ExpireCommandsTest, PastDeadlineDeletesAndExpiredKeyIsAbsent) {
  ASSERT_EQ(Run({"BF.ADD", "now", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"EXPIRE", "now", "-1"}), ":1\r\n");  // Redis: deletes
  EXPECT_EQ(Run({"EXISTS", "now"}), ":0\r\n");
  EXPECT_TRUE(db_->Get("now").status().IsNotFound());
  ASSERT_EQ(Run({"CF.ADD", "soon", "a"}), ":1\r\n");
  ASSERT_EQ(Run({"PEXPIRE", "soon", "300"}), ":1\r\n");
  // Looked up (and cached, with its deadline) before the deadline...
  EXPECT_EQ(Run({"CF.EXISTS", "soon", "a"}), ":1\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  // ...and absent after it, though this thread's cache still holds it.
  // Every command sees it gone; a new filter of the name starts fresh.
  EXPECT_EQ(Run({"CF.EXISTS", "soon", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"TTL", "soon"}), ":-2\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");
  ASSERT_EQ(Run({"SF.CREATE", "soon", "bloom", "100"}), "+OK\r\n");
  EXPECT_EQ(Run({"TTL", "soon"}), ":-1\r\n");
  // DEL takes the deadline with the filter.
  ASSERT_EQ(Run({"EXPIRE", "soon", "1000"}), ":1\r\n");
  ASSERT_EQ(Run({"DEL", "soon"}), ":1\r\n");
  ASSERT_EQ(Run({"BF.ADD", "soon", "b"}), ":1\r\n");
  EXPECT_EQ(Run({"TTL", "soon"}), ":-1\r\n");
}

TEST_F(ExpireCommandsTest, DeadlinesSurviveARestartAndExpireAfterIt) {
  ASSERT_EQ(Run({"BF.ADD", "long", "a"}), ":1\r\n");
  ASSERT_EQ(Run({"BF.ADD", "short", "a"}), ":1\r\n");
  ASSERT_EQ(Run({"EXPIRE", "long", "1000"}), ":1\r\n");
  ASSERT_EQ(Run({"PEXPIRE", "short", "100"}), ":1\r\n");
  OpenStore();  // the server restarts on the same directory
  const std::string ttl = Run({"TTL", "long"});
  EXPECT_GE(std::stoll(ttl.substr(1)), 998) << ttl;
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(keyspace_->ExpireDue(), 1u);  // the active sweep
  EXPECT_EQ(Run({"EXISTS", "short", "long"}), ":1\r\n");
  OpenStore();
  EXPECT_EQ(Run({"EXISTS", "short"}), ":0\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "long", "a"}), ":1\r\n");
}

TEST_F(ExpireCommandsTest, ADamagedDeadlineIsReportedAndNeverDropsTheFilter) {
  ASSERT_EQ(Run({"BF.ADD", "k", "a"}), ":1\r\n");
  ASSERT_EQ(Run({"PEXPIRE", "k", "100000"}), ":1\r\n");
  keyspace_.reset();
  ASSERT_TRUE(db_->Close().ok());
  db_.reset();
  {
    RawStore raw(dir_.db());
    ASSERT_TRUE(raw.ok());
    std::string bad = persistence::EncodeFilterExpiry(1);  // long past
    bad[3] ^= 1;
    raw.Put(rocksdb::kDefaultColumnFamilyName,
            persistence::FilterExpiryKey("k"), bad);
  }
  OpenStore();
  EXPECT_EQ(Run({"BF.EXISTS", "k", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"TTL", "k"}), ":-1\r\n");
  auto report = db_->Verify();
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_NE(report->problems[0].find("expiry"), std::string::npos)
      << report->problems[0];
}

}  // namespace
}  // namespace shardfilter::testing
