#include "tools/module/filter_value.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/persistence/spec_codec.h"

namespace shardfilter::module {
namespace {

void PutLE(std::string* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t GetLE(std::string_view b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    v |= uint64_t{static_cast<uint8_t>(b[at + i])} << (8 * i);
  }
  return v;
}

Status Bad(const std::string& why) {
  return Status::Corruption("shardfilter value: " + why);
}

}  // namespace

uint64_t FilterValue::MemoryBytes() const {
  uint64_t bytes = sizeof(FilterValue) + raw.capacity() + damage.capacity();
  if (filter != nullptr) {
    const ShardedStats stats = filter->Counts();  // no table scan
    bytes += stats.total.bytes;
    // Per shard: its lock, chain bookkeeping and link objects (small
    // against the tables; estimated, not measured).
    bytes += static_cast<uint64_t>(filter->shard_count()) * 256;
  }
  return bytes;
}

std::string EncodeValue(ShardedFilter& filter) {
  return EncodeEnvelope(ExportShardedFilter(filter));
}

std::string EncodeEnvelope(std::string_view payload) {
  std::string out(kValueMagic, sizeof kValueMagic);
  out.reserve(kValueHeaderSize + payload.size() + kValueTrailerSize);
  PutLE(&out, kValueVersion, 2);
  PutLE(&out, 0, 2);
  PutLE(&out, payload.size(), 8);
  out.append(payload);
  PutLE(&out, Checksum64(out.data(), out.size()), 8);
  return out;
}

Result<std::unique_ptr<ShardedFilter>> DecodeValue(
    std::string_view b, std::shared_ptr<MemoryBudget> budget) {
  // Magic, then version (a future version may lay out the rest
  // differently), then lengths, then the checksum, then the payload.
  if (b.size() < sizeof kValueMagic ||
      std::memcmp(b.data(), kValueMagic, sizeof kValueMagic) != 0) {
    return Status::InvalidArgument(
        "not a shardfilter value (it does not start with \"SFRM\")");
  }
  if (b.size() < 6) return Bad("truncated in the header");
  const uint64_t version = GetLE(b, 4, 2);
  if (version == 0) return Bad("version 0");
  if (version > kValueVersion) {
    return Status::NotSupported("shardfilter value format version " +
                                std::to_string(version) +
                                " is newer than this module supports (" +
                                std::to_string(kValueVersion) + ")");
  }
  if (b.size() < kValueHeaderSize + kValueTrailerSize) {
    return Bad("truncated: " + std::to_string(b.size()) + " bytes");
  }
  const uint64_t len = GetLE(b, 8, 8);
  if (len != b.size() - kValueHeaderSize - kValueTrailerSize) {
    return Bad("payload length " + std::to_string(len) + " does not match " +
               std::to_string(b.size()) + " bytes");
  }
  const size_t end = b.size() - kValueTrailerSize;
  if (Checksum64(b.data(), end) != GetLE(b, end, 8)) {
    return Bad("checksum mismatch (the value is damaged)");
  }
  if (GetLE(b, 6, 2) != 0) return Bad("unknown flags");
  return LoadExportedFilter(b.substr(kValueHeaderSize, len), std::move(budget));
}

std::unique_ptr<FilterValue> ValueFromBytes(
    std::string bytes, std::shared_ptr<MemoryBudget> budget) {
  auto v = std::make_unique<FilterValue>();
  auto decoded = DecodeValue(bytes, std::move(budget));
  if (decoded.ok()) {
    v->filter = std::move(decoded).value();
  } else {
    v->damage = decoded.status().ToString();
    v->raw = std::move(bytes);
  }
  return v;
}

std::unique_ptr<FilterValue> ValueFromRdb(
    int encver, std::string bytes, std::shared_ptr<MemoryBudget> budget) {
  if (encver == kRdbEncodingVersion) {
    return ValueFromBytes(std::move(bytes), std::move(budget));
  }
  auto v = std::make_unique<FilterValue>();
  const std::string what =
      "shardfilter value of RDB encoding version " + std::to_string(encver);
  v->damage =
      (encver > kRdbEncodingVersion
           ? Status::NotSupported(what + ", newer than this module's (" +
                                  std::to_string(kRdbEncodingVersion) + ")")
           : Status::Corruption(what + ", which no module wrote"))
          .ToString();
  v->raw = std::move(bytes);
  return v;
}

// "v1 type capacity fpp shards seed flags k fp_bits bucket kicks max_bytes
// expansion", flags: 1 classic layout, 2 scalable, 8 auto layout, 16
// split-block layout (no layout flag on a Bloom filter: blocked), 32 the
// multiply shard router (none: Remix, as every spec written before it), 64
// the power-of-two cuckoo geometry (a module without it refuses the spec).
// The fields, their mapping from FilterSpec and their checks are those of
// the stored spec (persistence/spec_codec.h); only the text form
// is the module's, because it travels as a command argument in AOFs and
// replication streams.
std::string EncodeSpec(const FilterSpec& spec) {
  const persistence::StoredSpec s = internal::StoredFromSpec(spec);
  const persistence::SpecHead head =
      persistence::EncodeSpecHead(s, persistence::kExportSpecRules);
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "v1 %u %" PRIu64 " %a %u %" PRIu64 " %u %u %u %u %u %" PRIu64 " %u",
      static_cast<unsigned>(head.type), s.capacity, s.fpp, spec.shards, s.seed,
      static_cast<unsigned>(head.flags), s.k, s.fingerprint_bits, s.bucket_size,
      s.max_kicks, s.max_bytes, static_cast<unsigned>(head.expansion));
  return buf;
}

Result<FilterSpec> DecodeSpec(std::string_view text) {
  const std::string t(text);
  unsigned type = 0, shards = 0, flags = 0, expansion = 0;
  persistence::StoredSpec s;
  char fpp_text[64] = {0};
  int used = 0;
  const int n = std::sscanf(t.c_str(),
                            "v1 %u %" SCNu64 " %63s %u %" SCNu64
                            " %u %u %u %u %u %" SCNu64 " %u%n",
                            &type, &s.capacity, fpp_text, &shards, &s.seed,
                            &flags, &s.k, &s.fingerprint_bits, &s.bucket_size,
                            &s.max_kicks, &s.max_bytes, &expansion, &used);
  if (n != 12 || static_cast<size_t>(used) != t.size() || type > 255 ||
      flags > 255 || expansion > 255) {
    return Status::InvalidArgument("malformed filter spec");
  }
  char* end = nullptr;
  s.fpp = std::strtod(fpp_text, &end);
  if (end == fpp_text || *end != '\0') {
    return Status::InvalidArgument("malformed filter spec rate");
  }
  persistence::SpecHead head;
  head.type = static_cast<uint8_t>(type);
  head.flags = static_cast<uint8_t>(flags);
  head.expansion = static_cast<uint8_t>(expansion);
  const Status st = persistence::DecodeSpecHead(
      head, persistence::kExportSpecRules, "malformed filter spec", &s);
  if (!st.ok()) return Status::InvalidArgument(st.message());
  FilterSpec spec = internal::SpecFromStored(s, shards);
  spec.durability = Durability::kNone;
  return spec;
}

}  // namespace shardfilter::module
