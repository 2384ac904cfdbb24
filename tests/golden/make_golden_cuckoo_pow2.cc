// make_golden_cuckoo_pow2 <out-dir>: writes cf-pow2.sfx, the export of a
// cuckoo filter of the power-of-two geometry (FilterSpec::
// cuckoo_pow2_buckets, descriptor and export flag bit 6), which
// tests/cuckoo_pow2_geometry_test.cc loads with every later build
// (tests/data/golden-cuckoo-pow2/README.md). Run once; never regenerated
// for a format change.
//
// The filter: capacity 64, bucket size 2, expansion 2, 2 shards, seed
// 0x601d, keys "k0" .. "k399" added once each (link 0 of each shard: 16
// buckets; the chains grew to several links), then "k0" .. "k49" removed
// (those listed in cf-pow2.removed: the others were ambiguous).
#include <cstdio>
#include <fstream>
#include <string>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/sharded_filter.h"

int main(int argc, char** argv) {
  using namespace shardfilter;  // NOLINT: a small program
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_golden_cuckoo_pow2 <out-dir>\n");
    return 2;
  }
  FilterSpec spec;
  spec.type = FilterType::kCuckoo;
  spec.capacity = 64;
  spec.bucket_size = 2;
  spec.expansion = 2;
  spec.shards = 2;
  spec.seed = 0x601d;
  spec.cuckoo_pow2_buckets = true;
  auto f = ShardedFilter::Create(spec);
  if (!f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
    return 1;
  }
  for (int i = 0; i < 400; ++i) {
    const Status s = (*f)->Add("k" + std::to_string(i));
    if (!s.ok()) {
      std::fprintf(stderr, "k%d: %s\n", i, s.ToString().c_str());
      return 1;
    }
  }
  // A remove the chain finds ambiguous (the key's fingerprint in two links)
  // removes nothing: the keys removed are listed in cf-pow2.removed.
  std::ofstream removed(std::string(argv[1]) + "/cf-pow2.removed");
  for (int i = 0; i < 50; ++i) {
    const std::string key = "k" + std::to_string(i);
    const Status s = (*f)->Remove(key);
    if (s.ok()) {
      removed << key << "\n";
    } else if (s.code() != StatusCode::kNotSupported) {
      std::fprintf(stderr, "remove %s: %s\n", key.c_str(),
                   s.ToString().c_str());
      return 1;
    }
  }
  const std::string bytes = ExportShardedFilter(**f);
  std::ofstream out(std::string(argv[1]) + "/cf-pow2.sfx", std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out.good() && removed.good() ? 0 : 1;
}
