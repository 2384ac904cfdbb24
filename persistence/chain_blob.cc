#include "shardfilter/persistence/chain_blob.h"

#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/internal/coding.h"

namespace shardfilter::persistence {

using internal::ByteReader;
using internal::PutU64;
using internal::PutU8;

namespace {
constexpr std::string_view kMagic = "SFCH";
constexpr size_t kFixedHeader = 8;
}  // namespace

std::string EncodeChainBlob(const std::vector<ChainLinkBytes>& links) {
  std::string out(kMagic);
  PutU8(&out, kChainBlobVersion);
  PutU8(&out, static_cast<uint8_t>(links.size()));
  PutU8(&out, 0);
  PutU8(&out, 0);
  size_t total = 0;
  for (const ChainLinkBytes& l : links) {
    PutU64(&out, l.envelope.size());
    PutU64(&out, l.fill);
    total += l.envelope.size();
  }
  PutU64(&out, Checksum64(out.data(), out.size()));
  out.reserve(out.size() + total);
  for (const ChainLinkBytes& l : links) out.append(l.envelope);
  return out;
}

Result<std::vector<ChainLinkBytes>> DecodeChainBlob(std::string_view blob,
                                                    std::string_view what) {
  const std::string w(what);
  if (blob.size() < kFixedHeader || blob.substr(0, 4) != kMagic) {
    return Status::Corruption(w + ": not a chain blob (bad magic or " +
                              std::to_string(blob.size()) + " bytes)");
  }
  const uint8_t version = static_cast<uint8_t>(blob[4]);
  if (version > kChainBlobVersion) {
    return Status::NotSupported(w + ": chain format version " +
                                std::to_string(version) +
                                " is newer than the supported version " +
                                std::to_string(kChainBlobVersion));
  }
  const uint8_t n = static_cast<uint8_t>(blob[5]);
  if (version == 0 || n == 0 || n > kChainMaxLinks || blob[6] != 0 ||
      blob[7] != 0) {
    return Status::Corruption(w + ": bad chain header (version " +
                              std::to_string(version) + ", " +
                              std::to_string(n) + " links)");
  }
  const size_t header = kFixedHeader + 16 * size_t{n};
  if (blob.size() < header + 8) {
    return Status::Corruption(w + ": truncated chain header");
  }
  if (internal::LoadLE(blob.data() + header, 8) !=
      Checksum64(blob.data(), header)) {
    return Status::Corruption(w + ": chain header checksum mismatch");
  }
  ByteReader r(blob.substr(kFixedHeader, header - kFixedHeader));
  std::vector<ChainLinkBytes> links(n);
  std::vector<uint64_t> lengths(n);
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    r.ReadU64(&lengths[i]);
    r.ReadU64(&links[i].fill);
    if (lengths[i] > blob.size()) {
      return Status::Corruption(w + ": link " + std::to_string(i) +
                                " length out of range");
    }
    total += lengths[i];
  }
  std::string_view body = blob.substr(header + 8);
  if (total != body.size()) {
    return Status::Corruption(w + ": links hold " + std::to_string(total) +
                              " bytes, the blob has " +
                              std::to_string(body.size()));
  }
  size_t at = 0;
  for (uint32_t i = 0; i < n; ++i) {
    links[i].envelope = body.substr(at, lengths[i]);
    at += lengths[i];
  }
  return links;
}

}  // namespace shardfilter::persistence
