#include "shardfilter/persistence/dedup_table.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include "shardfilter/filters/detail/tsan.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/sync_marker.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter::persistence {

using internal::FromRocks;

namespace {

constexpr char kMetaTag = 0x00;
constexpr char kEntryTag = 0x01;
constexpr char kJournalTag = 0x02;
// The format version of a compact entry (no TTL: insert time and bucket 0,
// no payload). Older builds read it as a version from the future
// (NotSupported), never as a wrong entry.
constexpr uint8_t kCompactEntryVersion = 2;

// "dedup set \"name\"" (DescribeName says "filter \"name\"").
std::string SetWhat(std::string_view set) {
  return "dedup set" + DescribeName(set).substr(6);
}

}  // namespace

std::string DedupMetaKey(std::string_view set) {
  std::string k = NamePrefix(set);
  k.push_back(kMetaTag);
  return k;
}

std::string DedupJournalMarkerKey(std::string_view set) {
  std::string k = NamePrefix(set);
  k.push_back(kJournalTag);
  return k;
}

std::string DedupEntryPrefix(std::string_view set) {
  std::string k = NamePrefix(set);
  k.push_back(kEntryTag);
  return k;
}

std::string DedupEntryKey(std::string_view set, std::string_view key) {
  std::string k = DedupEntryPrefix(set);
  k.append(key);
  return k;
}

std::string DedupTimeKey(std::string_view set, uint64_t bucket,
                         std::string_view key) {
  std::string k = NamePrefix(set);
  PutBE64(&k, bucket);
  k.append(key);
  return k;
}

std::string EncodeDedupEntry(const DedupEntry& e) {
  if (e == DedupEntry{}) {  // compact: version 2, kind, XXH3 (10 bytes)
    std::string v;
    v.push_back(static_cast<char>(kCompactEntryVersion));
    v.push_back(static_cast<char>(ValueKind::kDedupEntry));
    shardfilter::internal::PutU64(&v, Checksum64(v.data(), v.size()));
    return v;
  }
  std::string p;
  shardfilter::internal::PutU64(&p, e.insert_ms);
  shardfilter::internal::PutU64(&p, e.bucket);
  return FrameValue(ValueKind::kDedupEntry, p);
}

Result<DedupEntry> DecodeDedupEntry(std::string_view value,
                                    std::string_view what) {
  if (!value.empty() &&
      static_cast<uint8_t>(value[0]) == kCompactEntryVersion) {
    const std::string w(what);
    if (value.size() != kValueOverhead) {
      return Status::Corruption(w + ": compact entry of " +
                                std::to_string(value.size()) +
                                " bytes, want 10");
    }
    if (shardfilter::internal::LoadLE(value.data() + 2, 8) !=
        Checksum64(value.data(), 2)) {
      return Status::Corruption(w + ": checksum mismatch");
    }
    if (static_cast<uint8_t>(value[1]) !=
        static_cast<uint8_t>(ValueKind::kDedupEntry)) {
      return Status::Corruption(w + ": unexpected value kind " +
                                std::to_string(static_cast<uint8_t>(value[1])));
    }
    return DedupEntry{};
  }
  SF_ASSIGN_OR_RETURN(std::string_view p,
                      UnframeValue(value, ValueKind::kDedupEntry, what));
  shardfilter::internal::ByteReader r(p);
  DedupEntry e;
  if (!r.ReadU64(&e.insert_ms) || !r.ReadU64(&e.bucket) || r.remaining()) {
    return Status::Corruption(std::string(what) + ": entry payload of " +
                              std::to_string(p.size()) + " bytes, want 16");
  }
  return e;
}

std::string EncodeDedupMeta(const DedupMeta& m) {
  std::string p;
  shardfilter::internal::PutU64(&p, m.ttl_ms);
  shardfilter::internal::PutU32(&p, m.partitions);
  return FrameValue(ValueKind::kDedupMeta, p);
}

Result<DedupMeta> DecodeDedupMeta(std::string_view value,
                                  std::string_view what) {
  SF_ASSIGN_OR_RETURN(std::string_view p,
                      UnframeValue(value, ValueKind::kDedupMeta, what));
  shardfilter::internal::ByteReader r(p);
  DedupMeta m;
  if (!r.ReadU64(&m.ttl_ms) || !r.ReadU32(&m.partitions) || r.remaining()) {
    return Status::Corruption(std::string(what) + ": meta payload of " +
                              std::to_string(p.size()) + " bytes, want 12");
  }
  if ((m.ttl_ms == 0) != (m.partitions == 0) || m.partitions > 1024) {
    return Status::Corruption(std::string(what) + ": inconsistent ttl " +
                              std::to_string(m.ttl_ms) + " ms / partitions " +
                              std::to_string(m.partitions));
  }
  return m;
}

DedupBatch::DedupBatch(const DedupTable& table)
    : table_(table), batch_(std::make_unique<rocksdb::WriteBatch>()) {}
DedupBatch::~DedupBatch() = default;

void DedupBatch::Put(std::string_view set, std::string_view key,
                     const DedupEntry& e, bool with_index) {
  if (set_.empty()) set_ = set;
  batch_->Put(table_.dedup_cf_, DedupEntryKey(set, key), EncodeDedupEntry(e))
      .PermitUncheckedError();
  if (with_index) {
    batch_
        ->Put(table_.time_cf_, DedupTimeKey(set, e.bucket, key),
              FrameValue(ValueKind::kDedupIndex, {}))
        .PermitUncheckedError();
  }
}

void DedupBatch::Delete(std::string_view set, std::string_view key,
                        const DedupEntry& old, bool with_index) {
  if (set_.empty()) set_ = set;
  batch_->Delete(table_.dedup_cf_, DedupEntryKey(set, key))
      .PermitUncheckedError();
  if (with_index) {
    batch_->Delete(table_.time_cf_, DedupTimeKey(set, old.bucket, key))
        .PermitUncheckedError();
  }
}

void DedupBatch::DeleteIndexRange(std::string_view set, uint64_t begin,
                                  uint64_t end) {
  if (set_.empty()) set_ = set;
  batch_
      ->DeleteRange(table_.time_cf_, DedupTimeKey(set, begin, {}),
                    DedupTimeKey(set, end, {}))
      .PermitUncheckedError();
}

void DedupBatch::DeleteJournalMarker(std::string_view set) {
  if (set_.empty()) set_ = set;
  batch_->Delete(table_.dedup_cf_, DedupJournalMarkerKey(set))
      .PermitUncheckedError();
}

size_t DedupBatch::count() const { return batch_->Count(); }

DedupTable::DedupTable(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* dedup,
                       rocksdb::ColumnFamilyHandle* time, bool read_only)
    : db_(db), dedup_cf_(dedup), time_cf_(time), read_only_(read_only) {}

DedupTable::~DedupTable() {
  db_->DestroyColumnFamilyHandle(dedup_cf_).PermitUncheckedError();
  db_->DestroyColumnFamilyHandle(time_cf_).PermitUncheckedError();
}

Result<std::optional<DedupMeta>> DedupTable::GetMeta(
    std::string_view set) const {
  std::string value;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), dedup_cf_, DedupMetaKey(set), &value);
  if (s.IsNotFound()) return std::optional<DedupMeta>();
  std::string what = SetWhat(set) + " meta";
  SF_RETURN_IF_ERROR(FromRocks(s, "reading " + what));
  SF_ASSIGN_OR_RETURN(DedupMeta m, DecodeDedupMeta(value, what));
  return std::optional<DedupMeta>(m);
}

Status DedupTable::PutMeta(std::string_view set, const DedupMeta& m) {
  DedupBatch b(*this);
  b.batch_->Put(dedup_cf_, DedupMetaKey(set), EncodeDedupMeta(m))
      .PermitUncheckedError();
  return Write(&b, {.wal = true, .sync = true});
}

Status DedupTable::PutJournalMarker(std::string_view set) {
  DedupBatch b(*this);
  b.batch_
      ->Put(dedup_cf_, DedupJournalMarkerKey(set),
            FrameValue(ValueKind::kDedupJournalMarker, {}))
      .PermitUncheckedError();
  return Write(&b, {.wal = true, .sync = true});
}

Result<bool> DedupTable::HasJournalMarker(std::string_view set) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), dedup_cf_,
                               DedupJournalMarkerKey(set), &value);
  if (s.IsNotFound()) return false;
  const std::string what = SetWhat(set) + " journal marker";
  SF_RETURN_IF_ERROR(FromRocks(s, "reading " + what));
  SF_RETURN_IF_ERROR(
      UnframeValue(value, ValueKind::kDedupJournalMarker, what).status());
  return true;
}

Status DedupTable::DropSet(std::string_view set) {
  DedupBatch b(*this);
  std::string prefix = NamePrefix(set);
  std::string end = PrefixSuccessor(prefix);
  b.batch_->DeleteRange(dedup_cf_, prefix, end).PermitUncheckedError();
  b.batch_->DeleteRange(time_cf_, prefix, end).PermitUncheckedError();
  return Write(&b, {.wal = true, .sync = true});
}

Result<std::vector<std::string>> DedupTable::ListSets() const {
  std::vector<std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), dedup_cf_));
  it->SeekToFirst();
  while (it->Valid()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() < 3) return Status::Corruption("dedup: malformed key");
    size_t len = LoadBE(k.data(), 2);
    if (k.size() < 2 + len + 1) return Status::Corruption("dedup: short key");
    std::string_view name = k.substr(2, len);
    if (k[2 + len] == kMetaTag) out.emplace_back(name);
    it->Seek(PrefixSuccessor(NamePrefix(name)));  // next set
  }
  SF_RETURN_IF_ERROR(FromRocks(it->status(), "listing dedup sets"));
  return out;
}

Result<std::optional<DedupEntry>> DedupTable::Get(std::string_view set,
                                                  std::string_view key) const {
  rocksdb::PinnableSlice value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), dedup_cf_,
                               DedupEntryKey(set, key), &value);
  if (s.IsNotFound()) return std::optional<DedupEntry>();
  SF_RETURN_IF_ERROR(FromRocks(s, "reading " + SetWhat(set)));
  SF_ASSIGN_OR_RETURN(DedupEntry e, DecodeDedupEntry(value.ToStringView(),
                                                     SetWhat(set) + " entry"));
  return std::optional<DedupEntry>(e);
}

Status DedupTable::MultiGet(std::string_view set,
                            std::span<const std::string_view> keys,
                            std::vector<std::optional<DedupEntry>>* out) const {
  const size_t n = keys.size();
  std::vector<std::string> key_bytes(n);
  std::vector<rocksdb::Slice> slices(n);
  for (size_t i = 0; i < n; ++i) {
    key_bytes[i] = DedupEntryKey(set, keys[i]);
    slices[i] = rocksdb::Slice(key_bytes[i]);
  }
  std::vector<rocksdb::PinnableSlice> values(n);
  std::vector<rocksdb::Status> statuses(n);
  db_->MultiGet(rocksdb::ReadOptions(), dedup_cf_, n, slices.data(),
                values.data(), statuses.data());
  for (size_t i = 0; i < n; ++i) {
    if (statuses[i].IsNotFound()) {
      (*out)[i].reset();
      continue;
    }
    SF_RETURN_IF_ERROR(FromRocks(statuses[i], "reading " + SetWhat(set)));
    SF_ASSIGN_OR_RETURN(
        DedupEntry e,
        DecodeDedupEntry(values[i].ToStringView(), SetWhat(set) + " entry"));
    (*out)[i] = e;
  }
  return Status::OK();
}

Status DedupTable::Write(DedupBatch* batch, DedupWriteMode mode) {
  if (read_only_) {
    return Status::NotSupported("dedup write: the store is open read-only");
  }
  rocksdb::WriteOptions wo;
  wo.disableWAL = !mode.wal;
  wo.sync = mode.wal && mode.sync;
  // A set's changes under durability sync: sync_marker.h W1, W5.
  const bool marked =
      wo.sync && sync_marker_ != nullptr && !batch->set_.empty();
  if (marked) SF_RETURN_IF_ERROR(sync_marker_->failure());
  rocksdb::Status s;
  uint64_t last = 0;
  {
    // RocksDB's group commit: as in Store::Write (persistence/store.cc).
    // The group's leader also stores the batch's sequence into it.
    ::shardfilter::internal::TsanIgnoreAccesses rocksdb_group_commit;
    s = db_->Write(wo, batch->batch_.get());
    if (s.ok() && marked) last = WrittenLastSequence(*batch->batch_);
  }
  if (s.ok() && marked) {
    sync_marker_->Acknowledge(
        SyncMarkerSlot(SyncedKind::kDedupSet, batch->set_), last);
  }
  return FromRocks(s, "writing dedup set");
}

Status DedupTable::Flush() {
  if (read_only_) return Status::OK();
  rocksdb::FlushOptions fo;
  return FromRocks(db_->Flush(fo, {dedup_cf_, time_cf_}),
                   "flushing dedup sets");
}

Status DedupTable::ScanEntries(
    std::string_view set,
    const std::function<Status(std::string_view, const DedupEntry&)>& fn)
    const {
  std::string prefix = DedupEntryPrefix(set);
  std::string end = PrefixSuccessor(prefix);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  ro.fill_cache = false;
  ro.readahead_size = 2 << 20;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, dedup_cf_));
  std::string what = SetWhat(set) + " entry";
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    std::string_view key = it->key().ToStringView().substr(prefix.size());
    SF_ASSIGN_OR_RETURN(DedupEntry e,
                        DecodeDedupEntry(it->value().ToStringView(), what));
    SF_RETURN_IF_ERROR(fn(key, e));
  }
  return FromRocks(it->status(), "scanning " + SetWhat(set));
}

Result<std::optional<uint64_t>> DedupTable::MaxBucket(
    std::string_view set) const {
  std::string prefix = NamePrefix(set);
  std::string end = PrefixSuccessor(prefix);
  rocksdb::ReadOptions ro;
  rocksdb::Slice lower(prefix), upper(end);
  ro.iterate_lower_bound = &lower;
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, time_cf_));
  it->SeekToLast();
  std::optional<uint64_t> out;
  if (it->Valid()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() < prefix.size() + 8) {
      return Status::Corruption(SetWhat(set) + " time index: short key");
    }
    out = LoadBE(k.data() + prefix.size(), 8);
  }
  SF_RETURN_IF_ERROR(FromRocks(it->status(), "reading " + SetWhat(set)));
  return out;
}

Status DedupTable::ScanIndex(
    std::string_view set, uint64_t begin, uint64_t end,
    const std::function<Status(uint64_t, std::string_view)>& fn) const {
  if (begin >= end) return Status::OK();
  std::string start = DedupTimeKey(set, begin, {});
  std::string stop = DedupTimeKey(set, end, {});
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(stop);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, time_cf_));
  const size_t head = NamePrefix(set).size();
  std::string what = SetWhat(set) + " time index";
  for (it->Seek(start); it->Valid(); it->Next()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() < head + 8) return Status::Corruption(what + ": short key");
    SF_RETURN_IF_ERROR(
        UnframeValue(it->value().ToStringView(), ValueKind::kDedupIndex, what)
            .status());
    SF_RETURN_IF_ERROR(fn(LoadBE(k.data() + head, 8), k.substr(head + 8)));
  }
  return FromRocks(it->status(), "scanning " + what);
}

}  // namespace shardfilter::persistence
