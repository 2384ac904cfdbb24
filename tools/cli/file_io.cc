#include "tools/cli/file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tools/cli/cli_args.h"

namespace shardfilter::tools {
namespace {

Status Errno(std::string_view what, const std::string& path) {
  return Status::IOError(std::string(what) + " " + Quoted(path) + ": " +
                         std::strerror(errno));
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Result<std::string> ReadWholeFile(const std::string& path, std::istream& in) {
  if (path == "-") {
    std::ostringstream all;
    all << in.rdbuf();
    if (in.bad()) return Status::IOError("reading stdin failed");
    return all.str();
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(Quoted(path) +
                                   " is a directory, not an export file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return Errno("cannot open", path);
  std::string bytes((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  if (f.bad()) return Errno("reading", path);
  return bytes;
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  // The rename below would replace whatever PATH is: only a regular file
  // (or nothing) may be replaced, never a device, FIFO, socket or
  // directory (`export f /dev/full` made /dev/full a regular file).
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(
        Quoted(path) +
        " exists and is not a regular file (a device, FIFO, socket, "
        "directory or symbolic link): refusing to replace it");
  }
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", tmp);
  Status s;
  size_t done = 0;
  while (s.ok() && done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      s = Errno("writing", tmp);
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (s.ok() && ::fsync(fd) != 0) s = Errno("fsync of", tmp);
  if (::close(fd) != 0 && s.ok()) s = Errno("closing", tmp);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Errno("renaming to", path);
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename is durable once the directory is.
  int dir = ::open(DirOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    if (::fsync(dir) != 0) s = Errno("fsync of the directory of", path);
    ::close(dir);
  }
  return s;
}

}  // namespace shardfilter::tools
