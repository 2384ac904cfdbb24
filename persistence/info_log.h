// The store's RocksDB info log (`<store>/LOG`): RocksDB's own file logger
// aborts the process (an assertion in its file writer, reached from
// SstFileManagerImpl::ClearError) once one write to the LOG failed, which a
// full disk does. This one writes each line with one write(2) and ignores
// failures: a full disk loses log lines, never the process. It also keeps
// the last warnings in memory, so that an open that fails can say which file
// RocksDB found damaged ("000017.log: dropping 32768 bytes; Corruption:
// checksum mismatch").
//
// A read-only store logs to memory only: a read-only open writes nothing
// (RocksDB's logger would rename LOG to LOG.old.* on every open).
//
// Thread safety: Logv may be called from any thread (RocksDB's background
// threads do); a mutex guards the recent lines.
#ifndef SHARDFILTER_PERSISTENCE_INFO_LOG_H_
#define SHARDFILTER_PERSISTENCE_INFO_LOG_H_

#include <rocksdb/env.h>

#include <cstdarg>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace shardfilter::persistence::internal {

class StoreInfoLog : public rocksdb::Logger {
 public:
  // Appends to `file` (when not empty; a file past 4 MiB first becomes
  // `file`.old, replacing it). Lines below `level` are dropped.
  StoreInfoLog(const std::string& file, rocksdb::InfoLogLevel level);
  ~StoreInfoLog() override;

  void Logv(const char* format, va_list ap) override;
  void Logv(const rocksdb::InfoLogLevel level, const char* format,
            va_list ap) override;
  // The last warnings and errors (oldest first), at most kRecent.
  std::vector<std::string> Recent() const;

  static constexpr size_t kRecent = 16;

 private:
  void Write(rocksdb::InfoLogLevel level, const char* format, va_list ap);

  int fd_ = -1;
  mutable std::mutex mu_;
  std::deque<std::string> recent_;  // GUARDED_BY(mu_)
};

}  // namespace shardfilter::persistence::internal

#endif  // SHARDFILTER_PERSISTENCE_INFO_LOG_H_
