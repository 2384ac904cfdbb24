#include "shardfilter/persistence/tiered_table.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <xxhash.h>

#include <memory>

#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/rocks_status.h"
#include "shardfilter/persistence/store.h"
#include "shardfilter/persistence/values.h"

namespace shardfilter::persistence {

using internal::FromRocks;
using ::shardfilter::internal::ByteReader;
using ::shardfilter::internal::LoadLE;
using ::shardfilter::internal::PutU32;
using ::shardfilter::internal::PutU64;
using ::shardfilter::internal::PutU8;

namespace {

constexpr char kSpace0 = static_cast<char>(0xF7);
constexpr char kSpace1 = 'T';
constexpr size_t kEntryBytes = 14;

std::string SpaceKey(char tag, std::string_view name) {
  std::string out{kSpace0, kSpace1, tag};
  out += NamePrefix(name);
  return out;
}

uint64_t EntryChecksum(std::string_view rocks_key, const char* head) {
  return XXH3_64bits_withSeed(head, 6,
                              Checksum64(rocks_key.data(), rocks_key.size()));
}

std::string TieredWhat(std::string_view name) {
  return "tiered " + DescribeName(name);
}

}  // namespace

std::string TieredDescriptorKey(std::string_view name) {
  return SpaceKey('d', name);
}

std::string ExactKey(std::string_view name, std::string_view key) {
  std::string out = SpaceKey('k', name);
  out.append(key);
  return out;
}

std::string EncodeTieredDescriptor(const TieredDescriptor& d) {
  std::string p;
  PutU8(&p, d.exact_level ? 1 : 0);
  PutU8(&p, d.durability);
  PutU8(&p, static_cast<uint8_t>(d.levels.size()));
  PutU8(&p, 0);
  PutU64(&p, d.base_seed);
  for (const TieredLevelRecord& l : d.levels) {
    PutU8(&p, static_cast<uint8_t>(l.type));
    PutU64(&p, l.seed);
  }
  return FrameValue(static_cast<ValueKind>(kTieredDescriptorKind), p);
}

Result<TieredDescriptor> DecodeTieredDescriptor(std::string_view value,
                                                std::string_view name) {
  std::string what = TieredWhat(name) + " descriptor";
  SF_ASSIGN_OR_RETURN(
      std::string_view payload,
      UnframeValue(value, static_cast<ValueKind>(kTieredDescriptorKind), what));
  ByteReader r(payload);
  TieredDescriptor d;
  uint8_t flags, count, reserved;
  if (!r.ReadU8(&flags) || !r.ReadU8(&d.durability) || !r.ReadU8(&count) ||
      !r.ReadU8(&reserved) || !r.ReadU64(&d.base_seed)) {
    return Status::Corruption(what + ": truncated header");
  }
  if ((flags & ~1u) != 0 || reserved != 0 || d.durability > 2 || count == 0) {
    return Status::Corruption(what + ": bad flags, durability or level count");
  }
  d.exact_level = (flags & 1) != 0;
  for (uint8_t i = 0; i < count; ++i) {
    uint8_t type;
    TieredLevelRecord l;
    if (!r.ReadU8(&type) || !r.ReadU64(&l.seed)) {
      return Status::Corruption(what + ": truncated level records");
    }
    if (type < 1 || type > 3) {
      return Status::Corruption(what + ": level " + std::to_string(i) +
                                " has unknown filter type " +
                                std::to_string(type));
    }
    l.type = static_cast<FilterType>(type);
    d.levels.push_back(l);
  }
  if (r.remaining() != 0) {
    return Status::Corruption(what + ": trailing bytes");
  }
  return d;
}

std::string EncodeExactEntry(std::string_view rocks_key, uint32_t count) {
  std::string out;
  PutU8(&out, kStoreFormatVersion);
  PutU8(&out, kTieredEntryKind);
  PutU32(&out, count);
  PutU64(&out, EntryChecksum(rocks_key, out.data()));
  return out;
}

Result<uint32_t> DecodeExactEntry(std::string_view rocks_key,
                                  std::string_view value,
                                  std::string_view what) {
  std::string w(what);
  if (!value.empty() && static_cast<uint8_t>(value[0]) > kStoreFormatVersion) {
    return Status::NotSupported(w + ": stored format version " +
                                std::to_string(static_cast<uint8_t>(value[0])) +
                                " is newer than this build's");
  }
  if (value.size() != kEntryBytes ||
      static_cast<uint8_t>(value[0]) != kStoreFormatVersion ||
      static_cast<uint8_t>(value[1]) != kTieredEntryKind) {
    return Status::Corruption(w + ": malformed exact entry");
  }
  if (LoadLE(value.data() + 6, 8) != EntryChecksum(rocks_key, value.data())) {
    return Status::Corruption(w + ": checksum mismatch");
  }
  uint32_t count = static_cast<uint32_t>(LoadLE(value.data() + 2, 4));
  if (count == 0) return Status::Corruption(w + ": stored count 0");
  return count;
}

Result<std::optional<TieredDescriptor>> TieredTable::GetDescriptor(
    std::string_view name) const {
  std::string value;
  rocksdb::Status s =
      store_->db_->Get(rocksdb::ReadOptions(), store_->default_cf_,
                       TieredDescriptorKey(name), &value);
  if (s.IsNotFound()) return std::optional<TieredDescriptor>();
  SF_RETURN_IF_ERROR(FromRocks(s, "reading " + TieredWhat(name)));
  SF_ASSIGN_OR_RETURN(TieredDescriptor d, DecodeTieredDescriptor(value, name));
  return std::optional<TieredDescriptor>(std::move(d));
}

Status TieredTable::PutDescriptor(std::string_view name,
                                  const TieredDescriptor& d) {
  rocksdb::WriteBatch batch;
  batch.Put(store_->default_cf_, TieredDescriptorKey(name),
            EncodeTieredDescriptor(d));
  return store_->Write(&batch, true, "creating " + TieredWhat(name));
}

Status TieredTable::Drop(std::string_view name) {
  rocksdb::WriteBatch batch;
  std::string begin = SpaceKey('k', name);
  batch.Delete(store_->default_cf_, TieredDescriptorKey(name));
  batch.DeleteRange(store_->default_cf_, begin, PrefixSuccessor(begin));
  return store_->Write(&batch, true, "dropping " + TieredWhat(name));
}

Result<uint32_t> TieredTable::Get(std::string_view name,
                                  std::string_view key) const {
  std::string rk = ExactKey(name, key);
  std::string value;
  rocksdb::Status s =
      store_->db_->Get(rocksdb::ReadOptions(), store_->default_cf_, rk, &value);
  if (s.IsNotFound()) return 0u;
  SF_RETURN_IF_ERROR(
      FromRocks(s, "reading the exact level of " + TieredWhat(name)));
  return DecodeExactEntry(rk, value, "exact level of " + TieredWhat(name));
}

Status TieredTable::MultiGet(std::string_view name,
                             std::span<const std::string_view> keys,
                             std::vector<uint32_t>* counts) const {
  counts->assign(keys.size(), 0);
  if (keys.empty()) return Status::OK();
  std::vector<std::string> rks;
  rks.reserve(keys.size());
  for (std::string_view k : keys) rks.push_back(ExactKey(name, k));
  std::vector<rocksdb::Slice> slices(rks.begin(), rks.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  store_->db_->MultiGet(rocksdb::ReadOptions(), store_->default_cf_,
                        keys.size(), slices.data(), values.data(),
                        statuses.data());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    SF_RETURN_IF_ERROR(FromRocks(
        statuses[i], "reading the exact level of " + TieredWhat(name)));
    SF_ASSIGN_OR_RETURN((*counts)[i],
                        DecodeExactEntry(rks[i], values[i].ToStringView(),
                                         "exact level of " + TieredWhat(name)));
  }
  return Status::OK();
}

Status TieredTable::Put(
    std::string_view name,
    std::span<const std::pair<std::string_view, uint32_t>> entries, bool sync) {
  rocksdb::WriteBatch batch;
  for (const auto& [key, count] : entries) {
    std::string rk = ExactKey(name, key);
    if (count == 0) {
      batch.Delete(store_->default_cf_, rk);
    } else {
      batch.Put(store_->default_cf_, rk, EncodeExactEntry(rk, count));
    }
  }
  return store_->Write(&batch, sync,
                       "writing the exact level of " + TieredWhat(name));
}

Status TieredTable::Verify(std::string_view name, uint64_t* keys,
                           std::vector<std::string>* problems) const {
  std::string begin = SpaceKey('k', name);
  std::string end = PrefixSuccessor(begin);
  rocksdb::ReadOptions ro;
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(
      store_->db_->NewIterator(ro, store_->default_cf_));
  *keys = 0;
  for (it->Seek(begin); it->Valid(); it->Next()) {
    ++*keys;
    Result<uint32_t> c =
        DecodeExactEntry(it->key().ToStringView(), it->value().ToStringView(),
                         "exact level of " + TieredWhat(name) + " entry " +
                             std::to_string(*keys));
    if (!c.ok()) problems->push_back(c.status().ToString());
  }
  return FromRocks(it->status(), "verifying " + TieredWhat(name));
}

}  // namespace shardfilter::persistence
