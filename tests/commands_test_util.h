// Drives the command layer in process: a Database in a temp dir behind the
// server's DbKeyspace, a fake Host, and Run("BF.ADD", "k", "a") returning
// the raw RESP reply.
#ifndef SHARDFILTER_TESTS_COMMANDS_TEST_UTIL_H_
#define SHARDFILTER_TESTS_COMMANDS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "shardfilter/engine/memory_budget.h"
#include "store_test_util.h"
#include "tools/commands/command_stats.h"
#include "tools/commands/command_table.h"
#include "tools/resp/reply_writer.h"
#include "tools/server/db_keyspace.h"

namespace shardfilter::testing {

class FakeHost final : public commands::Host {
 public:
  std::string password;
  int shutdowns = 0;
  const commands::ClusterNode* cluster = nullptr;  // emulated cluster mode
  bool count_stats = false;                        // INFO commandstats
  commands::CommandStats stats;
  bool RequiresPassword() const override { return !password.empty(); }
  bool CheckPassword(std::string_view user,
                     std::string_view pw) const override {
    return user == "default" && (password.empty() || pw == password);
  }
  bool AppendInfoSection(std::string_view section, std::string* out) override {
    if (section != "server") return false;
    *out += "# Server\r\nredis_version:7.0.0\r\n";
    return true;
  }
  std::vector<std::pair<std::string, std::string>> ConfigValues()
      const override {
    return {{"save", ""}, {"appendonly", "no"}, {"databases", "1"}};
  }
  std::string ClientList(const commands::Session& self) override {
    return "id=" + std::to_string(self.id) + "\n";
  }
  void RequestShutdown() override { ++shutdowns; }
  const commands::ClusterNode* Cluster() const override { return cluster; }
  commands::CommandStats* Stats() override {
    return count_stats ? &stats : nullptr;
  }
};

class CommandsFixture : public ::testing::Test {
 protected:
  void SetUp() override { OpenStore(); }

  void OpenStore() {
    keyspace_.reset();
    if (db_ != nullptr) {
      ASSERT_TRUE(db_->Close().ok());
    }
    db_.reset();
    DatabaseOptions o;
    o.path = dir_.db();
    o.memory_budget = memory_budget_;  // null: MemoryBudget::Default()
    auto db = Database::Open(o);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    keyspace_ = std::make_unique<server::DbKeyspace>(db_.get(), ks_options_);
  }

  // The raw RESP reply of one command.
  std::string Run(std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    out_.clear();
    commands::CommandContext ctx{session_, *keyspace_, host_, writer_};
    commands::Dispatch(ctx, views);
    return out_;
  }
  std::string Run(std::initializer_list<std::string> args) {
    return Run(std::vector<std::string>(args));
  }

  TempDir dir_;
  server::DbKeyspaceOptions ks_options_;
  std::shared_ptr<MemoryBudget> memory_budget_;  // set before OpenStore
  std::unique_ptr<Database> db_;
  std::unique_ptr<server::DbKeyspace> keyspace_;
  FakeHost host_;
  commands::Session session_;
  std::string out_;
  resp::RespWriter writer_{&out_, 2};
};

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_COMMANDS_TEST_UTIL_H_
