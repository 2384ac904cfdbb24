#include "shardfilter/persistence/filter_expiry.h"

#include <xxhash.h>

#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/keys.h"

namespace shardfilter::persistence {

using shardfilter::internal::LoadLE;
using shardfilter::internal::PutU64;

namespace {
constexpr uint64_t kSeed = 0x6a6c66746c696673;  // as the journal epoch's
constexpr size_t kTagBytes = sizeof kFilterExpiryKeyTag;
}  // namespace

std::string FilterExpiryKey(std::string_view name) {
  std::string out(kFilterExpiryKeyTag, kTagBytes);
  out += NamePrefix(name);
  return out;
}

Result<std::string> FilterExpiryName(std::string_view key) {
  if (key.size() < kTagBytes + 2 ||
      key.substr(0, kTagBytes) !=
          std::string_view(kFilterExpiryKeyTag, kTagBytes)) {
    return Status::Corruption("malformed filter expiry key");
  }
  const size_t len = LoadBE(key.data() + kTagBytes, 2);
  if (len == 0 || key.size() != kTagBytes + 2 + len) {
    return Status::Corruption("malformed filter expiry key");
  }
  return std::string(key.substr(kTagBytes + 2));
}

std::string EncodeFilterExpiry(int64_t unix_ms) {
  std::string out;
  out.push_back(1);
  PutU64(&out, static_cast<uint64_t>(unix_ms));
  PutU64(&out, XXH3_64bits_withSeed(out.data(), out.size(), kSeed));
  return out;
}

Result<int64_t> DecodeFilterExpiry(std::string_view value,
                                   const std::string& what) {
  if (value.size() != 17 || value[0] != 1 ||
      LoadLE(value.data() + 9, 8) !=
          XXH3_64bits_withSeed(value.data(), 9, kSeed)) {
    return Status::Corruption(what + ": bad expiry value");
  }
  return static_cast<int64_t>(LoadLE(value.data() + 1, 8));
}

}  // namespace shardfilter::persistence
