// Fuzzes the other values the store decodes: dedup entries and set metadata
// (persistence/dedup_table.cc), tiered descriptors and exact-level entries
// (persistence/tiered_table.cc), checkpoint chunks (persistence/values.cc).
// Input: mode byte (bit 0: fuzz_fixup.h; bits 1-3: which decoder), then
// the value (for exact entries: u8 key length, key, value).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_exercise.h"
#include "fuzz_fixup.h"
#include "shardfilter/persistence/dedup_table.h"
#include "shardfilter/persistence/tiered_table.h"
#include "shardfilter/persistence/values.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardfilter;
  using namespace shardfilter::persistence;
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string b(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool fix = (mode & 1) == 0;
  switch ((mode >> 1) & 7) {
    case 0: {
      if (fix) fuzz::FixValue(&b);
      // Two encodings decode to the empty entry (the compact form, and the
      // framed one older builds wrote for it), so the invariant is the
      // value's round trip, not the bytes'.
      auto e = DecodeDedupEntry(b, "fuzz");
      if (e.ok()) {
        auto again = DecodeDedupEntry(EncodeDedupEntry(*e), "fuzz");
        if (!again.ok() || !(*again == *e)) {
          fuzz::Fail("dedup entry does not round-trip");
        }
        if (!(*e == DedupEntry{}) && EncodeDedupEntry(*e) != b) {
          fuzz::Fail("dedup entry does not re-encode to its bytes");
        }
      }
      break;
    }
    case 1: {
      if (fix) fuzz::FixValue(&b);
      auto m = DecodeDedupMeta(b, "fuzz");
      if (m.ok()) {
        auto again = DecodeDedupMeta(EncodeDedupMeta(*m), "fuzz");
        if (!again.ok() || !(*again == *m)) {
          fuzz::Fail("dedup meta does not round-trip");
        }
      }
      break;
    }
    case 2: {
      if (fix) fuzz::FixValue(&b);
      auto d = DecodeTieredDescriptor(b, "fuzz");
      if (d.ok()) {
        auto again = DecodeTieredDescriptor(EncodeTieredDescriptor(*d), "fuzz");
        if (!again.ok() || !(*again == *d)) {
          fuzz::Fail("tiered descriptor does not round-trip");
        }
      }
      break;
    }
    case 3: {
      if (b.empty()) break;
      const size_t n = static_cast<unsigned char>(b[0]);
      if (n + 1 > b.size()) break;
      const std::string key = b.substr(1, n);
      std::string value = b.substr(1 + n);
      if (fix) fuzz::FixValue(&value);
      auto c = DecodeExactEntry(key, value, "fuzz");
      if (c.ok() && EncodeExactEntry(key, *c) != value) {
        fuzz::Fail("exact entry does not re-encode to its bytes");
      }
      break;
    }
    default: {
      if (fix) fuzz::FixValue(&b);
      auto c = DecodeChunk(b, "fuzz");
      if (c.ok() && EncodeChunk(*c) != b) {
        fuzz::Fail("chunk does not re-encode to its bytes");
      }
      break;
    }
  }
  return 0;
}
