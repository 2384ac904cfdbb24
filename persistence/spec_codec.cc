#include "shardfilter/persistence/spec_codec.h"

#include <string>

namespace shardfilter::persistence {

using shardfilter::internal::PutF64;
using shardfilter::internal::PutU32;
using shardfilter::internal::PutU64;

SpecHead EncodeSpecHead(const StoredSpec& s, const SpecRules& rules) {
  SpecHead h;
  h.type = static_cast<uint8_t>(s.type);
  h.durability = s.durability;
  uint8_t layout = 0;  // kBlocked, and every type but Bloom
  if (s.type == FilterType::kBloom) {
    switch (s.layout) {
      case BloomLayout::kClassic:
        layout = kSpecFlagClassic;
        break;
      case BloomLayout::kAuto:
        layout = kSpecFlagAutoLayout;
        break;
      case BloomLayout::kSplitBlock:
        layout = kSpecFlagSplitLayout;
        break;
      case BloomLayout::kBlocked:
        break;
    }
  }
  h.flags =
      static_cast<uint8_t>(layout | (s.scalable ? kSpecFlagScalable : 0) |
                           (s.retain_hashes ? kSpecFlagRetainHashes : 0) |
                           (s.multiply_router ? kSpecFlagMultiplyRouter : 0) |
                           (s.cuckoo_pow2_buckets ? kSpecFlagCuckooPow2 : 0)) &
      rules.allowed_flags;
  h.expansion = static_cast<uint8_t>(s.expansion);
  return h;
}

void PutSpecParams(std::string* out, const StoredSpec& s) {
  PutU64(out, s.capacity);
  PutF64(out, s.fpp);
  PutU64(out, s.seed);
  PutU32(out, s.k);
  PutU32(out, s.fingerprint_bits);
  PutU32(out, s.bucket_size);
  PutU32(out, s.max_kicks);
  PutU64(out, s.max_bytes);
}

bool ReadSpecParams(shardfilter::internal::ByteReader* r, StoredSpec* s) {
  if (r->remaining() < kSpecParamsBytes) return false;
  return r->ReadU64(&s->capacity) && r->ReadF64(&s->fpp) &&
         r->ReadU64(&s->seed) && r->ReadU32(&s->k) &&
         r->ReadU32(&s->fingerprint_bits) && r->ReadU32(&s->bucket_size) &&
         r->ReadU32(&s->max_kicks) && r->ReadU64(&s->max_bytes);
}

Status DecodeSpecHead(const SpecHead& head, const SpecRules& rules,
                      std::string_view what, StoredSpec* s) {
  const std::string w(what);
  if (head.type < 1 || head.type > 3) {
    return Status::Corruption(w + ": unknown filter type " +
                              std::to_string(head.type));
  }
  if (head.durability > 2) {
    return Status::Corruption(w + ": unknown durability " +
                              std::to_string(head.durability));
  }
  if ((head.flags & ~rules.allowed_flags) != 0) {
    return Status::Corruption(w + ": unknown flags " +
                              std::to_string(head.flags));
  }
  if (head.expansion > kMaxStoredExpansion ||
      (head.expansion == 0 && !rules.expansion_zero)) {
    return Status::Corruption(w + ": expansion " +
                              std::to_string(head.expansion) +
                              " is outside [1, 16]");
  }
  // A NaN or out-of-range rate would only be refused later, by the spec
  // check at open, as InvalidArgument: stored bytes that are not a valid
  // filter are Corruption here (found by tests/fuzz/descriptor_fuzz.cc).
  if (!(s->fpp > 0.0) || !(s->fpp < 1.0)) {
    return Status::Corruption(w + ": fpp " + std::to_string(s->fpp) +
                              " is outside (0, 1)");
  }
  if (s->capacity == 0) return Status::Corruption(w + ": capacity 0");
  s->type = static_cast<FilterType>(head.type);
  s->durability = head.durability;
  switch (head.flags & kSpecLayoutFlags) {
    case 0:
      s->layout = head.type == static_cast<uint8_t>(FilterType::kBloom)
                      ? BloomLayout::kBlocked
                      : BloomLayout::kAuto;
      break;
    case kSpecFlagClassic:
      s->layout = BloomLayout::kClassic;
      break;
    case kSpecFlagAutoLayout:
      s->layout = BloomLayout::kAuto;
      break;
    case kSpecFlagSplitLayout:
      s->layout = BloomLayout::kSplitBlock;
      break;
    default:
      return Status::Corruption(w + ": more than one Bloom layout in flags " +
                                std::to_string(head.flags));
  }
  if (s->layout != BloomLayout::kAuto &&
      head.type != static_cast<uint8_t>(FilterType::kBloom)) {
    return Status::Corruption(
        w + ": a Bloom layout flag on a " +
        FilterTypeName(static_cast<FilterType>(head.type)) + " filter");
  }
  if ((head.flags & kSpecFlagCuckooPow2) != 0 &&
      head.type != static_cast<uint8_t>(FilterType::kCuckoo)) {
    return Status::Corruption(
        w + ": the power-of-two cuckoo geometry flag on a " +
        FilterTypeName(static_cast<FilterType>(head.type)) + " filter");
  }
  s->cuckoo_pow2_buckets = (head.flags & kSpecFlagCuckooPow2) != 0;
  s->scalable = (head.flags & kSpecFlagScalable) != 0;
  s->retain_hashes = (head.flags & kSpecFlagRetainHashes) != 0;
  s->multiply_router = (head.flags & kSpecFlagMultiplyRouter) != 0;
  s->expansion = head.expansion;
  return Status::OK();
}

}  // namespace shardfilter::persistence
