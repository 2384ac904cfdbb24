// Encodings of the values the store keeps in RocksDB: catalog descriptors,
// checkpoint chunks and journal entries (docs/format-store.md, "Values").
//
// Every value is framed the same way (integers little-endian, as in the
// filters' own envelope):
//
//   offset  size  field
//   0       1     format version (kStoreFormatVersion)
//   1       1     kind: 1 descriptor, 2 chunk, 3 journal entry, 4-6 dedup
//                 entry, meta, time-index entry (docs/dedup.md)
//   2       N     payload (per kind)
//   2+N     8     XXH3-64 (Checksum64) of bytes [0, 2+N)
//
// Decoding reads the version byte first: a version newer than this build is
// NotSupported naming it (a future format may move the checksum), 0 is
// Corruption. Then the checksum, the kind, and the payload's own lengths;
// any failure is Corruption with the caller's `what` (e.g. "filter \"f\"
// shard 3 chunk 2") in the message.
//
// Thread-safe: pure functions.
#ifndef SHARDFILTER_PERSISTENCE_VALUES_H_
#define SHARDFILTER_PERSISTENCE_VALUES_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/status.h"
#include "shardfilter/persistence/spec_codec.h"

namespace shardfilter::persistence {

inline constexpr uint8_t kStoreFormatVersion = 1;
inline constexpr size_t kValueOverhead = 2 + 8;

enum class ValueKind : uint8_t {
  kDescriptor = 1,
  kChunk = 2,
  kJournal = 3,
  // The dedup store's values (persistence/dedup_table.h,
  // docs/dedup.md).
  kDedupEntry = 4,
  kDedupMeta = 5,
  kDedupIndex = 6,
  // A dedup set's journal file exists (persistence/dedup_table.h).
  kDedupJournalMarker = 7,
};

// One shard's committed checkpoint. generation 0 = never checkpointed: the
// shard starts empty (built from the descriptor's parameters) and its whole
// history is in the journal.
struct ShardRecord {
  uint64_t generation = 0;
  uint64_t sequence = 0;  // last journal sequence included
  uint32_t chunk_count = 0;
  uint64_t byte_length = 0;    // length of the whole shard blob
  uint64_t blob_checksum = 0;  // Checksum64 of the whole shard blob

  bool operator==(const ShardRecord&) const = default;
};

// A filter's catalog entry: everything needed to rebuild it. Its payload
// (docs/format-store.md) is the spec head in descriptor order, the
// parameter block (spec_codec.h), then u32 shard count and the records.
struct FilterDescriptor : StoredSpec {
  std::vector<ShardRecord> shards;  // size = shard count

  bool operator==(const FilterDescriptor&) const = default;
};

// Frames a payload: version, kind, payload, checksum.
std::string FrameValue(ValueKind kind, std::string_view payload);
// Checks a framed value and returns its payload.
Result<std::string_view> UnframeValue(std::string_view value, ValueKind kind,
                                      std::string_view what);

std::string EncodeDescriptor(const FilterDescriptor& d);
// `name` is for messages. Also checks the parameters are self-consistent
// (known type and durability, shard count a power of two in [1, 256]).
Result<FilterDescriptor> DecodeDescriptor(std::string_view value,
                                          std::string_view name);

// Appends a framed chunk value (version, kind, bytes, checksum) to *out.
std::string EncodeChunk(std::string_view bytes);
Result<std::string_view> DecodeChunk(std::string_view value,
                                     std::string_view what);

enum class JournalOp : uint8_t { kAdd = 1, kRemove = 2 };

struct JournalEntry {
  JournalOp op = JournalOp::kAdd;
  std::vector<uint64_t> hashes;
};

// payload: u8 op | u32 count | count x u64 hash.
std::string EncodeJournalEntry(JournalOp op, std::span<const uint64_t> hashes);
Result<JournalEntry> DecodeJournalEntry(std::string_view value,
                                        std::string_view what);

// "filter \"<name>\"" with non-printable bytes escaped as \xNN and long
// names cut to 64 bytes: for error messages.
std::string DescribeName(std::string_view name);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_VALUES_H_
