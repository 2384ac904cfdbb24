// Store: the sync marker at open and the loss records
// (persistence/sync_marker.h W3-W5).
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <map>

#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::persistence {

using internal::FromRocks;

Status Store::CheckSyncMarker(std::optional<SyncMarkerState> marker) {
  // W3: every write RocksDB gave back is at or below this sequence.
  recovered_seq_ = db_->GetLatestSequenceNumber();
  std::set<uint32_t> lost;
  std::map<uint32_t, uint64_t> last;
  if (marker) {
    for (uint32_t i = 0; i < marker->slots.size(); ++i) {
      if (marker->slots[i] > recovered_seq_) {
        lost_slots_.emplace_back(i, marker->slots[i]);
        lost.insert(i);
        last[i] = marker->slots[i];
      }
    }
  }
  if (read_only_) return Status::OK();  // W4: answers from lost_slots_
  if (!lost.empty()) {
    // W4: a loss record per object that may have lost writes, synced,
    // before the slots are zeroed. One already there (an open that
    // stopped between the two) is kept: it names the first loss.
    SF_ASSIGN_OR_RETURN(auto objects, ObjectsInSlots(lost));
    rocksdb::WriteBatch batch;
    for (const auto& [kind, name] : objects) {
      const std::string key = WalLossKey(kind, name);
      std::string value;
      rocksdb::Status s =
          db_->Get(rocksdb::ReadOptions(), default_cf_, key, &value);
      if (s.ok()) continue;
      if (!s.IsNotFound()) {
        return FromRocks(s, "reading the loss record of " + name);
      }
      batch.Put(default_cf_, key,
                EncodeWalLoss(
                    {recovered_seq_ + 1, last[SyncMarkerSlot(kind, name)]}));
    }
    if (batch.Count() > 0) {
      SF_RETURN_IF_ERROR(Write(&batch, true,
                               "recording the writes lost with the "
                               "write-ahead log"));
    }
  }
  SF_ASSIGN_OR_RETURN(sync_marker_,
                      SyncMarker::Open(fs_.get(), path_, std::move(marker)));
  if (!lost.empty()) {
    const std::vector<uint32_t> slots(lost.begin(), lost.end());
    SF_RETURN_IF_ERROR(sync_marker_->Clear(slots));
  }
  if (dedup_ != nullptr) dedup_->SetSyncMarker(sync_marker_.get());
  return Status::OK();
}

Result<std::vector<std::pair<SyncedKind, std::string>>> Store::ObjectsInSlots(
    const std::set<uint32_t>& slots) const {
  std::vector<std::pair<SyncedKind, std::string>> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), catalog_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view name = it->key().ToStringView();
    if (slots.count(SyncMarkerSlot(SyncedKind::kFilter, name)) != 0) {
      out.emplace_back(SyncedKind::kFilter, std::string(name));
    }
  }
  SF_RETURN_IF_ERROR(FromRocks(it->status(), "reading the catalog"));
  if (dedup_ != nullptr) {
    SF_ASSIGN_OR_RETURN(std::vector<std::string> sets, dedup_->ListSets());
    for (std::string& set : sets) {
      if (slots.count(SyncMarkerSlot(SyncedKind::kDedupSet, set)) != 0) {
        out.emplace_back(SyncedKind::kDedupSet, std::move(set));
      }
    }
  }
  return out;
}

Status Store::SyncWritable() const {
  return sync_marker_ != nullptr ? sync_marker_->failure() : Status::OK();
}

Result<std::optional<WalLoss>> Store::LostSyncedWrites(
    SyncedKind kind, std::string_view name) const {
  const std::string key = WalLossKey(kind, name);
  std::string value;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), default_cf_, key, &value);
  if (s.ok()) {
    SF_ASSIGN_OR_RETURN(
        WalLoss loss,
        DecodeWalLoss(value, "the loss record of " + DescribeName(name)));
    return std::optional<WalLoss>(loss);
  }
  if (!s.IsNotFound()) {
    return FromRocks(s, "reading the loss record of " + DescribeName(name));
  }
  // A writable open recorded every loss it found (W4) and zeroed the
  // slots: later objects of those slots lost nothing.
  if (read_only_) {
    const uint32_t slot = SyncMarkerSlot(kind, name);
    for (const auto& [i, seq] : lost_slots_) {
      if (i == slot) return std::optional<WalLoss>({recovered_seq_ + 1, seq});
    }
  }
  return std::optional<WalLoss>();
}

Status Store::ClearLostSyncedWrites(SyncedKind kind, std::string_view name) {
  const std::string key = WalLossKey(kind, name);
  std::string value;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), default_cf_, key, &value);
  if (s.IsNotFound()) return Status::OK();  // nothing to clear: no write
  SF_RETURN_IF_ERROR(
      FromRocks(s, "reading the loss record of " + DescribeName(name)));
  rocksdb::WriteBatch batch;
  batch.Delete(default_cf_, key);
  return Write(&batch, true,
               "clearing the loss record of " + DescribeName(name));
}

}  // namespace shardfilter::persistence
