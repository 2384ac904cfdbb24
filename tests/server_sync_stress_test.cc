// shardfilter-server with sync filters under load (TSan in CI): clients on
// two event loops pipeline writes to a sync filter (run on SyncWorkers),
// writes to a journal filter and reads (run on the loops), some leave
// mid-stream, and the server stops while writes are in flight. Every reply
// comes in request order, and every acknowledged add is found afterwards:
// the loops hand batches to workers and back without losing, reordering or
// racing on a connection (event_loop.h W1-W3).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "server_test_util.h"
#include "shardfilter/engine/database.h"
#include "store_test_util.h"
#include "tools/server/db_keyspace.h"
#include "tools/server/server.h"

namespace shardfilter::testing {
namespace {

TEST(ServerSyncStressTest, PipelinedSyncAndJournalWritesFromManyClients) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  auto db = MustOpen(o);
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->Create("sync", Spec(FilterType::kBloom, 2'000'000, 2,
                                      Durability::kSync))
                  .ok());
  ASSERT_TRUE(db->Create("journal", Spec(FilterType::kCuckoo, 100'000, 2,
                                         Durability::kJournal))
                  .ok());
  server::DbKeyspace keyspace(db.get(), server::DbKeyspaceOptions{});
  server::ServerOptions so;
  so.bind = {"127.0.0.1"};
  so.port = 0;
  so.threads = 2;
  so.sync_threads = 4;
  auto srv = std::make_unique<server::Server>(so, &keyspace);
  ASSERT_TRUE(srv->Start().ok());
  const uint16_t port = srv->port();

  constexpr int kClients = 6;
  constexpr int kBatches = 60;
  std::vector<std::vector<std::string>> acked(kClients);
  std::atomic<int> bad{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      Client c(port);
      if (!c.connected()) {
        ++bad;
        return;
      }
      for (int b = 0; b < kBatches; ++b) {
        // Client 5 leaves after its 20th batch without reading it.
        const bool leave = t == 5 && b == 20;
        const std::string s = "c" + std::to_string(t) + "-" + std::to_string(b);
        std::string req;
        // Alternate: a batch the worker runs, one the loop runs.
        if (b % 2 == 0) {
          req = Cmd({"BF.ADD", "sync", s + "a"}) +
                Cmd({"BF.MADD", "sync", s + "b", s + "c"}) +
                Cmd({"BF.EXISTS", "sync", s + "a"}) + Cmd({"PING"});
        } else {
          req = Cmd({"CF.ADD", "journal", s}) +
                Cmd({"CF.EXISTS", "journal", s}) + Cmd({"PING"});
        }
        c.Send(req);
        if (leave) return;
        if (b % 2 == 0) {
          const std::string r1 = c.ReadLine();
          const std::string arr = c.ReadLine();
          const std::string m1 = c.ReadLine(), m2 = c.ReadLine();
          const std::string e = c.ReadLine(), p = c.ReadLine();
          const bool ok = (r1 == ":1" || r1 == ":0") && arr == "*2" &&
                          (m1 == ":1" || m1 == ":0") &&
                          (m2 == ":1" || m2 == ":0") && e == ":1" &&
                          p == "+PONG";
          if (!ok) {
            ++bad;
            return;
          }
          acked[t].insert(acked[t].end(), {s + "a", s + "b", s + "c"});
        } else {
          const std::string a = c.ReadLine(), e = c.ReadLine(),
                            p = c.ReadLine();
          if (a != ":1" || e != ":1" || p != "+PONG") {
            ++bad;
            return;
          }
        }
      }
    });
  }
  for (std::thread& th : clients) th.join();
  EXPECT_EQ(bad.load(), 0);

  // Writes in flight when the server stops still get their replies.
  {
    Client last(port);
    std::string req;
    for (int i = 0; i < 20; ++i)
      req += Cmd({"BF.ADD", "sync", "stop" + std::to_string(i)});
    last.Send(req);
    EXPECT_EQ(last.ReadLine().substr(0, 1), ":");  // the first was run
    srv->Stop();
    srv->Wait();
  }
  srv.reset();

  auto f = db->Get("sync");
  ASSERT_TRUE(f.ok());
  size_t n = 0;
  for (const auto& items : acked) {
    for (const std::string& item : items) {
      EXPECT_TRUE((*f)->MayContain(item)) << item;
      ++n;
    }
  }
  EXPECT_EQ(n, size_t{(kClients - 1) * kBatches / 2 * 3 + 10 * 3});
  (void)keyspace.Close();
  EXPECT_TRUE(db->Close().ok());
}

}  // namespace
}  // namespace shardfilter::testing
