// Shared test helpers: ASSERT_OK / EXPECT_OK and deterministic key streams.
#ifndef SHARDFILTER_TESTS_TEST_UTIL_H_
#define SHARDFILTER_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/status.h"

#define ASSERT_OK(expr)                          \
  do {                                           \
    const ::shardfilter::Status sf_s_ = (expr);  \
    ASSERT_TRUE(sf_s_.ok()) << sf_s_.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                          \
  do {                                           \
    const ::shardfilter::Status sf_s_ = (expr);  \
    EXPECT_TRUE(sf_s_.ok()) << sf_s_.ToString(); \
  } while (0)

namespace shardfilter::testing {

// Every filter type, for suites that run once per type:
//   INSTANTIATE_TEST_SUITE_P(AllTypes, X, testing::AllFilterTypes(),
//                            testing::FilterTypeParamName);
inline auto AllFilterTypes() {
  return ::testing::Values(FilterType::kBloom, FilterType::kCountingBloom,
                           FilterType::kCuckoo);
}
inline std::string FilterTypeParamName(
    const ::testing::TestParamInfo<FilterType>& info) {
  return FilterTypeName(info.param);
}

// Key i of a named stream, as 8 bytes: different streams never overlap, so
// "present" and "absent" key sets are disjoint by construction.
inline std::string Key(uint64_t stream, uint64_t i) {
  uint64_t v = (stream << 48) ^ i;
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

// splitmix64: a deterministic stream of well-mixed 64-bit values, used as
// stand-ins for key hashes in tests that work on hashes directly.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The hash of key i, for tests that drive the *Hash calls: one SplitMix64
// step from a state spread by i (salt: a different set of hashes).
inline uint64_t KeyHashOf(uint64_t i, uint64_t salt = 0) {
  uint64_t state = i * 0x9E3779B97F4A7C15ULL + salt;
  return SplitMix64(&state);
}

// The VmFlags line of /proc/self/smaps for the mapping holding `p` ("hg":
// advised into huge pages); "" when not found.
inline std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream in(line);
    if (line.find(':') == std::string::npos ||
        line.find('-') < line.find(':')) {
      in >> std::hex >> lo >> dash >> hi;
      if (dash == '-' && hi > lo) {
        inside = addr >= lo && addr < hi;
        continue;
      }
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

}  // namespace shardfilter::testing

#endif  // SHARDFILTER_TESTS_TEST_UTIL_H_
