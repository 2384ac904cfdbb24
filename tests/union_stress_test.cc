// Database::Union under load (TSan in CI): writers add to the destination
// and the source while unions and background checkpoints run. After a
// close without a final checkpoint (as a crash of the process) every key
// acknowledged in the destination, and every key acknowledged in the source
// before the last union began, is found.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/engine/database.h"
#include "store_test_util.h"

namespace shardfilter::testing {
namespace {

TEST(UnionStressTest, UnionsCheckpointsAndWritersTogether) {
  TempDir dir;
  DatabaseOptions o = Options(dir.db());
  o.checkpoint_on_close = false;
  o.checkpoint_interval_ms = 5;  // background checkpoints race the unions
  constexpr int kWriters = 2;
  constexpr int kKeys = 4000;
  std::atomic<int> src_acked_before_last_union{0};
  {
    auto db = MustOpen(o);
    FilterSpec spec = Spec(FilterType::kBloom, 50'000, 4);
    spec.scalable = false;
    auto dest = *db->Create("dest", spec);
    auto src = *db->Create("src", spec);
    std::atomic<int> src_acked{0};
    std::atomic<bool> done{false};
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        for (int i = w; i < kKeys; i += kWriters) {
          ASSERT_TRUE(dest->Add("d" + std::to_string(i)).ok());
        }
      });
    }
    // Source keys in order, so "acknowledged before" is a prefix.
    threads.emplace_back([&] {
      for (int i = 0; i < kKeys; ++i) {
        ASSERT_TRUE(src->Add("s" + std::to_string(i)).ok());
        src_acked.store(i + 1, std::memory_order_release);
      }
      done = true;
    });
    const std::string_view sources[] = {"src"};
    while (!done.load()) {
      const int before = src_acked.load(std::memory_order_acquire);
      ASSERT_TRUE(db->Union("dest", sources).ok());
      src_acked_before_last_union = before;
    }
    for (std::thread& t : threads) t.join();
    const int before = src_acked.load(std::memory_order_acquire);
    ASSERT_TRUE(db->Union("dest", sources).ok());
    src_acked_before_last_union = before;
    ASSERT_TRUE(db->Close().ok());
  }
  auto db = MustOpen(o);
  auto dest = db->Get("dest");
  ASSERT_TRUE(dest.ok());
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE((*dest)->MayContain("d" + std::to_string(i))) << i;
  }
  ASSERT_EQ(src_acked_before_last_union.load(), kKeys);
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE((*dest)->MayContain("s" + std::to_string(i))) << i;
  }
}

}  // namespace
}  // namespace shardfilter::testing
