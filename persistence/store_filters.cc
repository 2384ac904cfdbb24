// Store: the filters' values (docs/format-store.md): the catalog, the
// RocksDB journal family, checkpoint chunks, and commits. The collection of
// what no commit refers to is store_garbage.cc; opening and writing the store,
// store.cc.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shardfilter/filters/detail/tsan.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/persistence/filter_expiry.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/log/paths.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::persistence {

using internal::FromRocks;

namespace {

// Chunks per WriteBatch when writing a checkpoint: ~16 MiB per write keeps
// the memtable and WAL record sizes reasonable.
constexpr uint64_t kChunkBatchBytes = 16u << 20;

rocksdb::Slice ToSlice(std::string_view s) {
  return rocksdb::Slice(s.data(), s.size());
}

std::string ShardWhat(std::string_view name, uint32_t shard) {
  return DescribeName(name) + " shard " + std::to_string(shard);
}

}  // namespace

Result<std::vector<CatalogEntry>> Store::LoadCatalog(
    std::vector<std::pair<std::string, Status>>* bad) const {
  std::vector<CatalogEntry> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), catalog_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string name = it->key().ToString();
    auto d = DecodeDescriptor(it->value().ToStringView(), name);
    if (!d.ok()) {
      if (bad == nullptr) return d.status();
      bad->emplace_back(std::move(name), d.status());
      continue;
    }
    out.push_back({std::move(name), std::move(*d)});
  }
  SF_RETURN_IF_ERROR(FromRocks(it->status(), "reading the catalog"));
  return out;
}

Status Store::CreateFilter(std::string_view name, const FilterDescriptor& d,
                           bool sync) {
  rocksdb::WriteBatch batch;
  if (d.retain_hashes) SF_RETURN_IF_ERROR(EnsureHashesFamily());
  // Keys under a name with no descriptor are debris (an import that
  // failed in this session; a crash's are collected at open): deleted in
  // the creating batch, with a range tombstone only where there are any
  // (many tombstones slow every later seek: store_garbage.cc G1).
  SF_RETURN_IF_ERROR(DeleteNameDebris(name, &batch));
  batch.Delete(default_cf_, FilterJournalEpochKey(name));  // a stale one
  batch.Delete(default_cf_, FilterExpiryKey(name));        // no deadline
  // A filter created anew lost nothing (sync_marker.h W4).
  batch.Delete(default_cf_, WalLossKey(SyncedKind::kFilter, name));
  batch.Put(catalog_cf_, ToSlice(name), EncodeDescriptor(d));
  return Write(&batch, sync, "creating " + DescribeName(name));
}

Status Store::DropFilter(std::string_view name) {
  rocksdb::WriteBatch batch;
  std::string prefix = NamePrefix(name);
  std::string end = PrefixSuccessor(prefix);
  batch.Delete(catalog_cf_, ToSlice(name));
  batch.Delete(default_cf_, FilterJournalEpochKey(name));
  batch.Delete(default_cf_, FilterExpiryKey(name));
  batch.Delete(default_cf_, WalLossKey(SyncedKind::kFilter, name));
  batch.DeleteRange(shards_cf_, prefix, end);
  batch.DeleteRange(journal_cf_, prefix, end);
  if (auto* hashes = hashes_cf_.load(std::memory_order_acquire)) {
    batch.DeleteRange(hashes, prefix, end);
  }
  return Write(&batch, true, "dropping " + DescribeName(name));
}

Status Store::WriteJournal(JournalBatch* batch, bool sync) {
  rocksdb::WriteBatch wb;
  for (const auto& [key, value] : batch->pending_) {
    wb.Put(journal_cf_, key, value);
  }
  if (!batch->retained_.empty()) {
    // In key order: consecutive memtable inserts then land next to each
    // other (the skiplist search path stays in cache).
    std::sort(batch->retained_.begin(), batch->retained_.end());
    auto* hashes = hashes_cf_.load(std::memory_order_acquire);
    if (hashes == nullptr) {
      return Status::NotSupported(
          "writing retained hashes: the store has no hashes family");
    }
    for (const auto& [key, delta] : batch->retained_) {
      wb.Merge(hashes, key, delta);
    }
  }
  // A filter's ops under durability sync: sync_marker.h W1, W5.
  const bool marked = sync && sync_marker_ != nullptr && !batch->name_.empty();
  if (marked) SF_RETURN_IF_ERROR(sync_marker_->failure());
  uint64_t last = 0;
  SF_RETURN_IF_ERROR(
      Write(&wb, sync, "writing journal", marked ? &last : nullptr));
  if (marked) {
    sync_marker_->Acknowledge(SyncMarkerSlot(SyncedKind::kFilter, batch->name_),
                              last);
  }
  return Status::OK();
}

Status Store::ReadJournal(
    std::string_view name, uint32_t shard, uint64_t after,
    const std::function<Status(uint64_t, const JournalEntry&)>& fn) const {
  std::string start = JournalKey(name, shard, after + 1);
  std::string end = PrefixSuccessor(ShardPrefix(name, shard));
  if (after == UINT64_MAX) return Status::OK();
  // Recovery reads shards' journals on parallel threads, each with its own
  // iterator; RocksDB (uninstrumented) shares memtable state between them
  // (cached range tombstones, iterator memory allocated on one thread and
  // freed on another) through atomics TSan cannot see: three such reports
  // so far, all frames inside librocksdb (tests/tsan.supp). Accesses in
  // this call are not recorded (filters/detail/tsan.h); what it touches
  // of ours is the caller's thread-local collection, and synchronisation
  // is still recorded.
  ::shardfilter::internal::TsanIgnoreAccesses rocksdb_shared_memtable;
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, journal_cf_));
  for (it->Seek(start); it->Valid(); it->Next()) {
    auto parsed = ParseJournalKey(it->key().ToStringView());
    if (!parsed) {
      return Status::Corruption(ShardWhat(name, shard) +
                                ": malformed journal key");
    }
    std::string what = ShardWhat(name, shard) + " journal sequence " +
                       std::to_string(parsed->number);
    SF_ASSIGN_OR_RETURN(JournalEntry entry,
                        DecodeJournalEntry(it->value().ToStringView(), what));
    SF_RETURN_IF_ERROR(fn(parsed->number, entry).WithContext(what));
  }
  return FromRocks(it->status(),
                   "reading journal of " + ShardWhat(name, shard));
}

Result<ShardRecord> Store::WriteChunks(std::string_view name, uint32_t shard,
                                       uint64_t generation,
                                       std::string_view blob,
                                       uint32_t chunk_bytes) {
  ShardRecord record;
  record.generation = generation;
  record.byte_length = blob.size();
  record.blob_checksum = Checksum64(blob.data(), blob.size());
  rocksdb::WriteBatch batch;
  uint64_t batch_bytes = 0;
  uint32_t chunk = 0;
  std::string what = "writing checkpoint of " + ShardWhat(name, shard);
  for (size_t off = 0; off < blob.size() || chunk == 0; off += chunk_bytes) {
    std::string_view piece = blob.substr(off, chunk_bytes);
    batch.Put(shards_cf_, ChunkKey(name, shard, generation, chunk),
              EncodeChunk(piece));
    ++chunk;
    batch_bytes += piece.size();
    if (batch_bytes >= kChunkBatchBytes) {
      SF_RETURN_IF_ERROR(Write(&batch, false, what));
      batch.Clear();
      batch_bytes = 0;
    }
    if (blob.empty()) break;
  }
  if (batch.Count() > 0) SF_RETURN_IF_ERROR(Write(&batch, false, what));
  record.chunk_count = chunk;
  return record;
}

Status Store::CommitCheckpoint(std::string_view name, const FilterDescriptor& d,
                               std::span<const uint32_t> changed) {
  rocksdb::WriteBatch batch;
  batch.Put(catalog_cf_, ToSlice(name), EncodeDescriptor(d));
  for (uint32_t shard : changed) {
    const ShardRecord& r = d.shards[shard];
    std::string shard_end = PrefixSuccessor(ShardPrefix(name, shard));
    batch.DeleteRange(shards_cf_, GenerationPrefix(name, shard, 0),
                      GenerationPrefix(name, shard, r.generation));
    batch.DeleteRange(
        shards_cf_, GenerationPrefix(name, shard, r.generation + 1), shard_end);
    batch.DeleteRange(journal_cf_, JournalKey(name, shard, 0),
                      JournalKey(name, shard, r.sequence + 1));
  }
  return Write(&batch, true, "committing checkpoint of " + DescribeName(name));
}

Result<std::string> Store::LoadShardBlob(std::string_view name, uint32_t shard,
                                         const ShardRecord& record) const {
  std::string blob;
  blob.reserve(record.byte_length);
  std::string value;
  // A shard's chunks are read once, at its load: caching them would only
  // hold a second copy of the table in RocksDB's block cache.
  rocksdb::ReadOptions once;
  once.fill_cache = false;
  for (uint32_t chunk = 0; chunk < record.chunk_count; ++chunk) {
    std::string what = ShardWhat(name, shard) + " generation " +
                       std::to_string(record.generation) + " chunk " +
                       std::to_string(chunk);
    rocksdb::Status s =
        db_->Get(once, shards_cf_,
                 ChunkKey(name, shard, record.generation, chunk), &value);
    if (s.IsNotFound()) {
      return Status::Corruption(what + ": missing (checkpoint has " +
                                std::to_string(record.chunk_count) +
                                " chunks)");
    }
    SF_RETURN_IF_ERROR(FromRocks(s, "reading " + what));
    SF_ASSIGN_OR_RETURN(std::string_view bytes, DecodeChunk(value, what));
    blob.append(bytes);
    if (blob.size() > record.byte_length) {
      return Status::Corruption(what + ": chunks hold more than the recorded " +
                                std::to_string(record.byte_length) + " bytes");
    }
  }
  std::string what = ShardWhat(name, shard) + " generation " +
                     std::to_string(record.generation);
  if (blob.size() != record.byte_length) {
    return Status::Corruption(
        what + ": chunks hold " + std::to_string(blob.size()) +
        " bytes, checkpoint record says " + std::to_string(record.byte_length));
  }
  if (Checksum64(blob.data(), blob.size()) != record.blob_checksum) {
    return Status::Corruption(what + ": shard checksum mismatch");
  }
  return blob;
}

}  // namespace shardfilter::persistence
