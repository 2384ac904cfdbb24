// Fuzzes the catalog descriptor decoder (persistence/values.cc): the value
// every open reads first for each filter. Mode byte: fuzz_fixup.h. A
// decoded descriptor re-encodes and decodes to an equal one.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_exercise.h"
#include "fuzz_fixup.h"
#include "shardfilter/persistence/values.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardfilter;
  if (size == 0) return 0;
  std::string b(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) fuzz::FixValue(&b);
  auto d = persistence::DecodeDescriptor(b, "fuzz");
  if (!d.ok()) return 0;
  auto again =
      persistence::DecodeDescriptor(persistence::EncodeDescriptor(*d), "fuzz");
  if (!again.ok() || !(*again == *d)) {
    fuzz::Fail("decoded descriptor does not round-trip");
  }
  return 0;
}
