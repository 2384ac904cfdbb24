// The export file format (docs/format-export.md): encoding, parsing and the
// snapshot of a sharded filter. Decoding into a standalone filter is in
// export_load.cc; ExportFilter and ImportFilter (the Database side) in
// import.cc.
#include "shardfilter/engine/export.h"

#include <xxhash.h>

#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/persistence/spec_codec.h"

namespace shardfilter {
namespace {

using internal::ShardedFilterAccess;

using internal::PutU16;
using internal::PutU32;
using internal::PutU64;

uint64_t GetLE(std::string_view b, size_t at, size_t n) {
  return internal::LoadLE(b.data() + at, static_cast<int>(n));
}

Status Bad(const std::string& why) {
  return Status::Corruption("export file: " + why);
}

// Version 2: each blob's XXH3-64 seeded with its shard index, so that a
// blob moved to another position no longer checks.
uint64_t ShardBlobChecksum(uint32_t shard, std::string_view blob) {
  return XXH3_64bits_withSeed(blob.data(), blob.size(), shard);
}

}  // namespace

std::string ExportShardedFilter(ShardedFilter& handle) {
  // The filter the handle's calls go to: a handle migrated to another
  // filter (more shards, another type) forwards, and its own shard array
  // is the old one. Spec, shard count and shards all come from `filter`.
  ShardedFilter* target = &ShardedFilterAccess::Live(handle);
  std::vector<std::string> blobs;
  for (;;) {
    ShardedFilter& filter = *target;
    const uint32_t shards = filter.shard_count();
    // Every shard exclusive, ascending (Shard invariant S4, as Detach): no
    // mutation is half applied and every batch is wholly in or out.
    std::vector<internal::ExclusiveShardLock> locks;
    locks.reserve(shards);
    for (uint32_t i = 0; i < shards; ++i) {
      locks.push_back(
          internal::LockExclusive(ShardedFilterAccess::shard(filter, i)));
    }
    // A migration switched it while we waited: its state ends at the
    // switch, later writes went to the target. Export that one instead.
    if (ShardedFilterAccess::Forwarded(filter)) {
      locks.clear();
      target = &ShardedFilterAccess::Live(filter);
      continue;
    }
    // The shard blob a checkpoint stores: the chain of links (S6: no
    // growth runs while the lock is held).
    blobs.resize(shards);
    for (uint32_t i = 0; i < shards; ++i) {
      blobs[i] =
          internal::ChainSerialize(ShardedFilterAccess::shard(filter, i));
    }
    break;
  }
  ShardedFilter& filter = *target;
  const FilterSpec& spec = filter.spec();
  const uint32_t shards = filter.shard_count();
  std::string out(kExportMagic, sizeof kExportMagic);
  PutU16(&out, kExportVersion);
  PutU16(&out, 0);
  // Bytes 8..63: the spec head in export order, the shard count, the
  // parameter block (persistence/spec_codec.h).
  const persistence::StoredSpec stored = internal::StoredFromSpec(spec);
  const persistence::SpecHead head =
      persistence::EncodeSpecHead(stored, persistence::kExportSpecRules);
  out.push_back(static_cast<char>(head.type));
  out.push_back(static_cast<char>(head.flags));
  out.push_back(static_cast<char>(head.durability));
  out.push_back(static_cast<char>(head.expansion));
  PutU32(&out, shards);
  persistence::PutSpecParams(&out, stored);
  size_t total = out.size() + kExportTrailerSize;
  for (const std::string& b : blobs) total += 16 + b.size();
  out.reserve(total);
  for (uint32_t i = 0; i < shards; ++i) {
    PutU64(&out, blobs[i].size());
    out.append(blobs[i]);
    PutU64(&out, ShardBlobChecksum(i, blobs[i]));  // version 2
  }
  PutU64(&out, Checksum64(out.data(), out.size()));
  return out;
}

Result<ParsedExport> ParseExport(std::string_view b) {
  // Decoding order as for store values (docs/format-store.md): magic, then
  // the version (a future version may lay out the rest differently), then
  // lengths before any allocation, then the checksum, then the fields.
  if (b.size() < sizeof kExportMagic ||
      std::memcmp(b.data(), kExportMagic, sizeof kExportMagic) != 0) {
    return Status::InvalidArgument(
        "not a shardfilter export (the file does not start with \"SFEX\")");
  }
  if (b.size() < 6) return Bad("truncated in the header");
  const uint64_t version = GetLE(b, 4, 2);
  if (version == 0) return Bad("version 0");
  if (version > kExportVersion) {
    return Status::NotSupported("export file format version " +
                                std::to_string(version) +
                                " is newer than this build supports (" +
                                std::to_string(kExportVersion) + ")");
  }
  if (b.size() < kExportHeaderSize + kExportTrailerSize) {
    return Bad("truncated: " + std::to_string(b.size()) + " bytes, at least " +
               std::to_string(kExportHeaderSize + kExportTrailerSize) +
               " needed");
  }
  const uint64_t shards = GetLE(b, 12, 4);
  if (shards == 0 || shards > kMaxShards || (shards & (shards - 1)) != 0) {
    return Bad("shard count " + std::to_string(shards) +
               " is not a power of two in [1, 256]");
  }
  ParsedExport p;
  const size_t end = b.size() - kExportTrailerSize;
  const size_t bound = version >= 2 ? 8 : 0;  // per-shard checksum
  size_t at = kExportHeaderSize;
  for (uint64_t i = 0; i < shards; ++i) {
    if (end - at < 8) {
      return Bad("truncated before the length of shard " + std::to_string(i));
    }
    const uint64_t len = GetLE(b, at, 8);
    at += 8;
    if (len > end - at || end - at - len < bound) {
      return Bad("truncated: shard " + std::to_string(i) + " needs " +
                 std::to_string(len + bound) + " bytes, " +
                 std::to_string(end - at) + " left");
    }
    p.shards.push_back(b.substr(at, len));
    at += len + bound;
  }
  if (at != end) {
    return Bad(std::to_string(end - at) + " unexpected bytes after shard " +
               std::to_string(shards - 1));
  }
  if (Checksum64(b.data(), end) != GetLE(b, end, 8)) {
    return Bad("checksum mismatch (the file is damaged)");
  }
  if (version >= 2) {
    size_t pos = kExportHeaderSize;
    for (uint32_t i = 0; i < shards; ++i) {
      pos += 8 + p.shards[i].size();
      if (ShardBlobChecksum(i, p.shards[i]) != GetLE(b, pos, 8)) {
        return Bad("shard " + std::to_string(i) +
                   "'s blob does not check as shard " + std::to_string(i) +
                   " (damaged, or shard blobs were moved)");
      }
      pos += 8;
    }
  }
  if (GetLE(b, 6, 2) != 0) return Bad("reserved bytes not zero");
  persistence::SpecHead head;
  head.type = static_cast<uint8_t>(b[8]);
  head.flags = static_cast<uint8_t>(b[9]);
  head.durability = static_cast<uint8_t>(b[10]);
  head.expansion = static_cast<uint8_t>(b[11]);
  persistence::StoredSpec stored;
  internal::ByteReader params(b.substr(16, persistence::kSpecParamsBytes));
  if (!persistence::ReadSpecParams(&params, &stored)) {
    return Bad("truncated in the header");  // unreachable: size checked
  }
  SF_RETURN_IF_ERROR(persistence::DecodeSpecHead(
      head, persistence::kExportSpecRules, "export file", &stored));
  p.spec = internal::SpecFromStored(stored, static_cast<uint32_t>(shards));
  return p;
}

}  // namespace shardfilter
