// Store::Verify: reads back every stored value and checks it.
#include <rocksdb/db.h>

#include <algorithm>
#include <map>
#include <set>

#include "shardfilter/filters/envelope.h"
#include "shardfilter/persistence/chain_blob.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/store.h"
#include "shardfilter/persistence/wal_tail.h"

namespace shardfilter::persistence {

using internal::FromRocks;

Status Store::Verify(StoreVerifyReport* report) const {
  // 0. Expiry deadlines decode.
  {
    std::vector<std::string> bad;
    SF_RETURN_IF_ERROR(ListFilterExpiries(&bad).status());
    for (std::string& b : bad) report->problems.push_back(std::move(b));
  }
  // 1. Catalog: every descriptor decodes.
  std::map<std::string, FilterDescriptor, std::less<>> catalog;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), catalog_cf_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string name = it->key().ToString();
      report->bytes += it->value().size();
      ++report->filters;
      auto d = DecodeDescriptor(it->value().ToStringView(), name);
      if (!d.ok()) {
        report->problems.push_back(d.status().ToString());
        continue;
      }
      catalog.emplace(std::move(name), std::move(*d));
    }
    SF_RETURN_IF_ERROR(FromRocks(it->status(), "verifying the catalog"));
  }
  // 2. Chunks: each one's own frame and checksum; which ones are debris.
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), shards_cf_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      report->bytes += it->value().size();
      ++report->chunks;
      auto key = ParseChunkKey(it->key().ToStringView());
      if (!key) {
        report->problems.push_back("Corruption: malformed chunk key");
        continue;
      }
      std::string what = DescribeName(key->name) + " shard " +
                         std::to_string(key->shard) + " generation " +
                         std::to_string(key->number) + " chunk " +
                         std::to_string(key->chunk);
      auto chunk = DecodeChunk(it->value().ToStringView(), what);
      if (!chunk.ok()) report->problems.push_back(chunk.status().ToString());
      auto d = catalog.find(key->name);
      if (d == catalog.end() || key->shard >= d->second.shards.size() ||
          d->second.shards[key->shard].generation != key->number ||
          key->chunk >= d->second.shards[key->shard].chunk_count) {
        ++report->orphan_values;
      }
    }
    SF_RETURN_IF_ERROR(FromRocks(it->status(), "verifying chunks"));
  }
  // 3. Journal entries.
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), journal_cf_));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      report->bytes += it->value().size();
      ++report->journal_entries;
      auto key = ParseJournalKey(it->key().ToStringView());
      if (!key) {
        report->problems.push_back("Corruption: malformed journal key");
        continue;
      }
      std::string what = DescribeName(key->name) + " shard " +
                         std::to_string(key->shard) + " journal sequence " +
                         std::to_string(key->number);
      auto entry = DecodeJournalEntry(it->value().ToStringView(), what);
      if (!entry.ok()) report->problems.push_back(entry.status().ToString());
      auto d = catalog.find(key->name);
      if (d == catalog.end() || key->shard >= d->second.shards.size() ||
          key->number <= d->second.shards[key->shard].sequence) {
        ++report->orphan_values;
      }
    }
    SF_RETURN_IF_ERROR(FromRocks(it->status(), "verifying the journal"));
  }
  // 3b. Retained hashes: name-prefixed 8-byte hashes with 8-byte counts
  //     (merges resolved by the read), of a filter that retains them.
  if (auto* hashes = hashes_cf_.load(std::memory_order_acquire)) {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), hashes));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      report->bytes += it->value().size();
      ++report->retained_hashes;
      const std::string_view k = it->key().ToStringView();
      const size_t len = k.size() >= 2 ? LoadBE(k.data(), 2) : 0;
      if (k.size() != 2 + len + 8 || len == 0) {
        report->problems.push_back("Corruption: malformed retained hash key");
        continue;
      }
      const std::string_view name = k.substr(2, len);
      if (it->value().size() != 8) {
        report->problems.push_back(
            "Corruption: " + DescribeName(name) + " retained hash: value of " +
            std::to_string(it->value().size()) + " bytes, expected 8");
      }
      auto d = catalog.find(name);
      if (d == catalog.end() || !d->second.retain_hashes) {
        ++report->orphan_values;
      }
    }
    // A malformed merge operand surfaces here as a Corruption status.
    Status s = FromRocks(it->status(), "verifying retained hashes");
    if (s.IsCorruption()) {
      report->problems.push_back(s.ToString());
    } else {
      SF_RETURN_IF_ERROR(s);
    }
  }
  // 4. Every committed shard blob reassembles and is a chain of filter
  //    envelopes (persistence/chain_blob.h).
  for (const auto& [name, d] : catalog) {
    for (uint32_t shard = 0; shard < d.shards.size(); ++shard) {
      if (d.shards[shard].generation == 0) continue;
      auto blob = LoadShardBlob(name, shard, d.shards[shard]);
      ++report->shard_blobs;
      if (!blob.ok()) {
        report->problems.push_back(blob.status().ToString());
        continue;
      }
      const std::string what =
          DescribeName(name) + " shard " + std::to_string(shard) + " blob";
      auto links = DecodeChainBlob(*blob, what);
      if (!links.ok()) {
        report->problems.push_back(links.status().ToString());
        continue;
      }
      for (size_t i = 0; i < links->size(); ++i) {
        auto env = OpenEnvelope((*links)[i].envelope);
        const std::string link_what = what + " link " + std::to_string(i);
        if (!env.ok()) {
          report->problems.push_back(
              env.status().WithContext(link_what).ToString());
        } else if (env->type != d.type) {
          report->problems.push_back("Corruption: " + link_what + " holds a " +
                                     FilterTypeName(env->type) +
                                     " filter, descriptor says " +
                                     FilterTypeName(d.type));
        }
      }
    }
  }
  SF_RETURN_IF_ERROR(VerifySyncedWrites(report));
  // 6. A log that ends inside a record: writes were cut off (a crash's or
  //    power loss's torn tail under durability journal or none, or a log
  //    cut short): a note, not a problem; RocksDB replayed what precedes.
  if (!read_only_) return Status::OK();  // a writable open rewrote the logs
  SF_ASSIGN_OR_RETURN(std::vector<std::string> torn,
                      DescribeWalTornTails(path_));
  for (std::string& t : torn) report->notes.push_back(std::move(t));
  return Status::OK();
}

Status Store::VerifySyncedWrites(StoreVerifyReport* report) const {
  // 5. Writes acknowledged under durability sync and lost with the log
  //    (sync_marker.h W3, W4): every loss record, and, on a read-only
  //    store, every object of a slot this open found above the log's end.
  std::set<std::pair<SyncedKind, std::string>> named;
  const std::string prefix = WalLossPrefix();
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), default_cf_));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    SyncedKind kind;
    std::string name;
    if (!ParseWalLossKey(it->key().ToStringView(), &kind, &name)) {
      report->problems.push_back("Corruption: malformed loss record key");
      continue;
    }
    auto loss = DecodeWalLoss(it->value().ToStringView(),
                              "the loss record of " + DescribeName(name));
    report->problems.push_back(loss.ok()
                                   ? WalLossError(kind, name, *loss).ToString()
                                   : loss.status().ToString());
    named.emplace(kind, std::move(name));
  }
  SF_RETURN_IF_ERROR(FromRocks(it->status(), "verifying loss records"));
  if (lost_slots_.empty()) return Status::OK();
  std::set<uint32_t> slots;
  uint64_t last = 0;
  for (const auto& [i, seq] : lost_slots_) {
    slots.insert(i);
    last = std::max(last, seq);
  }
  SF_ASSIGN_OR_RETURN(auto objects, ObjectsInSlots(slots));
  bool any = false;
  for (const auto& [kind, name] : objects) {
    any = true;
    if (named.count({kind, name}) != 0) continue;
    SF_ASSIGN_OR_RETURN(std::optional<WalLoss> loss,
                        LostSyncedWrites(kind, name));
    if (loss)
      report->problems.push_back(WalLossError(kind, name, *loss).ToString());
  }
  if (!any) {
    report->problems.push_back(
        "Corruption: the write-ahead log ends at sequence " +
        std::to_string(recovered_seq_) + ", but " + kSyncMarkerFile +
        " records writes acknowledged under durability sync up to sequence " +
        std::to_string(last) + ": sequences " +
        std::to_string(recovered_seq_ + 1) + ".." + std::to_string(last) +
        " were lost, of objects the store no longer names");
  }
  return Status::OK();
}

}  // namespace shardfilter::persistence
