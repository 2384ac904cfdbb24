// The memory-mapped journal's spare thread (engine/internal/filter_log.h
// L6): it makes each shard's next segment ahead of use and returns once no
// shard has wanted one for a second; the next switch starts another. Two
// writers fill small segments in bursts separated by pauses longer than
// that second, so the thread exits and restarts while writers switch
// segments (run under ThreadSanitizer in CI), and every acknowledged key is
// there, before and after a reopen that replays every segment.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/persistence/log/segment.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

using testing::MustOpen;
using testing::Spec;
using testing::TempDir;

struct SmallSegments {
  SmallSegments() { persistence::SetSegmentBytesForTesting(64 << 10); }
  ~SmallSegments() { persistence::SetSegmentBytesForTesting(0); }
};

std::string Key(int writer, int burst, int i) {
  return "w" + std::to_string(writer) + "-b" + std::to_string(burst) + "-" +
         std::to_string(i);
}

TEST(JournalSpareStressTest, SpareThreadExitsAndRestartsUnderWriters) {
  SmallSegments small;
  TempDir dir;
  DatabaseOptions o = testing::Options(dir.db());
  o.checkpoint_on_close = false;
  o.mapped_journal_min_bytes = 0;  // this small filter maps segments
  constexpr int kWriters = 2, kBursts = 3, kPerBurst = 6000;
  {
    auto db = MustOpen(o);
    ASSERT_NE(db, nullptr);
    auto f = *db->Create("f", Spec(FilterType::kCountingBloom, 100'000, 2,
                                   Durability::kJournal));
    for (int burst = 0; burst < kBursts; ++burst) {
      std::vector<std::thread> writers;
      std::atomic<int> errors{0}, missing{0};
      for (int w = 0; w < kWriters; ++w) {
        writers.emplace_back([&, w] {
          for (int i = 0; i < kPerBurst; ++i) {
            if (!f->Add(Key(w, burst, i)).ok()) errors.fetch_add(1);
            if (!f->MayContain(Key(w, burst, i))) missing.fetch_add(1);
          }
        });
      }
      for (auto& t : writers) t.join();
      ASSERT_EQ(errors.load(), 0) << "burst " << burst;
      ASSERT_EQ(missing.load(), 0) << "burst " << burst;
      // Longer than the spare thread's idle second: it returns.
      std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    }
    SF_ASSERT_OK(db->Close());
  }
  auto db = MustOpen(o);
  auto f = *db->Get("f");
  int missing = 0;
  for (int w = 0; w < kWriters; ++w) {
    for (int b = 0; b < kBursts; ++b) {
      for (int i = 0; i < kPerBurst; ++i)
        missing += !f->MayContain(Key(w, b, i));
    }
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(db->counters().replayed_ops,
            static_cast<uint64_t>(kWriters * kBursts * kPerBurst));
}

}  // namespace
}  // namespace shardfilter
