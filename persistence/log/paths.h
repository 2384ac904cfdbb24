// Where the journal component's logs live (log/format.h has their bytes):
//
//   <store>/filter-journal/<epoch, 16 hex>/<shard, 3 digits>-<n, 8 digits>.sfj
//   <store>/filter-journal/<epoch, 16 hex>/t<stripe, 3 digits>-<n, 8
//   digits>.sfj <store>/dedup-journal/<xxh3 of set name, 16 hex>.sfdl
//
// A filter's epoch is a random u64 kept in RocksDB's default column family
// under its name (the key and value below); CreateFilter, DropFilter and a
// migration's commit delete it in their WriteBatch, so a later filter of
// the same name never replays an earlier one's segments, and a writable
// open removes the epoch directories no filter names (RemoveStaleEpochs).
//
// Thread safety: pure functions, but RemoveStaleEpochs (the Env's).
#ifndef SHARDFILTER_PERSISTENCE_LOG_PATHS_H_
#define SHARDFILTER_PERSISTENCE_LOG_PATHS_H_

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/log/env.h"

namespace shardfilter::persistence {

std::string FilterJournalDir(std::string_view store_path);
std::string FilterJournalEpochDir(std::string_view store_path, uint64_t epoch);
// A per-shard segment / a thread segment of an epoch.
std::string SegmentPath(std::string_view store_path, uint64_t epoch,
                        uint32_t shard, uint64_t number);
std::string ThreadSegmentPath(std::string_view store_path, uint64_t epoch,
                              uint32_t stripe, uint64_t number);
// Parse a file name of an epoch directory ("007-00000012.sfj",
// "t007-00000012.sfj"): false for any other name (the other kind, a
// ".tmp" a kill left).
bool ParseSegmentName(std::string_view file, uint32_t* shard, uint64_t* number);
bool ParseThreadSegmentName(std::string_view file, uint32_t* stripe,
                            uint64_t* number);

// The dedup log of `set` under the store directory `store_path`.
std::string DedupLogPath(std::string_view store_path, std::string_view set);

// The default column family's key naming a filter's journal epoch:
// 0xF7 'J' 'e' | u16 BE name length | name. Value: u8 version (1) |
// u64 epoch | u64 XXH3 of the 9 bytes before (persistence/store.h).
std::string FilterJournalEpochKey(std::string_view name);
std::string EncodeFilterJournalEpoch(uint64_t epoch);
Result<uint64_t> DecodeFilterJournalEpoch(std::string_view value,
                                          const std::string& what);
// A fresh random epoch (never 0).
uint64_t NewJournalEpoch();

// A writable open: removes the epoch directories under
// <store>/filter-journal that are not in `keep` (a dropped or migrated
// filter's, or one whose creation did not commit). Only directories this
// code makes (16 hex digits) are touched; errors are left (the next open
// retries).
void RemoveStaleEpochs(Env& env, const std::string& store_path,
                       const std::set<uint64_t>& keep);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_PATHS_H_
