#include "shardfilter/persistence/keys.h"

namespace shardfilter::persistence {

void PutBE32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutBE64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t LoadBE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  }
  return v;
}

std::string NamePrefix(std::string_view name) {
  std::string out;
  out.reserve(2 + name.size() + 16);
  out.push_back(static_cast<char>(name.size() >> 8));
  out.push_back(static_cast<char>(name.size() & 0xff));
  out.append(name);
  return out;
}

std::string ShardPrefix(std::string_view name, uint32_t shard) {
  std::string out = NamePrefix(name);
  PutBE32(&out, shard);
  return out;
}

std::string GenerationPrefix(std::string_view name, uint32_t shard,
                             uint64_t generation) {
  std::string out = ShardPrefix(name, shard);
  PutBE64(&out, generation);
  return out;
}

std::string ChunkKey(std::string_view name, uint32_t shard, uint64_t generation,
                     uint32_t chunk) {
  std::string out = GenerationPrefix(name, shard, generation);
  PutBE32(&out, chunk);
  return out;
}

std::string JournalKey(std::string_view name, uint32_t shard, uint64_t seq) {
  std::string out = ShardPrefix(name, shard);
  PutBE64(&out, seq);
  return out;
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string out(prefix);
  while (!out.empty()) {
    unsigned char last = static_cast<unsigned char>(out.back());
    if (last != 0xff) {
      out.back() = static_cast<char>(last + 1);
      return out;
    }
    out.pop_back();
  }
  return out;
}

namespace {

// Splits the length-prefixed name off `key`; the rest must be `tail` bytes.
std::optional<ParsedKey> ParseName(std::string_view key, size_t tail,
                                   std::string_view* rest) {
  if (key.size() < 2) return std::nullopt;
  size_t len = LoadBE(key.data(), 2);
  if (key.size() != 2 + len + tail) return std::nullopt;
  ParsedKey parsed;
  parsed.name = key.substr(2, len);
  *rest = key.substr(2 + len);
  return parsed;
}

}  // namespace

std::optional<ParsedKey> ParseChunkKey(std::string_view key) {
  std::string_view rest;
  auto parsed = ParseName(key, 16, &rest);
  if (!parsed) return std::nullopt;
  parsed->shard = static_cast<uint32_t>(LoadBE(rest.data(), 4));
  parsed->number = LoadBE(rest.data() + 4, 8);
  parsed->chunk = static_cast<uint32_t>(LoadBE(rest.data() + 12, 4));
  return parsed;
}

std::optional<ParsedKey> ParseJournalKey(std::string_view key) {
  std::string_view rest;
  auto parsed = ParseName(key, 12, &rest);
  if (!parsed) return std::nullopt;
  parsed->shard = static_cast<uint32_t>(LoadBE(rest.data(), 4));
  parsed->number = LoadBE(rest.data() + 4, 8);
  return parsed;
}

}  // namespace shardfilter::persistence
