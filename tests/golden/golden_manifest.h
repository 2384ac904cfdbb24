// The manifest of the golden store (tests/data/golden/manifest.txt): what
// tests/golden/make_golden.cc created, read back by
// tests/golden_format_test.cc. One record per line, space-separated:
//
//   filter <name> <spec>       a catalog filter and its resolved spec
//   items <name> <n>           its total item count (stats) at the end
//   keys <name> <prefix> <a> <b>  keys <prefix><i>, a <= i < b, present
//   tiered <name> <levels> <exact>
//   dedup <name>               a dedup set (its journal left by a crash)
//   dedup-keys <name> <prefix> <a> <b>    present in the set
//   dedup-gone <name> <prefix> <a> <b>    removed: absent from the set
//   export <file> <name>       an export file of filter <name>
//
// Names and prefixes hold no spaces. <spec> is SpecText(spec).
#ifndef SHARDFILTER_TESTS_GOLDEN_GOLDEN_MANIFEST_H_
#define SHARDFILTER_TESTS_GOLDEN_GOLDEN_MANIFEST_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "shardfilter/engine/sharded_filter.h"

namespace shardfilter::golden {

// Every field of a resolved spec, as one token (fpp exactly, %a).
inline std::string SpecText(const FilterSpec& s) {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "type=%s,capacity=%llu,fpp=%a,shards=%u,seed=%llx,durability=%d,"
      "classic=%d,k=%u,fp_bits=%u,bucket=%u,kicks=%u,max_bytes=%llu,"
      "scalable=%d,expansion=%u,retain=%d",
      FilterTypeName(s.type), static_cast<unsigned long long>(s.capacity),
      s.fpp, s.shards, static_cast<unsigned long long>(s.seed),
      s.durability ? static_cast<int>(*s.durability) : -1,
      s.layout == BloomLayout::kClassic ? 1 : 0, s.k, s.fingerprint_bits,
      s.bucket_size, s.max_kicks, static_cast<unsigned long long>(s.max_bytes),
      s.scalable ? 1 : 0, s.expansion, s.retain_hashes ? 1 : 0);
  return buf;
}

inline std::string KeyOf(const std::string& prefix, uint64_t i) {
  return prefix + std::to_string(i);
}

}  // namespace shardfilter::golden

#endif  // SHARDFILTER_TESTS_GOLDEN_GOLDEN_MANIFEST_H_
