// The thread segments' record codec (log/format.h, section 2).
#include <string>

#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/log/format.h"

namespace shardfilter::persistence {

using shardfilter::internal::LoadLE;

Status DecodeThreadRecords(std::string_view records, bool later_boot,
                           uint32_t shards, const std::string& what,
                           std::vector<ThreadRecord>* out,
                           uint64_t* uncommitted) {
  const char* data = records.data();
  const size_t cap = records.size() & ~size_t{15};
  size_t at = 0;
  auto damage = [&](const char* why) {
    return Status::Corruption(what + ": record at byte " +
                              std::to_string(kSegmentHeaderBytes + at) + " " +
                              why);
  };
  auto zeros_from = [&](size_t from) {
    for (size_t i = from; i < records.size(); ++i) {
      if (data[i] != 0) return false;
    }
    return true;
  };
  for (; at + kThreadRecordBytes <= cap; at += kThreadRecordBytes) {
    const uint64_t tag = LoadLE(data + at, 8);
    const uint64_t hash = LoadLE(data + at + 8, 8);
    if (tag == 0) {
      // The end (T1): a kill may have left the last record's hash
      // without its tag (never acknowledged). Within the boot, only zeros
      // may follow (T3).
      if (later_boot) return Status::OK();
      if (!zeros_from(at + kThreadRecordBytes)) {
        return damage("is missing and data follows it");
      }
      if (hash != 0 && uncommitted != nullptr) ++*uncommitted;
      return Status::OK();
    }
    const uint32_t shard = static_cast<uint32_t>((tag >> 4) & 0xff);
    if (tag != ThreadRecordTag(shard, hash)) {
      // (ThreadRecordTag sets bits 0-3 to an add's and zeroes bits 12-31:
      // a tag of another op or with stray bits fails the comparison.)
      if (later_boot) return Status::OK();
      return damage("fails its checksum");
    }
    if (shard >= shards) {
      return damage(("names shard " + std::to_string(shard) + " of " +
                     std::to_string(shards))
                        .c_str());
    }
    out->push_back(ThreadRecord{shard, hash});
  }
  // A full segment: no end marker. Bytes past the last whole record (a
  // records area that is not a multiple of 16) must be zero in this boot.
  if (!later_boot && !zeros_from(at)) return damage("is cut short");
  return Status::OK();
}

}  // namespace shardfilter::persistence
