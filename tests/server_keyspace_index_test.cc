// The server's keyspace at many keys (DbKeyspace): SCAN's cursor and its
// guarantee (a key present for the whole scan is returned at least once),
// COUNT bounding each call's work, DBSIZE / KEYS / CLUSTER slot counts over
// every kind of key, EXPIRE / PERSIST leaving the other threads' handle
// caches alone (and never letting a cached handle answer past a deadline),
// the active expiry's bounded ticks, and INFO's expires / avg_ttl.
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "commands_test_util.h"
#include "tools/commands/key_slot.h"

namespace shardfilter::testing {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class KeyspaceIndexTest : public CommandsFixture {
 protected:
  // One SCAN call: its next cursor and its keys.
  std::pair<std::string, std::vector<std::string>> Scan(
      const std::string& cursor, std::vector<std::string> options) {
    std::vector<std::string> args = {"SCAN", cursor};
    args.insert(args.end(), options.begin(), options.end());
    const std::string reply = Run(args);
    // *2\r\n$N\r\n<cursor>\r\n*M\r\n($L\r\n<key>\r\n)*
    EXPECT_EQ(reply.rfind("*2\r\n$", 0), 0u) << reply;
    if (reply.rfind("*2\r\n$", 0) != 0) return {"0", {}};
    size_t p = reply.find('$');
    size_t nl = reply.find("\r\n", p);
    std::string next =
        reply.substr(nl + 2, reply.find("\r\n", nl + 2) - nl - 2);
    p = reply.find('*', nl);
    p = reply.find("\r\n", p) + 2;
    std::vector<std::string> names;
    while (p < reply.size()) {
      const size_t e = reply.find("\r\n", p);
      const size_t len = std::stoul(reply.substr(p + 1, e - p - 1));
      names.push_back(reply.substr(e + 2, len));
      p = e + 2 + len + 2;
    }
    return {next, names};
  }

  // The reply of `args` run on a thread of its own (its own handle cache).
  std::string OnOtherThread(std::vector<std::string> args) {
    std::string out;
    std::thread t([&] {
      commands::Session session;
      resp::RespWriter writer(&out, 2);
      commands::CommandContext ctx{session, *keyspace_, host_, writer};
      std::vector<std::string_view> views(args.begin(), args.end());
      commands::Dispatch(ctx, views);
    });
    t.join();
    return out;
  }

  // The `db0:` line of INFO keyspace ("" when none).
  std::string KeyspaceLine() {
    const std::string info = Run({"INFO", "keyspace"});
    const size_t at = info.find("db0:");
    if (at == std::string::npos) return "";
    return info.substr(at, info.find("\r\n", at) - at);
  }
};

// Filters, dedup sets and tiered filters are keys of one index; a tiered
// filter's levels never are.
TEST_F(KeyspaceIndexTest,
       ScanReturnsEveryKeyPresentThroughoutWhileOthersComeAndGo) {
  std::set<std::string> stay;
  for (int i = 0; i < 400; ++i) {
    const std::string k = "stay:" + std::to_string(i);
    ASSERT_EQ(Run({"BF.RESERVE", k, "0.01", "100"}), "+OK\r\n");
    stay.insert(k);
  }
  ASSERT_EQ(Run({"SF.DEDUPADD", "stay:dedup", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"SF.TIERCREATE", "stay:tiered", "LEVEL", "bloom", "100"}),
            "+OK\r\n");
  stay.insert("stay:dedup");
  stay.insert("stay:tiered");
  std::set<std::string> seen;
  std::string cursor = "0";
  int calls = 0, churn = 0;
  do {
    auto [next, names] = Scan(cursor, {"COUNT", "10"});
    // No two of these names share a 62-bit hash: COUNT bounds the reply.
    EXPECT_LE(names.size(), 10u);
    for (const std::string& n : names) {
      EXPECT_EQ(n.find('\0'), std::string::npos) << "a tiered level: " << n;
      seen.insert(n);
    }
    // Between calls: new keys of every kind, and some dropped again.
    const std::string c = "churn:" + std::to_string(churn);
    EXPECT_EQ(Run({"BF.RESERVE", c, "0.01", "100"}), "+OK\r\n");
    if (churn % 7 == 0) {
      EXPECT_EQ(Run({"SF.TIERCREATE", c + ":t", "LEVEL", "bloom", "100"}),
                "+OK\r\n");
      EXPECT_EQ(Run({"SF.DEDUPADD", c + ":d", "x"}), ":1\r\n");
    }
    if (churn >= 3) {
      EXPECT_EQ(Run({"DEL", "churn:" + std::to_string(churn - 3)}), ":1\r\n");
    }
    ++churn;
    cursor = next;
    ASSERT_LT(++calls, 1000);
  } while (cursor != "0");
  for (const std::string& k : stay) EXPECT_EQ(seen.count(k), 1u) << k;
  EXPECT_GE(calls, 40);  // about (402 + churn) / 10 calls
  // MATCH and TYPE filter what COUNT visited (a call may return fewer).
  std::set<std::string> tiered;
  cursor = "0";
  do {
    auto [next, names] = Scan(cursor, {"MATCH", "stay:*", "TYPE", "SFtiered-"});
    tiered.insert(names.begin(), names.end());
    cursor = next;
  } while (cursor != "0");
  EXPECT_EQ(tiered, std::set<std::string>{"stay:tiered"});
}

// Each call visits COUNT names of the index (and any sharing the last
// one's hash), not the whole keyspace.
TEST_F(KeyspaceIndexTest, EachScanCallVisitsAboutCountNames) {
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(Run({"BF.RESERVE", "k" + std::to_string(i), "0.01", "100"}),
              "+OK\r\n");
  }
  uint64_t cursor = 0;
  size_t calls = 0, total = 0;
  do {
    const commands::ScanPage page = keyspace_->Scan(cursor, 7);
    EXPECT_GE(page.visited, page.keys.size());
    EXPECT_LE(page.visited, 7u);  // no 62-bit hash is shared here
    total += page.keys.size();
    cursor = page.next;
    ASSERT_LT(++calls, 1000u);
  } while (cursor != 0);
  EXPECT_EQ(total, 300u);
  EXPECT_EQ(calls, 300u / 7 + 1);
  // A cursor past every name ends the scan; names in order of the cursor.
  EXPECT_EQ(keyspace_->Scan(uint64_t{1} << 63, 10).next, 0u);
  EXPECT_TRUE(keyspace_->Scan(uint64_t{1} << 63, 10).keys.empty());
  const commands::ScanPage all = keyspace_->Scan(0, 1000);
  for (size_t i = 1; i < all.keys.size(); ++i) {
    EXPECT_LT(commands::ScanOrder(all.keys[i - 1]),
              commands::ScanOrder(all.keys[i]));
  }
}

TEST_F(KeyspaceIndexTest, DbsizeKeysAndSlotCountsCoverEveryKind) {
  ASSERT_EQ(Run({"BF.ADD", "{s}f", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"SF.DEDUPADD", "{s}d", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"SF.TIERCREATE", "{s}t", "EXACT", "LEVEL", "bloom", "100"}),
            "+OK\r\n");
  ASSERT_EQ(Run({"CF.ADD", "other", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":4\r\n");
  EXPECT_EQ(Run({"KEYS", "{s}*"}),
            "*3\r\n$4\r\n{s}d\r\n$4\r\n{s}f\r\n$4\r\n{s}t\r\n");
  EXPECT_EQ(Run({"KEYS", "*"}).substr(0, 4), "*4\r\n");
  commands::ClusterNode node;
  node.id = std::string(40, 'a');
  node.ip = "127.0.0.1";
  node.port = 7000;
  host_.cluster = &node;
  const std::string slot = std::to_string(commands::KeySlot("{s}f"));
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", slot}), ":3\r\n");
  EXPECT_EQ(Run({"CLUSTER", "GETKEYSINSLOT", slot, "2"}).substr(0, 4),
            "*2\r\n");
  EXPECT_EQ(Run({"CLUSTER", "GETKEYSINSLOT", slot, "10"}),
            "*3\r\n$4\r\n{s}d\r\n$4\r\n{s}f\r\n$4\r\n{s}t\r\n");
  ASSERT_EQ(Run({"DEL", "{s}t", "{s}d"}), ":2\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", slot}), ":1\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":2\r\n");
  // The index is rebuilt from the store on a restart.
  OpenStore();
  EXPECT_EQ(Run({"DBSIZE"}), ":2\r\n");
  EXPECT_EQ(Run({"KEYS", "*"}), "*2\r\n$5\r\nother\r\n$4\r\n{s}f\r\n");
  EXPECT_EQ(Run({"FLUSHALL"}), "+OK\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(Run({"SCAN", "0"}), "*2\r\n$1\r\n0\r\n*0\r\n");
}

// A deadline set or removed changes no other thread's handle cache (only a
// drop does): no wake-up of the event loops per EXPIRE.
TEST_F(KeyspaceIndexTest, ExpireAndPersistLeaveHandleCachesAlone) {
  std::atomic<int> wakeups{0};
  keyspace_->SetDropListener([&] { wakeups.fetch_add(1); });
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(Run({"BF.ADD", "k" + std::to_string(i), "x"}), ":1\r\n");
  }
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Run({"EXPIRE", "k" + std::to_string(i), "1000"}), ":1\r\n");
    EXPECT_EQ(Run({"PEXPIRE", "k" + std::to_string(i), "2000000"}), ":1\r\n");
  }
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Run({"PERSIST", "k" + std::to_string(i)}), ":1\r\n");
  }
  EXPECT_EQ(wakeups.load(), 0);
  EXPECT_EQ(Run({"DEL", "k0"}), ":1\r\n");
  EXPECT_EQ(wakeups.load(), 1);
}

// A handle cached by one thread before another set a deadline never
// answers after that deadline (nor after a shortened one).
TEST_F(KeyspaceIndexTest, ACachedHandleNeverAnswersPastANewDeadline) {
  ASSERT_EQ(Run({"BF.ADD", "a", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"BF.ADD", "b", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"EXPIRE", "b", "100000"}), ":1\r\n");
  // Cached here: "a" without a deadline, "b" with a far one.
  ASSERT_EQ(Run({"BF.EXISTS", "a", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"BF.EXISTS", "b", "x"}), ":1\r\n");
  const int64_t deadline = NowMs() + 150;
  const std::string at = std::to_string(deadline);
  ASSERT_EQ(OnOtherThread({"PEXPIREAT", "a", at}), ":1\r\n");
  ASSERT_EQ(OnOtherThread({"PEXPIREAT", "b", at}), ":1\r\n");
  // Waits for the clock to pass the deadline (a condition, not a guess).
  while (NowMs() <= deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(Run({"BF.EXISTS", "a", "x"}), ":0\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "b", "x"}), ":0\r\n");
  EXPECT_EQ(Run({"EXISTS", "a", "b"}), ":0\r\n");
}

// The active expiry visits only due deadlines, earliest first, and at most
// expire_per_tick of them per call; the rest waits for the next tick.
TEST_F(KeyspaceIndexTest, ActiveExpiryPopsOnlyDueKeysBoundedPerTick) {
  std::atomic<int64_t> clock{1'000'000'000'000};
  ks_options_.clock_ms = [&] { return clock.load(); };
  ks_options_.expire_per_tick = 16;
  OpenStore();
  for (int i = 0; i < 70; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_EQ(Run({"BF.RESERVE", k, "0.01", "100"}), "+OK\r\n");
    // 50 due at +1000 .. +1049, 20 far later.
    const int64_t when = clock.load() + (i < 50 ? 1000 + i : 1'000'000);
    ASSERT_TRUE(keyspace_->SetExpiry(k, when).ok());
  }
  EXPECT_EQ(keyspace_->ExpireDue(), 0u);  // none due yet
  clock += 1048;  // k0..k48 due; k49's deadline is 1 ms later
  size_t ticks = 0, expired = 0;
  for (size_t n; (n = keyspace_->ExpireDue()) != 0;) {
    EXPECT_LE(n, 16u);
    expired += n;
    ++ticks;
    ASSERT_LT(ticks, 100u);
  }
  EXPECT_EQ(expired, 49u);
  EXPECT_GE(ticks, 4u);
  EXPECT_EQ(keyspace_->expired_keys(), 49u);
  EXPECT_EQ(Run({"DBSIZE"}), ":21\r\n");
  EXPECT_EQ(Run({"EXISTS", "k48", "k49", "k50"}), ":2\r\n");
  // Lazy expiry on access counts too.
  clock += 1;
  EXPECT_EQ(Run({"BF.EXISTS", "k49", "x"}), ":0\r\n");
  EXPECT_EQ(keyspace_->expired_keys(), 50u);
  const commands::KeyspaceFigures f = keyspace_->Figures();
  EXPECT_EQ(f.keys, 20u);
  EXPECT_EQ(f.expires, 20u);
  EXPECT_EQ(f.avg_ttl_ms, 1'000'000 - 1049);
}

TEST_F(KeyspaceIndexTest, InfoKeyspaceReportsExpiresAndAverageTtl) {
  EXPECT_EQ(KeyspaceLine(), "");
  ASSERT_EQ(Run({"BF.ADD", "a", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"BF.ADD", "b", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"SF.DEDUPADD", "d", "x"}), ":1\r\n");
  EXPECT_EQ(KeyspaceLine(), "db0:keys=3,expires=0,avg_ttl=0");
  ASSERT_EQ(Run({"PEXPIRE", "a", "100000"}), ":1\r\n");
  ASSERT_EQ(Run({"PEXPIRE", "b", "200000"}), ":1\r\n");
  const std::string line = KeyspaceLine();
  const std::string head = "db0:keys=3,expires=2,avg_ttl=";
  ASSERT_EQ(line.rfind(head, 0), 0u) << line;
  const int64_t avg = std::stoll(line.substr(head.size()));
  EXPECT_GT(avg, 140000) << line;
  EXPECT_LE(avg, 150000) << line;
  ASSERT_EQ(Run({"PERSIST", "b"}), ":1\r\n");
  ASSERT_EQ(Run({"DEL", "a"}), ":1\r\n");
  EXPECT_EQ(KeyspaceLine(), "db0:keys=2,expires=0,avg_ttl=0");
}

}  // namespace
}  // namespace shardfilter::testing
