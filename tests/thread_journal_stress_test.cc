// Thread segments under concurrency (engine/internal/filter_log.h L7,
// persistence/log/format.h T2): writers add journalled Bloom
// keys while another thread checkpoints over and over, each checkpoint
// raising the generation and retiring the segments it covers, some of
// them still their writers' active ones; small segments make writers
// switch often. The store is then closed without a last checkpoint and
// reopened: the filter must equal one built from the same keys, so no
// record a checkpoint retired was missing from it, and nothing replayed
// twice shows. Under ThreadSanitizer in CI (label "concurrency").
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "shardfilter/engine/database.h"
#include "shardfilter/persistence/log/segment.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Spec;
using testing::TempDir;

TEST(ThreadJournalStressTest, CheckpointsRetireWhileWritersAdd) {
  struct SmallSegments {
    SmallSegments() { persistence::SetSegmentBytesForTesting(64 << 10); }
    ~SmallSegments() { persistence::SetSegmentBytesForTesting(0); }
  } small;
  constexpr int kWriters = 3;
  constexpr int kPerWriter = 30'000;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    TempDir dir;
    DatabaseOptions o = testing::Options(dir.db());
    o.checkpoint_on_close = false;
    o.mapped_journal_min_bytes = 0;
    std::unique_ptr<ShardedFilter> want;
    int checkpoints = 0;
    {
      auto db = MustOpen(o);
      auto f = *db->Create("f", Spec(FilterType::kBloom, 400'000, 8));
      FilterSpec plain = f->spec();
      plain.durability.reset();
      want = ShardedFilter::Create(plain).value();
      std::atomic<int> done{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < kWriters; ++t) {
        threads.emplace_back([&, t] {
          for (int i = 0; i < kPerWriter; ++i) {
            SF_EXPECT_OK(f->Add("w" + std::to_string(t) + "-" +
                                std::to_string(i) + "-r" +
                                std::to_string(round)));
          }
          done.fetch_add(1);
        });
      }
      threads.emplace_back([&] {
        while (done.load() < kWriters) {
          SF_EXPECT_OK(db->CheckpointAll().status());
          ++checkpoints;
        }
      });
      for (auto& t : threads) t.join();
      for (int t = 0; t < kWriters; ++t) {
        for (int i = 0; i < kPerWriter; ++i) {
          SF_ASSERT_OK(want->Add("w" + std::to_string(t) + "-" +
                                 std::to_string(i) + "-r" +
                                 std::to_string(round)));
        }
      }
      EXPECT_TRUE(f->Equals(*want));
    }
    EXPECT_GT(checkpoints, 0);
    auto db = MustOpen(o);
    auto f = *db->Get("f");
    EXPECT_TRUE(f->Equals(*want)) << checkpoints << " checkpoints";
  }
}

}  // namespace
}  // namespace shardfilter
