// JournalBatch (persistence/store.h) and the encodings it writes:
// journal entries and retained-hash deltas, gathered as key/value pairs for
// one RocksDB write. No RocksDB here: the in-memory engine's objects build
// batches (a standalone filter never writes one) and link this file.
#include <string>
#include <string_view>

#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/retained_hashes.h"
#include "shardfilter/persistence/store.h"

namespace shardfilter::persistence {

std::string RetainedHashKey(std::string_view name, uint64_t hash) {
  std::string k = NamePrefix(name);
  PutBE64(&k, hash);
  return k;
}

std::string EncodeRetainedCount(int64_t count) {
  std::string v(8, '\0');
  uint64_t u = static_cast<uint64_t>(count);
  for (int i = 0; i < 8; ++i) v[i] = static_cast<char>((u >> (8 * i)) & 0xff);
  return v;
}

void JournalBatch::Retain(std::string_view name, JournalOp op,
                          std::span<const uint64_t> hashes) {
  if (name_.empty()) name_ = name;
  const std::string delta = EncodeRetainedCount(op == JournalOp::kAdd ? 1 : -1);
  for (uint64_t h : hashes)
    retained_.emplace_back(RetainedHashKey(name, h), delta);
}

void JournalBatch::Add(std::string_view name, uint32_t shard, uint64_t seq,
                       JournalOp op, std::span<const uint64_t> hashes) {
  if (name_.empty()) name_ = name;
  pending_.emplace_back(JournalKey(name, shard, seq),
                        EncodeJournalEntry(op, hashes));
  ++entries_;
  hashes_ += hashes.size();
}

}  // namespace shardfilter::persistence
