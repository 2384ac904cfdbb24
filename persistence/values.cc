#include "shardfilter/persistence/values.h"

#include <cstdio>

#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/internal/coding.h"

namespace shardfilter::persistence {

using internal::ByteReader;
using internal::PutU32;
using internal::PutU64;
using internal::PutU8;

std::string DescribeName(std::string_view name) {
  std::string out = "filter \"";
  size_t n = name.size() > 64 ? 64 : name.size();
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (n < name.size()) out += "...";
  out += "\"";
  return out;
}

std::string FrameValue(ValueKind kind, std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + kValueOverhead);
  PutU8(&out, kStoreFormatVersion);
  PutU8(&out, static_cast<uint8_t>(kind));
  out.append(payload);
  PutU64(&out, Checksum64(out.data(), out.size()));
  return out;
}

Result<std::string_view> UnframeValue(std::string_view value, ValueKind kind,
                                      std::string_view what) {
  std::string w(what);
  if (value.empty()) return Status::Corruption(w + ": empty value");
  uint8_t version = static_cast<uint8_t>(value[0]);
  if (version > kStoreFormatVersion) {
    return Status::NotSupported(w + ": stored format version " +
                                std::to_string(version) +
                                " is newer than the supported version " +
                                std::to_string(kStoreFormatVersion));
  }
  if (version == 0) return Status::Corruption(w + ": format version 0");
  if (value.size() < kValueOverhead) {
    return Status::Corruption(w + ": truncated value (" +
                              std::to_string(value.size()) + " bytes)");
  }
  size_t body = value.size() - 8;
  uint64_t stored = internal::LoadLE(value.data() + body, 8);
  if (stored != Checksum64(value.data(), body)) {
    return Status::Corruption(w + ": checksum mismatch");
  }
  if (static_cast<uint8_t>(value[1]) != static_cast<uint8_t>(kind)) {
    return Status::Corruption(w + ": unexpected value kind " +
                              std::to_string(static_cast<uint8_t>(value[1])));
  }
  return value.substr(2, body - 2);
}

std::string EncodeDescriptor(const FilterDescriptor& d) {
  std::string p;
  const SpecHead h = EncodeSpecHead(d, kDescriptorSpecRules);
  PutU8(&p, h.type);
  PutU8(&p, h.durability);
  PutU8(&p, h.flags);
  PutU8(&p, h.expansion);
  PutSpecParams(&p, d);
  PutU32(&p, static_cast<uint32_t>(d.shards.size()));
  for (const ShardRecord& r : d.shards) {
    PutU64(&p, r.generation);
    PutU64(&p, r.sequence);
    PutU32(&p, r.chunk_count);
    PutU64(&p, r.byte_length);
    PutU64(&p, r.blob_checksum);
  }
  return FrameValue(ValueKind::kDescriptor, p);
}

Result<FilterDescriptor> DecodeDescriptor(std::string_view value,
                                          std::string_view name) {
  std::string what = DescribeName(name) + " descriptor";
  SF_ASSIGN_OR_RETURN(std::string_view payload,
                      UnframeValue(value, ValueKind::kDescriptor, what));
  ByteReader r(payload);
  FilterDescriptor d;
  SpecHead h;
  uint32_t shard_count;
  bool ok = r.ReadU8(&h.type) && r.ReadU8(&h.durability) &&
            r.ReadU8(&h.flags) && r.ReadU8(&h.expansion) &&
            ReadSpecParams(&r, &d) && r.ReadU32(&shard_count);
  if (!ok) return Status::Corruption(what + ": truncated parameters");
  SF_RETURN_IF_ERROR(DecodeSpecHead(h, kDescriptorSpecRules, what, &d));
  if (shard_count == 0 || shard_count > 256 ||
      (shard_count & (shard_count - 1)) != 0) {
    return Status::Corruption(what + ": bad shard count " +
                              std::to_string(shard_count));
  }
  if (r.remaining() != static_cast<size_t>(shard_count) * 36) {
    return Status::Corruption(
        what + ": shard records have " + std::to_string(r.remaining()) +
        " bytes, expected " + std::to_string(shard_count * 36));
  }
  d.shards.resize(shard_count);
  for (ShardRecord& s : d.shards) {
    r.ReadU64(&s.generation);
    r.ReadU64(&s.sequence);
    r.ReadU32(&s.chunk_count);
    r.ReadU64(&s.byte_length);
    r.ReadU64(&s.blob_checksum);
  }
  return d;
}

std::string EncodeChunk(std::string_view bytes) {
  return FrameValue(ValueKind::kChunk, bytes);
}

Result<std::string_view> DecodeChunk(std::string_view value,
                                     std::string_view what) {
  return UnframeValue(value, ValueKind::kChunk, what);
}

std::string EncodeJournalEntry(JournalOp op, std::span<const uint64_t> hashes) {
  std::string p;
  p.reserve(5 + 8 * hashes.size());
  PutU8(&p, static_cast<uint8_t>(op));
  PutU32(&p, static_cast<uint32_t>(hashes.size()));
  for (uint64_t h : hashes) PutU64(&p, h);
  return FrameValue(ValueKind::kJournal, p);
}

Result<JournalEntry> DecodeJournalEntry(std::string_view value,
                                        std::string_view what) {
  SF_ASSIGN_OR_RETURN(std::string_view payload,
                      UnframeValue(value, ValueKind::kJournal, what));
  ByteReader r(payload);
  uint8_t op;
  uint32_t count;
  if (!r.ReadU8(&op) || !r.ReadU32(&count)) {
    return Status::Corruption(std::string(what) + ": truncated entry");
  }
  if (op != 1 && op != 2) {
    return Status::Corruption(std::string(what) + ": unknown operation " +
                              std::to_string(op));
  }
  if (r.remaining() != static_cast<size_t>(count) * 8) {
    return Status::Corruption(
        std::string(what) + ": entry holds " + std::to_string(r.remaining()) +
        " hash bytes, count says " + std::to_string(count));
  }
  JournalEntry e;
  e.op = static_cast<JournalOp>(op);
  e.hashes.resize(count);
  for (uint64_t& h : e.hashes) r.ReadU64(&h);
  return e;
}

}  // namespace shardfilter::persistence
