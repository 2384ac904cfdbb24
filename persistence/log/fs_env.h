// The journal component's Env over a rocksdb::FileSystem (log/env.h): the
// store's, so that the journals' files take the path RocksDB's own take.
// Built by the Store (Store::log_env); a test that gives the store a
// fault-injecting file system covers the journals with it.
#ifndef SHARDFILTER_PERSISTENCE_LOG_FS_ENV_H_
#define SHARDFILTER_PERSISTENCE_LOG_FS_ENV_H_

#include <memory>

#include "shardfilter/persistence/log/env.h"

namespace rocksdb {
class FileSystem;
}

namespace shardfilter::persistence {

// Files are made with FileSystem::NewWritableFile (blocks allocated by
// FSWritableFile::Allocate, the handle kept for Sync, an fdatasync, and
// for ReleaseSpace, which truncates the removed file to nothing and back),
// mapped with NewMemoryMappedFileBuffer, read through a read-only mapping
// (FileOptions::use_mmap_reads), and renamed, removed, listed and
// directory-synced through the FileSystem. Page prefaulting (madvise) is
// the one call it makes itself.
std::unique_ptr<Env> NewFileSystemEnv(std::shared_ptr<rocksdb::FileSystem> fs);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_LOG_FS_ENV_H_
