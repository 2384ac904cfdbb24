// Where the journal component's logs live (log/paths.h).
#include "shardfilter/persistence/log/paths.h"

#include <xxhash.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/log/format.h"

namespace shardfilter::persistence {

using shardfilter::internal::LoadLE;
using shardfilter::internal::PutU64;

namespace {
// The dedup log's name hash (its records' check seed, "_dedupl g").
constexpr uint64_t kDedupSeed = 0x5f64656475706c67;
}  // namespace

std::string FilterJournalEpochKey(std::string_view name) {
  std::string out{static_cast<char>(0xF7), 'J', 'e'};
  out += NamePrefix(name);
  return out;
}

std::string EncodeFilterJournalEpoch(uint64_t epoch) {
  std::string out;
  out.push_back(1);
  PutU64(&out, epoch);
  PutU64(&out, XXH3_64bits_withSeed(out.data(), out.size(), kFormatSeed));
  return out;
}

Result<uint64_t> DecodeFilterJournalEpoch(std::string_view value,
                                          const std::string& what) {
  if (value.size() != 17 || value[0] != 1 ||
      LoadLE(value.data() + 9, 8) !=
          XXH3_64bits_withSeed(value.data(), 9, kFormatSeed) ||
      LoadLE(value.data() + 1, 8) == 0) {
    return Status::Corruption(what + ": bad filter journal epoch value");
  }
  return LoadLE(value.data() + 1, 8);
}

std::string FilterJournalDir(std::string_view store_path) {
  return std::string(store_path) + "/filter-journal";
}

std::string FilterJournalEpochDir(std::string_view store_path, uint64_t epoch) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(epoch));
  return FilterJournalDir(store_path) + "/" + hex;
}

std::string SegmentPath(std::string_view store_path, uint64_t epoch,
                        uint32_t shard, uint64_t number) {
  char name[48];
  std::snprintf(name, sizeof name, "/%03u-%08llu.sfj", shard,
                static_cast<unsigned long long>(number));
  return FilterJournalEpochDir(store_path, epoch) + name;
}

std::string ThreadSegmentPath(std::string_view store_path, uint64_t epoch,
                              uint32_t stripe, uint64_t number) {
  char name[48];
  std::snprintf(name, sizeof name, "/t%03u-%08llu.sfj", stripe,
                static_cast<unsigned long long>(number));
  return FilterJournalEpochDir(store_path, epoch) + name;
}

bool ParseThreadSegmentName(std::string_view file, uint32_t* stripe,
                            uint64_t* number) {
  unsigned s = 0;
  unsigned long long n = 0;
  const std::string f(file);
  if (std::sscanf(f.c_str(), "t%3u-%8llu.sfj", &s, &n) != 2) return false;
  char again[48];
  std::snprintf(again, sizeof again, "t%03u-%08llu.sfj", s, n);
  if (f != again) return false;
  *stripe = s;
  *number = n;
  return true;
}

bool ParseSegmentName(std::string_view file, uint32_t* shard,
                      uint64_t* number) {
  unsigned s = 0;
  unsigned long long n = 0;
  const std::string f(file);
  if (std::sscanf(f.c_str(), "%3u-%8llu.sfj", &s, &n) != 2) return false;
  char again[48];
  std::snprintf(again, sizeof again, "%03u-%08llu.sfj", s, n);
  if (f != again) return false;
  *shard = s;
  *number = n;
  return true;
}

std::string DedupLogPath(std::string_view store_path, std::string_view set) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx",
           static_cast<unsigned long long>(HashKey(set, kDedupSeed)));
  return std::string(store_path) + "/dedup-journal/" + hex + ".sfdl";
}

uint64_t NewJournalEpoch() {
  std::random_device rd;
  uint64_t e = 0;
  while (e == 0) {
    e = (uint64_t{rd()} << 32) ^ rd() ^
        static_cast<uint64_t>(
            std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return e;
}

void RemoveStaleEpochs(Env& env, const std::string& store_path,
                       const std::set<uint64_t>& keep) {
  const std::string dir = FilterJournalDir(store_path);
  auto names = env.Children(dir);
  if (!names.ok()) return;
  for (const std::string& n : *names) {
    if (n.size() != 16 ||
        n.find_first_not_of("0123456789abcdef") != std::string::npos) {
      continue;
    }
    const uint64_t epoch = std::stoull(n, nullptr, 16);
    if (keep.count(epoch) == 0) (void)env.RemoveTree(dir + "/" + n);
  }
}

}  // namespace shardfilter::persistence
