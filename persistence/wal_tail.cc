// FindWalTornTail (persistence/wal_tail.h).
#include "shardfilter/persistence/wal_tail.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "shardfilter/filters/internal/coding.h"

namespace shardfilter::persistence {

using shardfilter::internal::LoadLE;

namespace {

constexpr uint64_t kBlock = 32768;
constexpr uint64_t kHeader = 7;
constexpr uint64_t kRecyclableHeader = 11;

enum Type : uint8_t {
  kZero = 0,
  kFull = 1,
  kFirst = 2,
  kMiddle = 3,
  kLast = 4,
  kRecyclableFull = 5,
  kRecyclableLast = 8,
  kSetCompression = 9,
};

bool AllZero(std::string_view b) {
  return std::all_of(b.begin(), b.end(), [](char c) { return c == 0; });
}

// A record's sequence and count from its first fragment's payload.
void ReadBatchHead(std::string_view payload, WalTornTail* t) {
  if (payload.size() < 12) return;
  t->first_seq = LoadLE(payload.data(), 8);
  t->count = static_cast<uint32_t>(LoadLE(payload.data() + 8, 4));
}

}  // namespace

std::optional<WalTornTail> FindWalTornTail(std::string_view bytes) {
  const uint64_t size = bytes.size();
  uint64_t off = 0;
  // The logical record being assembled from fragments: where it began.
  std::optional<WalTornTail> open;
  while (off < size) {
    const uint64_t left_in_block = kBlock - off % kBlock;
    if (left_in_block < kHeader) {  // the block's zero padding
      off += left_in_block;
      continue;
    }
    const std::string_view rest = bytes.substr(off);
    if (rest.size() < kHeader) {
      // A header cut short: torn, unless only zeros remain (then the
      // previous record was the last whole one, or one is still open).
      if (AllZero(rest) && !open) return std::nullopt;
      if (open) return open;
      return WalTornTail{off, size, 0, 0, AllZero(rest)};
    }
    const uint8_t type = static_cast<uint8_t>(rest[6]);
    const uint64_t len = LoadLE(rest.data() + 4, 2);
    if (type == kZero && len == 0) {
      // Zeros where a header should be: the end of what was written (a
      // preallocated or unwritten tail). Whole when nothing else follows
      // and no record was left open.
      if (AllZero(rest) && !open) {
        return rest.empty() ? std::nullopt
                            : std::optional<WalTornTail>(
                                  WalTornTail{off, size, 0, 0, true});
      }
      if (open) return open;
      return WalTornTail{off, size, 0, 0, AllZero(rest)};
    }
    const bool recyclable = type >= kRecyclableFull && type <= kRecyclableLast;
    const uint64_t header = recyclable ? kRecyclableHeader : kHeader;
    const uint8_t base = recyclable ? type - (kRecyclableFull - kFull) : type;
    if (rest.size() < header + len) {
      // The record runs past the end of the file: cut inside it.
      if (open) return open;
      WalTornTail t{off, size, 0, 0, false};
      if (base == kFull || base == kFirst) {
        ReadBatchHead(rest.substr(std::min<uint64_t>(header, rest.size())), &t);
      }
      return t;
    }
    const std::string_view payload = rest.substr(header, len);
    switch (base) {
      case kFirst:
        open = WalTornTail{off, size, 0, 0, false};
        ReadBatchHead(payload, &*open);
        break;
      case kLast:
        open.reset();
        break;
      case kFull:
      case kMiddle:
      case kSetCompression:
      default:
        // Other types are RocksDB's replay to judge; they end no record.
        break;
    }
    off += header + len;
  }
  // A record begun in one block and not finished by the end of the file.
  return open;
}

Result<std::vector<std::string>> DescribeWalTornTails(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> logs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".log") == 0 &&
        std::all_of(n.begin(), n.end() - 4,
                    [](char c) { return c >= '0' && c <= '9'; })) {
      logs.push_back(n);
    }
  }
  if (ec) return Status::IOError("listing " + dir + ": " + ec.message());
  std::sort(logs.begin(), logs.end());
  std::vector<std::string> out;
  for (const std::string& n : logs) {
    std::ifstream f(dir + "/" + n, std::ios::binary);
    if (!f) return Status::IOError("reading " + dir + "/" + n);
    const std::string bytes((std::istreambuf_iterator<char>(f)),
                            std::istreambuf_iterator<char>());
    auto t = FindWalTornTail(bytes);
    if (!t) continue;
    std::string what = n + ": the write-ahead log ends inside a record (at " +
                       "byte " + std::to_string(t->offset) + " of " +
                       std::to_string(t->bytes) + ")";
    if (t->zeros) {
      what = n + ": the write-ahead log ends in zeros from byte " +
             std::to_string(t->offset) + " of " + std::to_string(t->bytes);
    }
    if (t->first_seq != 0 && t->count != 0) {
      what += "; the record, sequences " + std::to_string(t->first_seq) + ".." +
              std::to_string(t->first_seq + t->count - 1) +
              ", was not replayed";
    }
    out.push_back(what);
  }
  return out;
}

}  // namespace shardfilter::persistence
