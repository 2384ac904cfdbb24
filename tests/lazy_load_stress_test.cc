// Database D4 under concurrency (run under TSan in CI): first uses of
// filters not loaded yet race each other, Drop, Create, CheckpointAll,
// Unavailable and the background checkpointer. Every filter loads once
// (one handle per name), no acknowledged add is lost, and a dropped name
// answers NotFound.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/engine/database.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Options;
using testing::Spec;
using testing::TempDir;

TEST(LazyLoadStressTest, FirstUsesRaceDropsCreatesAndCheckpoints) {
  TempDir dir;
  constexpr int kFilters = 12;
  {
    auto db = MustOpen(Options(dir.db()));
    for (int i = 0; i < kFilters; ++i) {
      auto f = *db->Create(
          "f" + std::to_string(i),
          Spec(i % 2 ? FilterType::kCuckoo : FilterType::kCountingBloom, 2000,
               2));
      SF_ASSERT_OK(f->Add("base"));
    }
    SF_ASSERT_OK(db->Close());
  }
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_interval_ms = 5;
  auto db = MustOpen(o);
  std::vector<std::shared_ptr<ShardedFilter>> first(kFilters);
  std::atomic<int> acked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        const int i = (t + round) % (kFilters - 2);  // f10, f11: dropped
        auto f = db->Get("f" + std::to_string(i));
        ASSERT_TRUE(f.ok()) << f.status().ToString();
        EXPECT_GE((*f)->Count("base"), 1u);
        if ((*f)->Add("t" + std::to_string(t) + "-" + std::to_string(round))
                .ok()) {
          acked.fetch_add(1);
        }
      }
    });
  }
  threads.emplace_back([&] {
    SF_EXPECT_OK(db->Drop("f10"));
    SF_EXPECT_OK(db->Drop("f11"));
    for (int i = 0; i < 20; ++i) {
      SF_EXPECT_OK(db->Create("new" + std::to_string(i),
                              Spec(FilterType::kBloom, 100, 1))
                       .status());
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; i < 10; ++i) {
      SF_EXPECT_OK(db->CheckpointAll().status());
      EXPECT_TRUE(db->Unavailable().empty());
    }
  });
  for (auto& th : threads) th.join();
  for (int i = 0; i < kFilters - 2; ++i) {
    auto a = db->Get("f" + std::to_string(i));
    auto b = db->Get("f" + std::to_string(i));
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, *b) << "one load, one handle";
  }
  EXPECT_TRUE(db->Get("f10").status().IsNotFound());
  EXPECT_EQ(db->List().size(), static_cast<size_t>(kFilters - 2 + 20));
  SF_ASSERT_OK(db->Close());
  // Every acknowledged add survived.
  auto again = MustOpen(Options(dir.db()));
  int found = 0;
  for (int t = 0; t < 6; ++t) {
    for (int round = 0; round < 50; ++round) {
      const int i = (t + round) % (kFilters - 2);
      auto f = *again->Get("f" + std::to_string(i));
      found +=
          f->Count("t" + std::to_string(t) + "-" + std::to_string(round)) > 0;
    }
  }
  EXPECT_EQ(found, acked.load());
}

}  // namespace
}  // namespace shardfilter
