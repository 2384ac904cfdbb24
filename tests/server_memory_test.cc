// The server's keyspace under its memory limit (the Database's budget,
// shardfilter-server's --maxmemory): unused filters are unloaded to make
// room, whichever thread's handle cache held them, and loaded again by
// their next use; a load that cannot fit is an error, never "no such key".
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/engine/memory_budget.h"
#include "store_test_util.h"
#include "tools/commands/keyspace.h"
#include "tools/server/db_keyspace.h"

namespace shardfilter {
namespace {

using testing::TempDir;

commands::CreateParams Bloom(uint64_t capacity) {
  commands::CreateParams p;
  p.type = FilterType::kBloom;
  p.capacity = capacity;
  p.error_rate = 0.01;
  p.shards = 4;
  return p;
}

std::string Item(int filter, int i) {
  return "f" + std::to_string(filter) + "-" + std::to_string(i);
}

class ServerMemoryTest : public ::testing::Test {
 protected:
  void Open(uint64_t limit) {
    keyspace_.reset();
    if (db_ != nullptr) SF_ASSERT_OK(db_->Close());
    budget_ = std::make_shared<MemoryBudget>(limit);
    DatabaseOptions o;
    o.path = dir_.db();
    o.memory_budget = budget_;
    db_ = testing::MustOpen(o);
    ASSERT_NE(db_, nullptr);
    keyspace_ = std::make_unique<server::DbKeyspace>(
        db_.get(), server::DbKeyspaceOptions{});
  }
  void TearDown() override {
    keyspace_.reset();
    if (db_ != nullptr) SF_EXPECT_OK(db_->Close());
  }
  // Creates filter `i` (~3 MB of tables) holding 500 items.
  void CreateFilled(int i) {
    auto f = keyspace_->Create("f" + std::to_string(i), Bloom(2'000'000));
    ASSERT_TRUE(f.ok()) << i << ": " << f.status().ToString();
    for (int j = 0; j < 500; ++j) ASSERT_TRUE((*f)->Add(Item(i, j)).ok());
  }
  void ExpectFilled(int i) {
    auto f = keyspace_->Lookup("f" + std::to_string(i));
    ASSERT_TRUE(f.ok()) << i << ": " << f.status().ToString();
    for (int j = 0; j < 500; ++j) {
      ASSERT_TRUE((*f)->MayContain(Item(i, j))) << i << " " << j;
    }
  }

  TempDir dir_;
  std::shared_ptr<MemoryBudget> budget_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<server::DbKeyspace> keyspace_;
};

// Ten filters of ~3 MB under a 10 MB limit: each create and each lookup
// makes room by unloading others; every item stays. Before: the fourth
// create failed with ResourceExhausted.
TEST_F(ServerMemoryTest, FiltersPastTheLimitStayReadable) {
  Open(10u << 20);
  for (int i = 0; i < 10; ++i) CreateFilled(i);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 10; ++i) ExpectFilled(i);
  }
  EXPECT_LE(budget_->used(), 10u << 20);
  EXPECT_GT(keyspace_->unloads(), 0u);
}

// A handle another thread cached keeps its filter loaded; ReclaimMemory
// empties every thread's cache, so that filter can go too.
TEST_F(ServerMemoryTest, OtherThreadsCachedHandlesDoNotPinFilters) {
  Open(64u << 20);
  CreateFilled(0);
  std::thread([&] {
    auto f = keyspace_->Lookup("f0");  // now in that thread's cache
    ASSERT_TRUE(f.ok());
  }).join();
  // This thread's cache too.
  ASSERT_TRUE(keyspace_->Lookup("f0").ok());
  EXPECT_TRUE(keyspace_->ReclaimMemory());
  EXPECT_TRUE(db_->Loaded().empty());
  EXPECT_EQ(budget_->used(), 0u);
  ExpectFilled(0);
}

// A filter in use (a command holds its handle) is not unloaded: the
// request that needed its memory is refused, the holder carries on.
TEST_F(ServerMemoryTest, AFilterInUseIsNotUnloaded) {
  Open(4u << 20);
  CreateFilled(0);
  auto held = keyspace_->Lookup("f0");
  ASSERT_TRUE(held.ok());
  auto second = keyspace_->Create("f1", Bloom(2'000'000));
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted)
      << second.status().ToString();
  EXPECT_FALSE(keyspace_->ReclaimMemory());
  EXPECT_TRUE((*held)->Add("more").ok());
  EXPECT_TRUE((*held)->MayContain(Item(0, 7)));
}

// A filter that exists but cannot be loaded within the limit is an error
// (ResourceExhausted), not a missing key: a command must not answer 0.
TEST_F(ServerMemoryTest, ALoadThatCannotFitIsAnErrorNotAbsent) {
  Open(64u << 20);
  CreateFilled(0);
  Open(1u << 20);  // reopened with a limit below the filter
  auto f = keyspace_->Lookup("f0");
  EXPECT_EQ(f.status().code(), StatusCode::kResourceExhausted)
      << f.status().ToString();
  EXPECT_EQ(keyspace_->Keys(), std::vector<std::string>{"f0"});
  Open(64u << 20);
  ExpectFilled(0);
}

// Growth refused by the budget is tried again once another filter was
// unloaded: the add succeeds.
TEST_F(ServerMemoryTest, GrowthUnloadsOthersFirst) {
  Open(5u << 20);
  CreateFilled(0);  // ~3 MB, unused from here on
  commands::CreateParams p = Bloom(100'000);
  p.shards = 1;
  p.expansion = 4;
  auto g = keyspace_->Create("g", p);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  // Links of 100,000, 400,000 and 1,600,000 items take ~3.7 MB: link 2
  // fits only once f0 is unloaded; link 3 (~12.6 MB) never fits.
  Status last;
  int added = 0;
  std::vector<std::string> batch;
  std::vector<std::string_view> views;
  std::vector<Status> statuses;
  std::vector<uint8_t> fresh;
  while (added < 2'200'000 && last.ok()) {
    batch.clear();
    views.clear();
    for (int i = 0; i < 10'000; ++i) {
      batch.push_back("g" + std::to_string(added + i));
    }
    views.assign(batch.begin(), batch.end());
    (*g)->AddMany(views, &statuses, &fresh);
    for (const Status& s : statuses) {
      if (!s.ok()) {
        last = s;
        break;
      }
      ++added;
    }
  }
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted) << last.ToString();
  EXPECT_GE(added, 2'100'000);
  EXPECT_EQ(keyspace_->unloads(), 1u);  // f0, to make room for link 2
  for (int i = 0; i < added; i += 997) {
    ASSERT_TRUE((*g)->MayContain("g" + std::to_string(i))) << i;
  }
  g = Status::NotFound("released");
  ExpectFilled(0);
}

// LOADCHUNK staging and SCANDUMP copies (Keyspace::NewStaging) are charged
// to the Database's budget, the one --maxmemory sets, and make room by
// unloading unused filters as every other reservation does.
TEST_F(ServerMemoryTest, StagingUsesTheBudgetAndUnloadsOthersFirst) {
  Open(8u << 20);
  CreateFilled(0);  // ~3 MB each, unused from here on
  CreateFilled(1);
  const uint64_t default_used = MemoryBudget::Default()->used();
  auto staged = keyspace_->NewStaging(4u << 20, "a LOADCHUNK restore");
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  EXPECT_GT(keyspace_->unloads(), 0u);
  EXPECT_GE(budget_->used(), 4u << 20);
  EXPECT_LE(budget_->used(), 8u << 20);
  EXPECT_EQ(MemoryBudget::Default()->used(), default_used);
  auto too_big = keyspace_->NewStaging(8u << 20, "a SCANDUMP copy");
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted)
      << too_big.status().ToString();
  const uint64_t held = budget_->used();
  staged = Status::NotFound("released");
  EXPECT_EQ(budget_->used(), held - (4u << 20));
  ExpectFilled(0);
  ExpectFilled(1);
}

// A migration whose target cannot fit is refused when it is asked for
// (the command answers -OOM), once unloading did not make room. Before: it
// started, and failed later in its thread.
TEST_F(ServerMemoryTest, AMigrationThatCannotFitIsRefusedUpFront) {
  Open(8u << 20);
  commands::CreateParams p = Bloom(100'000);
  p.retain_hashes = true;
  ASSERT_TRUE(keyspace_->Create("m", p).ok());
  commands::CreateParams target = Bloom(10'000'000);  // ~15 MB
  target.retain_hashes = true;
  const Status s = keyspace_->StartMigration("m", target);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_TRUE(keyspace_->Migration("m").status().IsNotFound());
  target.capacity = 400'000;  // ~0.6 MB: fits
  SF_EXPECT_OK(keyspace_->StartMigration("m", target));
}

// Over a filter's own limit (--max-filter-bytes) is TooLarge, not the
// process's limit. Before: the keyspace turned the engine's
// InvalidArgument into ResourceExhausted by searching its message.
TEST_F(ServerMemoryTest, OverTheFilterLimitIsTooLarge) {
  keyspace_.reset();
  Open(64u << 20);
  server::DbKeyspaceOptions o;
  o.max_filter_bytes = 1u << 20;
  keyspace_ = std::make_unique<server::DbKeyspace>(db_.get(), o);
  auto f = keyspace_->Create("big", Bloom(10'000'000));
  EXPECT_EQ(f.status().code(), StatusCode::kTooLarge) << f.status().ToString();
  EXPECT_TRUE(keyspace_->Keys().empty());
}

}  // namespace
}  // namespace shardfilter
