#include "shardfilter/filters/counting_bloom_filter.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include "shardfilter/filters/envelope.h"
#include "shardfilter/filters/internal/coding.h"
#include "shardfilter/filters/sizing.h"

namespace shardfilter {

namespace internal {
namespace {

bool CountersNonZeroKernelScalar(const std::atomic<uint64_t>* block,
                                 const uint32_t* /*mult*/, uint32_t h32,
                                 uint32_t k) {
  return CounterMin(block, h32, k) != 0;
}

#if SHARDFILTER_SPLIT_AVX2
SHARDFILTER_TARGET_AVX2 bool CountersNonZeroKernelAvx2(
    const std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32,
    uint32_t /*k*/) {
  return CountersNonZeroAvx2(block, mult, h32);
}
#endif

// The writers' scalar kernels (REQUIRES as counting_simd.h's).
bool CountersAddKernelScalar(std::atomic<uint64_t>* block,
                             const uint32_t* /*mult*/, uint32_t h32,
                             uint32_t k) {
  uint64_t masks[kBlockWords];
  CounterMasks(h32, k, masks);
  return CounterIncrementLocked(block, masks);
}
uint32_t CountersAddCappedKernelScalar(std::atomic<uint64_t>* block,
                                       const uint32_t* /*mult*/, uint32_t h32,
                                       uint32_t k, uint32_t cap) {
  uint64_t masks[kBlockWords];
  const uint32_t min = CounterMasksAndMin(block, h32, k, masks);
  if (min < cap) CounterIncrementLocked(block, masks);
  return min;
}
bool CountersRemoveKernelScalar(std::atomic<uint64_t>* block,
                                const uint32_t* /*mult*/, uint32_t h32,
                                uint32_t k) {
  uint64_t masks[kBlockWords];
  CounterMasks(h32, k, masks);
  return CounterDecrementLocked(block, masks);
}

#if SHARDFILTER_SPLIT_AVX2
SHARDFILTER_TARGET_AVX2 bool CountersAddKernelAvx2(std::atomic<uint64_t>* block,
                                                   const uint32_t* mult,
                                                   uint32_t h32,
                                                   uint32_t /*k*/) {
  return CountersAddAvx2(block, mult, h32);
}
SHARDFILTER_TARGET_AVX2 uint32_t
CountersAddCappedKernelAvx2(std::atomic<uint64_t>* block, const uint32_t* mult,
                            uint32_t h32, uint32_t /*k*/, uint32_t cap) {
  return CountersAddCappedAvx2(block, mult, h32, cap);
}
SHARDFILTER_TARGET_AVX2 bool CountersRemoveKernelAvx2(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32,
    uint32_t /*k*/) {
  return CountersRemoveAvx2(block, mult, h32);
}
#endif

#if SHARDFILTER_SPLIT_AVX2
// The query's and the writers' AVX-512 kernels (counting_simd.h), for a
// CPU with AVX-512 F, BW, VL and BITALG: BITALG came with Ice Lake, so no
// CPU that takes these has Skylake-SP's frequency penalty for 512-bit
// instructions.
// Named ...Avx512: the package test allows AVX-512 registers only in
// functions so named (tests/package/run.sh).
SHARDFILTER_TARGET_AVX512_COUNTING bool CountersNonZeroKernelAvx512(
    const std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32,
    uint32_t /*k*/) {
  return CountersNonZeroAvx512(block, mult, h32);
}
SHARDFILTER_TARGET_AVX512_COUNTING bool CountersAddKernelAvx512(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32,
    uint32_t /*k*/) {
  return CountersAddAvx512(block, mult, h32);
}
SHARDFILTER_TARGET_AVX512_COUNTING uint32_t CountersAddCappedKernelAvx512(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32,
    uint32_t /*k*/, uint32_t cap) {
  return CountersAddCappedAvx512(block, mult, h32, cap);
}
SHARDFILTER_TARGET_AVX512_COUNTING bool CountersRemoveKernelAvx512(
    std::atomic<uint64_t>* block, const uint32_t* mult, uint32_t h32,
    uint32_t /*k*/) {
  return CountersRemoveAvx512(block, mult, h32);
}
#endif

}  // namespace

// The scalar kernel from the start, the AVX2 one once the CPU says it has
// AVX2, the writers' AVX-512 ones where it has those (counting_simd.h).
constinit std::atomic<CountersNonZeroKernel> g_counters_non_zero_kernel{
    &CountersNonZeroKernelScalar};
constinit std::atomic<CountersAddKernel> g_counters_add_kernel{
    &CountersAddKernelScalar};
constinit std::atomic<CountersAddCappedKernel> g_counters_add_capped_kernel{
    &CountersAddCappedKernelScalar};
constinit std::atomic<CountersRemoveKernel> g_counters_remove_kernel{
    &CountersRemoveKernelScalar};

namespace {
#if SHARDFILTER_SPLIT_AVX2
[[maybe_unused]] const bool kCountingKernelChosen = [] {
  if (CpuHasAvx2()) {
    g_counters_non_zero_kernel.store(&CountersNonZeroKernelAvx2,
                                     std::memory_order_relaxed);
    g_counters_add_kernel.store(&CountersAddKernelAvx2,
                                std::memory_order_relaxed);
    g_counters_add_capped_kernel.store(&CountersAddCappedKernelAvx2,
                                       std::memory_order_relaxed);
    g_counters_remove_kernel.store(&CountersRemoveKernelAvx2,
                                   std::memory_order_relaxed);
  }
  if (CpuHasAvx512Counting()) {
    g_counters_non_zero_kernel.store(&CountersNonZeroKernelAvx512,
                                     std::memory_order_relaxed);
    g_counters_add_kernel.store(&CountersAddKernelAvx512,
                                std::memory_order_relaxed);
    g_counters_add_capped_kernel.store(&CountersAddCappedKernelAvx512,
                                       std::memory_order_relaxed);
    g_counters_remove_kernel.store(&CountersRemoveKernelAvx512,
                                   std::memory_order_relaxed);
  }
  return true;
}();
#endif
}  // namespace

}  // namespace internal

namespace {

constexpr uint8_t kCountingFormatVersion = 1;
// Params of version 1, byte by byte in docs/format-bloom.md.
constexpr size_t kCountingParamsSize = 52;

}  // namespace

// Enough stripes that two writers rarely meet, few enough (64 KiB of locks
// at most, a line per kTableBytesPerStripe of table) to stay
// cache-resident and small next to the table.
uint64_t CountingBloomFilter::StripeCount(uint64_t num_blocks) {
  const uint64_t table_bytes = num_blocks * internal::kBlockBytes;
  const uint64_t lines =
      std::max<uint64_t>(1, table_bytes / kTableBytesPerStripe);
  return std::min(kMaxStripes, std::bit_floor(lines));
}

CountingBloomFilter::CountingBloomFilter(uint32_t k, uint64_t seed,
                                         uint64_t capacity, double fpp,
                                         uint64_t num_blocks)
    : k_(k),
      seed_(seed),
      hasher_(seed),
      capacity_(capacity),
      fpp_(fpp),
      num_blocks_(num_blocks),
      stripe_mask_(StripeCount(num_blocks) - 1),
      stripes_(new (std::nothrow) Stripe[stripe_mask_ + 1]) {
  for (uint32_t i = 0; i < 8; ++i) {
    lane_mult_[i] = internal::kProbeMultipliers[i < k ? i : 0];
  }
}

namespace {

Result<BlockedSizing> PlanCounting(const CountingBloomOptions& options) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(options.capacity, options.fpp));
  if (options.k > kMaxHashFunctions) {
    return Status::InvalidArgument(
        "k (counters per key) must be in 1..32, got " +
        std::to_string(options.k));
  }
  SF_ASSIGN_OR_RETURN(
      BlockedSizing s,
      BlockedBloomSizing(options.capacity, options.fpp, options.k,
                         internal::kCountersPerBlock, options.max_bytes));
  if (s.blocks > internal::kMaxBlocks) {
    return Status::InvalidArgument(
        "counting Bloom filter would need more than 2^32 blocks (256 GiB)");
  }
  return s;
}

}  // namespace

Result<uint64_t> CountingBloomFilter::TableBytes(
    const CountingBloomOptions& options) {
  SF_ASSIGN_OR_RETURN(BlockedSizing s, PlanCounting(options));
  return s.blocks * internal::kBlockBytes;
}

Result<std::unique_ptr<CountingBloomFilter>> CountingBloomFilter::Create(
    const CountingBloomOptions& options) {
  SF_ASSIGN_OR_RETURN(BlockedSizing s, PlanCounting(options));
  std::unique_ptr<CountingBloomFilter> f(new CountingBloomFilter(
      s.k, options.seed, options.capacity, options.fpp, s.blocks));
  if (!f->stripes_ || !f->table_.Allocate(s.blocks * internal::kBlockWords)) {
    return Status::ResourceExhausted("cannot allocate " +
                                     std::to_string(s.blocks * 64) + " bytes");
  }
  return f;
}

Status CountingBloomFilter::AddHash(uint64_t hash) {
  AddHashInline(hash);
  return Status::OK();
}

// The count and the add under one stripe lock, in one pass over the key's
// counters (each position computed once). Full when the key already holds
// max_copies copies.
Status CountingBloomFilter::AddHashCapped(uint64_t hash, uint32_t max_copies,
                                          uint32_t* held) {
  if (AddHashCappedInline(hash, max_copies, held)) [[likely]] {
    return Status::OK();
  }
  return Status::Full("the item already holds " + std::to_string(*held) +
                      " copies");
}

Status CountingBloomFilter::RemoveHash(uint64_t hash) {
  if (RemoveHashInline(hash)) return Status::OK();
  return Status::NotFound("key is not in the counting Bloom filter");
}

bool CountingBloomFilter::MayContainHash(uint64_t hash) const {
  return MayContainHashInline(hash);
}

uint32_t CountingBloomFilter::CountHash(uint64_t hash) const {
  return CountHashInline(hash);
}

void CountingBloomFilter::Prefetch(uint64_t h, bool write) const {
  const uint64_t b = internal::BlockIndex(h, num_blocks_);
  if (write) {
    internal::PrefetchWrite(BlockAt(b));
    internal::PrefetchWrite(&stripes_[b & stripe_mask_]);
  } else {
    internal::PrefetchRead(BlockAt(b));
  }
}

Status CountingBloomFilter::AddHashes(std::span<const uint64_t> hashes,
                                      size_t* added) {
  // One stripe at a time: AddHashInline locks and unlocks per key.
  internal::BatchOps::Add(*this, hashes.size(),
                          [&](size_t i) { return hashes[i]; });
  if (added != nullptr) *added = hashes.size();
  return Status::OK();
}

void CountingBloomFilter::MayContainHashes(std::span<const uint64_t> hashes,
                                           std::span<uint8_t> out) const {
  internal::BatchOps::Query(
      *this, std::min(hashes.size(), out.size()),
      [&](size_t i) { return hashes[i]; }, out);
}

void CountingBloomFilter::AddKeys(std::span<const std::string_view> keys) {
  internal::BatchOps::Add(*this, keys.size(),
                          [&](size_t i) { return Hash(keys[i]); });
}

void CountingBloomFilter::MayContainKeys(std::span<const std::string_view> keys,
                                         std::span<uint8_t> out) const {
  internal::BatchOps::Query(
      *this, std::min(keys.size(), out.size()),
      [&](size_t i) { return Hash(keys[i]); }, out);
}

FilterStats CountingBloomFilter::Counts() const {
  FilterStats s;
  s.type = FilterType::kCountingBloom;
  s.capacity = capacity_;
  s.target_fpr = fpp_;
  s.bytes = num_bytes();
  s.slots = num_counters();
  s.k = k_;
  uint64_t adds = 0, removes = 0;
  for (uint64_t i = 0; i <= stripe_mask_; ++i) {
    // Relaxed: statistics, approximate while writers run.
    adds += stripes_[i].adds.load(std::memory_order_relaxed);
    removes += stripes_[i].removes.load(std::memory_order_relaxed);
  }
  s.items = adds - removes;
  s.deletes = removes;
  s.bits_per_item = static_cast<double>(num_bytes()) * 8 / capacity_;
  return s;
}

FilterStats CountingBloomFilter::Stats() const {
  FilterStats s = Counts();
  // Histogram of non-zero counters per block; per block the FPR is
  // (nz_b / 128)^k (k draws with replacement), the filter's is the mean.
  std::array<uint64_t, internal::kCountersPerBlock + 1> hist{};
  for (uint64_t b = 0; b < num_blocks_; ++b) {
    int nz = 0;
    for (uint32_t w = 0; w < internal::kBlockWords; ++w) {
      nz +=
          internal::NonZeroCounters(table_[b * internal::kBlockWords + w].load(
              std::memory_order_relaxed));
    }
    ++hist[nz];
  }
  uint64_t set = 0;
  double fpr = 0, card = 0;
  for (uint32_t nz = 0; nz <= internal::kCountersPerBlock; ++nz) {
    if (hist[nz] == 0) continue;
    set += hist[nz] * nz;
    fpr += hist[nz] * std::pow(nz / 128.0, k_);
    card += hist[nz] * EstimateCardinality(internal::kCountersPerBlock, nz, k_);
  }
  s.fill_ratio = static_cast<double>(set) / num_counters();
  s.estimated_fpr = fpr / num_blocks_;
  s.estimated_cardinality = card;
  return s;
}

namespace {
// The format's bound on the statistics: items + deletes <= 2^63 (the
// decoder refuses more; no filter performs 2^63 operations). Serialize
// clamps to it, so a filter decoded near the bound and then written to
// still writes what its decoder reads back (chain_blob_fuzz found a
// decoded sum of 2^64 - 56 that a few adds wrapped).
constexpr uint64_t kMaxCountedOps = uint64_t{1} << 63;
}  // namespace

std::string CountingBloomFilter::Serialize() const {
  FilterStats st = Counts();  // the statistics only: no table scan
  st.deletes = std::min(st.deletes, kMaxCountedOps);
  st.items = std::min(st.items, kMaxCountedOps - st.deletes);
  std::string params;
  internal::PutU8(&params, static_cast<uint8_t>(k_));
  internal::PutU8(&params, 0);
  internal::PutU16(&params, 0);
  internal::PutU64(&params, seed_);
  internal::PutU64(&params, capacity_);
  internal::PutF64(&params, fpp_);
  internal::PutU64(&params, num_blocks_);
  internal::PutU64(&params, st.items);
  internal::PutU64(&params, st.deletes);
  std::string out;
  const uint64_t body_len = num_bytes();
  BeginEnvelope(FilterType::kCountingBloom, kCountingFormatVersion, params,
                body_len, &out);
  const size_t pos = out.size();
  out.resize(pos + body_len);
  table_.WriteLittleEndian(out.data() + pos);
  FinishEnvelope(&out);
  return out;
}

Result<std::unique_ptr<CountingBloomFilter>> CountingBloomFilter::Deserialize(
    std::string_view bytes) {
  SF_ASSIGN_OR_RETURN(
      EnvelopeView env,
      OpenFilterEnvelope(bytes, FilterType::kCountingBloom,
                         kCountingFormatVersion, kCountingParamsSize));
  auto corrupt = [](const std::string& what) {
    return Status::Corruption("serialized counting filter: " + what);
  };
  internal::ByteReader r(env.params);
  uint8_t k = 0, reserved8 = 0;
  uint16_t reserved16 = 0;
  uint64_t seed = 0, capacity = 0, num_blocks = 0, items = 0, deletes = 0;
  double fpp = 0;
  (void)r.ReadU8(&k);  // length checked above: reads cannot fail
  (void)r.ReadU8(&reserved8);
  (void)r.ReadU16(&reserved16);
  (void)r.ReadU64(&seed);
  (void)r.ReadU64(&capacity);
  (void)r.ReadF64(&fpp);
  (void)r.ReadU64(&num_blocks);
  (void)r.ReadU64(&items);
  (void)r.ReadU64(&deletes);
  if (k < kMinHashFunctions || k > kMaxHashFunctions) {
    return corrupt("k = " + std::to_string(k) + " is outside 1..32");
  }
  if (reserved8 != 0 || reserved16 != 0) {
    return corrupt("reserved params field is not zero");
  }
  if (capacity == 0) return corrupt("capacity is 0");
  if (!(fpp > 0.0) || !(fpp < 1.0)) return corrupt("fpp outside (0, 1)");
  if (num_blocks == 0 || num_blocks > internal::kMaxBlocks ||
      num_blocks >
          internal::kMaxDeserializedTableBytes / internal::kBlockBytes) {
    return corrupt("block count " + std::to_string(num_blocks) +
                   " is zero or too large");
  }
  if (env.body.size() != num_blocks * internal::kBlockBytes) {
    return corrupt("body is " + std::to_string(env.body.size()) +
                   " bytes, params announce " +
                   std::to_string(num_blocks * internal::kBlockBytes));
  }
  if (deletes > kMaxCountedOps || items > kMaxCountedOps - deletes) {
    return corrupt("items + deletes exceed 2^63");
  }
  // Capacity, rate and k agree with the table (kDecodedRateSlack, and the
  // classic rate as a lower bound, as the Bloom codec).
  if (const double model = ClassicBloomFpr(
          num_blocks * internal::kCountersPerBlock, capacity, k);
      !(model <= fpp * kDecodedRateSlack)) {
    return corrupt("capacity " + std::to_string(capacity) + ", rate " +
                   FormatRate(fpp) + " and k = " + std::to_string(k) +
                   " disagree with its table of " + std::to_string(num_blocks) +
                   " blocks, which at that capacity gives at least rate " +
                   FormatRate(model));
  }
  std::unique_ptr<CountingBloomFilter> f(
      new CountingBloomFilter(k, seed, capacity, fpp, num_blocks));
  // Out of memory is ResourceExhausted, as in Create: the bytes may be fine.
  if (!f->stripes_ || !f->table_.Allocate(num_blocks * internal::kBlockWords)) {
    return Status::ResourceExhausted(
        "cannot allocate " +
        std::to_string(num_blocks * internal::kBlockBytes) + " bytes");
  }
  f->table_.ReadLittleEndian(env.body.data());
  // Statistics: any values are accepted (approximate under concurrency).
  f->stripes_[0].adds.store(items + deletes, std::memory_order_relaxed);
  f->stripes_[0].removes.store(deletes, std::memory_order_relaxed);
  return f;
}

bool CountingBloomFilter::Equals(const Filter& other) const {
  if (other.type() != FilterType::kCountingBloom) return false;
  const auto& o = static_cast<const CountingBloomFilter&>(other);
  if (o.k_ != k_ || o.seed_ != seed_ || o.capacity_ != capacity_ ||
      o.fpp_ != fpp_ || o.num_blocks_ != num_blocks_) {
    return false;
  }
  return table_.SameWords(o.table_);
}

}  // namespace shardfilter
