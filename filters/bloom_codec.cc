// A Bloom filter's envelope (docs/format-bloom.md): Serialize, Deserialize
// and Equals. The filter itself is in bloom_filter.cc.
#include <bit>
#include <cstring>
#include <string>

#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/envelope.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/filters/sizing.h"

namespace shardfilter {
namespace {

// Version 1: layouts 1 (blocked) and 2 (classic). Version 2 (same params)
// adds layout 3 (split block); only split-block filters are written as
// version 2, so every other filter's bytes are what version 1 wrote, and a
// reader that knows version 1 only refuses a split-block filter as a future
// version (NotSupported) rather than as corrupt.
constexpr uint8_t kBloomFormatVersion = 2;
constexpr uint8_t kBloomFormatVersionBeforeSplit = 1;
// Params of versions 1 and 2, byte by byte in docs/format-bloom.md.
constexpr size_t kBloomParamsSize = 44;

}  // namespace

std::string BloomFilter::Serialize() const {
  std::string params;
  internal::PutU8(&params, static_cast<uint8_t>(layout_));
  internal::PutU8(&params, static_cast<uint8_t>(k_));
  internal::PutU16(&params, 0);
  internal::PutU64(&params, seed_);
  internal::PutU64(&params, capacity_);
  internal::PutF64(&params, fpp_);
  internal::PutU64(&params, num_bits_);
  internal::PutU64(&params, items());
  std::string out;
  const uint64_t body_len = num_bits_ / 8;
  BeginEnvelope(FilterType::kBloom,
                layout_ == BloomLayout::kSplitBlock
                    ? kBloomFormatVersion
                    : kBloomFormatVersionBeforeSplit,
                params, body_len, &out);
  const size_t pos = out.size();
  out.resize(pos + body_len);
  table_.WriteLittleEndian(out.data() + pos);
  FinishEnvelope(&out);
  return out;
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Deserialize(
    std::string_view bytes) {
  SF_ASSIGN_OR_RETURN(
      EnvelopeView env,
      OpenFilterEnvelope(bytes, FilterType::kBloom, kBloomFormatVersion,
                         kBloomParamsSize));
  auto corrupt = [](const std::string& what) {
    return Status::Corruption("serialized bloom filter: " + what);
  };
  internal::ByteReader r(env.params);
  uint8_t layout = 0, k = 0;
  uint16_t reserved = 0;
  uint64_t seed = 0, capacity = 0, num_bits = 0, items = 0;
  double fpp = 0;
  (void)r.ReadU8(&layout);  // lengths checked above: reads cannot fail
  (void)r.ReadU8(&k);
  (void)r.ReadU16(&reserved);
  (void)r.ReadU64(&seed);
  (void)r.ReadU64(&capacity);
  (void)r.ReadF64(&fpp);
  (void)r.ReadU64(&num_bits);
  (void)r.ReadU64(&items);
  const bool split = layout == static_cast<uint8_t>(BloomLayout::kSplitBlock);
  // Canonical: version 2 holds split-block filters only, version 1 never.
  if ((layout != static_cast<uint8_t>(BloomLayout::kBlocked) &&
       layout != static_cast<uint8_t>(BloomLayout::kClassic) && !split) ||
      split != (env.version == kBloomFormatVersion)) {
    return corrupt("layout " + std::to_string(layout) + " in version " +
                   std::to_string(env.version));
  }
  if (k < kMinHashFunctions || k > kMaxHashFunctions) {
    return corrupt("k = " + std::to_string(k) + " is outside 1..32");
  }
  if (split && k != internal::kSplitK) {
    return corrupt("k = " + std::to_string(k) +
                   " in the split-block layout (always 8)");
  }
  if (reserved != 0) return corrupt("reserved params field is not zero");
  if (capacity == 0) return corrupt("capacity is 0");
  if (!(fpp > 0.0) || !(fpp < 1.0)) return corrupt("fpp outside (0, 1)");
  const uint64_t granule = layout == 1 ? internal::kBlockBits
                           : split     ? internal::kSplitBlockBits
                                       : 64;
  if (num_bits == 0 || num_bits % granule != 0) {
    return corrupt("bit count " + std::to_string(num_bits) +
                   " is not a positive multiple of " + std::to_string(granule));
  }
  if (num_bits / 8 > internal::kMaxDeserializedTableBytes ||
      (layout != 2 && num_bits / granule > internal::kMaxBlocks)) {
    return corrupt("bit count " + std::to_string(num_bits) + " is too large");
  }
  if (env.body.size() != num_bits / 8) {
    return corrupt("body is " + std::to_string(env.body.size()) +
                   " bytes, params announce " + std::to_string(num_bits / 8));
  }
  // Capacity, rate and k agree with the table (kDecodedRateSlack): a link
  // claiming more keys than its table holds would never make its chain grow
  // and would fill until it answers 1 for everything. The classic rate of
  // the table is a lower bound of every layout's (a blocked layout adds the
  // spread of its blocks' loads: Jensen), one pow where the layouts'
  // models cost a Poisson mixture per decode.
  if (const double model = ClassicBloomFpr(num_bits, capacity, k);
      !(model <= fpp * kDecodedRateSlack)) {
    return corrupt("capacity " + std::to_string(capacity) + ", rate " +
                   FormatRate(fpp) + " and k = " + std::to_string(k) +
                   " disagree with its table of " + std::to_string(num_bits) +
                   " bits, which at that capacity gives at least rate " +
                   FormatRate(model));
  }
  // `items` is a statistic (approximate under concurrency and after unions):
  // any value is accepted.
  std::unique_ptr<BloomFilter> f(new BloomFilter(
      static_cast<BloomLayout>(layout), k, seed, capacity, fpp, num_bits));
  if (!f->table_.Allocate(num_bits / 64)) {
    return Status::ResourceExhausted("cannot allocate " +
                                     std::to_string(num_bits / 8) + " bytes");
  }
  f->table_.ReadLittleEndian(env.body.data());
  f->items_.Reset(items);
  return f;
}

bool BloomFilter::Equals(const Filter& other) const {
  if (other.type() != FilterType::kBloom) return false;
  const auto& o = static_cast<const BloomFilter&>(other);
  if (o.layout_ != layout_ || o.k_ != k_ || o.seed_ != seed_ ||
      o.capacity_ != capacity_ || o.fpp_ != fpp_ || o.num_bits_ != num_bits_) {
    return false;
  }
  return table_.SameWords(o.table_);
}

}  // namespace shardfilter
