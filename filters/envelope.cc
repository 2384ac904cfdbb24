#include "shardfilter/filters/envelope.h"

#include <cstring>

#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/internal/coding.h"

namespace shardfilter {

void BeginEnvelope(FilterType type, uint8_t version, std::string_view params,
                   uint64_t body_len, std::string* out) {
  out->clear();
  out->reserve(kEnvelopeHeaderSize + params.size() + body_len +
               kEnvelopeTrailerSize);
  out->append(kEnvelopeMagic, sizeof kEnvelopeMagic);
  internal::PutU8(out, static_cast<uint8_t>(type));
  internal::PutU8(out, version);
  internal::PutU16(out, 0);
  internal::PutU32(out, static_cast<uint32_t>(params.size()));
  internal::PutU64(out, body_len);
  out->append(params);
}

void FinishEnvelope(std::string* out) {
  internal::PutU64(out, Checksum64(out->data(), out->size()));
}

Result<EnvelopeView> OpenEnvelope(std::string_view bytes) {
  if (bytes.size() < sizeof kEnvelopeMagic ||
      std::memcmp(bytes.data(), kEnvelopeMagic, sizeof kEnvelopeMagic) != 0) {
    return Status::InvalidArgument(
        "not a shardfilter filter (magic \"SFLT\" missing)");
  }
  if (bytes.size() < kEnvelopeHeaderSize + kEnvelopeTrailerSize) {
    return Status::Corruption(
        "serialized filter truncated: " + std::to_string(bytes.size()) +
        " bytes is shorter than the envelope");
  }
  internal::ByteReader r(bytes.substr(4));
  uint8_t type = 0, version = 0;
  uint16_t reserved = 0;
  uint32_t params_len = 0;
  uint64_t body_len = 0;
  (void)r.ReadU8(&type);
  (void)r.ReadU8(&version);
  (void)r.ReadU16(&reserved);
  (void)r.ReadU32(&params_len);
  (void)r.ReadU64(&body_len);
  const uint64_t avail =
      bytes.size() - kEnvelopeHeaderSize - kEnvelopeTrailerSize;
  if (params_len > avail || body_len > avail - params_len) {
    return Status::Corruption("serialized filter truncated: header announces " +
                              std::to_string(params_len) + " + " +
                              std::to_string(body_len) + " bytes, " +
                              std::to_string(avail) + " present");
  }
  if (params_len + body_len != avail) {
    return Status::Corruption("serialized filter has " +
                              std::to_string(avail - params_len - body_len) +
                              " unexpected trailing bytes");
  }
  const size_t covered = bytes.size() - kEnvelopeTrailerSize;
  const uint64_t stored = internal::LoadLE(bytes.data() + covered, 8);
  if (stored != Checksum64(bytes.data(), covered)) {
    return Status::Corruption("serialized filter checksum mismatch");
  }
  if (reserved != 0) {
    return Status::Corruption("serialized filter reserved field is not zero");
  }
  EnvelopeView v;
  v.type = static_cast<FilterType>(type);
  v.version = version;
  v.params = bytes.substr(kEnvelopeHeaderSize, params_len);
  v.body = bytes.substr(kEnvelopeHeaderSize + params_len, body_len);
  return v;
}

Status CheckEnvelopeVersion(const EnvelopeView& env, uint8_t max_supported) {
  if (env.version == 0) {
    return Status::Corruption("serialized filter has version 0");
  }
  if (env.version > max_supported) {
    return Status::NotSupported(
        std::string("serialized ") + FilterTypeName(env.type) +
        " filter has format version " + std::to_string(env.version) +
        ", newer than this build supports (" + std::to_string(max_supported) +
        ")");
  }
  return Status::OK();
}

Result<EnvelopeView> OpenFilterEnvelope(std::string_view bytes, FilterType type,
                                        uint8_t max_supported,
                                        size_t params_size) {
  SF_ASSIGN_OR_RETURN(EnvelopeView env, OpenEnvelope(bytes));
  if (env.type != type) {
    return Status::WrongType(std::string("serialized filter is a ") +
                             FilterTypeName(env.type) + " filter, not a " +
                             FilterTypeName(type) + " filter");
  }
  SF_RETURN_IF_ERROR(CheckEnvelopeVersion(env, max_supported));
  if (env.params.size() != params_size) {
    return Status::Corruption(
        std::string("serialized ") + FilterTypeName(type) +
        " filter: params are " + std::to_string(env.params.size()) +
        " bytes, expected " + std::to_string(params_size));
  }
  return env;
}

}  // namespace shardfilter
