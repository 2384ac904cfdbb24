// Fuzzes DeserializeFilter (filters/filter_factory.cc, filters/envelope.cc and
// each type's Deserialize): a filter envelope as a checkpoint link, an
// export or a user's bytes hold it. Mode byte: fuzz_fixup.h. An accepted
// filter must work and round-trip (fuzz_exercise.h).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_exercise.h"
#include "fuzz_fixup.h"
#include "shardfilter/filters/envelope.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardfilter;
  if (size == 0) return 0;
  std::string b(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) fuzz::FixEnvelope(&b, 0, b.size());
  (void)OpenEnvelope(b);
  auto f = DeserializeFilter(b);
  if (f.ok()) fuzz::ExerciseFilter(**f);
  return 0;
}
