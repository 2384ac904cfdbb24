// shardfilter-server's event loop does not wait for fsyncs (server.h,
// event_loop.h W1-W3): a write to a sync filter runs on a SyncWorkers
// thread, its reply waits for the sync, and meanwhile the same loop answers
// other clients. The journal's sync is held by a test hook until the test
// lets it go, so nothing here depends on timing: with the sync on the loop,
// the second client's PING is never answered while the hook holds it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "server_test_util.h"
#include "shardfilter/engine/database.h"
#include "store_test_util.h"
#include "tools/commands/command_table.h"
#include "tools/server/db_keyspace.h"
#include "tools/server/server.h"

namespace shardfilter::testing {
namespace {

class ServerSyncAckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatabaseOptions o = Options(dir_.db());
    o.checkpoint_on_close = false;
    db_ = MustOpen(o);
    ASSERT_NE(db_, nullptr);
    // Over mapped_journal_min_bytes: its journal is mapped segments, whose
    // syncs the gate holds. "journal" is small: it journals in RocksDB's
    // WAL, which the gate does not see.
    ASSERT_TRUE(db_->Create("sync", Spec(FilterType::kBloom, 2'000'000, 1,
                                         Durability::kSync))
                    .ok());
    ASSERT_TRUE(db_->Create("journal", Spec(FilterType::kBloom, 1000, 1,
                                            Durability::kJournal))
                    .ok());
    keyspace_ = std::make_unique<server::DbKeyspace>(
        db_.get(), server::DbKeyspaceOptions{});
    server::ServerOptions so;
    so.bind = {"127.0.0.1"};
    so.port = 0;
    so.threads = 1;  // one loop: a stalled loop would stall every client
    server_ = std::make_unique<server::Server>(so, keyspace_.get());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Stop();
      server_->Wait();
    }
    server_.reset();
    if (keyspace_ != nullptr) (void)keyspace_->Close();
    keyspace_.reset();
    if (db_ != nullptr) (void)db_->Close();
  }
  uint16_t port() const { return server_->port(); }

  TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<server::DbKeyspace> keyspace_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(ServerSyncAckTest, TheLoopAnswersOthersWhileASyncWriteWaits) {
  SyncGate gate;
  gate.Close();
  Client writer(port()), other(port());
  ASSERT_TRUE(writer.connected() && other.connected());
  writer.Send(Cmd({"BF.ADD", "sync", "a"}));
  ASSERT_TRUE(gate.AwaitWaiter()) << "the sync write never reached its sync";

  // The same (only) loop serves another client meanwhile: a PING, a write
  // to a journal filter and a read of the sync filter.
  other.Send(Cmd({"PING"}) + Cmd({"BF.ADD", "journal", "x"}) +
             Cmd({"BF.EXISTS", "journal", "x"}));
  EXPECT_EQ(other.Read(15), "+PONG\r\n:1\r\n:1\r\n");
  // The sync write is not acknowledged before its sync.
  EXPECT_FALSE(writer.HasReply());

  gate.Open();
  EXPECT_EQ(writer.Read(4), ":1\r\n");
  // The connection goes on, in order, on the loop again.
  writer.Send(Cmd({"BF.EXISTS", "sync", "a"}) + Cmd({"BF.ADD", "sync", "b"}) +
              Cmd({"PING"}));
  EXPECT_EQ(writer.Read(15), ":1\r\n:1\r\n+PONG\r\n");
}

TEST_F(ServerSyncAckTest, RepliesKeepRequestOrderAcrossTheWorker) {
  Client c(port());
  ASSERT_TRUE(c.connected());
  // One write: HELLO 3 and reads on the loop's side of the batch, the sync
  // write on the worker; the protocol switch made there holds after it.
  c.Send(Cmd({"BF.EXISTS", "journal", "q"}) + Cmd({"BF.ADD", "sync", "q"}) +
         Cmd({"HELLO", "3"}) + Cmd({"BF.EXISTS", "sync", "q"}));
  const std::string got = c.Read(8 + 1);
  ASSERT_GE(got.size(), 8u);
  EXPECT_EQ(got.substr(0, 8), ":0\r\n:1\r\n");
  // HELLO's map, then a RESP3 boolean for the last EXISTS.
  std::string rest = got.substr(8);
  while (rest.find("#t\r\n") == std::string::npos) {
    const std::string more = c.Read(1);
    if (more.empty()) break;
    rest += more;
  }
  EXPECT_EQ(rest[0], '%') << rest;
  EXPECT_EQ(rest.substr(rest.size() - 4), "#t\r\n") << rest;
  // And RESP3 stays on for the next batch.
  c.Send(Cmd({"BF.EXISTS", "journal", "zz"}));
  EXPECT_EQ(c.Read(4), "#f\r\n");
}

TEST_F(ServerSyncAckTest, AClientThatLeavesDuringItsSyncDoesNotHurtTheServer) {
  SyncGate gate;
  gate.Close();
  {
    Client gone(port());
    ASSERT_TRUE(gone.connected());
    gone.Send(Cmd({"BF.ADD", "sync", "left"}));
    ASSERT_TRUE(gate.AwaitWaiter());
  }  // closed while its write waits
  Client other(port());
  gate.Open();
  // The write it sent was applied (its reply had nowhere to go).
  other.Send(Cmd({"BF.EXISTS", "sync", "left"}));
  EXPECT_EQ(other.Read(4), ":1\r\n");
}

TEST_F(ServerSyncAckTest, StopWaitsForTheSyncAndSendsItsReply) {
  SyncGate gate;
  gate.Close();
  Client writer(port());
  writer.Send(Cmd({"BF.ADD", "sync", "last"}));
  ASSERT_TRUE(gate.AwaitWaiter());
  server_->Stop();
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gate.Open();
  });
  server_->Wait();
  opener.join();
  EXPECT_EQ(writer.Read(4), ":1\r\n");
}

TEST_F(ServerSyncAckTest, WhatRunsOnAWorker) {
  commands::Session session;
  auto runs = [&](std::initializer_list<std::string_view> args) {
    std::vector<std::string_view> v(args);
    commands::Args a(v);
    return server_->RunsOnWorker(session, std::span(&a, 1));
  };
  EXPECT_FALSE(runs({"PING"}));
  EXPECT_FALSE(runs({"BF.EXISTS", "sync", "a"}));  // reads never wait
  EXPECT_FALSE(runs({"BF.ADD", "journal", "a"}));
  EXPECT_TRUE(runs({"BF.ADD", "sync", "a"}));
  EXPECT_TRUE(runs({"bf.madd", "sync", "a", "b"}));
  EXPECT_TRUE(runs({"BF.ADD", "missing", "a"}));  // creates: a synced write
  EXPECT_TRUE(runs({"BF.RESERVE", "new", "0.01", "100"}));
  EXPECT_TRUE(runs({"DEL", "journal"}));  // drops sync the catalog
  EXPECT_TRUE(runs({"SAVE"}));
  // A deadline is written as the key's adds are: a journal filter's on the
  // loop, unsynced; a sync filter's, a missing key's and one that drops
  // the key (not in the future, or overflowing) on a worker.
  EXPECT_FALSE(runs({"EXPIRE", "journal", "100"}));
  EXPECT_FALSE(runs({"pexpire", "journal", "100000"}));
  EXPECT_FALSE(runs({"EXPIREAT", "journal", "4102444800"}));
  EXPECT_FALSE(runs({"PERSIST", "journal"}));
  EXPECT_FALSE(runs({"EXPIRE", "journal", "soon"}));  // an error, no write
  EXPECT_TRUE(runs({"EXPIRE", "sync", "100"}));
  EXPECT_TRUE(runs({"PERSIST", "sync"}));
  EXPECT_TRUE(runs({"EXPIRE", "missing", "100"}));
  EXPECT_TRUE(runs({"EXPIRE", "journal", "0"}));
  EXPECT_TRUE(runs({"EXPIRE", "journal", "-5"}));
  EXPECT_TRUE(runs({"PEXPIREAT", "journal", "1"}));
  EXPECT_TRUE(runs({"EXPIRE", "journal", "9223372036854775807"}));
  EXPECT_FALSE(runs({"NOSUCHCOMMAND", "sync"}));
  // EXEC of a queued sync write.
  session.in_multi = true;
  session.queued = {{"BF.ADD", "sync", "z"}};
  EXPECT_TRUE(runs({"EXEC"}));
  session.queued = {{"BF.ADD", "journal", "z"}};
  EXPECT_FALSE(runs({"EXEC"}));
}

}  // namespace
}  // namespace shardfilter::testing
