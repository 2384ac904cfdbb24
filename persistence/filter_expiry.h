// A filter's expiry deadline (the server's EXPIRE), kept in the default
// column family next to the filter's journal epoch (docs/format-store.md):
//
//   key   = 0xF7 'X' 'p' | u16 BE len | name
//   value = u8 version (1) | i64 LE unix time in ms | u64 LE XXH3 of the 9
//           bytes before (seeded as the journal epoch's)
//
// CreateFilter and DropFilter delete it in their WriteBatch, so a later
// filter of the name never inherits a deadline; a migration keeps it (the
// key is the same filter to its users). Thread-safe: pure functions.
#ifndef SHARDFILTER_PERSISTENCE_FILTER_EXPIRY_H_
#define SHARDFILTER_PERSISTENCE_FILTER_EXPIRY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "shardfilter/filters/status.h"

namespace shardfilter::persistence {

inline constexpr char kFilterExpiryKeyTag[] = {static_cast<char>(0xF7), 'X',
                                               'p'};

std::string FilterExpiryKey(std::string_view name);
// The name of a key FilterExpiryKey made; Corruption otherwise.
Result<std::string> FilterExpiryName(std::string_view key);
std::string EncodeFilterExpiry(int64_t unix_ms);
Result<int64_t> DecodeFilterExpiry(std::string_view value,
                                   const std::string& what);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_FILTER_EXPIRY_H_
