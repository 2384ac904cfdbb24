// The one codec of a filter's stored parameters: the fields of a FilterSpec
// that the catalog descriptor (values.h, docs/format-store.md) and the export
// file header (engine/export.h, docs/format-export.md) both carry, and the
// checks every decoder of them applies. The engine converts FilterSpec to and
// from StoredSpec in one place (engine/internal/filter_spec.h).
//
// Both formats hold the same two parts, in their own order around them:
//
//   the head, four u8:  type (1 bloom, 2 counting, 3 cuckoo)
//                       durability (0 none, 1 journal, 2 sync)
//                       flags (bit 0 classic Bloom layout, bit 1 scalable,
//                              bit 2 retain_hashes: descriptor only,
//                              bit 3 auto Bloom layout, bit 4 split-block
//                              Bloom layout; at most one of bits 0, 3, 4,
//                              and none of them: the blocked layout, as
//                              every Bloom filter stored before bits 3 and
//                              4 existed; bit 5 the multiply shard router,
//                              clear: Remix, as every filter stored before
//                              bit 5 existed, engine ShardRouter)
//                       expansion
//     descriptor order: type, durability, flags, expansion
//     export order:     type, flags, durability, expansion
//
//   the parameters, kSpecParamsBytes, identical in both:
//     offset  size  field
//     0       8     capacity (whole filter)
//     8       8     fpp (IEEE-754 double, its bit pattern)
//     16      8     hash seed
//     24      4     k (0 = optimal)
//     28      4     fingerprint bits (cuckoo; 0 = from fpp)
//     32      4     bucket size (cuckoo; 0 = default)
//     36      4     max kicks (cuckoo; 0 = default)
//     40      8     max bytes (whole filter; 0 = default)
//
// The shard count is not part of it: each format stores it where its
// records need it. tests/spec_codec_test.cc pins both layouts byte by byte.
//
// Thread-safe: pure functions.
#ifndef SHARDFILTER_PERSISTENCE_SPEC_CODEC_H_
#define SHARDFILTER_PERSISTENCE_SPEC_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/filters/status.h"

namespace shardfilter::persistence {

struct StoredSpec {
  FilterType type = FilterType::kBloom;
  uint8_t durability = 0;                   // engine Durability value
  BloomLayout layout = BloomLayout::kAuto;  // Bloom only
  bool scalable = false;
  bool retain_hashes = false;
  // ShardRouter::kMultiply (flag bit 5); false: kRemix, what data written
  // before the bit existed means.
  bool multiply_router = false;
  // Cuckoo only: RedisBloom's geometry (flag bit 6, FilterSpec::
  // cuckoo_pow2_buckets); false: tables sized from capacity and rate.
  bool cuckoo_pow2_buckets = false;
  uint32_t expansion = 1;
  uint64_t capacity = 0;
  double fpp = 0;
  uint64_t seed = 0;
  uint32_t k = 0;
  uint32_t fingerprint_bits = 0;
  uint32_t bucket_size = 0;
  uint32_t max_kicks = 0;
  uint64_t max_bytes = 0;

  bool operator==(const StoredSpec&) const = default;
};

// The head's four bytes, as each format reads or writes them in its order.
struct SpecHead {
  uint8_t type = 0;
  uint8_t durability = 0;
  uint8_t flags = 0;
  uint8_t expansion = 0;
};

// What a format allows in the head.
struct SpecRules {
  uint8_t allowed_flags;  // other flag bits are Corruption
  bool expansion_zero;    // 0 = the default expansion (resolved later)
};
inline constexpr uint8_t kSpecFlagClassic = 1;
inline constexpr uint8_t kSpecFlagScalable = 2;
inline constexpr uint8_t kSpecFlagRetainHashes = 4;
inline constexpr uint8_t kSpecFlagAutoLayout = 8;
inline constexpr uint8_t kSpecFlagSplitLayout = 16;
inline constexpr uint8_t kSpecFlagMultiplyRouter = 32;
inline constexpr uint8_t kSpecFlagCuckooPow2 = 64;
inline constexpr uint8_t kSpecLayoutFlags =
    kSpecFlagClassic | kSpecFlagAutoLayout | kSpecFlagSplitLayout;
inline constexpr SpecRules kDescriptorSpecRules{
    kSpecLayoutFlags | kSpecFlagScalable | kSpecFlagRetainHashes |
        kSpecFlagMultiplyRouter | kSpecFlagCuckooPow2,
    false};
inline constexpr SpecRules kExportSpecRules{
    kSpecLayoutFlags | kSpecFlagScalable | kSpecFlagMultiplyRouter |
        kSpecFlagCuckooPow2,
    true};
inline constexpr uint32_t kMaxStoredExpansion = 16;

inline constexpr size_t kSpecParamsBytes = 48;

// The head as a format with `rules` stores it: flags it cannot hold (the
// export's retain_hashes) are left out.
SpecHead EncodeSpecHead(const StoredSpec& s, const SpecRules& rules);
// Appends the kSpecParamsBytes parameter block.
void PutSpecParams(std::string* out, const StoredSpec& s);

// Reads the parameter block into *s; false when fewer than
// kSpecParamsBytes remain (nothing consumed then).
bool ReadSpecParams(shardfilter::internal::ByteReader* r, StoredSpec* s);
// Checks the head against `rules` and sets s's head fields; then checks the
// parameters already read into *s that make a spec well-formed (fpp in
// (0, 1), capacity > 0). Corruption "<what>: ..." naming the field.
Status DecodeSpecHead(const SpecHead& head, const SpecRules& rules,
                      std::string_view what, StoredSpec* s);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_SPEC_CODEC_H_
