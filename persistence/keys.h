// RocksDB key encodings of the store (docs/format-store.md, "Keys").
//
// Integers in keys are big-endian so that RocksDB's bytewise order is the
// numeric order and a prefix scan visits a shard's chunks or journal
// entries in sequence. The name comes first, prefixed by its length (u16),
// so that no name's keys can fall inside another name's range.
//
//   catalog  key = name bytes
//   shards   key = u16 len | name | u32 shard | u64 generation | u32 chunk
//   journal  key = u16 len | name | u32 shard | u64 sequence
//
// Thread-safe: pure functions.
#ifndef SHARDFILTER_PERSISTENCE_KEYS_H_
#define SHARDFILTER_PERSISTENCE_KEYS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shardfilter::persistence {

void PutBE32(std::string* out, uint32_t v);
void PutBE64(std::string* out, uint64_t v);
uint64_t LoadBE(const char* p, int bytes);

// u16 BE length | name. REQUIRES: name.size() <= 65535.
std::string NamePrefix(std::string_view name);
// NamePrefix | u32 shard.
std::string ShardPrefix(std::string_view name, uint32_t shard);
// NamePrefix | shard | generation | chunk.
std::string ChunkKey(std::string_view name, uint32_t shard, uint64_t generation,
                     uint32_t chunk);
// NamePrefix | shard | generation (the start of that generation's chunks).
std::string GenerationPrefix(std::string_view name, uint32_t shard,
                             uint64_t generation);
// NamePrefix | shard | sequence.
std::string JournalKey(std::string_view name, uint32_t shard, uint64_t seq);

// The smallest key greater than every key starting with `prefix` (last byte
// incremented with carry). Empty when prefix is all 0xff (no upper bound).
std::string PrefixSuccessor(std::string_view prefix);

// Parsed shards / journal key: the name, shard, and the trailing integers.
struct ParsedKey {
  std::string_view name;
  uint32_t shard = 0;
  uint64_t number = 0;  // generation (shards) or sequence (journal)
  uint32_t chunk = 0;   // shards only
};
// nullopt when the key does not have the expected shape.
std::optional<ParsedKey> ParseChunkKey(std::string_view key);
std::optional<ParsedKey> ParseJournalKey(std::string_view key);

}  // namespace shardfilter::persistence

#endif  // SHARDFILTER_PERSISTENCE_KEYS_H_
