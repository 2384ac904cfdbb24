// Helpers for the persistence / engine tests: a temporary store directory,
// raw RocksDB access to tamper with stored values, and spec shorthands.
#ifndef SHARDFILTER_TESTS_STORE_TEST_UTIL_H_
#define SHARDFILTER_TESTS_STORE_TEST_UTIL_H_

#include <rocksdb/db.h>
#include <rocksdb/file_system.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shardfilter/engine/database.h"
#include "shardfilter/persistence/log/fs_env.h"
#include "test_util.h"

// ASSERT_OK / EXPECT_OK of test_util.h bind a reference to their argument,
// which dangles for `Temporary().status()` (ASan: stack-use-after-scope).
// These copy the Status first; the store tests use them throughout.
#define SF_ASSERT_OK(expr)                             \
  do {                                                 \
    const ::shardfilter::Status sf_copy_ = (expr);     \
    ASSERT_TRUE(sf_copy_.ok()) << sf_copy_.ToString(); \
  } while (0)
#define SF_EXPECT_OK(expr)                             \
  do {                                                 \
    const ::shardfilter::Status sf_copy_ = (expr);     \
    EXPECT_TRUE(sf_copy_.ok()) << sf_copy_.ToString(); \
  } while (0)

namespace shardfilter::testing {

// The journal component's Env over RocksDB's default file system (a
// Store's, Store::log_env, when no test Env is installed), for tests that
// make logs without a store.
inline persistence::Env& LogEnv() {
  static const std::shared_ptr<persistence::Env> env =
      persistence::NewFileSystemEnv(rocksdb::FileSystem::Default());
  return *env;
}

// A fresh directory under $TMPDIR (or /tmp), removed on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/sfstore_XXXXXX";
    path_ = mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string db() const { return path_ + "/db"; }

 private:
  std::string path_;
};

inline FilterSpec Spec(FilterType type, uint64_t capacity, uint32_t shards,
                       Durability d = Durability::kJournal) {
  FilterSpec spec;
  spec.type = type;
  spec.capacity = capacity;
  spec.fpp = 0.01;
  spec.shards = shards;
  spec.durability = d;
  return spec;
}

inline DatabaseOptions Options(const std::string& path) {
  DatabaseOptions o;
  o.path = path;
  return o;
}

// Opens or fails the current test (returns null then).
inline std::unique_ptr<Database> MustOpen(const DatabaseOptions& o) {
  auto db = Database::Open(o);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return db.ok() ? std::move(*db) : nullptr;
}

// Raw access to the store's column families, for corruption tests. Open
// only while no Database has the directory open.
class RawStore {
 public:
  explicit RawStore(const std::string& path) {
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, {}},
        {"catalog", {}},
        {"shards", {}},
        {"journal", {}}};
    rocksdb::DBOptions o;
    status_ = rocksdb::DB::Open(o, path, cfs, &handles_, &db_);
  }
  ~RawStore() {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    delete db_;
  }
  bool ok() const { return status_.ok(); }
  rocksdb::ColumnFamilyHandle* cf(const std::string& name) {
    for (auto* h : handles_) {
      if (h->GetName() == name) return h;
    }
    return nullptr;
  }
  // All (key, value) pairs of a column family, in key order.
  std::vector<std::pair<std::string, std::string>> Scan(
      const std::string& cf_name) {
    std::vector<std::pair<std::string, std::string>> out;
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf(cf_name)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      out.emplace_back(it->key().ToString(), it->value().ToString());
    }
    return out;
  }
  void Put(const std::string& cf_name, const std::string& k,
           const std::string& v) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    db_->Put(wo, cf(cf_name), k, v).PermitUncheckedError();
  }
  void Delete(const std::string& cf_name, const std::string& k) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    db_->Delete(wo, cf(cf_name), k).PermitUncheckedError();
  }

 private:
  rocksdb::DB* db_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::Status status_;
};

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_STORE_TEST_UTIL_H_
