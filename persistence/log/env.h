// The journal component's file system (docs/design.md, "The journal
// component"): every file operation the memory-mapped logs make (the
// filters' per-shard and thread segments, the dedup sets' logs) goes
// through one Env, as LevelDB's and RocksDB's files go through theirs.
// Its one implementation (NewFileSystemEnv, fs_env.cc) is a thin layer over
// the store's rocksdb::FileSystem, the one RocksDB's own files use: a
// fault-injecting file system given to the store (tests/fault_fs.h) sees
// the journals' creations, syncs, renames and deletions, and their
// mappings (FileSystem::NewMemoryMappedFileBuffer), and drops what no sync
// covered from both in one simulated crash.
//
// The Env is the slow path only: making, syncing, reading and removing
// files. A record is written by a plain store into a MappedFile's bytes,
// with no call through the Env (docs/performance.md: a journalled Bloom
// add is a 16-byte copy into a mapping).
//
// This header names no RocksDB type: the in-memory engine (the Redis
// module's, which links no RocksDB) compiles the logs' users against it
// and never makes an Env.
//
// Thread safety: an Env and a ReadOnlyFile may be used from any thread; a
// MappedFile's Sync and ReleaseSpace too (its bytes are the caller's to
// coordinate).
#ifndef SHARDFILTER_PERSISTENCE_LOG_ENV_H_
#define SHARDFILTER_PERSISTENCE_LOG_ENV_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"

namespace shardfilter::persistence {

// A file mapped shared and writable: stores into bytes() reach the page
// cache at once (they survive the process); Sync makes them durable.
class MappedFile {
 public:
  virtual ~MappedFile() = default;
  char* data() const { return data_; }
  size_t size() const { return size_; }
  // fdatasync: every byte the mapping held when the call began is on disk
  // once it returns OK.
  virtual Status Sync() = 0;
  // For a file already removed that a mapping still holds (nobody writes
  // or reads it again): frees its blocks and page cache now rather than
  // at the unmap. Its bytes read as zeros afterwards. Best effort.
  virtual void ReleaseSpace() = 0;

 protected:
  MappedFile(char* data, size_t size) : data_(data), size_(size) {}

 private:
  char* const data_;
  const size_t size_;
};

// A file's bytes for reading (mapped read-only: nothing is copied).
class ReadOnlyFile {
 public:
  virtual ~ReadOnlyFile() = default;
  std::string_view bytes() const { return bytes_; }

 protected:
  ReadOnlyFile() = default;
  void set_bytes(std::string_view bytes) { bytes_ = bytes; }

 private:
  std::string_view bytes_;
};

struct MapOptions {
  // Fault the mapping's pages in writable (MADV_POPULATE_WRITE, Linux
  // 5.14+; else read ahead), so the writer's first store to a page takes
  // no fault. It dirties every page: a log that fdatasyncs (durability
  // sync) does not ask for it, or its first sync would write every page.
  bool prefault_write = false;
};

class Env {
 public:
  virtual ~Env() = default;

  // Makes `path` a file of `bytes` bytes (a multiple of 4096), zeros but
  // what `fill` writes into its mapping, and maps it: its blocks
  // allocated first (a full disk fails here, never as a SIGBUS in the
  // mapping), then `fill`, then synced, all under `path` + ".tmp", then
  // renamed to `path` and the directory synced (missing directories are
  // made). A kill at any point leaves no file under `path`, or a whole one.
  virtual Result<std::unique_ptr<MappedFile>> CreateMapped(
      const std::string& path, uint64_t bytes,
      const std::function<void(char* data)>& fill,
      const MapOptions& options) = 0;
  // The bytes of an existing file. NotFound when there is none.
  virtual Result<std::unique_ptr<ReadOnlyFile>> OpenReadOnly(
      const std::string& path) = 0;
  // Unlinks a file; OK when there is none.
  virtual Status Remove(const std::string& path) = 0;
  // Unlinks a directory's files, then the directory; OK when there is none.
  virtual Status RemoveTree(const std::string& dir) = 0;
  // The names in a directory (no "." or ".."); empty when there is none.
  virtual Result<std::vector<std::string>> Children(const std::string& dir) = 0;
  // fsync of a directory: the creations, renames and removals in it are
  // durable.
  virtual Status SyncDir(const std::string& dir) = 0;
};

// The directory part of a path ("" for a bare name).
std::string ParentDir(const std::string& path);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_ENV_H_
