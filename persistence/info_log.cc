// StoreInfoLog (persistence/info_log.h).
#include "shardfilter/persistence/info_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace shardfilter::persistence::internal {

namespace {
constexpr off_t kRotateBytes = 4 << 20;

const char* LevelName(rocksdb::InfoLogLevel level) {
  switch (level) {
    case rocksdb::InfoLogLevel::DEBUG_LEVEL:
      return "DEBUG";
    case rocksdb::InfoLogLevel::INFO_LEVEL:
      return "INFO";
    case rocksdb::InfoLogLevel::WARN_LEVEL:
      return "WARN";
    case rocksdb::InfoLogLevel::ERROR_LEVEL:
      return "ERROR";
    case rocksdb::InfoLogLevel::FATAL_LEVEL:
      return "FATAL";
    default:
      return "HEADER";
  }
}
}  // namespace

StoreInfoLog::StoreInfoLog(const std::string& file, rocksdb::InfoLogLevel level)
    : rocksdb::Logger(level) {
  if (file.empty()) return;
  struct stat st;
  if (::stat(file.c_str(), &st) == 0 && st.st_size > kRotateBytes) {
    (void)::rename(file.c_str(), (file + ".old").c_str());
  }
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

StoreInfoLog::~StoreInfoLog() {
  if (fd_ >= 0) ::close(fd_);
}

void StoreInfoLog::Logv(const char* format, va_list ap) {
  Write(rocksdb::InfoLogLevel::INFO_LEVEL, format, ap);
}

void StoreInfoLog::Logv(const rocksdb::InfoLogLevel level, const char* format,
                        va_list ap) {
  if (level < GetInfoLogLevel()) return;
  Write(level, format, ap);
}

void StoreInfoLog::Write(rocksdb::InfoLogLevel level, const char* format,
                         va_list ap) {
  char msg[1024];
  const int n = std::vsnprintf(msg, sizeof msg, format, ap);
  if (n < 0) return;
  if (level >= rocksdb::InfoLogLevel::WARN_LEVEL) {
    std::lock_guard lock(mu_);
    recent_.emplace_back(msg);
    if (recent_.size() > kRecent) recent_.pop_front();
  }
  if (fd_ < 0) return;
  struct timeval tv;
  ::gettimeofday(&tv, nullptr);
  struct tm t;
  ::localtime_r(&tv.tv_sec, &t);
  char line[1200];
  const int len = std::snprintf(
      line, sizeof line, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld [%s] %s\n",
      t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
      static_cast<long>(tv.tv_usec), LevelName(level), msg);
  // One write per line (O_APPEND: lines of threads never interleave); a
  // failure (ENOSPC, EIO) drops the line and nothing else.
  if (len > 0) {
    (void)!::write(
        fd_, line,
        static_cast<size_t>(len) < sizeof line ? len : sizeof line - 1);
  }
}

std::vector<std::string> StoreInfoLog::Recent() const {
  std::lock_guard lock(mu_);
  return {recent_.begin(), recent_.end()};
}

}  // namespace shardfilter::persistence::internal
