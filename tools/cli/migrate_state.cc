#include "tools/cli/migrate_state.h"

#include <cstring>

#include "shardfilter/filters/hash.h"

namespace shardfilter::tools {

namespace {

constexpr char kMagic[4] = {'S', 'F', 'M', 'S'};
constexpr size_t kHeader = 40;

void PutLE(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}

uint64_t GetLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

std::string EncodeMigrateState(const MigrateState& s) {
  std::string out(kMagic, sizeof kMagic);
  PutLE(&out, kMigrateStateVersion, 2);
  PutLE(&out, 0, 2);
  PutLE(&out, s.fingerprint, 8);
  PutLE(&out, s.consumed, 8);
  PutLE(&out, s.last_hash, 8);
  PutLE(&out, s.target_export.size(), 8);
  out += s.target_export;
  PutLE(&out, Checksum64(out.data(), out.size()), 8);
  return out;
}

Result<MigrateState> DecodeMigrateState(std::string_view b) {
  if (b.size() < sizeof kMagic || std::memcmp(b.data(), kMagic, 4) != 0) {
    return Status::InvalidArgument("not a shardfilter migrate state file");
  }
  if (b.size() < kHeader + 8) {
    return Status::Corruption("migrate state file: truncated header");
  }
  const uint64_t version = GetLE(b.data() + 4, 2);
  if (version > kMigrateStateVersion) {
    return Status::NotSupported(
        "migrate state file: version " + std::to_string(version) +
        " is newer than this build's " + std::to_string(kMigrateStateVersion));
  }
  if (version == 0 || GetLE(b.data() + 6, 2) != 0) {
    return Status::Corruption("migrate state file: bad version or reserved");
  }
  const uint64_t len = GetLE(b.data() + 32, 8);
  if (len != b.size() - kHeader - 8) {
    return Status::Corruption("migrate state file: length " +
                              std::to_string(len) + " does not match the " +
                              std::to_string(b.size()) + "-byte file");
  }
  const uint64_t stored = GetLE(b.data() + b.size() - 8, 8);
  if (stored != Checksum64(b.data(), b.size() - 8)) {
    return Status::Corruption("migrate state file: checksum mismatch");
  }
  MigrateState s;
  s.fingerprint = GetLE(b.data() + 8, 8);
  s.consumed = GetLE(b.data() + 16, 8);
  s.last_hash = GetLE(b.data() + 24, 8);
  s.target_export = std::string(b.substr(kHeader, len));
  return s;
}

}  // namespace shardfilter::tools
