// The hash-indexed memtable (persistence/hash_memtable.h) under a
// plain RocksDB, against a std::map: Put / Delete / overwrite / Get, reads
// at snapshots (several versions of a key in one memtable), ordered
// iteration both ways and Seek / SeekForPrev, across flushes and WAL
// replay. Few buckets, so that chains are long. Concurrent readers during
// writes: hash_memtable_stress_test.cc.
#include "shardfilter/persistence/hash_memtable.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/memtablerep.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "store_test_util.h"

namespace shardfilter {
namespace {

using Model = std::map<std::string, std::string>;

class HashMemTableTest : public ::testing::Test {
 protected:
  void Open(size_t write_buffer = 64 << 20) {
    db_.reset();
    rocksdb::Options o;
    o.create_if_missing = true;
    o.allow_concurrent_memtable_write = false;
    o.write_buffer_size = write_buffer;
    o.memtable_factory = persistence::internal::NewHashIndexMemTableFactory(16);
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.path(), &db).ok());
    db_.reset(db);
  }

  // Every key of the model (and some absent ones) by Get, at `snap`.
  void CheckGets(const Model& m, const rocksdb::Snapshot* snap = nullptr) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snap;
    for (int i = 0; i < 600; ++i) {
      std::string k = KeyOf(i), v;
      rocksdb::Status s = db_->Get(ro, k, &v);
      auto it = m.find(k);
      if (it == m.end()) {
        ASSERT_TRUE(s.IsNotFound()) << k << " " << s.ToString();
      } else {
        ASSERT_TRUE(s.ok()) << k << " " << s.ToString();
        ASSERT_EQ(v, it->second) << k;
      }
    }
  }

  // Forward and backward scans, and seeks to keys present and absent.
  void CheckIteration(const Model& m, const rocksdb::Snapshot* snap) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snap;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    auto want = m.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++want) {
      ASSERT_NE(want, m.end());
      ASSERT_EQ(it->key().ToString(), want->first);
      ASSERT_EQ(it->value().ToString(), want->second);
    }
    ASSERT_EQ(want, m.end());
    auto back = m.rbegin();
    for (it->SeekToLast(); it->Valid(); it->Prev(), ++back) {
      ASSERT_NE(back, m.rend());
      ASSERT_EQ(it->key().ToString(), back->first);
    }
    ASSERT_EQ(back, m.rend());
    for (int i = 0; i < 600; i += 7) {
      std::string target = KeyOf(i);
      if (i % 2) target.push_back('+');  // absent: between two keys
      it->Seek(target);
      auto lb = m.lower_bound(target);
      ASSERT_EQ(it->Valid(), lb != m.end()) << target;
      if (it->Valid()) {
        ASSERT_EQ(it->key().ToString(), lb->first);
      }
      it->SeekForPrev(target);
      auto ub = m.upper_bound(target);
      ASSERT_EQ(it->Valid(), ub != m.begin()) << target;
      if (it->Valid()) {
        ASSERT_EQ(it->key().ToString(), std::prev(ub)->first);
      }
    }
    ASSERT_TRUE(it->status().ok());
  }

  static std::string KeyOf(int i) {
    char buf[16];
    return std::string(buf, snprintf(buf, sizeof buf, "key%d", i));
  }

  // Random puts (often overwrites) and deletes; a snapshot with its model
  // copy every 500 steps, checked at the end.
  void RandomWork(Model& m, uint64_t seed, int steps) {
    std::mt19937_64 rng(seed);
    std::vector<std::pair<const rocksdb::Snapshot*, Model>> snaps;
    for (int step = 0; step < steps; ++step) {
      std::string k = KeyOf(rng() % 500);
      if (rng() % 4 == 0) {
        ASSERT_TRUE(db_->Delete({}, k).ok());
        m.erase(k);
      } else {
        std::string v = std::to_string(step);
        ASSERT_TRUE(db_->Put({}, k, v).ok());
        m[k] = v;
      }
      if (step % 500 == 0) snaps.emplace_back(db_->GetSnapshot(), m);
    }
    CheckGets(m);
    CheckIteration(m, nullptr);
    for (auto& [snap, old] : snaps) {
      CheckGets(old, snap);
      CheckIteration(old, snap);
      db_->ReleaseSnapshot(snap);
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<rocksdb::DB> db_;
};

TEST_F(HashMemTableTest, MatchesMapInOneMemtable) {
  Open();
  Model m;
  RandomWork(m, 1, 4000);
}

TEST_F(HashMemTableTest, MatchesMapAcrossFlushesAndReopen) {
  Open(64 << 10);  // a flush every few hundred writes
  Model m;
  RandomWork(m, 2, 6000);
  ASSERT_TRUE(db_->Put({}, "tail", "in the WAL only").ok());
  m["tail"] = "in the WAL only";
  Open(64 << 10);  // WAL replay into a fresh memtable
  CheckGets(m);
  CheckIteration(m, nullptr);
  RandomWork(m, 3, 3000);
}

TEST_F(HashMemTableTest, EmptyAndImmutableMemtableScans) {
  Open();
  CheckIteration({}, nullptr);
  Model m;
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(db_->Put({}, KeyOf(i), "x").ok());
    m.emplace(KeyOf(i), "x");
  }
  // Flush sorts the now-immutable memtable once (cached for other scans).
  ASSERT_TRUE(db_->Flush({}).ok());
  CheckGets(m);
  CheckIteration(m, nullptr);
}

}  // namespace
}  // namespace shardfilter
