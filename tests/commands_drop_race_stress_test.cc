// Auto-creating writes racing DEL / FLUSHALL of their key, through the
// command layer on the server's keyspace (every event-loop thread calls it
// at once): an add whose filter or dedup set is dropped between its lookup
// and its write starts again from the lookup and creates the key, so it
// answers as if it ran after the drop, never "ERR not found" (docs/
// design.md "Errors are never answers").
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

// One connection: its own session and reply buffer.
struct Client {
  Client(commands::Keyspace& ks, commands::Host& host)
      : ks(ks), host(host), writer(&out, 2) {}
  std::string Run(const std::vector<std::string>& args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    out.clear();
    commands::CommandContext ctx{session, ks, host, writer};
    commands::Dispatch(ctx, views);
    return out;
  }
  // The replies of `requests` sent as one pipeline (consecutive adds of one
  // key run as one batch).
  std::string Pipeline(const std::vector<std::vector<std::string>>& requests) {
    std::vector<std::vector<std::string_view>> views;
    for (const auto& r : requests) views.emplace_back(r.begin(), r.end());
    std::vector<commands::Args> args(views.begin(), views.end());
    out.clear();
    commands::CommandContext ctx{session, ks, host, writer};
    commands::DispatchPipeline(ctx, args);
    return out;
  }
  commands::Keyspace& ks;
  commands::Host& host;
  commands::Session session;
  std::string out;
  resp::RespWriter writer;
};

TEST(CommandsDropRaceTest, AutoCreatingWritesNeverAnswerNotFound) {
  TempDir dir;
  DatabaseOptions o;
  o.path = dir.db();
  auto db = Database::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  server::DbKeyspace ks(db->get(), server::DbKeyspaceOptions{});
  FakeHost host;

  // The dropper drops only after some write since its last drop, and the
  // writers run until it has dropped kDrops times: every drop falls among
  // writes, whatever the scheduler does.
  constexpr int kWriters = 3;
#if defined(__SANITIZE_THREAD__)
  constexpr uint64_t kDrops = 50;  // each write ~10x slower
#else
  constexpr uint64_t kDrops = 200;
#endif
  std::atomic<uint64_t> drops{0}, writes{0};
  std::mutex mu;
  std::vector<std::string> bad;  // unexpected replies (the first few)
  uint64_t bad_count = 0;
  auto record = [&](const std::string& what, const std::string& reply) {
    std::lock_guard lock(mu);
    ++bad_count;
    if (bad.size() < 20) bad.push_back(what + " -> " + reply);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      Client c(ks, host);
      const std::string me = "w" + std::to_string(t) + "_";
      for (uint64_t i = 0; drops.load() < kDrops; ++i) {
        const std::string a = me + std::to_string(i);
        const std::string b = a + "b";
        std::string reply;
        std::string what;
        switch (i % 11) {
          case 0:
            what = "BF.ADD";
            reply = c.Run({"BF.ADD", "bk", a});
            break;
          case 1:
            what = "BF.MADD";
            reply = c.Run({"BF.MADD", "bk", a, b});
            break;
          case 2:
            what = "BF.INSERT";
            reply = c.Run({"BF.INSERT", "bk", "ITEMS", a, b});
            break;
          case 3:
            what = "CF.ADD";
            reply = c.Run({"CF.ADD", "ck", a});
            break;
          case 4:
            what = "CF.ADDNX";
            reply = c.Run({"CF.ADDNX", "ck", a});
            break;
          case 5:
            what = "CF.INSERT";
            reply = c.Run({"CF.INSERT", "ck", "ITEMS", a, b});
            break;
          case 6:
            what = "CF.INSERTNX";
            reply = c.Run({"CF.INSERTNX", "ck", "ITEMS", a, b});
            break;
          case 7:
            what = "SF.DEDUPADD";
            reply = c.Run({"SF.DEDUPADD", "dk", a});
            break;
          case 8:
            what = "SF.DEDUPMADD";
            reply = c.Run({"SF.DEDUPMADD", "dk", a, b});
            break;
          case 9:
            what = "pipelined BF.ADD";
            reply = c.Pipeline({{"BF.ADD", "bk", a},
                                {"BF.ADD", "bk", b},
                                {"BF.MADD", "bk", a, b}});
            break;
          default:
            what = "pipelined CF.ADD";
            reply = c.Pipeline({{"CF.ADD", "ck", a}, {"CF.ADD", "ck", b}});
            break;
        }
        // Every reply of these writes is a 0/1 or an array of them.
        if (reply.empty() || reply.find('-') != std::string::npos) {
          record(what, reply);
        }
        writes.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    Client c(ks, host);
    uint64_t seen = 0;
    for (uint64_t d = 0; d < kDrops; ++d) {
      // Wait for a write since the last drop (a condition, not a sleep).
      while (writes.load() == seen) std::this_thread::yield();
      seen = writes.load();
      std::string reply;
      switch (d % 4) {
        case 0:
          reply = c.Run({"DEL", "bk"});
          break;
        case 1:
          reply = c.Run({"DEL", "ck"});
          break;
        case 2:
          reply = c.Run({"DEL", "dk"});
          break;
        default:
          reply = c.Run({"FLUSHALL"});
          break;
      }
      if (reply.rfind('-', 0) == 0) record("drop", reply);
      drops.fetch_add(1);
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad_count, 0u) << "unexpected replies of " << writes.load()
                            << " writes (the first ones follow)";
  for (const std::string& b : bad) ADD_FAILURE() << b;
  ASSERT_TRUE(ks.Close().ok());
  ASSERT_TRUE((*db)->Close().ok());
}

}  // namespace
}  // namespace shardfilter::testing
