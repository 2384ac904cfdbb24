// Uses only the in-memory filters (shardfilter::filters).
#include <shardfilter/filters/bloom_filter.h>
#include <shardfilter/filters/cuckoo_filter.h>

#include <cstdio>

#if defined(XXH_INLINE_ALL) || defined(XXH_VERSION_MAJOR) || \
    defined(XXH_VECTOR) || defined(XXH3_SECRET_SIZE_MIN)
#error "shardfilter's public headers leak xxHash macros"
#endif

int main() {
  shardfilter::BloomOptions bo;
  bo.capacity = 1000;
  auto bloom = shardfilter::BloomFilter::Create(bo);
  if (!bloom.ok()) {
    std::fprintf(stderr, "%s\n", bloom.status().ToString().c_str());
    return 1;
  }
  (*bloom)->Add("alice");
  shardfilter::CuckooOptions co;
  co.capacity = 1000;
  auto cuckoo = shardfilter::CuckooFilter::Create(co);
  if (!cuckoo.ok() || !(*cuckoo)->Add("bob").ok()) return 1;
  if (!(*bloom)->MayContain("alice") || !(*cuckoo)->MayContain("bob")) {
    std::fprintf(stderr, "false negative\n");
    return 1;
  }
  std::printf("filters ok\n");
  return 0;
}
