// Retained hashes: the column family's options and merge operator, the
// snapshot scan, and the Store's calls on the family.
#include "shardfilter/persistence/retained_hashes.h"

#include <rocksdb/compaction_filter.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <vector>

#include "shardfilter/persistence/hash_memtable.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/log/paths.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::persistence {

using internal::FromRocks;

namespace {

int64_t LoadI64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return static_cast<int64_t>(v);
}

// Sums i64 counts. Associative and commutative, so RocksDB may combine
// operands in any grouping. A malformed operand or value fails the merge
// (RocksDB then reports Corruption to the reader or the compaction).
class CountAddOperator : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* out,
             rocksdb::Logger*) const override {
    if (value.size() != 8) return false;
    if (existing != nullptr && existing->size() != 8) return false;
    int64_t sum = LoadI64(value.data());
    if (existing != nullptr) sum += LoadI64(existing->data());
    *out = EncodeRetainedCount(sum);
    return true;
  }
  const char* Name() const override { return "shardfilter.CountAdd"; }
};

// R1. Collecting counts of 0. The family is written only by Merge (+1/-1)
// and DeleteRange (drop, create, migration), never by Put or a point
// Delete. So a stored *value* (not an operand) exists only where a
// compaction fully merged a key's operands because nothing older was left
// below it (the bottom of its history, or a range tombstone that stays in
// the output). Removing such a value of count 0 therefore exposes nothing
// older, and any newer operands then merge with no base, which sums to the
// same count: the multiset read back is unchanged. An operand of 0 (two
// operands that cancelled in a partial merge) is the sum's identity and is
// dropped at any level. Negative counts (never written by a correct
// history) are kept, so that the damage stays visible. RocksDB does not
// pass merge results to the filter: a key whose count reached 0 goes at
// the compaction after the one that merged it.
class ZeroCountFilter : public rocksdb::CompactionFilter {
 public:
  Decision FilterV2(int, const rocksdb::Slice&, ValueType type,
                    const rocksdb::Slice& value, std::string*,
                    std::string*) const override {
    if (type == ValueType::kBlobIndex || value.size() != 8) {
      return Decision::kKeep;
    }
    return LoadI64(value.data()) == 0 ? Decision::kRemove : Decision::kKeep;
  }
  const char* Name() const override { return "shardfilter.ZeroCount"; }
};

}  // namespace

rocksdb::ColumnFamilyOptions HashesCfOptions() {
  rocksdb::ColumnFamilyOptions o;
  o.merge_operator = std::make_shared<CountAddOperator>();
  static const ZeroCountFilter kZeroCount;  // stateless: thread-safe
  o.compaction_filter = &kZeroCount;        // R1
  // Written by every op, read only by migrations' scans: the hash-indexed
  // memtable makes a merge ~2 cache misses instead of a skiplist descent
  // (which made a bulk load with retained hashes ~15x slower than without).
  o.memtable_factory =
      internal::NewHashIndexMemTableFactory(o.write_buffer_size / 64);
  rocksdb::BlockBasedTableOptions t;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

RetainedHashScan::RetainedHashScan(rocksdb::DB* db,
                                   rocksdb::ColumnFamilyHandle* cf,
                                   std::string name, std::string start)
    : db_(db), name_(std::move(name)), start_(std::move(start)) {
  prefix_ = NamePrefix(name_);
  end_ = PrefixSuccessor(prefix_);
  // The snapshot now (the caller's instant: a migration's cut, under its
  // locks); the iterator at the first Next(), outside them: creating one
  // over a hash-indexed memtable sorts its entries (~0.2 s per 1M).
  snapshot_ = db_->GetSnapshot();
  cf_ = cf;
}

RetainedHashScan::~RetainedHashScan() {
  it_.reset();
  if (snapshot_ != nullptr) db_->ReleaseSnapshot(snapshot_);
}

Status RetainedHashScan::Next(size_t max,
                              std::vector<std::pair<uint64_t, int64_t>>* out,
                              bool* more) {
  if (!started_) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot_;
    // The bound must outlive the iterator: it points into end_, a member.
    upper_ = std::make_unique<rocksdb::Slice>(end_);
    ro.iterate_upper_bound = upper_.get();
    it_.reset(db_->NewIterator(ro, cf_));
    it_->Seek(start_);
    started_ = true;
  }
  size_t added = 0;
  for (; it_->Valid() && added < max; it_->Next()) {
    rocksdb::Slice k = it_->key(), v = it_->value();
    if (k.size() != prefix_.size() + 8 || v.size() != 8) {
      return Status::Corruption(DescribeName(name_) +
                                " retained hashes: malformed key or value");
    }
    int64_t count = LoadI64(v.data());
    if (count <= 0) continue;
    out->emplace_back(LoadBE(k.data() + prefix_.size(), 8), count);
    ++added;
  }
  returned_ += added;
  SF_RETURN_IF_ERROR(FromRocks(
      it_->status(), "reading retained hashes of " + DescribeName(name_)));
  *more = it_->Valid();
  return Status::OK();
}

Status Store::EnsureHashesFamily() {
  std::lock_guard lock(hashes_mu_);
  if (hashes_cf_.load(std::memory_order_acquire) != nullptr) {
    return Status::OK();
  }
  if (read_only_) {
    return Status::NotSupported("the store is open read-only");
  }
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  SF_RETURN_IF_ERROR(
      FromRocks(db_->CreateColumnFamily(HashesCfOptions(), kHashesCf, &cf),
                "creating the hashes column family"));
  hashes_cf_.store(cf, std::memory_order_release);
  return Status::OK();
}

Result<std::unique_ptr<RetainedHashScan>> Store::ScanRetainedHashes(
    std::string_view name, std::optional<uint64_t> after) const {
  auto* cf = hashes_cf_.load(std::memory_order_acquire);
  if (cf == nullptr) {
    return Status::NotFound("the store at \"" + path_ +
                            "\" holds no retained hashes");
  }
  // After the last possible hash: start past the name's range.
  std::string start = !after.has_value() ? NamePrefix(name)
                      : *after == UINT64_MAX
                          ? PrefixSuccessor(NamePrefix(name))
                          : RetainedHashKey(name, *after + 1);
  return std::unique_ptr<RetainedHashScan>(
      new RetainedHashScan(db_, cf, std::string(name), std::move(start)));
}

Status Store::PutRetainedHashes(std::string_view name,
                                std::span<const uint64_t> hashes) {
  SF_RETURN_IF_ERROR(EnsureHashesFamily());
  auto* cf = hashes_cf_.load(std::memory_order_acquire);
  rocksdb::WriteBatch batch;
  const std::string one = EncodeRetainedCount(1);
  for (uint64_t h : hashes) batch.Merge(cf, RetainedHashKey(name, h), one);
  return Write(&batch, false,
               "writing retained hashes of " + DescribeName(name));
}

Status Store::Compact() {
  rocksdb::CompactRangeOptions o;
  // Values already at the last level are rewritten too: that is where a
  // fully merged count of 0 waits for the filter (R1).
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (rocksdb::ColumnFamilyHandle* cf :
       {default_cf_, catalog_cf_, shards_cf_, journal_cf_,
        hashes_cf_.load(std::memory_order_acquire)}) {
    if (cf == nullptr) continue;
    SF_RETURN_IF_ERROR(FromRocks(db_->CompactRange(o, cf, nullptr, nullptr),
                                 "compacting the store"));
  }
  return Status::OK();
}

Store::MemoryUsage Store::ApproximateMemoryUsage() const {
  MemoryUsage m;
  // A property RocksDB cannot compute leaves its figure 0.
  (void)db_->GetAggregatedIntProperty("rocksdb.cur-size-all-mem-tables",
                                      &m.memtables);
  (void)db_->GetAggregatedIntProperty("rocksdb.block-cache-usage",
                                      &m.block_cache);
  (void)db_->GetAggregatedIntProperty("rocksdb.estimate-table-readers-mem",
                                      &m.table_readers);
  return m;
}

Status Store::FlushMemtables() {
  if (read_only_) return Status::OK();  // a read-only store writes none
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  for (rocksdb::ColumnFamilyHandle* cf :
       {default_cf_, catalog_cf_, shards_cf_, journal_cf_,
        hashes_cf_.load(std::memory_order_acquire)}) {
    if (cf != nullptr) cfs.push_back(cf);
  }
  return FromRocks(db_->Flush(rocksdb::FlushOptions(), cfs),
                   "flushing the store's memtables");
}

Status Store::SyncWal() {
  if (read_only_) return Status::NotSupported("the store is open read-only");
  SF_RETURN_IF_ERROR(FromRocks(db_->FlushWAL(true), "syncing the WAL"));
  return Status::OK();
}

Status Store::CommitMigration(std::string_view name, const FilterDescriptor& d,
                              JournalBatch* tail) {
  rocksdb::WriteBatch batch;
  const std::string prefix = NamePrefix(name);
  const std::string end = PrefixSuccessor(prefix);
  for (uint32_t shard = 0; shard < d.shards.size(); ++shard) {
    const uint64_t g = d.shards[shard].generation;
    batch.DeleteRange(shards_cf_, GenerationPrefix(name, shard, 0),
                      GenerationPrefix(name, shard, g));
    batch.DeleteRange(shards_cf_, GenerationPrefix(name, shard, g + 1),
                      PrefixSuccessor(ShardPrefix(name, shard)));
  }
  batch.DeleteRange(shards_cf_,
                    ShardPrefix(name, static_cast<uint32_t>(d.shards.size())),
                    end);
  batch.DeleteRange(journal_cf_, prefix, end);
  batch.Delete(default_cf_, FilterJournalEpochKey(name));  // the source's
  if (!d.retain_hashes) {
    if (auto* cf = hashes_cf_.load(std::memory_order_acquire)) {
      batch.DeleteRange(cf, prefix, end);
    }
  }
  if (tail != nullptr) {
    for (const auto& [key, value] : tail->pending_) {
      batch.Put(journal_cf_, key, value);
    }
  }
  batch.Put(catalog_cf_, rocksdb::Slice(name.data(), name.size()),
            EncodeDescriptor(d));
  return Write(&batch, true,
               "committing the migration of " + DescribeName(name));
}

}  // namespace shardfilter::persistence
