#include "shardfilter/engine/internal/filter_spec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/internal/table_arena.h"
#include "shardfilter/filters/sizing.h"

namespace shardfilter::internal {

Result<FilterSpec> ResolveSpec(const FilterSpec& spec,
                               Durability default_durability) {
  FilterSpec out = spec;
  if (out.type != FilterType::kBloom &&
      out.type != FilterType::kCountingBloom &&
      out.type != FilterType::kCuckoo) {
    return Status::InvalidArgument(
        "unknown filter type " +
        std::to_string(static_cast<int>(static_cast<uint8_t>(out.type))));
  }
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(out.capacity, out.fpp));
  if (out.shards == 0) out.shards = DefaultShardCount(out.capacity);
  if (out.shards > kMaxShards || !std::has_single_bit(out.shards)) {
    return Status::InvalidArgument("shard count " + std::to_string(out.shards) +
                                   " is not a power of two in [1, " +
                                   std::to_string(kMaxShards) + "]");
  }
  if (!out.durability.has_value()) {
    out.durability = default_durability;
    // A retaining filter writes its hashes with each op (FilterSpec).
    if (out.retain_hashes && default_durability == Durability::kNone) {
      out.durability = Durability::kJournal;
    }
  }
  if (static_cast<uint8_t>(*out.durability) > 2) {
    return Status::InvalidArgument("unknown durability mode");
  }
  if (out.expansion == 0) out.expansion = kDefaultExpansion;
  if (out.expansion > kMaxExpansion) {
    return Status::InvalidArgument(
        "expansion " + std::to_string(out.expansion) + " is outside [1, " +
        std::to_string(kMaxExpansion) + "]");
  }
  if (out.retain_hashes && *out.durability == Durability::kNone) {
    return Status::InvalidArgument(
        "retain_hashes needs durability journal or sync (the retained hashes "
        "are written with each op's journal entry)");
  }
  if (out.layout != BloomLayout::kAuto && out.type != FilterType::kBloom) {
    return Status::InvalidArgument(
        "a Bloom layout (classic, blocked, split) applies to Bloom filters "
        "only");
  }
  if (out.layout > BloomLayout::kSplitBlock) {
    return Status::InvalidArgument(
        "unknown Bloom layout " + std::to_string(static_cast<int>(out.layout)));
  }
  if (out.cuckoo_pow2_buckets) {
    if (out.type != FilterType::kCuckoo) {
      return Status::InvalidArgument(
          "the power-of-two geometry applies to cuckoo filters only");
    }
    if (out.fingerprint_bits == 0) out.fingerprint_bits = kPow2FingerprintBits;
    if (out.bucket_size == 0) out.bucket_size = 2;
    if (out.fingerprint_bits != kPow2FingerprintBits ||
        (out.bucket_size != 2 && out.bucket_size != 4 &&
         out.bucket_size != 8)) {
      return Status::InvalidArgument(
          "the power-of-two cuckoo geometry has 8-bit fingerprints and "
          "buckets of 2, 4 or 8 slots");
    }
    if (out.capacity > (uint64_t{1} << 62)) {
      return Status::InvalidArgument(
          "capacity " + std::to_string(out.capacity) +
          " is past the power-of-two cuckoo geometry's 2^62");
    }
    out.fpp = Pow2LinkFpp(out);
  }
  if (out.router != ShardRouter::kMultiply &&
      out.router != ShardRouter::kRemix) {
    return Status::InvalidArgument(
        "unknown shard router " + std::to_string(static_cast<int>(out.router)));
  }
  return out;
}

uint64_t ShardCapacity(const FilterSpec& spec) {
  const uint64_t mean = (spec.capacity + spec.shards - 1) / spec.shards;
  if (spec.shards == 1) return mean;
  // A shard receives Binomial(capacity, 1/S) ~ mean +- sqrt(mean) of the
  // first `capacity` keys. Four standard deviations of headroom make any
  // shard fill up (and grow, or refuse adds when non-scaling) before the
  // whole filter holds its capacity with probability < S x 3.2e-5 (< 1% at
  // 256 shards). Cost: 4 / sqrt(mean) more memory (0.4% at 1e6 per shard).
  return mean + static_cast<uint64_t>(
                    std::ceil(4.0 * std::sqrt(static_cast<double>(mean))));
}

uint64_t ShardMaxBytes(const FilterSpec& spec) {
  if (spec.max_bytes == 0) return kDefaultMaxFilterBytes;
  return std::max<uint64_t>(1, spec.max_bytes / spec.shards);
}

double Pow2LinkFpp(const FilterSpec& spec) {
  return CuckooFpr(kPow2FingerprintBits, spec.bucket_size, 1.0);
}

uint64_t Pow2LinkBuckets(const FilterSpec& spec, uint32_t link) {
  // RedisBloom: getNextN2(capacity / bucketSize), at least 1 bucket.
  const uint64_t whole =
      std::bit_ceil(std::max<uint64_t>(1, spec.capacity / spec.bucket_size));
  uint64_t buckets = std::max<uint64_t>(1, whole / spec.shards);
  for (uint32_t i = 1; i <= link; ++i) {
    if (buckets > (uint64_t{1} << 56) / spec.expansion) return 0;
    buckets *= spec.expansion;
  }
  return buckets;
}

uint64_t LinkCapacity(const FilterSpec& spec, uint32_t link) {
  if (spec.cuckoo_pow2_buckets) {
    return Pow2LinkBuckets(spec, link) * spec.bucket_size;
  }
  uint64_t c = ShardCapacity(spec);
  for (uint32_t i = 1; i <= link; ++i) {
    // The factor from link i - 1 to link i (the rule in the header).
    const uint32_t factor = spec.expansion == 1 &&
                                    spec.type != FilterType::kCuckoo &&
                                    i >= kSameSizeLinks
                                ? 2
                                : spec.expansion;
    if (c > UINT64_MAX / factor) return 0;
    c *= factor;
  }
  return c;
}

double LinkFpp(const FilterSpec& spec, uint32_t link) {
  if (!spec.scalable || spec.cuckoo_pow2_buckets) return spec.fpp;
  // p (1 - r) r^i with r = 1/2: exact in binary floating point.
  return std::ldexp(spec.fpp, -static_cast<int>(link) - 1);
}

double ChainTargetFpp(const FilterSpec& spec, uint32_t links) {
  double sum = 0;
  for (uint32_t i = 0; i < links; ++i) sum += LinkFpp(spec, i);
  return sum;
}

double LinkPromisedRate(const Filter& link) {
  const double stored = link.target_fpr();
  if (link.type() != FilterType::kCuckoo) return stored;
  // The type is checked: the cast follows it, as everywhere else.
  const auto& c = static_cast<const CuckooFilter&>(link);
  const double slots = static_cast<double>(c.num_buckets()) * c.bucket_size();
  return std::min(stored, CuckooFpr(c.fingerprint_bits(), c.bucket_size(),
                                    static_cast<double>(c.capacity()) / slots));
}

Result<double> NextLinkFpp(const FilterSpec& spec,
                           std::span<const Filter* const> older) {
  const uint32_t n = static_cast<uint32_t>(older.size());
  if (n == 0 || !spec.scalable || spec.type != FilterType::kCuckoo ||
      spec.cuckoo_pow2_buckets) {
    return LinkFpp(spec, n);
  }
  double promised = 0;
  for (const auto& link : older) promised += LinkPromisedRate(*link);
  const double left = spec.fpp - promised;
  // Link 0's bucket size is the chain's (every link is built from one
  // spec); the widest fingerprint the spec allows at its design load.
  const uint32_t b = static_cast<const CuckooFilter&>(*older[0]).bucket_size();
  const uint32_t widest =
      spec.fingerprint_bits != 0 ? spec.fingerprint_bits : 16;
  const double floor = CuckooFpr(widest, b, CuckooDesignLoad(b));
  const double later = static_cast<double>(kMaxLinks - 1 - n);
  double fpp = std::min(left / 2, left - later * floor);
  if (!(fpp >= floor)) fpp = left / 2;
  if (!(fpp >= floor)) {
    return Status::InvalidArgument(
        "link " + std::to_string(n) + " would need rate " + FormatRate(fpp) +
        ", below what " + std::to_string(widest) +
        "-bit fingerprints give at the design load (" + FormatRate(floor) +
        "): a cuckoo chain ends where a link would take more memory per "
        "item");
  }
  return fpp;
}

Result<std::unique_ptr<Filter>> MakeShardFilter(const FilterSpec& spec) {
  return MakeLinkFilter(spec, 0, ShardMaxBytes(spec));
}

namespace {

// Link `link` of one shard of a resolved spec, as filters/filter.h's
// FilterParams.
FilterParams LinkParams(const FilterSpec& spec, uint64_t capacity, double fpp,
                        uint64_t max_bytes) {
  FilterParams p;
  p.type = spec.type;
  p.capacity = capacity;
  p.fpp = fpp;
  p.seed = spec.seed;
  p.max_bytes = max_bytes;
  p.k = spec.k;
  p.layout = spec.layout;
  p.fingerprint_bits = spec.fingerprint_bits;
  p.bucket_size = spec.bucket_size;
  p.max_kicks = spec.max_kicks;
  // The power-of-two geometry: a link holds as many items as it has slots.
  if (spec.cuckoo_pow2_buckets) p.buckets = capacity / spec.bucket_size;
  return p;
}

Status OverflowingLink(uint32_t link) {
  return Status::InvalidArgument("link " + std::to_string(link) +
                                 " capacity overflows 64 bits");
}

}  // namespace

Result<uint64_t> LinkTableBytes(const FilterSpec& spec, uint32_t link,
                                double fpp, uint64_t max_bytes) {
  const uint64_t capacity = LinkCapacity(spec, link);
  if (capacity == 0) return OverflowingLink(link);
  Result<uint64_t> sized =
      FilterTableBytes(LinkParams(spec, capacity, fpp, max_bytes));
  if (sized.ok() || !sized.status().IsInvalidArgument() ||
      max_bytes == UINT64_MAX) {
    return sized;
  }
  // The filters refuse a table over their max_bytes as InvalidArgument
  // (to them it is a parameter). Here max_bytes is the host's memory limit:
  // if the table exists without it, the limit is what refused (TooLarge,
  // with the bytes it needs); if not, the request is invalid whatever the
  // limit (a rate out of range, past the structure's 2^32 blocks).
  Result<uint64_t> unbounded =
      FilterTableBytes(LinkParams(spec, capacity, fpp, UINT64_MAX));
  if (!unbounded.ok()) return unbounded.status();
  return Status::TooLarge("capacity " + std::to_string(capacity) + " at rate " +
                          FormatRate(fpp) + " needs " +
                          std::to_string(*unbounded) +
                          " bytes, over the memory limit of " +
                          std::to_string(max_bytes) + " bytes");
}

Result<uint64_t> LinkTableBytes(const FilterSpec& spec, uint32_t link,
                                uint64_t max_bytes) {
  return LinkTableBytes(spec, link, LinkFpp(spec, link), max_bytes);
}

Result<std::unique_ptr<Filter>> MakeLinkFilter(const FilterSpec& spec,
                                               uint32_t link, double fpp,
                                               uint64_t max_bytes) {
  const uint64_t capacity = LinkCapacity(spec, link);
  if (capacity == 0) return OverflowingLink(link);
  return CreateFilter(LinkParams(spec, capacity, fpp, max_bytes));
}

Result<std::unique_ptr<Filter>> MakeLinkFilter(const FilterSpec& spec,
                                               uint32_t link,
                                               uint64_t max_bytes) {
  return MakeLinkFilter(spec, link, LinkFpp(spec, link), max_bytes);
}

Result<uint64_t> FirstLinkBytes(const FilterSpec& spec) {
  Result<uint64_t> sized = LinkTableBytes(spec, 0, ShardMaxBytes(spec));
  if (sized.status().code() != StatusCode::kTooLarge) return sized;
  // TooLarge means the link exists without the limit (LinkTableBytes).
  Result<uint64_t> shard = LinkTableBytes(spec, 0, UINT64_MAX);
  if (!shard.ok()) return shard.status();
  const uint64_t need =
      *shard > UINT64_MAX / spec.shards ? UINT64_MAX : *shard * spec.shards;
  const uint64_t limit = spec.max_bytes != 0
                             ? spec.max_bytes
                             : kDefaultMaxFilterBytes * uint64_t{spec.shards};
  std::string m =
      "capacity " + std::to_string(spec.capacity) + " at rate " +
      FormatRate(spec.fpp) + " needs " + std::to_string(need) + " bytes in " +
      std::to_string(spec.shards) + (spec.shards == 1 ? " shard" : " shards") +
      ", over the filter's memory limit of " + std::to_string(limit) + " bytes";
  if (spec.scalable) {
    m += " (a scalable filter's first link is sized for half the rate, " +
         FormatRate(LinkFpp(spec, 0)) +
         ", so that the compound rate of its links stays under " +
         FormatRate(spec.fpp) + ")";
  }
  return Status::TooLarge(std::move(m));
}

Result<std::vector<std::unique_ptr<Filter>>> MakeShardFilters(
    const FilterSpec& spec, MemoryAccount& account, std::string_view what) {
  // Every shard's first link is the same size: the whole is checked
  // against the budget before anything is allocated.
  auto sized = FirstLinkBytes(spec);
  if (!sized.ok() && spec.scalable &&
      sized.status().code() != StatusCode::kTooLarge) {
    // The rate in the message is link 0's: say why it is not the target.
    return Status(sized.status().code(),
                  sized.status().message() +
                      " (link 0 of a scalable filter is sized for half the "
                      "target rate " +
                      FormatRate(spec.fpp) +
                      ", so that the compound rate of its links stays under "
                      "it)");
  }
  SF_ASSIGN_OR_RETURN(uint64_t bytes, std::move(sized));
  SF_RETURN_IF_ERROR(account.Charge(
      bytes * spec.shards, std::string(what) + " (" +
                               std::to_string(spec.shards) + " shards of " +
                               std::to_string(bytes) + " bytes)"));
  std::vector<std::unique_ptr<Filter>> shards;
  shards.reserve(spec.shards);
  // The shards' tables together, on huge pages where each alone would not
  // be (filters/internal/table_arena.h).
  const TableArenaRef arena = MakeTableArena(bytes, spec.shards);
  const TableArenaScope in_arena(arena.get());
  for (uint32_t i = 0; i < spec.shards; ++i) {
    auto f = MakeShardFilter(spec);
    if (!f.ok()) {
      account.Refund(bytes * spec.shards);
      return f.status();
    }
    shards.push_back(std::move(*f));
  }
  return shards;
}

Result<std::unique_ptr<Filter>> DecodeLinkFilter(const FilterSpec& spec,
                                                 uint32_t link,
                                                 std::string_view blob,
                                                 std::string_view what) {
  // The one decoder of every type's envelope (filters/filter_factory.cc).
  auto decoded = DeserializeFilter(blob);
  if (!decoded.ok()) {
    Status s = decoded.status();
    // A blob that does not decode as a filter is a store inconsistency.
    if (s.code() == StatusCode::kWrongType ||
        s.code() == StatusCode::kInvalidArgument) {
      s = Status::Corruption(s.message());
    }
    return s.WithContext(what);
  }
  std::unique_ptr<Filter> f = std::move(*decoded);
  if (f == nullptr)
    return Status::Corruption(std::string(what) + ": no filter");
  if (f->type() != spec.type) {
    return Status::Corruption(
        std::string(what) + ": stored filter is " + FilterTypeName(f->type()) +
        ", the descriptor says " + FilterTypeName(spec.type));
  }
  // What the link stored is what it answers with: its seed must be the
  // descriptor's (the keys' hashes depend on it), and its capacity and rate
  // must keep the descriptor's promise, checked against bounds rather than
  // against today's sizing formulas (LinkCapacity's headroom, LinkFpp's
  // split), so that a later change to those does not turn every stored
  // filter into Corruption: at least the shard's share of the capacity
  // (times expansion^link), a rate in (0, the descriptor's target].
  uint64_t share = (spec.capacity + spec.shards - 1) / spec.shards;
  for (uint32_t i = 0; i < link && share != 0; ++i) {
    share = share > UINT64_MAX / spec.expansion ? 0 : share * spec.expansion;
  }
  if (spec.cuckoo_pow2_buckets) {
    // The geometry is exact: the link's bucket count and width are the
    // spec's, and its capacity its slots.
    share = LinkCapacity(spec, link);
    const auto& c = static_cast<const CuckooFilter&>(*f);
    if (c.num_buckets() * c.bucket_size() != share ||
        c.fingerprint_bits() != spec.fingerprint_bits ||
        c.bucket_size() != spec.bucket_size) {
      return Status::Corruption(
          std::string(what) + ": stored cuckoo table (" +
          std::to_string(c.num_buckets()) + " buckets of " +
          std::to_string(c.bucket_size()) + " " +
          std::to_string(c.fingerprint_bits()) + "-bit slots) is not link " +
          std::to_string(link) +
          " of the descriptor's power-of-two geometry (" +
          std::to_string(share) + " slots)");
    }
  }
  const double fpr = f->target_fpr();
  if (f->seed() != spec.seed || share == 0 || f->capacity() < share ||
      !(fpr > 0) || fpr > spec.fpp) {
    return Status::Corruption(
        std::string(what) + ": stored filter (seed " +
        std::to_string(f->seed()) + ", capacity " +
        std::to_string(f->capacity()) + ", fpp " + std::to_string(fpr) +
        ") does not match the descriptor's link " + std::to_string(link) +
        " (seed " + std::to_string(spec.seed) + ", capacity at least " +
        std::to_string(share) + ", fpp at most " + std::to_string(spec.fpp) +
        ")");
  }
  return f;
}

persistence::StoredSpec StoredFromSpec(const FilterSpec& spec) {
  persistence::StoredSpec s;
  s.type = spec.type;
  s.durability =
      static_cast<uint8_t>(spec.durability.value_or(Durability::kJournal));
  s.layout = spec.layout;
  s.scalable = spec.scalable;
  s.retain_hashes = spec.retain_hashes;
  s.multiply_router = spec.router == ShardRouter::kMultiply;
  s.cuckoo_pow2_buckets = spec.cuckoo_pow2_buckets;
  s.expansion = spec.expansion;
  s.capacity = spec.capacity;
  s.fpp = spec.fpp;
  s.seed = spec.seed;
  s.k = spec.k;
  s.fingerprint_bits = spec.fingerprint_bits;
  s.bucket_size = spec.bucket_size;
  s.max_kicks = spec.max_kicks;
  s.max_bytes = spec.max_bytes;
  return s;
}

FilterSpec SpecFromStored(const persistence::StoredSpec& s, uint32_t shards) {
  FilterSpec spec;
  spec.type = s.type;
  spec.durability = static_cast<Durability>(s.durability);
  spec.layout = s.layout;
  spec.scalable = s.scalable;
  spec.retain_hashes = s.retain_hashes;
  spec.router =
      s.multiply_router ? ShardRouter::kMultiply : ShardRouter::kRemix;
  spec.cuckoo_pow2_buckets = s.cuckoo_pow2_buckets;
  spec.expansion = s.expansion;
  spec.capacity = s.capacity;
  spec.fpp = s.fpp;
  spec.seed = s.seed;
  spec.k = s.k;
  spec.fingerprint_bits = s.fingerprint_bits;
  spec.bucket_size = s.bucket_size;
  spec.max_kicks = s.max_kicks;
  spec.max_bytes = s.max_bytes;
  spec.shards = shards;
  return spec;
}

persistence::FilterDescriptor DescriptorFromSpec(const FilterSpec& spec) {
  persistence::FilterDescriptor d;
  static_cast<persistence::StoredSpec&>(d) = StoredFromSpec(spec);
  d.shards.resize(spec.shards);
  return d;
}

FilterSpec SpecFromDescriptor(const persistence::FilterDescriptor& d) {
  return SpecFromStored(d, static_cast<uint32_t>(d.shards.size()));
}

}  // namespace shardfilter::internal
