// Fuzzes the dedup journal file reader (persistence/log/dedup_log.cc:
// DedupLog::OpenExisting and ReadAll), what a dedup set's open replays after
// a crash. The reader maps a file, so each input is written into a copy of a
// real, empty journal (made once with DedupLog::Create, two 64 KiB regions)
// in a temporary directory, and read back.
//
// Input: a mode byte, then bytes laid over the file:
//   bit 0     0 = repair the checksums of what the bytes lay out (region
//             header, records, file header: the v1 layout of dedup_log.h),
//             1 = as they are
//   bit 1     1 = read as after a reboot (another boot id)
//   bits 2-3  where: 0 region 0 (from its header), 1 region 1, 2 the file
//             header, 3 the first half over region 0 and the rest over 1
#include <fcntl.h>
#include <rocksdb/file_system.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_exercise.h"
#include "fuzz_fixup.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/persistence/log/dedup_log.h"
#include "shardfilter/persistence/log/fs_env.h"

namespace {

using namespace shardfilter;
using persistence::DedupLog;

// The journal component's Env over RocksDB's default file system.
persistence::Env& LogEnv() {
  static const std::shared_ptr<persistence::Env> env =
      persistence::NewFileSystemEnv(rocksdb::FileSystem::Default());
  return *env;
}

constexpr size_t kFileHeader = 4096;
constexpr size_t kRegion = 64 * 1024;
constexpr size_t kRegionHeader = 64;
// dedup_log.cc's record and header check: HashKey with this seed.
constexpr uint64_t kCheckSeed = 0x5f64656475706c67;

uint64_t Check(const std::string& b, size_t at, size_t n) {
  return HashKey(std::string_view(b.data() + at, n), kCheckSeed);
}
void Store(std::string* b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    (*b)[at + i] = static_cast<char>(v >> (8 * i));
}

// Region header check, then each record the lengths delimit.
void FixRegion(std::string* b, size_t region) {
  Store(b, region + 16, Check(*b, region, 16), 8);
  size_t at = region + kRegionHeader;
  const size_t end = region + kRegion;
  while (at + 8 <= end) {
    const uint64_t len = fuzz::LoadLE(*b, at, 4);
    if (len == 0 || len > end - at - 8) return;
    Store(b, at + 4, static_cast<uint32_t>(Check(*b, at + 8, len)), 4);
    at += 8 + len;
  }
}

void FixFileHeader(std::string* b) {
  // magic 8 | version 4 | reserved 4 | region 8 | name len 4 | name |
  // boot len 4 | boot | check 8
  size_t at = 24;
  const uint64_t name = fuzz::LoadLE(*b, at, 4);
  if (name > kFileHeader) return;
  at += 4 + name;
  if (at + 4 > kFileHeader) return;
  const uint64_t boot = fuzz::LoadLE(*b, at, 4);
  if (boot > kFileHeader) return;
  at += 4 + boot;
  if (at + 8 > kFileHeader) return;
  Store(b, at, Check(*b, 0, at), 8);
}

struct Template {
  std::string dir, path, bytes;
  int fd = -1;
  Template() {
    // Memory-backed when the machine has it: the file is rewritten per run.
    const char* base = getenv("TMPDIR");
    std::string root = base ? base : "/tmp";
    if (!base && std::filesystem::is_directory("/dev/shm")) root = "/dev/shm";
    std::string tmpl = root + "/sfdlfuzz_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) fuzz::Fail("mkdtemp");
    dir = tmpl;
    path = dir + "/log.sfdl";
    {
      auto log = DedupLog::Create(LogEnv(), path, "set", kRegion);
      if (!log.ok()) fuzz::Fail("creating the template journal");
    }
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
    if (bytes.size() != kFileHeader + 2 * kRegion) fuzz::Fail("template size");
    fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fuzz::Fail("opening the journal copy");
  }
  ~Template() {
    ::close(fd);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

void Lay(std::string* file, size_t at, const uint8_t* p, size_t n) {
  if (at >= file->size()) return;
  n = std::min(n, file->size() - at);
  file->replace(at, n, reinterpret_cast<const char*>(p), n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Template t;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  std::string file = t.bytes;
  const size_t r0 = kFileHeader, r1 = kFileHeader + kRegion;
  switch ((mode >> 2) & 3) {
    case 0:
      Lay(&file, r0, data, std::min(size, kRegion));
      break;
    case 1:
      Lay(&file, r1, data, std::min(size, kRegion));
      break;
    case 2:
      Lay(&file, 0, data, std::min(size, kFileHeader));
      break;
    default:
      Lay(&file, r0, data, std::min(size / 2, kRegion));
      Lay(&file, r1, data + size / 2, std::min(size - size / 2, kRegion));
  }
  if ((mode & 1) == 0) {
    FixFileHeader(&file);
    FixRegion(&file, r0);
    FixRegion(&file, r1);
  }
  // Same size every time: overwrite in place (no truncation, no new
  // blocks), a copy into the page cache.
  if (pwrite(t.fd, file.data(), file.size(), 0) !=
      static_cast<ssize_t>(file.size())) {
    fuzz::Fail("writing the journal copy");
  }
  persistence::SetBootIdForTesting((mode & 2) ? "fuzz-another-boot" : "");
  auto log = DedupLog::OpenExisting(LogEnv(), t.path, "set");
  if (!log.ok()) return 0;
  std::vector<persistence::DedupLogRecord> records;
  if (!(*log)->ReadAll(&records).ok()) return 0;
  for (const auto& rec : records) {
    if (rec.ops.empty()) fuzz::Fail("a record without ops was read");
  }
  return 0;
}
