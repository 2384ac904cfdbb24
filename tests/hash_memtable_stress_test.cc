// The hash-indexed memtable (persistence/hash_memtable.h) with
// readers running during writes (run under ThreadSanitizer by
// tools/test.sh): every key acknowledged before a Get or an iterator was
// started is seen by it, while memtables fill, turn immutable and flush.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/memtablerep.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shardfilter/persistence/hash_memtable.h"
#include "store_test_util.h"

namespace shardfilter {
namespace {

std::string KeyOf(uint64_t i) {
  std::string k = "k";
  k += std::to_string(i);
  return k;
}

TEST(HashMemTableStressTest, ReadersSeeEveryAcknowledgedKey) {
  testing::TempDir dir;
  rocksdb::Options o;
  o.create_if_missing = true;
  o.allow_concurrent_memtable_write = false;
  o.write_buffer_size = 256 << 10;  // several memtable switches and flushes
  o.memtable_factory = persistence::internal::NewHashIndexMemTableFactory(64);
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir.path(), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);

  constexpr uint64_t kKeys = 20000;
  std::atomic<uint64_t> acked{0};  // keys [0, acked) are written
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (uint64_t i = 0; i < kKeys && !failed; ++i) {
      if (!db->Put({}, KeyOf(i), std::string(20, 'v')).ok()) failed = true;
      acked.store(i + 1, std::memory_order_release);
    }
  });
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      uint64_t state = r + 1, scans = 0;
      while (acked.load(std::memory_order_acquire) < kKeys && !failed) {
        uint64_t n = acked.load(std::memory_order_acquire);
        if (n == 0) continue;
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        std::string v;
        if (!db->Get({}, KeyOf((state >> 33) % n), &v).ok()) failed = true;
        if (r == 0 && ++scans % 500 == 0) {  // a full scan now and then
          std::unique_ptr<rocksdb::Iterator> it(db->NewIterator({}));
          uint64_t seen = 0;
          for (it->SeekToFirst(); it->Valid(); it->Next()) ++seen;
          if (!it->status().ok() || seen < n) failed = true;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(failed);
  std::string v;
  for (uint64_t i = 0; i < kKeys; i += 97) {
    EXPECT_TRUE(db->Get({}, KeyOf(i), &v).ok()) << i;
  }
}

}  // namespace
}  // namespace shardfilter
