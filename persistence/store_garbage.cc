// Store: collecting what no commit refers to (the "orphan values" Verify
// counts, store_verify.cc). Debris is left only by an operation a crash or
// an error interrupted before its commit: chunks of a checkpoint or
// migration generation that was never committed, journal entries a commit
// made obsolete, chunks of an import whose descriptor was never put,
// retained hashes of a filter that no longer retains them.
//
// G1. Debris is found by seeks, never by reading a filter's values: a few
//     seeks per shard and one per name in each family, so that collecting
//     the whole store at a writable open costs O(shards) seeks however
//     large the filters are (Database D4 loads none of them).
// G2. Only keys in the shardfilter families, under the length-prefixed
//     name encoding (keys.h), are ever deleted; a key whose name prefix
//     does not parse is left for Verify to report.
// G3. A name whose descriptor does not decode (`keep`) is not touched:
//     its keys are the damaged filter's data, for the user to repair or
//     drop.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <map>
#include <memory>
#include <string>

#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::persistence {

using internal::FromRocks;

// One iterator per family, reused for every seek of a collection: making
// an iterator costs more than the seek (G1). Each seek is bounded above by
// the end of the range it asks about (the iterator reads its bound through
// the Slice it was given, which RocksDB re-checks at every Seek), so that
// a seek never walks the tombstones of dropped or checkpointed keys past
// the range.
class Store::DebrisFinder {
 public:
  explicit DebrisFinder(rocksdb::DB* db) : db_(db) {}
  Result<bool> AnyKeyIn(rocksdb::ColumnFamilyHandle* cf,
                        const std::string& begin, const std::string& end) {
    if (end.empty()) {  // no upper bound: a one-off iterator
      std::unique_ptr<rocksdb::Iterator> it(
          db_->NewIterator(rocksdb::ReadOptions(), cf));
      it->Seek(begin);
      SF_RETURN_IF_ERROR(FromRocks(it->status(), "scanning for debris"));
      return it->Valid();
    }
    Bounded& b = iterators_[cf];
    b.bound_bytes = end;
    b.bound = rocksdb::Slice(b.bound_bytes);
    if (b.it == nullptr) {
      rocksdb::ReadOptions ro;
      ro.iterate_upper_bound = &b.bound;
      b.it.reset(db_->NewIterator(ro, cf));
    }
    b.it->Seek(begin);
    SF_RETURN_IF_ERROR(FromRocks(b.it->status(), "scanning for debris"));
    return b.it->Valid() && b.it->key().compare(b.bound) < 0;
  }

 private:
  struct Bounded {
    std::string bound_bytes;
    rocksdb::Slice bound;  // what the iterator's ReadOptions point at
    std::unique_ptr<rocksdb::Iterator> it;
  };
  rocksdb::DB* db_;
  std::map<rocksdb::ColumnFamilyHandle*, Bounded> iterators_;
};

Status Store::CollectGarbage(std::string_view name, const FilterDescriptor& d,
                             uint32_t* removed_ranges) {
  DebrisFinder finder(db_);
  return CollectGarbage(finder, name, d, removed_ranges);
}

Status Store::CollectGarbage(DebrisFinder& finder, std::string_view name,
                             const FilterDescriptor& d,
                             uint32_t* removed_ranges) {
  rocksdb::WriteBatch batch;
  uint32_t ranges = 0;
  auto maybe_delete = [&](rocksdb::ColumnFamilyHandle* cf,
                          const std::string& begin,
                          const std::string& end) -> Status {
    SF_ASSIGN_OR_RETURN(bool any, finder.AnyKeyIn(cf, begin, end));
    if (any) {
      batch.DeleteRange(cf, begin, end);
      ++ranges;
    }
    return Status::OK();
  };
  for (uint32_t shard = 0; shard < d.shards.size(); ++shard) {
    const ShardRecord& r = d.shards[shard];
    SF_RETURN_IF_ERROR(
        maybe_delete(shards_cf_, GenerationPrefix(name, shard, 0),
                     GenerationPrefix(name, shard, r.generation)));
    // Chunks past the committed count (an earlier, failed write of the
    // same generation that held more of them).
    SF_RETURN_IF_ERROR(maybe_delete(
        shards_cf_, ChunkKey(name, shard, r.generation, r.chunk_count),
        GenerationPrefix(name, shard, r.generation + 1)));
    SF_RETURN_IF_ERROR(maybe_delete(
        shards_cf_, GenerationPrefix(name, shard, r.generation + 1),
        PrefixSuccessor(ShardPrefix(name, shard))));
    SF_RETURN_IF_ERROR(maybe_delete(journal_cf_, JournalKey(name, shard, 0),
                                    JournalKey(name, shard, r.sequence + 1)));
  }
  // Keys of shards beyond the shard count can only be debris.
  std::string past = ShardPrefix(name, static_cast<uint32_t>(d.shards.size()));
  std::string end = PrefixSuccessor(NamePrefix(name));
  SF_RETURN_IF_ERROR(maybe_delete(shards_cf_, past, end));
  SF_RETURN_IF_ERROR(maybe_delete(journal_cf_, past, end));
  if (!d.retain_hashes) {
    if (auto* hashes = hashes_cf_.load(std::memory_order_acquire)) {
      SF_RETURN_IF_ERROR(maybe_delete(hashes, NamePrefix(name), end));
    }
  }
  if (removed_ranges != nullptr) *removed_ranges = ranges;
  if (ranges == 0) return Status::OK();
  return Write(&batch, false, "collecting garbage of " + DescribeName(name));
}

Status Store::DeleteNameDebris(std::string_view name,
                               rocksdb::WriteBatch* batch) {
  DebrisFinder finder(db_);
  const std::string prefix = NamePrefix(name);
  const std::string end = PrefixSuccessor(prefix);
  for (rocksdb::ColumnFamilyHandle* cf :
       {shards_cf_, journal_cf_, hashes_cf_.load(std::memory_order_acquire)}) {
    if (cf == nullptr) continue;
    SF_ASSIGN_OR_RETURN(bool any, finder.AnyKeyIn(cf, prefix, end));
    if (any) batch->DeleteRange(cf, prefix, end);
  }
  return Status::OK();
}

Status Store::CollectUnnamed(rocksdb::ColumnFamilyHandle* cf,
                             const std::set<std::string, std::less<>>& named,
                             uint32_t* removed_ranges) {
  rocksdb::WriteBatch batch;
  uint32_t ranges = 0;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), cf));
  it->SeekToFirst();
  while (it->Valid()) {
    const std::string_view key = it->key().ToStringView();
    const size_t len = key.size() >= 2 ? LoadBE(key.data(), 2) : 0;
    if (key.size() < 2 + len || len == 0) {  // G2: Verify reports it
      it->Next();
      continue;
    }
    const std::string prefix(key.substr(0, 2 + len));
    const std::string end = PrefixSuccessor(prefix);
    if (named.count(std::string_view(prefix).substr(2)) == 0) {
      batch.DeleteRange(cf, prefix, end);
      ++ranges;
    }
    if (end.empty()) break;
    it->Seek(end);  // G1: the next name
  }
  SF_RETURN_IF_ERROR(FromRocks(it->status(), "scanning for debris"));
  if (removed_ranges != nullptr) *removed_ranges += ranges;
  if (ranges == 0) return Status::OK();
  return Write(&batch, false, "collecting the keys of dropped names");
}

Status Store::CollectStoreGarbage(const std::vector<CatalogEntry>& catalog,
                                  const std::vector<std::string>& keep,
                                  uint32_t* removed_ranges) {
  if (read_only_) return Status::NotSupported("the store is open read-only");
  uint32_t total = 0;
  std::set<std::string, std::less<>> named(keep.begin(), keep.end());
  DebrisFinder finder(db_);
  for (const CatalogEntry& entry : catalog) {
    named.insert(entry.name);
    uint32_t ranges = 0;
    SF_RETURN_IF_ERROR(
        CollectGarbage(finder, entry.name, entry.descriptor, &ranges));
    total += ranges;
  }
  SF_RETURN_IF_ERROR(CollectUnnamed(shards_cf_, named, &total));
  SF_RETURN_IF_ERROR(CollectUnnamed(journal_cf_, named, &total));
  if (auto* hashes = hashes_cf_.load(std::memory_order_acquire)) {
    SF_RETURN_IF_ERROR(CollectUnnamed(hashes, named, &total));
  }
  if (removed_ranges != nullptr) *removed_ranges = total;
  return Status::OK();
}

}  // namespace shardfilter::persistence
