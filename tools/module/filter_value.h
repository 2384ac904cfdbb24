// FilterValue: what one Redis key of shardfilter's module type holds, and
// the versioned, checksummed envelope it is saved in (RDB, DUMP/RESTORE,
// MIGRATE, and the AOF's SFM.CHUNK commands). Pure C++: no Redis call, so
// tests/module_value_test.cc checks it without a server.
//
// Envelope (little-endian), the single RDB string of a value:
//   offset  size  field
//   0       4     magic "SFRM"
//   4       2     envelope version (kValueVersion)
//   6       2     flags, zero
//   8       8     payload length P
//   16      P     payload: the filter's export (engine/export.h,
//                 docs/format-export.md), itself versioned and checksummed
//   16+P    8     XXH3-64 (seed 0) of bytes [0, 16+P)
//
// V1 (never changes): the RDB layout of a value is exactly one string
// holding this envelope, whatever its version, so a module that cannot
// decode a value can still read past it, keep its bytes and save them back
// unchanged. The type's RDB encoding version stays kRdbEncodingVersion for
// the same reason: Redis stamps the module's current one on every value it
// saves, unavailable ones included, so the version that matters is the
// envelope's; a value stamped with any other one is read as one string and
// kept unavailable.
//
// Thread safety: a FilterValue belongs to Redis's main thread (and to the
// fork child of a BGSAVE, which only reads it).
#ifndef SHARDFILTER_TOOLS_MODULE_FILTER_VALUE_H_
#define SHARDFILTER_TOOLS_MODULE_FILTER_VALUE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shardfilter/engine/memory_budget.h"
#include "shardfilter/engine/sharded_filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::module {

inline constexpr char kValueMagic[4] = {'S', 'F', 'R', 'M'};
inline constexpr uint16_t kValueVersion = 1;
inline constexpr size_t kValueHeaderSize = 16;
inline constexpr size_t kValueTrailerSize = 8;
// The data type's RDB encoding version (RedisModule_CreateDataType).
inline constexpr int kRdbEncodingVersion = 1;

struct FilterValue {
  // The filter; null while the value is unavailable or pending.
  std::unique_ptr<ShardedFilter> filter;
  // Unavailable: the envelope bytes as they were read (saved back as they
  // are, so an older module never destroys a newer value). Pending: the
  // chunks an AOF's SFM.CHUNK commands delivered so far.
  std::string raw;
  // Unavailable: why the value could not be decoded (reported on use).
  std::string damage;
  bool pending = false;

  bool available() const { return filter != nullptr; }
  // Bytes of memory this value holds (MEMORY USAGE, maxmemory reporting).
  uint64_t MemoryBytes() const;
};

// The envelope of `filter`'s current state.
std::string EncodeValue(ShardedFilter& filter);
// The envelope around `payload`, an export (docs/format-export.md).
std::string EncodeEnvelope(std::string_view payload);

// The filter an envelope holds. InvalidArgument: not an envelope (magic);
// Corruption: truncated, padded, checksum mismatch, flags set, or a payload
// that does not decode; NotSupported: a version from the future (of the
// envelope or of the export inside it); ResourceExhausted: its tables do not
// fit in `budget` (null: MemoryBudget::Default()), which they are charged
// to.
Result<std::unique_ptr<ShardedFilter>> DecodeValue(
    std::string_view bytes, std::shared_ptr<MemoryBudget> budget = nullptr);

// A value for `bytes`: available when they decode, else unavailable with
// the reason (the bytes kept).
std::unique_ptr<FilterValue> ValueFromBytes(
    std::string bytes, std::shared_ptr<MemoryBudget> budget = nullptr);

// The value of the one string an RDB holds for a key saved under the
// type's encoding version `encver`: ValueFromBytes for kRdbEncodingVersion,
// else an unavailable value that keeps the bytes.
std::unique_ptr<FilterValue> ValueFromRdb(
    int encver, std::string bytes,
    std::shared_ptr<MemoryBudget> budget = nullptr);

// The resolved spec as one argument of the replicated SFM.CREATE command,
// and back (exact: the rate travels as a hex float). InvalidArgument for
// text that is not such a spec.
std::string EncodeSpec(const FilterSpec& spec);
Result<FilterSpec> DecodeSpec(std::string_view text);

}  // namespace shardfilter::module

#endif  // SHARDFILTER_TOOLS_MODULE_FILTER_VALUE_H_
