// Cuckoo filter sizing (the math is in sizing.h): the rate model, the
// design load per bucket size and the table size for a capacity and rate.
// Bloom sizing is in sizing.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "shardfilter/filters/sizing.h"

namespace shardfilter {

double CuckooSlotMatch(uint32_t fingerprint_bits) {
  // sum over v of P(v)^2: 2^f - 2 values at 2^-f, value 1 at 2^(1-f).
  const double unit = std::ldexp(1.0, -static_cast<int>(fingerprint_bits));
  return unit * (1.0 + 2.0 * unit);
}

double CuckooFpr(uint32_t fingerprint_bits, uint32_t bucket_size, double load) {
  if (!(load > 0)) return 0.0;
  // 1 - (1 - s)^(2 b load), via expm1/log1p for precision at f = 16.
  const double per_slot = CuckooSlotMatch(fingerprint_bits);
  return -std::expm1(2.0 * bucket_size * load * std::log1p(-per_slot));
}

double CuckooDesignLoad(uint32_t bucket_size) {
  switch (bucket_size) {
    case 2:
      return 0.80;  // first failure near 0.84 on large tables
    case 4:
      return 0.94;  // first failure near 0.955-0.96
    case 8:
      return 0.96;  // first failure near 0.98
    default:
      return 0.0;
  }
}

uint64_t CuckooTableBytes(uint64_t buckets, uint32_t bucket_size,
                          uint32_t fingerprint_bits) {
  const unsigned __int128 bits =
      static_cast<unsigned __int128>(buckets) * bucket_size * fingerprint_bits;
  const unsigned __int128 bytes = (bits + 63) / 64 * 8;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

namespace {

// Buckets for one (f, b): at the design load if that meets p, otherwise at
// the load where CuckooFpr == p, solved exactly:
//   load = ln(1 - p) / (2 b ln(1 - s)),  s = CuckooSlotMatch(f).
// Small tables get slack: the load a table reaches before its first failed
// insert varies more the fewer buckets it has (a 3-bucket table can fail at
// 70%), so tables under 4096 buckets get 2*sqrt(buckets) + 1 extra. Returns
// 0 when the count would exceed max_bytes.
uint64_t CuckooBucketsFor(uint64_t n, double p, uint32_t f, uint32_t b,
                          uint64_t max_bytes) {
  double load = CuckooDesignLoad(b);
  if (CuckooFpr(f, b, load) > p) {
    load = std::log1p(-p) / (2.0 * b * std::log1p(-CuckooSlotMatch(f)));
  }
  const long double want = std::ceil(static_cast<long double>(n) / (b * load));
  const long double max_buckets = static_cast<long double>(max_bytes) * 8 /
                                  (static_cast<long double>(b) * f);
  if (!(want <= max_buckets) || want > 1.0e18L) return 0;
  uint64_t buckets = std::max<uint64_t>(1, static_cast<uint64_t>(want));
  if (buckets < 4096) {
    buckets +=
        static_cast<uint64_t>(2 * std::sqrt(static_cast<double>(buckets))) + 1;
  }
  // Floating-point rounding: step up until the rate at capacity holds.
  while (CuckooFpr(
             f, b,
             static_cast<double>(n) / (static_cast<double>(buckets) * b)) > p) {
    ++buckets;
  }
  if (CuckooTableBytes(buckets, b, f) > max_bytes) return 0;
  return buckets;
}

}  // namespace

Result<CuckooSizing> CuckooFilterSizing(uint64_t n, double p,
                                        uint32_t fingerprint_bits,
                                        uint32_t bucket_size,
                                        uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  if (bucket_size != 2 && bucket_size != 4 && bucket_size != 8) {
    return Status::InvalidArgument(
        "cuckoo bucket size must be 2, 4 or 8, got " +
        std::to_string(bucket_size));
  }
  if (fingerprint_bits != 0 && fingerprint_bits != 8 &&
      fingerprint_bits != 12 && fingerprint_bits != 16) {
    return Status::InvalidArgument(
        "cuckoo fingerprint bits must be 0 (from the rate), 8, 12 or 16, got " +
        std::to_string(fingerprint_bits));
  }
  CuckooSizing best;
  for (uint32_t f : {8u, 12u, 16u}) {
    if (fingerprint_bits != 0 && f != fingerprint_bits) continue;
    const uint64_t buckets = CuckooBucketsFor(n, p, f, bucket_size, max_bytes);
    if (buckets == 0) continue;
    const uint64_t bytes = CuckooTableBytes(buckets, bucket_size, f);
    // Fewest bytes wins; on a tie the wider fingerprint (lower rate).
    if (best.buckets == 0 || bytes <= best.table_bytes) {
      best.buckets = buckets;
      best.bucket_size = bucket_size;
      best.fingerprint_bits = f;
      best.table_bytes = bytes;
    }
  }
  if (best.buckets == 0) {
    return Status::InvalidArgument(
        "cuckoo filter for capacity " + std::to_string(n) + " at rate " +
        FormatRate(p) + " needs more than the memory limit of " +
        std::to_string(max_bytes) + " bytes");
  }
  best.load_at_capacity = static_cast<double>(n) /
                          (static_cast<double>(best.buckets) * bucket_size);
  best.expected_fpr =
      CuckooFpr(best.fingerprint_bits, bucket_size, best.load_at_capacity);
  return best;
}

}  // namespace shardfilter
