// What a store directory holds before RocksDB opens it, and the marker file
// the store keeps beside RocksDB's own files (persistence/store.cc,
// docs/format-store.md "Opening a directory").
//
// Invariant (DESIGN.md 6): a store is created only in a directory that is
// missing or empty. A directory that holds RocksDB files but does not open
// (CURRENT, the MANIFEST it names, or the write-ahead log the store last
// wrote is missing) is Corruption naming what is missing, and nothing in it
// is touched; a non-empty directory without RocksDB files is refused
// (InvalidArgument: not a store). Nothing here writes except WriteWalMarker.
//
// Thread safety: pure functions of the file system.
#ifndef SHARDFILTER_PERSISTENCE_INTERNAL_STORE_DIR_H_
#define SHARDFILTER_PERSISTENCE_INTERNAL_STORE_DIR_H_

#include <cstdint>
#include <string>

#include "shardfilter/filters/status.h"

namespace shardfilter::persistence::internal {

// The marker's file name: "shardfilter wal N\n", N the number of the
// write-ahead log RocksDB writes since the store's last writable open.
inline constexpr const char* kWalMarkerFile = "SHARDFILTER-WAL";

// Checks `path` before it is opened. *is_new: the directory is missing or
// empty (a store may be created there). OK with !*is_new means CURRENT, its
// MANIFEST and (per the marker) the live write-ahead log are all present.
Status InspectStoreDir(const std::string& path, bool* is_new);

// Records (atomically: temp file, fsync, rename, fsync of the directory)
// that RocksDB's live write-ahead log is number `wal`.
Status WriteWalMarker(const std::string& path, uint64_t wal);

}  // namespace shardfilter::persistence::internal

#endif  // SHARDFILTER_PERSISTENCE_INTERNAL_STORE_DIR_H_
