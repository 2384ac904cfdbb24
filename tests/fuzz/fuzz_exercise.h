// What a fuzz target does with a filter its decoder accepted: the decoder's
// promise is that accepted bytes make a filter that works (DESIGN.md
// invariant 3: never a silently wrong filter), so every accepted filter is
// queried, written and serialized again, and must round-trip exactly.
#ifndef SHARDFILTER_TESTS_FUZZ_FUZZ_EXERCISE_H_
#define SHARDFILTER_TESTS_FUZZ_FUZZ_EXERCISE_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "shardfilter/filters/filter.h"

namespace shardfilter::fuzz {

[[noreturn]] inline void Fail(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

inline void ExerciseFilter(Filter& f) {
  // Serialize(Deserialize(x)) decodes to an equal filter.
  {
    auto again = DeserializeFilter(f.Serialize());
    if (!again.ok()) Fail("re-serialized filter does not decode");
    if (!(*again)->Equals(f)) Fail("re-serialized filter differs");
  }
  (void)f.Stats();
  std::vector<uint64_t> hashes;
  uint64_t h = f.seed() ^ 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 16; ++i) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    hashes.push_back(h);
  }
  std::vector<uint8_t> out(hashes.size());
  f.MayContainHashes(hashes, out);
  for (size_t i = 0; i < hashes.size(); ++i) {
    if ((f.MayContainHash(hashes[i]) ? 1 : 0) != out[i]) {
      Fail("batch and single query disagree");
    }
    (void)f.CountHash(hashes[i]);
  }
  // An add that succeeds is visible (invariant 1).
  for (uint64_t x : hashes) {
    if (f.AddHash(x).ok() && !f.MayContainHash(x)) Fail("false negative");
  }
  size_t added = 0;
  (void)f.AddHashes(hashes, &added);
  for (size_t i = 0; i < 4; ++i) (void)f.RemoveHash(hashes[i]);
  auto again = DeserializeFilter(f.Serialize());
  if (!again.ok()) Fail("filter written after decoding does not re-decode");
}

}  // namespace shardfilter::fuzz

#endif  // SHARDFILTER_TESTS_FUZZ_FUZZ_EXERCISE_H_
