#include "shardfilter/persistence/dedup_journal.h"

namespace shardfilter::persistence {

namespace {
// Records move into RocksDB with the WAL on, not synced: what durability
// journal promises (survive kill -9), as before the move.
constexpr DedupWriteMode kFlushMode{.wal = true, .sync = false};
}  // namespace

void AddOps(std::string_view set, const std::vector<DedupOp>& ops,
            DedupBatch* batch) {
  for (const DedupOp& op : ops) {
    if (op.kind == DedupOp::kPut) {
      batch->Put(set, op.key, op.entry, op.with_index);
    } else {
      batch->Delete(set, op.key, op.entry, op.with_index);
    }
  }
}

Result<uint64_t> DedupJournal::Replay(DedupTable* table, Env& env,
                                      const std::string& path,
                                      std::string_view set) {
  auto log = DedupLog::OpenExisting(env, path, set);
  SF_ASSIGN_OR_RETURN(const bool marked, table->HasJournalMarker(set));
  if (log.status().IsNotFound()) {
    if (marked) return MissingJournal(path, set);
    return uint64_t{0};
  }
  SF_RETURN_IF_ERROR(log.status());
  std::vector<DedupLogRecord> records;
  SF_RETURN_IF_ERROR((*log)->ReadAll(&records));
  DedupBatch batch(*table);
  uint64_t n = 0;
  for (const DedupLogRecord& rec : records) {
    AddOps(set, rec.ops, &batch);
    n += rec.ops.size();
  }
  // The records and the marker's removal in one synced write, then the
  // file: a crash between them leaves a file without a marker, which the
  // next open replays again (idempotent).
  if (marked) batch.DeleteJournalMarker(set);
  if (batch.count() > 0) {
    SF_RETURN_IF_ERROR(table->Write(&batch, {.wal = true, .sync = true})
                           .WithContext("replaying the dedup journal"));
  }
  log->reset();
  SF_RETURN_IF_ERROR(Remove(env, path));
  return n;
}

Status DedupJournal::MissingJournal(const std::string& path,
                                    std::string_view set) {
  return Status::Corruption(
      "dedup journal " + path + " of set \"" + std::string(set) +
      "\" is missing: the set was open in durability journal and its "
      "acknowledged writes since the last move into RocksDB are in that "
      "file; nothing was changed");
}

Status DedupJournal::Remove(Env& env, const std::string& path) {
  return env.Remove(path);
}

DedupJournal::DedupJournal(DedupTable* table, std::string_view set)
    : table_(table), set_(set), shards_(std::make_unique<Shard[]>(kShards)) {}

DedupJournal::~DedupJournal() = default;

Result<std::unique_ptr<DedupJournal>> DedupJournal::Create(
    DedupTable* table, Env& env, const std::string& path, std::string_view set,
    uint64_t region_bytes) {
  std::unique_ptr<DedupJournal> j(new DedupJournal(table, set));
  SF_ASSIGN_OR_RETURN(j->log_, DedupLog::Create(env, path, set, region_bytes));
  SF_RETURN_IF_ERROR(table->PutJournalMarker(set));  // after the file exists
  return j;
}

Result<std::unique_ptr<DedupJournal>> DedupJournal::OpenReadOnly(
    DedupTable* table, Env& env, const std::string& path,
    std::string_view set) {
  std::unique_ptr<DedupJournal> j(new DedupJournal(table, set));
  auto log = DedupLog::OpenExisting(env, path, set);
  if (log.status().IsNotFound()) {
    SF_ASSIGN_OR_RETURN(const bool marked, table->HasJournalMarker(set));
    if (marked) return MissingJournal(path, set);
    return j;
  }
  SF_RETURN_IF_ERROR(log.status());
  std::vector<DedupLogRecord> records;
  SF_RETURN_IF_ERROR((*log)->ReadAll(&records));
  for (const DedupLogRecord& rec : records) j->Remember(rec.seq, rec.ops);
  return j;
}

DedupJournal::Shard& DedupJournal::ShardOf(std::string_view key) const {
  return shards_[std::hash<std::string_view>()(key) % kShards];
}

void DedupJournal::Remember(uint64_t seq, const std::vector<DedupOp>& ops) {
  for (const DedupOp& op : ops) {
    Shard& s = ShardOf(op.key);
    std::lock_guard lock(s.mu);
    Pending& p = s.map[op.key];
    p.seq = seq;
    p.entry = op.kind == DedupOp::kPut ? std::optional(op.entry) : std::nullopt;
  }
}

void DedupJournal::Forget(const std::vector<DedupLogRecord>& records) {
  for (const DedupLogRecord& rec : records) {
    for (const DedupOp& op : rec.ops) {
      Shard& s = ShardOf(op.key);
      std::lock_guard lock(s.mu);
      auto it = s.map.find(std::string_view(op.key));
      if (it != s.map.end() && it->second.seq == rec.seq) s.map.erase(it);
    }
  }
}

Result<std::optional<DedupEntry>> DedupJournal::Get(
    std::string_view key) const {
  {
    Shard& s = ShardOf(key);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(key);
    if (it != s.map.end()) return it->second.entry;
  }
  return table_->Get(set_, key);  // J2: flushed before it was forgotten
}

Status DedupJournal::MultiGet(
    std::span<const std::string_view> keys,
    std::vector<std::optional<DedupEntry>>* out) const {
  std::vector<std::string_view> ask;
  std::vector<size_t> where;
  for (size_t i = 0; i < keys.size(); ++i) {
    Shard& s = ShardOf(keys[i]);
    std::lock_guard lock(s.mu);
    auto it = s.map.find(keys[i]);
    if (it != s.map.end()) {
      (*out)[i] = it->second.entry;
    } else {
      ask.push_back(keys[i]);
      where.push_back(i);
    }
  }
  if (ask.empty()) return Status::OK();
  std::vector<std::optional<DedupEntry>> got(ask.size());
  SF_RETURN_IF_ERROR(table_->MultiGet(set_, ask, &got));
  for (size_t j = 0; j < ask.size(); ++j) (*out)[where[j]] = got[j];
  return Status::OK();
}

Status DedupJournal::Commit(const std::vector<DedupOp>& ops) {
  if (log_ == nullptr) {
    return Status::NotSupported("dedup journal of " + set_ + " is read-only");
  }
  if (ops.empty()) return Status::OK();
  const size_t bytes = DedupLogRecordBytes(ops);
  if (ops.size() >= kDirectOps || bytes > log_->capacity() / 2) {  // J1
    std::lock_guard flush(flush_mu_);
    SF_RETURN_IF_ERROR(FlushAllLocked());
    DedupBatch batch(*table_);
    AddOps(set_, ops, &batch);
    return table_->Write(&batch, kFlushMode);
  }
  for (;;) {
    {
      std::lock_guard lock(log_mu_);
      if (log_->Fits(bytes)) {
        const uint64_t seq = next_seq_++;
        log_->Append(seq, ops);
        Remember(seq, ops);  // J2: before anyone can flush the record
        return Status::OK();
      }
    }
    std::lock_guard flush(flush_mu_);  // J4
    int full;
    {
      std::lock_guard lock(log_mu_);
      if (log_->Fits(bytes)) {
        const uint64_t seq = next_seq_++;
        log_->Append(seq, ops);
        Remember(seq, ops);
        return Status::OK();
      }
      const int inactive = 1 - log_->active();
      // A flush that failed left the inactive region full (J3): retry it
      // before swapping.
      full = log_->Empty(inactive) ? log_->Swap() : inactive;
    }
    SF_RETURN_IF_ERROR(FlushRegion(full));
  }
}

Status DedupJournal::FlushRegion(int r) {
  std::vector<DedupLogRecord> records;
  SF_RETURN_IF_ERROR(log_->Read(r, &records));
  DedupBatch batch(*table_);
  for (const DedupLogRecord& rec : records) AddOps(set_, rec.ops, &batch);
  if (batch.count() > 0) {
    SF_RETURN_IF_ERROR(table_->Write(&batch, kFlushMode)
                           .WithContext("moving the dedup journal"));
  }
  log_->Clear(r);
  Forget(records);  // J2: after the write
  flushes_.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

Status DedupJournal::FlushAllLocked() {
  int active;
  {
    std::lock_guard lock(log_mu_);
    active = log_->active();
  }
  if (!log_->Empty(1 - active)) SF_RETURN_IF_ERROR(FlushRegion(1 - active));
  int full;
  {
    std::lock_guard lock(log_mu_);
    if (log_->Empty(log_->active())) return Status::OK();
    full = log_->Swap();
  }
  return FlushRegion(full);
}

Status DedupJournal::Flush() {
  if (log_ == nullptr) return Status::OK();
  std::lock_guard flush(flush_mu_);
  return FlushAllLocked();
}

void DedupJournal::ForEachPending(
    const std::function<void(std::string_view,
                             const std::optional<DedupEntry>&)>& fn) const {
  for (size_t i = 0; i < kShards; ++i) {
    std::lock_guard lock(shards_[i].mu);
    for (const auto& [key, p] : shards_[i].map) fn(key, p.entry);
  }
}

}  // namespace shardfilter::persistence
