#include "shardfilter/filters/bloom_filter.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "shardfilter/filters/envelope.h"
#include "shardfilter/filters/internal/coding.h"

namespace shardfilter {
namespace {

// Bits for a classic filter with k probes to meet p at n items:
// (1 - e^{-kn/m})^k = p  <=>  m = k n / -ln(1 - p^{1/k}).
Result<uint64_t> ClassicBitsForK(uint64_t n, double p, uint32_t k) {
  const long double root = std::pow(static_cast<long double>(p), 1.0L / k);
  const long double m = static_cast<long double>(k) * n / -std::log1p(-root);
  if (!(m < 9.0e18L)) {
    return Status::InvalidArgument("filter size overflows 64 bits");
  }
  return static_cast<uint64_t>(std::ceil(m));
}

// Fill statistics of the blocked layout, exact for its hash model: given
// the table, a foreign key hits with probability mean over its word tuple
// (w_j) of prod_j (pop(w_j) / 64)^{k_j}, and X draws leave a word with
// about 64 (1 - e^{-X/64}) bits set (cardinality).
struct BlockedFill {
  uint64_t set = 0;
  double fpr = 0;
  double cardinality = 0;
};
BlockedFill MeasureBlockedFill(const std::atomic<uint64_t>* words,
                               uint64_t num_blocks, uint32_t k) {
  const uint32_t s = BlockedWordsPerKey(k);
  const uint32_t sa = k % s, sb = s - sa, kb = k / s, ka = kb + 1;
  // Word tuples per choice of (A, B) = the words of the wide / narrow
  // slots: P(8, s) / (sa! sb!).
  double choices = 1;
  for (uint32_t i = 0; i < s; ++i) choices *= 8 - i;
  for (uint32_t i = 2; i <= sa; ++i) choices /= i;
  for (uint32_t i = 2; i <= sb; ++i) choices /= i;
  std::array<double, 65> fa, fb;
  for (uint32_t c = 0; c <= 64; ++c) {
    fa[c] = std::pow(c / 64.0, ka);
    fb[c] = std::pow(c / 64.0, kb);
  }
  std::array<uint64_t, 65> word_hist{};
  BlockedFill fill;
  for (uint64_t b = 0; b < num_blocks; ++b) {
    double dp[9][9] = {};
    dp[0][0] = 1;
    for (uint32_t w = 0; w < internal::kBlockWords; ++w) {
      const int c = std::popcount(
          words[b * internal::kBlockWords + w].load(std::memory_order_relaxed));
      ++word_hist[c];
      for (int x = static_cast<int>(std::min(w + 1, sa)); x >= 0; --x) {
        for (int y = static_cast<int>(std::min(w + 1, sb)); y >= 0; --y) {
          dp[x][y] += (x > 0 ? dp[x - 1][y] * fa[c] : 0) +
                      (y > 0 ? dp[x][y - 1] * fb[c] : 0);
        }
      }
    }
    fill.fpr += dp[sa][sb] / choices;
  }
  fill.fpr /= static_cast<double>(num_blocks);
  for (uint32_t c = 0; c <= 64; ++c) {
    fill.set += word_hist[c] * c;
    fill.cardinality += word_hist[c] * EstimateCardinality(64, c, k);
  }
  return fill;
}

// Fill statistics of the split-block layout, exact for its hash model: a
// foreign key hits a block with probability prod over lanes of
// (pop(lane) / 32); every key of a block set one bit in each of its lanes,
// so each lane estimates the block's keys (-32 ln(1 - c / 32)), and the
// lanes' mean is the estimate.
BlockedFill MeasureSplitFill(const std::atomic<uint64_t>* words,
                             uint64_t num_blocks) {
  std::array<double, 33> keys_for;
  for (uint32_t c = 0; c <= 32; ++c) {
    keys_for[c] = EstimateCardinality(32, c, 1);
  }
  BlockedFill fill;
  for (uint64_t b = 0; b < num_blocks; ++b) {
    double hit = 1, keys = 0;
    for (uint32_t w = 0; w < internal::kSplitBlockWords; ++w) {
      const uint64_t v = words[b * internal::kSplitBlockWords + w].load(
          std::memory_order_relaxed);
      for (const uint32_t lane :
           {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}) {
        const int c = std::popcount(lane);
        fill.set += c;
        hit *= c / 32.0;
        keys += keys_for[c];
      }
    }
    fill.fpr += hit;
    fill.cardinality += keys / internal::kSplitLanes;
  }
  if (num_blocks > 0) fill.fpr /= static_cast<double>(num_blocks);
  return fill;
}

}  // namespace

BloomFilter::BloomFilter(BloomLayout layout, uint32_t k, uint64_t seed,
                         uint64_t capacity, double fpp, uint64_t num_bits)
    : layout_(layout),
      k_(k),
      seed_(seed),
      capacity_(capacity),
      fpp_(fpp),
      num_bits_(num_bits),
      num_blocks_(layout == BloomLayout::kSplitBlock
                      ? num_bits / internal::kSplitBlockBits
                      : num_bits / internal::kBlockBits),
      block_words_(layout == BloomLayout::kSplitBlock
                       ? internal::kSplitBlockWords
                   : layout == BloomLayout::kBlocked ? internal::kBlockWords
                                                     : 1),
      blocked_(internal::BlockedOpsFor(k)),
      hasher_(seed),
      items_(num_bits / 8 >= kStripedItemsMinBytes) {}

namespace {

// Foldable sizes (BloomFilter::Fold): a block count rounded up to a
// multiple of the largest power of two g <= min(64, blocks / 256), so a
// filter can later be folded by any factor up to g; it costs at most 1/256
// = 0.4% more memory, within the budget only.
uint64_t FoldableBlocks(uint64_t blocks, uint64_t block_bytes,
                        uint64_t max_bytes) {
  uint64_t g = 1;
  while (g < 64 && g * 2 * 256 <= blocks) g *= 2;
  const uint64_t rounded = (blocks + g - 1) / g * g;
  return rounded * block_bytes <= max_bytes ? rounded : blocks;
}

}  // namespace

BloomLayout ResolveBloomLayout(uint64_t capacity, double fpp, uint32_t k,
                               uint64_t max_bytes) {
  if (k != 0 && k != internal::kSplitK) return BloomLayout::kBlocked;
  auto split = SplitBlockBloomSizing(capacity, fpp, max_bytes);
  // Past 2^32 blocks the split layout cannot be built (Plan refuses it);
  // the blocked one, with blocks twice the size, may.
  if (!split.ok() || split->blocks > internal::kMaxBlocks) {
    return BloomLayout::kBlocked;
  }
  auto word = WordBlockedBloomSizing(capacity, fpp, k, UINT64_MAX);
  if (!word.ok()) return BloomLayout::kSplitBlock;
  // Bytes: 32 per split block, 64 per word-blocked block.
  return static_cast<double>(split->blocks) * 32 <=
                 1.05 * static_cast<double>(word->blocks) * 64
             ? BloomLayout::kSplitBlock
             : BloomLayout::kBlocked;
}

Result<BloomFilter::Shape> BloomFilter::Plan(const BloomOptions& options) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(options.capacity, options.fpp));
  if (options.k > kMaxHashFunctions) {
    return Status::InvalidArgument("k (bits per key) must be in 1..32, got " +
                                   std::to_string(options.k));
  }
  const uint64_t n = options.capacity;
  const double p = options.fpp;
  uint64_t num_bits = 0;
  uint32_t k = options.k;
  const BloomLayout layout =
      options.layout == BloomLayout::kAuto
          ? ResolveBloomLayout(n, p, k, options.max_bytes)
          : options.layout;
  if (layout == BloomLayout::kSplitBlock) {
    if (k != 0 && k != internal::kSplitK) {
      return Status::InvalidArgument(
          "the split-block Bloom layout sets 8 bits per key; k = " +
          std::to_string(k) + " needs the blocked or classic layout");
    }
    SF_ASSIGN_OR_RETURN(BlockedSizing s,
                        SplitBlockBloomSizing(n, p, options.max_bytes));
    if (s.blocks > internal::kMaxBlocks) {
      return Status::InvalidArgument(
          "split-block Bloom filter would need more than 2^32 blocks (128 "
          "GiB)");
    }
    num_bits = FoldableBlocks(s.blocks, internal::kSplitBlockBytes,
                              options.max_bytes) *
               internal::kSplitBlockBits;
    k = internal::kSplitK;
  } else if (layout == BloomLayout::kBlocked) {
    SF_ASSIGN_OR_RETURN(BlockedSizing s,
                        WordBlockedBloomSizing(n, p, k, options.max_bytes));
    if (s.blocks > internal::kMaxBlocks) {
      return Status::InvalidArgument(
          "blocked Bloom filter would need more than 2^32 blocks (256 GiB)");
    }
    num_bits =
        FoldableBlocks(s.blocks, internal::kBlockBytes, options.max_bytes) *
        internal::kBlockBits;
    k = s.k;
  } else if (layout == BloomLayout::kClassic) {
    SF_ASSIGN_OR_RETURN(uint64_t m0, ClassicBloomBits(n, p));
    if (k == 0) k = OptimalHashFunctions(m0, n);
    // With k rounded (or forced), m0 may miss p; size for this k instead.
    SF_ASSIGN_OR_RETURN(uint64_t m, ClassicBitsForK(n, p, k));
    if (m > (uint64_t{1} << 62)) {
      return Status::InvalidArgument("filter size overflows 64 bits");
    }
    num_bits = (m + 63) / 64 * 64;
    if (num_bits / 8 > options.max_bytes) {
      return Status::InvalidArgument("capacity " + std::to_string(n) +
                                     " at rate " + FormatRate(p) + " needs " +
                                     std::to_string(num_bits / 8) +
                                     " bytes, over the memory limit of " +
                                     std::to_string(options.max_bytes));
    }
  } else {
    return Status::InvalidArgument(
        "unknown Bloom layout " +
        std::to_string(static_cast<int>(options.layout)));
  }
  return Shape{layout, k, num_bits};
}

Result<uint64_t> BloomFilter::TableBytes(const BloomOptions& options) {
  SF_ASSIGN_OR_RETURN(Shape shape, Plan(options));
  return shape.num_bits / 8;
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Create(
    const BloomOptions& options) {
  SF_ASSIGN_OR_RETURN(Shape shape, Plan(options));
  const uint64_t num_bits = shape.num_bits;
  std::unique_ptr<BloomFilter> f(new BloomFilter(shape.layout, shape.k,
                                                 options.seed, options.capacity,
                                                 options.fpp, num_bits));
  if (!f->table_.Allocate(num_bits / 64)) {
    return Status::ResourceExhausted("cannot allocate " +
                                     std::to_string(num_bits / 8) + " bytes");
  }
  return f;
}

Status BloomFilter::AddHash(uint64_t hash) {
  AddHashInline(hash);
  return Status::OK();
}

Status BloomFilter::RemoveHash(uint64_t) {
  return Status::NotSupported(
      "a Bloom filter cannot remove keys (use a counting Bloom or cuckoo "
      "filter)");
}

bool BloomFilter::MayContainHash(uint64_t hash) const {
  return MayContainHashInline(hash);
}

uint32_t BloomFilter::CountHash(uint64_t hash) const {
  return MayContainHashInline(hash) ? 1 : 0;
}

void BloomFilter::Prefetch(uint64_t h, bool write) const {
  if (layout_ != BloomLayout::kClassic) {
    const void* line =
        layout_ == BloomLayout::kSplitBlock ? SplitBlock(h) : Block(h);
    if (write) {
      internal::PrefetchWrite(line);
    } else {
      internal::PrefetchRead(line);
    }
  } else {
    internal::ClassicPrefetch(table_.data(), num_bits_, h, k_);
  }
}

void BloomFilter::PrefetchBatchQuery(uint64_t h) const {
  if (layout_ == BloomLayout::kClassic) {
    internal::ClassicPrefetch(table_.data(), num_bits_, h, k_);
    return;
  }
  internal::PrefetchReadL2(layout_ == BloomLayout::kSplitBlock ? SplitBlock(h)
                                                               : Block(h));
}

Status BloomFilter::AddHashes(std::span<const uint64_t> hashes, size_t* added) {
  internal::BatchOps::Add(*this, hashes.size(),
                          [&](size_t i) { return hashes[i]; });
  if (added != nullptr) *added = hashes.size();
  return Status::OK();
}

void BloomFilter::MayContainHashes(std::span<const uint64_t> hashes,
                                   std::span<uint8_t> out) const {
  internal::BatchOps::Query(
      *this, std::min(hashes.size(), out.size()),
      [&](size_t i) { return hashes[i]; }, out);
}

void BloomFilter::AddKeys(std::span<const std::string_view> keys) {
  internal::BatchOps::Add(*this, keys.size(),
                          [&](size_t i) { return hasher_(keys[i]); });
}

void BloomFilter::MayContainKeys(std::span<const std::string_view> keys,
                                 std::span<uint8_t> out) const {
  internal::BatchOps::Query(
      *this, std::min(keys.size(), out.size()),
      [&](size_t i) { return hasher_(keys[i]); }, out);
}

uint64_t BloomFilter::items() const {
  return items_.Load();  // a statistic
}

Status BloomFilter::UnionWith(const BloomFilter& other) {
  if (other.layout_ != layout_ || other.k_ != k_ ||
      other.num_bits_ != num_bits_ || other.seed_ != seed_) {
    return Status::InvalidArgument(
        "cannot union Bloom filters of different shape: this has layout " +
        std::to_string(static_cast<int>(layout_)) + ", k " +
        std::to_string(k_) + ", " + std::to_string(num_bits_) + " bits, seed " +
        std::to_string(seed_) + "; the other has layout " +
        std::to_string(static_cast<int>(other.layout_)) + ", k " +
        std::to_string(other.k_) + ", " + std::to_string(other.num_bits_) +
        " bits, seed " + std::to_string(other.seed_));
  }
  if (&other == this) return Status::OK();
  for (uint64_t i = 0; i < table_.size(); ++i) {
    // Relaxed, as for adds: bits only get set; an OR never loses a bit a
    // concurrent add sets in this filter.
    const uint64_t v = other.table_[i].load(std::memory_order_relaxed);
    if ((table_[i].load(std::memory_order_relaxed) & v) != v) {
      table_[i].fetch_or(v, std::memory_order_relaxed);
    }
  }
  // Items: the distinct keys the bits now imply, never fewer than before
  // (adding the other's count would count the keys of both twice, and a
  // repeated union again each time).
  const auto implied =
      static_cast<uint64_t>(std::llround(Stats().estimated_cardinality));
  const uint64_t have = items();
  if (implied > have) {
    items_.AddShared(implied - have);  // not this thread's own adds
  }
  return Status::OK();
}

Result<std::unique_ptr<BloomFilter>> BloomFilter::Fold(
    uint32_t factor, uint64_t new_capacity) const {
  if (factor < 2 || (factor & (factor - 1)) != 0) {
    return Status::InvalidArgument("fold factor " + std::to_string(factor) +
                                   " is not a power of two >= 2");
  }
  if (new_capacity == 0) {
    return Status::InvalidArgument("folded capacity is 0");
  }
  if (layout_ == BloomLayout::kClassic) {
    return Status::NotSupported(
        "only the blocked layouts fold (a classic filter spreads a key's "
        "bits over the whole table)");
  }
  if (num_blocks_ % factor != 0) {
    return Status::NotSupported("cannot fold " + std::to_string(num_blocks_) +
                                " blocks by " + std::to_string(factor) +
                                ": the factor must divide the block count");
  }
  const uint64_t new_blocks = num_blocks_ / factor;
  const uint32_t bw = block_words_;
  std::unique_ptr<BloomFilter> f(new BloomFilter(
      layout_, k_, seed_, new_capacity, fpp_, new_blocks * bw * 64));
  if (!f->table_.Allocate(new_blocks * bw)) {
    return Status::ResourceExhausted(
        "cannot allocate " + std::to_string(new_blocks * bw * 8) + " bytes");
  }
  for (uint64_t j = 0; j < new_blocks; ++j) {
    for (uint32_t w = 0; w < bw; ++w) {
      uint64_t v = 0;
      for (uint32_t i = 0; i < factor; ++i) {
        v |= table_[(j * factor + i) * bw + w].load(std::memory_order_relaxed);
      }
      f->table_[j * bw + w].store(v, std::memory_order_relaxed);
    }
  }
  // Distinct keys are unchanged by folding; the statistic carries over.
  f->items_.Reset(items());
  return f;
}

uint64_t BloomFilter::MissingFoldedBits(const BloomFilter& source) const {
  if (layout_ == BloomLayout::kClassic || source.layout_ != layout_ ||
      source.k_ != k_ || source.seed_ != seed_ || num_blocks_ == 0 ||
      source.num_blocks_ % num_blocks_ != 0) {
    return UINT64_MAX;
  }
  const uint64_t factor = source.num_blocks_ / num_blocks_;
  uint64_t missing = 0;
  const uint32_t bw = block_words_;
  for (uint64_t b = 0; b < source.num_blocks_; ++b) {
    for (uint32_t w = 0; w < bw; ++w) {
      const uint64_t v =
          source.table_[b * bw + w].load(std::memory_order_relaxed);
      const uint64_t t =
          table_[(b / factor) * bw + w].load(std::memory_order_relaxed);
      missing += static_cast<uint64_t>(std::popcount(v & ~t));
    }
  }
  return missing;
}

FilterStats BloomFilter::Counts() const {
  FilterStats s;
  s.type = FilterType::kBloom;
  s.capacity = capacity_;
  s.target_fpr = fpp_;
  s.bytes = num_bits_ / 8;
  s.slots = num_bits_;
  s.k = k_;
  s.items = items();
  s.bits_per_item = static_cast<double>(num_bits_) / capacity_;
  return s;
}

FilterStats BloomFilter::Stats() const {
  FilterStats s = Counts();
  uint64_t set = 0;
  if (layout_ == BloomLayout::kSplitBlock) {
    const BlockedFill fill = MeasureSplitFill(table_.data(), num_blocks_);
    set = fill.set;
    s.estimated_fpr = fill.fpr;
    s.estimated_cardinality = fill.cardinality;
  } else if (layout_ == BloomLayout::kBlocked) {
    const BlockedFill fill = MeasureBlockedFill(table_.data(), num_blocks_, k_);
    set = fill.set;
    s.estimated_fpr = fill.fpr;
    s.estimated_cardinality = fill.cardinality;
  } else {
    for (uint64_t i = 0; i < table_.size(); ++i) {
      set += std::popcount(table_[i].load(std::memory_order_relaxed));
    }
    s.estimated_fpr = std::pow(static_cast<double>(set) / num_bits_, k_);
    s.estimated_cardinality = EstimateCardinality(num_bits_, set, k_);
  }
  s.fill_ratio = static_cast<double>(set) / num_bits_;
  return s;
}

}  // namespace shardfilter
