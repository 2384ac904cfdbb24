// Uses an in-memory filter and a persistent Database in a temporary
// directory (argv[1]), reopening the store to see the key survive.
#include <shardfilter/engine/database.h>
#include <shardfilter/filters/bloom_filter.h>

#include <cstdio>
#include <string>

#if defined(XXH_INLINE_ALL) || defined(XXH_VERSION_MAJOR) || defined(XXH_VECTOR)
#error "shardfilter's public headers leak xxHash macros"
#endif

namespace sf = shardfilter;

static int Fail(const char* what, const sf::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return 1;
}
static int Fail(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer <empty-dir>\n");
    return 2;
  }
  sf::BloomOptions bo;
  bo.capacity = 1000;
  auto bloom = sf::BloomFilter::Create(bo);
  if (!bloom.ok()) return Fail("BloomFilter::Create", bloom.status());
  (*bloom)->Add("alice");
  if (!(*bloom)->MayContain("alice")) return Fail("bloom: false negative");

  const std::string path = std::string(argv[1]) + "/store";
  for (int round = 0; round < 2; ++round) {
    auto db = sf::Database::Open({.path = path});
    if (!db.ok()) return Fail("Database::Open", db.status());
    // Create on the first run, Get on the second.
    auto f = (*db)->Get("users");
    if (!f.ok()) {
      f = (*db)->Create("users",
                        {.type = sf::FilterType::kCuckoo, .capacity = 10'000});
      if (!f.ok()) return Fail("Create", f.status());
      if (auto s = (*f)->Add("alice"); !s.ok()) return Fail("Add", s);
      if (auto c = (*db)->Checkpoint("users"); !c.ok()) {
        return Fail("Checkpoint", c.status());
      }
    }
    if (!(*f)->MayContain("alice")) return Fail("engine: false negative");
    // A Bloom filter without a journal: its adds run inline in this
    // program (the shard lock's reader side and its thread-local slot,
    // reached across the shared library); the checkpoint must find the
    // shards they dirtied, or the second run misses the keys.
    auto seen = (*db)->Get("seen");
    if (!seen.ok()) {
      seen = (*db)->Create("seen", {.type = sf::FilterType::kBloom,
                                    .capacity = 100'000,
                                    .shards = 4,
                                    .durability = sf::Durability::kNone});
      if (!seen.ok()) return Fail("Create", seen.status());
      for (int i = 0; i < 1000; ++i) {
        const std::string key = "url-" + std::to_string(i);
        if (auto s = (*seen)->Add(key); !s.ok()) return Fail("Add", s);
      }
      if (auto c = (*db)->Checkpoint("seen"); !c.ok()) {
        return Fail("Checkpoint", c.status());
      }
    }
    for (int i = 0; i < 1000; ++i) {
      if (!(*seen)->MayContain("url-" + std::to_string(i))) {
        return Fail("engine: a Bloom add lost across a checkpoint");
      }
    }
    if (auto s = (*db)->Close(); !s.ok()) return Fail("Close", s);
  }
  std::printf("engine ok\n");
  return 0;
}
