#include "shardfilter/persistence/boot_id.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace shardfilter::persistence {
namespace {

std::string& BootIdOverride() {
  static std::string id;
  return id;
}

}  // namespace

std::string CurrentBootId() {
  if (!BootIdOverride().empty()) return BootIdOverride();
  std::string id;
  int fd = ::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return id;
  char buf[64];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n > 0) id.assign(buf, static_cast<size_t>(n));
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

void SetBootIdForTesting(std::string id) { BootIdOverride() = std::move(id); }

}  // namespace shardfilter::persistence
