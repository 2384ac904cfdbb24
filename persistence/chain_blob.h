// The shard blob of a checkpoint: a shard's chain of link filters
// (docs/format-store.md, "Shard blob"). Integers little-endian.
//
//   offset  size  field
//   0       4     magic "SFCH"
//   4       1     chain format version (kChainBlobVersion)
//   5       1     link count n, 1..32
//   6       2     reserved, 0
//   8       16xn  per link: u64 envelope length, u64 fill (adds it holds)
//   8+16n   8     XXH3-64 (Checksum64) of bytes [0, 8+16n)
//   16+16n  ...   the n links' own Serialize() envelopes, in link order;
//                 their lengths sum to exactly the rest of the blob
//
// Decoding is strict: a version above kChainBlobVersion is NotSupported,
// any other mismatch (magic, count, reserved bytes, checksum, lengths) is
// Corruption naming `what`. Each envelope carries its own checksum; the
// whole blob's XXH3 is also in the descriptor's shard record.
//
// Thread-safe: pure functions.
#ifndef SHARDFILTER_PERSISTENCE_CHAIN_BLOB_H_
#define SHARDFILTER_PERSISTENCE_CHAIN_BLOB_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/status.h"

namespace shardfilter::persistence {

inline constexpr uint8_t kChainBlobVersion = 1;
inline constexpr uint32_t kChainMaxLinks = 32;

struct ChainLinkBytes {
  std::string_view envelope;  // a filter's Serialize() output
  uint64_t fill = 0;
};

// REQUIRES: 1 <= links.size() <= kChainMaxLinks.
std::string EncodeChainBlob(const std::vector<ChainLinkBytes>& links);
// The views point into `blob`.
Result<std::vector<ChainLinkBytes>> DecodeChainBlob(std::string_view blob,
                                                    std::string_view what);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_CHAIN_BLOB_H_
