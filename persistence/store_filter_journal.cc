// Store: the filters' journal epochs (persistence/log/paths.h),
// kept in the default column family.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <memory>
#include <set>

#include "shardfilter/persistence/filter_expiry.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/log/paths.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/store.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter::persistence {

Result<uint64_t> Store::GetFilterJournalEpoch(std::string_view name) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), default_cf_,
                               FilterJournalEpochKey(name), &value);
  if (s.IsNotFound()) return uint64_t{0};
  SF_RETURN_IF_ERROR(internal::FromRocks(
      s, "reading the journal epoch of " + DescribeName(name)));
  return DecodeFilterJournalEpoch(value, DescribeName(name));
}

Result<std::set<uint64_t>> Store::ListFilterJournalEpochs() const {
  const std::string prefix{static_cast<char>(0xF7), 'J', 'e'};
  std::set<uint64_t> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), default_cf_));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    SF_ASSIGN_OR_RETURN(const uint64_t epoch,
                        DecodeFilterJournalEpoch(it->value().ToStringView(),
                                                 "a filter journal epoch key"));
    out.insert(epoch);
  }
  SF_RETURN_IF_ERROR(
      internal::FromRocks(it->status(), "listing the filter journal epochs"));
  return out;
}

Status Store::PutFilterExpiry(std::string_view name, int64_t unix_ms,
                              bool sync) {
  rocksdb::WriteBatch batch;
  batch.Put(default_cf_, FilterExpiryKey(name), EncodeFilterExpiry(unix_ms));
  return Write(&batch, sync, "writing the expiry of " + DescribeName(name));
}

Status Store::DeleteFilterExpiry(std::string_view name, bool sync) {
  rocksdb::WriteBatch batch;
  batch.Delete(default_cf_, FilterExpiryKey(name));
  return Write(&batch, sync, "deleting the expiry of " + DescribeName(name));
}

Result<std::vector<std::pair<std::string, int64_t>>> Store::ListFilterExpiries(
    std::vector<std::string>* bad) const {
  const std::string_view tag(kFilterExpiryKeyTag, sizeof kFilterExpiryKeyTag);
  std::vector<std::pair<std::string, int64_t>> out;
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(rocksdb::ReadOptions(), default_cf_));
  for (it->Seek(rocksdb::Slice(tag.data(), tag.size()));
       it->Valid() &&
       it->key().starts_with(rocksdb::Slice(tag.data(), tag.size()));
       it->Next()) {
    auto name = FilterExpiryName(it->key().ToStringView());
    auto ms = name.ok() ? DecodeFilterExpiry(it->value().ToStringView(),
                                             DescribeName(*name))
                        : Result<int64_t>(name.status());
    if (!ms.ok()) {
      if (bad != nullptr) bad->push_back(ms.status().ToString());
      continue;
    }
    out.emplace_back(*std::move(name), *ms);
  }
  SF_RETURN_IF_ERROR(
      internal::FromRocks(it->status(), "listing the filter expiries"));
  return out;
}

Status Store::PutFilterJournalEpoch(std::string_view name, uint64_t epoch) {
  rocksdb::WriteBatch batch;
  batch.Put(default_cf_, FilterJournalEpochKey(name),
            EncodeFilterJournalEpoch(epoch));
  return Write(&batch, true,
               "writing the journal epoch of " + DescribeName(name));
}

Status Store::DeleteJournalAfter(std::string_view name, uint32_t shard,
                                 uint64_t after) {
  rocksdb::WriteBatch batch;
  batch.DeleteRange(journal_cf_, JournalKey(name, shard, after + 1),
                    PrefixSuccessor(ShardPrefix(name, shard)));
  return Write(&batch, true,
               "deleting unacknowledged journal entries of " +
                   DescribeName(name) + " shard " + std::to_string(shard));
}

}  // namespace shardfilter::persistence
