// TieredTable: what a tiered filter (engine/tiered_filter.h) keeps in
// RocksDB besides its levels (which are ordinary catalog filters): its
// descriptor and its exact level, the key set itself (docs/tiered.md).
//
// Both live in the store's `default` column family, which the core layout
// leaves unused, so that a store without tiered filters keeps its layout
// and no column family has to be created or opened for them. Every key
// starts with the two bytes 0xF7 'T' (the tiered key space), then:
//
//   'd' | u16 BE len | name          -> descriptor (value kind 8)
//   'k' | u16 BE len | name | key    -> exact entry (value kind 9)
//
// The descriptor is framed like every store value
// (persistence/values.h). An exact entry is 14 bytes: u8 version | u8
// kind 9 | u32 LE count | u64 LE XXH3-64 of bytes [0, 6) seeded with
// Checksum64(RocksDB key), so the checksum also binds the value to its key.
//
// No Bloom filter policy is configured on this family: the tiered filter's
// own levels already screen the absent keys before the exact level is read
// (bench/tiered_bench.cc measures the exact level with and without one).
//
// Thread safety: all methods may be called concurrently (RocksDB is
// thread-safe); a read-only Store makes every write NotSupported.
#ifndef SHARDFILTER_PERSISTENCE_TIERED_TABLE_H_
#define SHARDFILTER_PERSISTENCE_TIERED_TABLE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::persistence {

class Store;

inline constexpr uint8_t kTieredDescriptorKind = 8;
inline constexpr uint8_t kTieredEntryKind = 9;
// Largest key an exact level stores.
inline constexpr size_t kMaxExactKeyBytes = 64 << 10;

struct TieredLevelRecord {
  FilterType type = FilterType::kBloom;
  uint64_t seed = 0;
  bool operator==(const TieredLevelRecord&) const = default;
};

// payload: u8 flags (bit 0 exact level) | u8 durability | u8 level count L
// | u8 reserved 0 | u64 base seed | L x (u8 type | u64 seed).
struct TieredDescriptor {
  bool exact_level = false;
  uint8_t durability = 0;
  uint64_t base_seed = 0;
  std::vector<TieredLevelRecord> levels;
  bool operator==(const TieredDescriptor&) const = default;
};

std::string EncodeTieredDescriptor(const TieredDescriptor& d);
Result<TieredDescriptor> DecodeTieredDescriptor(std::string_view value,
                                                std::string_view name);
std::string TieredDescriptorKey(std::string_view name);
std::string ExactKey(std::string_view name, std::string_view key);
std::string EncodeExactEntry(std::string_view rocks_key, uint32_t count);
// The count of a stored entry; Corruption naming `what` when it fails.
Result<uint32_t> DecodeExactEntry(std::string_view rocks_key,
                                  std::string_view value,
                                  std::string_view what);

class TieredTable {
 public:
  // REQUIRES: `store` outlives the table.
  explicit TieredTable(Store* store) : store_(store) {}

  // nullopt when no tiered filter of that name exists.
  Result<std::optional<TieredDescriptor>> GetDescriptor(
      std::string_view name) const;
  // Synced write of the descriptor.
  Status PutDescriptor(std::string_view name, const TieredDescriptor& d);
  // One synced WriteBatch: the descriptor and every exact entry of `name`.
  Status Drop(std::string_view name);

  // The stored count of `key` (0: absent).
  Result<uint32_t> Get(std::string_view name, std::string_view key) const;
  // counts->size() becomes keys.size(); one MultiGet.
  Status MultiGet(std::string_view name, std::span<const std::string_view> keys,
                  std::vector<uint32_t>* counts) const;
  // One WriteBatch of (key, count) pairs, count 0 deleting the entry. WAL
  // always on; `sync` fsyncs it before returning.
  Status Put(std::string_view name,
             std::span<const std::pair<std::string_view, uint32_t>> entries,
             bool sync);

  // Reads back every exact entry of `name`, checking each; *keys receives
  // their number. Problems are appended to *problems.
  Status Verify(std::string_view name, uint64_t* keys,
                std::vector<std::string>* problems) const;

 private:
  Store* store_;
};

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_TIERED_TABLE_H_
