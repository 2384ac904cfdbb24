// The envelope around every serialized filter: magic, type, version,
// parameters, body and checksum. Documented byte by byte in docs/format.md;
// pinned by tests/envelope_test.cc.
//
//   offset  size  field
//   0       4     magic "SFLT"
//   4       1     filter type (FilterType)
//   5       1     version of that type's encoding
//   6       2     reserved, zero
//   8       4     params length P (little-endian, like every integer here)
//   12      8     body length B
//   20      P     params: type-specific, including the hash seed
//   20+P    B     body: the table
//   20+P+B  8     XXH3-64 (seed 0) of bytes [0, 20+P+B)
//
// Thread-safe: pure functions.
#ifndef SHARDFILTER_FILTERS_ENVELOPE_H_
#define SHARDFILTER_FILTERS_ENVELOPE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

inline constexpr char kEnvelopeMagic[4] = {'S', 'F', 'L', 'T'};
inline constexpr size_t kEnvelopeHeaderSize = 20;
inline constexpr size_t kEnvelopeTrailerSize = 8;

// Starts an envelope in *out (cleared): header and params. The caller then
// appends exactly body_len bytes of body and calls FinishEnvelope.
void BeginEnvelope(FilterType type, uint8_t version, std::string_view params,
                   uint64_t body_len, std::string* out);
// Appends the checksum. REQUIRES: the body promised to BeginEnvelope is in.
void FinishEnvelope(std::string* out);

struct EnvelopeView {
  FilterType type;
  uint8_t version;
  std::string_view params;
  std::string_view body;
};

// Checks magic, lengths and checksum. InvalidArgument when the bytes are not
// a shardfilter filter at all, Corruption when truncated, padded or the
// checksum fails. The type's own decoder checks version and params.
Result<EnvelopeView> OpenEnvelope(std::string_view bytes);

// For decoders: NotSupported naming the type and version when
// version > max_supported, Corruption when 0.
Status CheckEnvelopeVersion(const EnvelopeView& env, uint8_t max_supported);

// What every type's decoder checks first, in this order: the envelope
// (OpenEnvelope), that it holds `type` (WrongType naming both types), its
// version (CheckEnvelopeVersion) and that its params are `params_size`
// bytes (Corruption "serialized <type> filter: params are ...").
Result<EnvelopeView> OpenFilterEnvelope(std::string_view bytes, FilterType type,
                                        uint8_t max_supported,
                                        size_t params_size);

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_ENVELOPE_H_
