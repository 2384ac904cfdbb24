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
#ifndef SHARDFILTER_PERSISTENCE_STORE_DIR_H_
#define SHARDFILTER_PERSISTENCE_STORE_DIR_H_

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

// Readers beside a writer (DESIGN.md invariant 7): a read-only open takes
// an open-file-description read lock on RocksDB's LOCK file for its whole
// life. While another process holds the store for writing (RocksDB's
// write lock on LOCK) that fails: Busy naming the holder's pid and name,
// instead of reading files the writer is rewriting (its recovery flushes
// and deletes WALs). While a reader holds it, a writer's open fails
// (RocksDB: "lock ... Resource temporarily unavailable"). A writer in the
// same process is not excluded (the application's own business, as
// before). Returns the descriptor to close when the store closes, or -1
// when nothing was locked (no LOCK file, or the writer is this process).
Result<int> LockForReading(const std::string& path);

// Records (atomically: temp file, fsync, rename, fsync of the directory)
// that RocksDB's live write-ahead log is number `wal`.
Status WriteWalMarker(const std::string& path, uint64_t wal);

}  // namespace shardfilter::persistence::internal

#endif  // SHARDFILTER_PERSISTENCE_STORE_DIR_H_
