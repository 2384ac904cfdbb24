// CuckooFilter's serialized form (type kCuckoo, version 1) and equality.
// Byte layout: docs/format-cuckoo.md; pinned by tests/cuckoo_filter_test.cc.
//
//   params (56 bytes, little-endian):
//     0  u64 bucket count      8  u8 bucket size    9  u8 fingerprint bits
//     10 u16 reserved (0)      12 u32 max kicks     16 u64 seed
//     24 u64 capacity          32 f64 fpp           40 u64 items
//     48 u64 deletes
//   body: ceil(buckets * b * f / 64) little-endian 64-bit words of the
//     packed table (cuckoo_table.h); bits past the last slot are zero.
//
// There is no victim field: a failed insert evicts nothing (invariant 3),
// so there is never a homeless fingerprint to store.
#include <cmath>
#include <string>

#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/envelope.h"
#include "shardfilter/filters/internal/coding.h"

namespace shardfilter {
namespace {

Status Bad(const std::string& what) {
  return Status::Corruption("serialized cuckoo filter: " + what);
}

}  // namespace

std::string CuckooFilter::Serialize() const {
  // All-stripes mode: no writer runs, so table and counters agree.
  internal::AllStripesLock all(stripes_);
  std::string params;
  params.reserve(kParamsSize);
  internal::PutU64(&params, table_.buckets());
  internal::PutU8(&params, static_cast<uint8_t>(table_.bucket_size()));
  internal::PutU8(&params, static_cast<uint8_t>(table_.fp_bits()));
  internal::PutU16(&params, 0);
  internal::PutU32(&params, max_kicks_);
  internal::PutU64(&params, hasher_.seed());
  internal::PutU64(&params, capacity_);
  internal::PutF64(&params, fpp_);
  internal::PutU64(&params, stripes_.Items());
  internal::PutU64(&params, stripes_.Deletes());
  const uint64_t words = table_.data_words();
  std::string out;
  BeginEnvelope(FilterType::kCuckoo, kFormatVersion, params, words * 8, &out);
  const size_t body_at = out.size();
  out.resize(body_at + words * 8);
  char* p = out.data() + body_at;
  for (uint64_t w = 0; w < words; ++w) {
    const uint64_t v = table_.LoadWord(w);
    for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(v >> (8 * i));
  }
  FinishEnvelope(&out);
  return out;
}

Result<std::unique_ptr<CuckooFilter>> CuckooFilter::Deserialize(
    std::string_view bytes) {
  SF_ASSIGN_OR_RETURN(EnvelopeView env,
                      OpenFilterEnvelope(bytes, FilterType::kCuckoo,
                                         kFormatVersion, kParamsSize));
  internal::ByteReader r(env.params);
  uint64_t buckets = 0, seed = 0, capacity = 0, items = 0, deletes = 0;
  uint8_t b = 0, f = 0;
  uint16_t reserved = 0;
  uint32_t max_kicks = 0;
  double fpp = 0;
  // Lengths were checked above, so every read succeeds.
  (void)r.ReadU64(&buckets);
  (void)r.ReadU8(&b);
  (void)r.ReadU8(&f);
  (void)r.ReadU16(&reserved);
  (void)r.ReadU32(&max_kicks);
  (void)r.ReadU64(&seed);
  (void)r.ReadU64(&capacity);
  (void)r.ReadF64(&fpp);
  (void)r.ReadU64(&items);
  (void)r.ReadU64(&deletes);

  if (b != 2 && b != 4 && b != 8) {
    return Bad("bucket size " + std::to_string(b) + " is not 2, 4 or 8");
  }
  if (f != 8 && f != 12 && f != 16) {
    return Bad("fingerprint bits " + std::to_string(f) + " is not 8, 12 or 16");
  }
  if (reserved != 0) return Bad("reserved field is not zero");
  if (max_kicks == 0 || max_kicks > kCuckooMaxKicksLimit) {
    return Bad("max kicks " + std::to_string(max_kicks) + " out of range");
  }
  if (buckets == 0) return Bad("bucket count is zero");
  // Before any allocation: the body must be exactly the table, so the
  // table is never larger than the input (CuckooTableBytes saturates).
  const uint64_t body_bytes = CuckooTableBytes(buckets, b, f);
  if (env.body.size() != body_bytes) {
    return Bad("body is " + std::to_string(env.body.size()) +
               " bytes, the table of " + std::to_string(buckets) +
               " buckets needs " + std::to_string(body_bytes));
  }
  const uint64_t slots = buckets * b;  // no overflow: bounded by the body
  if (capacity == 0 || capacity > slots) {
    return Bad("capacity " + std::to_string(capacity) + " not in 1.." +
               std::to_string(slots) + " (slots)");
  }
  if (!(fpp > 0.0) || !(fpp < 1.0)) return Bad("fpp not in (0, 1)");
  // Create guarantees the rate at capacity meets fpp; anything else was
  // not written by us. The slack admits tables sized before the model
  // counted fingerprint 1's double weight (CuckooSlotMatch): 2^{1-f}.
  const double load =
      static_cast<double>(capacity) / static_cast<double>(slots);
  if (const double model = CuckooFpr(f, b, load);
      model >
      fpp * (1 + std::ldexp(1.0, 1 - static_cast<int>(f))) * (1 + 1e-9)) {
    return Bad("capacity " + std::to_string(capacity) + " and rate " +
               FormatRate(fpp) + " disagree with its table of " +
               std::to_string(buckets) + " buckets of " + std::to_string(b) +
               " " + std::to_string(f) +
               "-bit slots, which at that capacity gives rate " +
               FormatRate(model));
  }
  if (items > slots) return Bad("item count exceeds the slots");

  std::unique_ptr<CuckooFilter> filter(new CuckooFilter());
  filter->hasher_ = KeyHasher(seed);
  filter->capacity_ = capacity;
  filter->fpp_ = fpp;
  filter->max_kicks_ = max_kicks;
  SF_RETURN_IF_ERROR(filter->Init(buckets, b, f));
  internal::CuckooTable& t = filter->table_;
  const uint64_t words = t.data_words();
  for (uint64_t w = 0; w < words; ++w) {
    t.StoreWord(w, internal::LoadLE(env.body.data() + 8 * w, 8));
  }
  const uint64_t used_bits = slots * f;
  const unsigned tail = used_bits % 64;
  if (tail != 0 && (t.LoadWord(words - 1) >> tail) != 0) {
    return Bad("bits past the last slot are not zero");
  }
  uint64_t occupied = 0;
  for (uint64_t i = 0; i < buckets; ++i) occupied += t.OccupiedInBucket(i);
  if (occupied != items) {
    return Bad("item count " + std::to_string(items) + " but " +
               std::to_string(occupied) + " occupied slots");
  }
  filter->stripes_.RestoreCounts(items, deletes);
  return filter;
}

bool CuckooFilter::Equals(const Filter& other) const {
  // As the other types: a type check, then the cast (the class is final).
  if (other.type() != FilterType::kCuckoo) return false;
  const auto& o = static_cast<const CuckooFilter&>(other);
  if (this == &o) return true;
  // Exact when neither filter has a writer running.
  if (seed() != o.seed() || capacity_ != o.capacity_ || fpp_ != o.fpp_ ||
      max_kicks_ != o.max_kicks_ || table_.buckets() != o.table_.buckets() ||
      table_.bucket_size() != o.table_.bucket_size() ||
      table_.fp_bits() != o.table_.fp_bits() ||
      stripes_.Items() != o.stripes_.Items() ||
      stripes_.Deletes() != o.stripes_.Deletes()) {
    return false;
  }
  for (uint64_t w = 0; w < table_.data_words(); ++w) {
    if (table_.LoadWord(w) != o.table_.LoadWord(w)) return false;
  }
  return true;
}

}  // namespace shardfilter
