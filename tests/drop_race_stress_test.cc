// Drop races writers: no mutation is acknowledged after Drop's commit and
// none leaves a value behind it (a journal entry of a filter that is gone,
// an orphan), and steady writers do not starve the detach while it holds
// the catalog mutex (S5's writer preference). A Drop that commits its
// delete before it detaches the filter leaves such entries; one whose
// shard locks lack that preference may never return.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/engine/database.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::Options;
using testing::Spec;
using testing::TempDir;

class DropRaceTest : public ::testing::TestWithParam<FilterType> {};

TEST_P(DropRaceTest, NoAckAndNoJournalEntryAfterTheDrop) {
  for (int round = 0; round < 6; ++round) {
    TempDir dir;
    DatabaseOptions o = Options(dir.db());
    o.checkpoint_on_close = false;
    auto db = testing::MustOpen(o);
    ASSERT_NE(db, nullptr);
    auto f = db->Create("f", Spec(GetParam(), 10'000'000, 2));
    SF_ASSERT_OK(f.status());
    std::shared_ptr<ShardedFilter> filter = *f;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> acked{0};
    std::vector<std::thread> writers;
    for (int t = 0; t < 3; ++t) {
      writers.emplace_back([&, t] {
        for (uint64_t i = 0; !stop.load(); ++i) {
          if (filter->Add("w" + std::to_string(t) + "-" + std::to_string(i))
                  .ok()) {
            acked.fetch_add(1);
          }
        }
      });
    }
    while (acked.load() < 2000) std::this_thread::yield();
    SF_ASSERT_OK(db->Drop("f"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
    for (auto& w : writers) w.join();
    // A journal entry left now was written (and its op acknowledged) after
    // the drop's commit deleted the filter's journal.
    auto report = db->Verify();
    SF_ASSERT_OK(report.status());
    EXPECT_EQ(report->journal_entries, 0u)
        << "journal entries written after the drop's commit, round " << round;
    EXPECT_EQ(report->orphan_values, 0u);
  }
}

// The same race on a filter without a journal (durability none), whose
// Bloom adds take ShardedFilter::TryFastAdd: an add that starts after Drop
// returned is not acknowledged.
TEST_P(DropRaceTest, NoAckAfterTheDropWithoutAJournal) {
  for (int round = 0; round < 6; ++round) {
    TempDir dir;
    auto db = testing::MustOpen(Options(dir.db()));
    ASSERT_NE(db, nullptr);
    auto f =
        db->Create("f", Spec(GetParam(), 10'000'000, 2, Durability::kNone));
    SF_ASSERT_OK(f.status());
    std::shared_ptr<ShardedFilter> filter = *f;
    std::atomic<bool> stop{false}, dropped{false};
    std::atomic<uint64_t> acked{0}, late{0};
    std::vector<std::thread> writers;
    for (int t = 0; t < 3; ++t) {
      writers.emplace_back([&, t] {
        for (uint64_t i = 0; !stop.load(); ++i) {
          const bool after = dropped.load();
          if (filter->Add("w" + std::to_string(t) + "-" + std::to_string(i))
                  .ok()) {
            acked.fetch_add(1);
            if (after) late.fetch_add(1);
          }
        }
      });
    }
    while (acked.load() < 2000) std::this_thread::yield();
    SF_ASSERT_OK(db->Drop("f"));
    dropped = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
    for (auto& w : writers) w.join();
    EXPECT_EQ(late.load(), 0u)
        << "adds acknowledged after the drop, round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, DropRaceTest,
                         shardfilter::testing::AllFilterTypes());

}  // namespace
}  // namespace shardfilter
