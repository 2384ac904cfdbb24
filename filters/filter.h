// The common interface of every filter type, as the engine sees it.
//
// Concrete filters (BloomFilter, CountingBloomFilter, CuckooFilter) are
// `final` classes with inline, non-virtual fast paths that benchmarks and
// embedders may call directly; this interface is what sharded filters,
// persistence and tools use so that they never switch on the type.
//
// All operations take the 64-bit key hash (filters/hash.h: HashKey with the
// filter's seed()), never the key: the journal and migrations replay hashes.
//
// Thread safety: every method may be called concurrently with every other,
// except where noted (Serialize gives an exact snapshot only when no writer
// runs; see each class). Stats are approximate while writers run.
#ifndef SHARDFILTER_FILTERS_FILTER_H_
#define SHARDFILTER_FILTERS_FILTER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

// Stored in every serialized filter and catalog descriptor: values are
// part of the on-disk format and never change meaning.
enum class FilterType : uint8_t {
  kBloom = 1,
  kCountingBloom = 2,
  kCuckoo = 3,
};

// "bloom", "counting", "cuckoo"; "unknown" for anything else.
const char* FilterTypeName(FilterType type);
// Parses the names above. InvalidArgument for anything else.
Result<FilterType> ParseFilterType(std::string_view name);

// Figures every filter reports. Fields that a type does not have are 0.
struct FilterStats {
  FilterType type = FilterType::kBloom;
  uint64_t capacity = 0;     // items the filter was sized for
  double target_fpr = 0;     // the rate promised at capacity
  uint64_t bytes = 0;        // memory of the table itself
  uint64_t slots = 0;        // bits (Bloom), counters, or fingerprint slots
  uint32_t k = 0;            // slots per key (Bloom / counting)
  uint64_t items = 0;        // Bloom: adds that set a new bit (distinct
                             // keys as far as the filter can tell); others:
                             // copies held (adds minus removes)
  uint64_t deletes = 0;      // successful removes (counting / cuckoo)
  double fill_ratio = 0;     // non-zero slots / slots (load factor for
                             // cuckoo)
  double estimated_fpr = 0;  // from the current fill
  double estimated_cardinality = 0;  // distinct items implied by the fill
  double bits_per_item = 0;          // bytes * 8 / capacity
};

class Filter {
 public:
  virtual ~Filter() = default;

  virtual FilterType type() const = 0;
  virtual uint64_t seed() const = 0;
  virtual uint64_t capacity() const = 0;
  virtual double target_fpr() const = 0;

  // Hash a key with this filter's seed.
  uint64_t Hash(std::string_view key) const { return HashKey(key, seed()); }

  // Adds the item. Full when a cuckoo table has no room (nothing changes).
  virtual Status AddHash(uint64_t hash) = 0;
  // Removes one copy. NotSupported for plain Bloom; NotFound when the item
  // is definitely absent (nothing changes). Caution: removing an item that
  // was never added may remove another item that collides with it; callers
  // that cannot rule that out must check a source of truth first.
  virtual Status RemoveHash(uint64_t hash) = 0;
  virtual bool MayContainHash(uint64_t hash) const = 0;
  // Copies held: Bloom 0/1, counting the minimum counter, cuckoo matching
  // fingerprints. An upper bound on the true count (false positives).
  virtual uint32_t CountHash(uint64_t hash) const = 0;
  // Adds one copy unless the item already holds `max_copies` or more:
  // *held receives the copies held before (as CountHash), and when
  // *held >= max_copies nothing changes and the result is Full. Otherwise
  // as AddHash. One pass over the item's slots where the type can (cuckoo:
  // the count comes from the insert's own look at the bucket pair).
  // REQUIRES: no other thread mutates this filter during the call (the
  // engine holds the shard's order_mu): the count is read unvalidated.
  virtual Status AddHashCapped(uint64_t hash, uint32_t max_copies,
                               uint32_t* held);

  // Starts loading the memory an add (for_write) or a query of `hash` will
  // touch, without waiting for it: callers that handle many items one at a
  // time (the engine's batches over its shards) call it a few items ahead,
  // so that the items' cache misses overlap. No effect on contents; safe
  // to call concurrently with anything.
  virtual void PrefetchHash(uint64_t hash, bool for_write) const {
    (void)hash;
    (void)for_write;
  }

  // Batch forms: hash-ordered prefetching for memory-level parallelism.
  // AddHashes stops at the first failure and returns it; *added (optional)
  // receives how many items of the prefix were added.
  virtual Status AddHashes(std::span<const uint64_t> hashes, size_t* added) = 0;
  // out[i] = 1 if hashes[i] may be present, else 0. out.size() must equal
  // hashes.size().
  virtual void MayContainHashes(std::span<const uint64_t> hashes,
                                std::span<uint8_t> out) const = 0;

  virtual FilterStats Stats() const = 0;
  // Stats() without the figures only a pass over the whole table gives
  // (fill_ratio, estimated_fpr and estimated_cardinality are 0 where
  // Stats() computes them from the table): constant time, for callers that
  // need sizes and counts (BF.INFO, BF.CARD, MEMORY USAGE, INFO memory)
  // and must not hold their thread for a scan of a 100 MB table (~0.2 s).
  virtual FilterStats Counts() const { return Stats(); }

  // The self-describing, checksummed encoding (docs/format.md). Exact when
  // no writer runs concurrently; for Bloom filters a concurrent add is
  // either wholly in the snapshot or not (bits are never cleared).
  virtual std::string Serialize() const = 0;

  // Bit-for-bit equality of parameters and contents.
  virtual bool Equals(const Filter& other) const = 0;
};

// The one place that knows every type (filters/filter_factory.cc): making,
// sizing and decoding a filter of any type. The engine builds its links
// and the CLI its experiments through these.

// Bloom filters' bit layouts (filters/bloom_filter.h says what each costs).
// Stored in the format: values never change meaning. kAuto is a request
// only (BloomOptions, FilterSpec): a filter's layout() is never kAuto.
enum class BloomLayout : uint8_t {
  kAuto = 0,
  kBlocked = 1,
  kClassic = 2,
  kSplitBlock = 3
};
// "auto", "blocked", "classic", "split"; "unknown" for anything else.
const char* BloomLayoutName(BloomLayout layout);
// Parses the names above. InvalidArgument for anything else.
Result<BloomLayout> ParseBloomLayout(std::string_view name);

// Parameters of a filter of any type; each type ignores the others'.
struct FilterParams {
  FilterType type = FilterType::kBloom;
  uint64_t capacity = 0;
  double fpp = 0.01;
  uint64_t seed = kDefaultSeed;
  uint64_t max_bytes = 64ULL << 30;         // as the types' options (sizing.h)
  uint32_t k = 0;                           // Bloom, counting: 0 = from fpp
  BloomLayout layout = BloomLayout::kAuto;  // Bloom: bloom_filter.h
  uint32_t fingerprint_bits = 0;            // cuckoo: 0 = from fpp
  uint32_t bucket_size = 0;                 // cuckoo: 0 = the type's default
  uint32_t max_kicks = 0;                   // cuckoo: 0 = the type's default
  uint64_t buckets = 0;  // cuckoo: 0 = from capacity and fpp (CuckooOptions)
};

// An empty filter: the type's Create and its errors.
Result<std::unique_ptr<Filter>> CreateFilter(const FilterParams& params);
// The table bytes CreateFilter would allocate (nothing is allocated), or
// its error.
Result<uint64_t> FilterTableBytes(const FilterParams& params);

// Decodes any filter type from Serialize() output.
// Corruption for bad checksums, truncation and inconsistent parameters,
// NotSupported for a format version from the future, InvalidArgument for
// foreign bytes.
Result<std::unique_ptr<Filter>> DeserializeFilter(std::string_view bytes);

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_FILTER_H_
