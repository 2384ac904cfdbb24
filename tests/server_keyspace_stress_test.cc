// The server's keyspace index under concurrency: full SCAN loops (COUNT 10)
// while other threads create and drop keys of every kind, set and remove
// deadlines, and look keys up (each thread with its handle cache), and the
// active expiry runs. Every key present for the whole of a scan is
// returned by it (Redis's SCAN guarantee); DBSIZE never counts a key
// twice.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr int kStay = 60, kScans = 3;
#else
constexpr int kStay = 300, kScans = 6;
#endif

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(KeyspaceStressTest, ScansSeeEveryKeyPresentThroughoutUnderChurn) {
  TempDir dir;
  DatabaseOptions o;
  o.path = dir.db();
  auto db = Database::Open(o);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  server::DbKeyspace ks(db->get(), server::DbKeyspaceOptions{});
  commands::CreateParams small;
  small.capacity = 100;
  std::set<std::string> stay;
  for (int i = 0; i < kStay; ++i) {
    const std::string k = "stay:" + std::to_string(i);
    ASSERT_TRUE(ks.Create(k, small).ok());
    stay.insert(k);
  }
  commands::DedupParams dedup;
  dedup.capacity = 100;
  ASSERT_TRUE(ks.CreateDedup("stay:dedup", dedup).ok());
  stay.insert("stay:dedup");

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> churned{0};
  std::vector<std::thread> threads;
  // Creates and drops filters, dedup sets and tiered filters.
  threads.emplace_back([&] {
    for (uint64_t i = 0; !stop.load(); ++i) {
      const std::string k = "churn:" + std::to_string(i);
      if (i % 5 == 0) {
        commands::TieredParams t;
        t.levels.push_back(small);
        EXPECT_TRUE(ks.CreateTiered(k, t).ok());
      } else if (i % 5 == 1) {
        EXPECT_TRUE(ks.CreateDedup(k, dedup).ok());
      } else {
        EXPECT_TRUE(ks.Create(k, small).ok());
      }
      if (i >= 2) {
        auto r = ks.Delete("churn:" + std::to_string(i - 2));
        EXPECT_TRUE(r.ok() && *r) << "churn:" << i - 2;
      }
      churned.fetch_add(1);
    }
  });
  // Far deadlines set and removed on the keys that stay; short ones on
  // keys of their own, which the lookups and the active expiry drop.
  threads.emplace_back([&] {
    for (uint64_t i = 0; !stop.load(); ++i) {
      const std::string k = "stay:" + std::to_string(i % kStay);
      if (i % 2 == 0) {
        EXPECT_TRUE(ks.SetExpiry(k, NowMs() + 3'600'000).ok());
      } else {
        EXPECT_TRUE(ks.SetExpiry(k, std::nullopt).ok());
      }
      const std::string e = "short:" + std::to_string(i);
      EXPECT_TRUE(ks.Create(e, small).ok());
      EXPECT_TRUE(ks.SetExpiry(e, NowMs() + 2).ok());
      (void)ks.ExpireDue();
    }
  });
  // Lookups through a handle cache of their own.
  threads.emplace_back([&] {
    for (uint64_t i = 0; !stop.load(); ++i) {
      auto f = ks.Lookup("stay:" + std::to_string(i % kStay));
      EXPECT_TRUE(f.ok()) << f.status().ToString();
      (void)ks.Lookup("short:" + std::to_string(i % 64));
    }
  });

  for (int scan = 0; scan < kScans; ++scan) {
    // Each scan overlaps the churn: it waits for keys to come and go.
    const uint64_t before = churned.load();
    uint64_t last = before;
    std::set<std::string> seen;
    uint64_t cursor = 0;
    size_t calls = 0;
    do {
      const commands::ScanPage page = ks.Scan(cursor, 10);
      EXPECT_LE(page.visited, 10u);
      seen.insert(page.keys.begin(), page.keys.end());
      cursor = page.next;
      if (++calls % 4 == 0) {
        while (churned.load() == last) std::this_thread::yield();
        last = churned.load();
      }
    } while (cursor != 0);
    for (const std::string& k : stay) EXPECT_EQ(seen.count(k), 1u) << k;
    EXPECT_GT(churned.load(), before);
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  // DBSIZE is the index's count: every key once.
  std::set<std::string> all;
  uint64_t cursor = 0;
  do {
    const commands::ScanPage page = ks.Scan(cursor, 1000);
    for (const std::string& k : page.keys) EXPECT_TRUE(all.insert(k).second);
    cursor = page.next;
  } while (cursor != 0);
  EXPECT_EQ(ks.Size(), all.size());
  EXPECT_EQ(ks.Keys().size(), all.size());
  ASSERT_TRUE(ks.Close().ok());
}

}  // namespace
}  // namespace shardfilter::testing
