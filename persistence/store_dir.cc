// InspectStoreDir / WriteWalMarker (persistence/store_dir.h).
#include "shardfilter/persistence/store_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "shardfilter/persistence/sync_marker.h"

namespace shardfilter::persistence::internal {

namespace fs = std::filesystem;

namespace {

// "000024" of "000024.log" when the name is digits + `suffix`.
std::optional<uint64_t> Numbered(const std::string& name,
                                 const std::string& suffix) {
  if (name.size() <= suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const std::string digits = name.substr(0, name.size() - suffix.size());
  if (digits.empty() || digits.size() > 19 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoull(digits);
}

bool StartsWith(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Files only RocksDB (or this store) makes. LOG, LOG.old.* and LOCK are not
// among them: a user's directory may hold files of those names.
bool IsStoreFile(const std::string& name) {
  return name == "CURRENT" || name == "IDENTITY" || name == kWalMarkerFile ||
         name == kSyncMarkerFile || name == "dedup-journal" ||
         StartsWith(name, "MANIFEST-") || StartsWith(name, "OPTIONS-") ||
         Numbered(name, ".sst") || Numbered(name, ".log") ||
         Numbered(name, ".blob");
}

std::string ReadSmallFile(const std::string& path, bool* ok) {
  std::ifstream f(path, std::ios::binary);
  *ok = static_cast<bool>(f);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str().substr(0, 4096);
}

std::string Quoted(const std::string& path) { return "\"" + path + "\""; }

std::string WalName(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06llu.log",
                static_cast<unsigned long long>(n));
  return buf;
}

Status SyncPath(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) {
    return Status::IOError("opening " + path + ": " + std::strerror(errno));
  }
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) {
    return Status::IOError("syncing " + path + ": " + std::strerror(errno));
  }
  return Status::OK();
}

}  // namespace

Status InspectStoreDir(const std::string& path, bool* is_new) {
  *is_new = false;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::IOError("reading " + Quoted(path) + ": " + ec.message());
  }
  if (!fs::exists(st)) {
    *is_new = true;
    return Status::OK();
  }
  if (!fs::is_directory(st)) {
    return Status::InvalidArgument(Quoted(path) + " is not a directory");
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end;
       it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) {
    return Status::IOError("listing " + Quoted(path) + ": " + ec.message());
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    *is_new = true;
    return Status::OK();
  }
  std::vector<std::string> store_files;
  std::optional<uint64_t> newest_wal;
  bool has_current = false;
  for (const std::string& n : names) {
    if (n == "CURRENT") has_current = true;
    if (IsStoreFile(n)) store_files.push_back(n);
    if (auto w = Numbered(n, ".log")) {
      newest_wal = std::max(newest_wal.value_or(0), *w);
    }
  }
  if (!has_current) {
    if (store_files.empty()) {
      return Status::InvalidArgument(
          Quoted(path) +
          " is not empty and is not a shardfilter store (no RocksDB files); "
          "refusing to use it: nothing was changed");
    }
    std::string list;
    for (size_t i = 0; i < store_files.size() && i < 6; ++i) {
      list += (i ? ", " : "") + store_files[i];
    }
    if (store_files.size() > 6) list += ", ...";
    return Status::Corruption(
        "store " + Quoted(path) +
        ": CURRENT is missing, but the directory holds RocksDB files (" + list +
        "); the store is damaged and was not opened (nothing was "
        "changed)");
  }
  bool ok = false;
  std::string current = ReadSmallFile(path + "/CURRENT", &ok);
  if (!ok) {
    return Status::IOError("reading " + Quoted(path + "/CURRENT"));
  }
  if (current.size() < 11 || current.back() != '\n' ||
      !StartsWith(current, "MANIFEST-") ||
      !Numbered(current.substr(9, current.size() - 10) + ".", ".")) {
    return Status::Corruption("store " + Quoted(path) +
                              ": CURRENT is damaged (it does not name a "
                              "MANIFEST); the store was not opened");
  }
  const std::string manifest = current.substr(0, current.size() - 1);
  const auto manifest_size = fs::file_size(path + "/" + manifest, ec);
  if (ec) {
    return Status::Corruption("store " + Quoted(path) + ": " + manifest +
                              ", named by CURRENT, is missing (" +
                              ec.message() + "); the store was not opened");
  }
  if (manifest_size == 0) {
    return Status::Corruption("store " + Quoted(path) + ": " + manifest +
                              " is empty; the store was not opened");
  }
  const std::string marker_path = path + "/" + kWalMarkerFile;
  if (fs::exists(marker_path, ec)) {
    std::string marker = ReadSmallFile(marker_path, &ok);
    unsigned long long wal = 0;
    if (!ok || std::sscanf(marker.c_str(), "shardfilter wal %llu", &wal) != 1) {
      return Status::Corruption("store " + Quoted(path) + ": " +
                                kWalMarkerFile + " is damaged");
    }
    // RocksDB deletes a log only once a newer one exists, so the live log
    // the marker names, or a later one, is always there.
    if (!newest_wal || *newest_wal < wal) {
      return Status::Corruption(
          "store " + Quoted(path) + ": the write-ahead log " + WalName(wal) +
          " is missing (it holds the writes since the last flush of the "
          "memtables); the store was not opened");
    }
  }
  return Status::OK();
}

Result<int> LockForReading(const std::string& path) {
  const std::string lock = path + "/LOCK";
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return -1;
    return Status::IOError("opening " + lock + ": " + std::strerror(errno));
  }
  struct flock fl = {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &fl) == 0) return fd;
  const int err = errno;
  struct flock who = {};
  who.l_type = F_WRLCK;
  who.l_whence = SEEK_SET;
  const bool asked = ::fcntl(fd, F_GETLK, &who) == 0;
  ::close(fd);
  if (err != EAGAIN && err != EACCES) {
    return Status::IOError("locking " + lock + ": " + std::strerror(err));
  }
  // A conflict F_GETLK does not report is this process's own lock.
  if (asked && who.l_type == F_UNLCK) return -1;
  std::string holder = "another process";
  if (asked && who.l_pid > 0) {
    holder = "process " + std::to_string(who.l_pid);
    bool ok = false;
    std::string comm =
        ReadSmallFile("/proc/" + std::to_string(who.l_pid) + "/comm", &ok);
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    if (ok && !comm.empty()) holder += " (" + comm + ")";
  }
  return Status::Busy("store " + Quoted(path) + " is open for writing by " +
                      holder +
                      "; a read-only open cannot see one consistent state "
                      "while a writer recovers or compacts: retry when it "
                      "is done, or ask that process");
}

Status WriteWalMarker(const std::string& path, uint64_t wal) {
  const std::string file = path + "/" + kWalMarkerFile;
  const std::string tmp = file + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << "shardfilter wal " << wal << "\n";
    f.close();
    if (!f) return Status::IOError("writing " + tmp);
  }
  SF_RETURN_IF_ERROR(SyncPath(tmp, O_RDONLY));
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    return Status::IOError("renaming " + tmp + ": " + std::strerror(errno));
  }
  return SyncPath(path, O_RDONLY | O_DIRECTORY);
}

}  // namespace shardfilter::persistence::internal
