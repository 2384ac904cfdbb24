// The one place that knows every filter type (declared in filters/filter.h):
// CreateFilter and FilterTableBytes map FilterParams onto each type's
// options; DeserializeFilter dispatches on the envelope's type. A new type
// is added here and nowhere else.
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/envelope.h"
#include "shardfilter/filters/filter.h"

namespace shardfilter {
namespace {

template <typename T>
Result<std::unique_ptr<Filter>> Upcast(Result<std::unique_ptr<T>> r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<Filter>(std::move(r).value());
}

BloomOptions ToBloom(const FilterParams& p) {
  BloomOptions o;
  o.capacity = p.capacity;
  o.fpp = p.fpp;
  o.layout = p.layout;
  o.k = p.k;
  o.seed = p.seed;
  o.max_bytes = p.max_bytes;
  return o;
}

CountingBloomOptions ToCounting(const FilterParams& p) {
  CountingBloomOptions o;
  o.capacity = p.capacity;
  o.fpp = p.fpp;
  o.k = p.k;
  o.seed = p.seed;
  o.max_bytes = p.max_bytes;
  return o;
}

CuckooOptions ToCuckoo(const FilterParams& p) {
  CuckooOptions o;
  o.capacity = p.capacity;
  o.fpp = p.fpp;
  o.fingerprint_bits = p.fingerprint_bits;
  if (p.bucket_size != 0) o.bucket_size = p.bucket_size;
  if (p.max_kicks != 0) o.max_kicks = p.max_kicks;
  o.buckets = p.buckets;
  o.seed = p.seed;
  o.max_bytes = p.max_bytes;
  return o;
}

}  // namespace

Result<std::unique_ptr<Filter>> CreateFilter(const FilterParams& p) {
  switch (p.type) {
    case FilterType::kBloom:
      return Upcast(BloomFilter::Create(ToBloom(p)));
    case FilterType::kCountingBloom:
      return Upcast(CountingBloomFilter::Create(ToCounting(p)));
    case FilterType::kCuckoo:
      return Upcast(CuckooFilter::Create(ToCuckoo(p)));
  }
  return Status::InvalidArgument("unknown filter type " +
                                 std::to_string(static_cast<int>(p.type)));
}

Result<uint64_t> FilterTableBytes(const FilterParams& p) {
  switch (p.type) {
    case FilterType::kBloom:
      return BloomFilter::TableBytes(ToBloom(p));
    case FilterType::kCountingBloom:
      return CountingBloomFilter::TableBytes(ToCounting(p));
    case FilterType::kCuckoo:
      return CuckooFilter::TableBytes(ToCuckoo(p));
  }
  return Status::InvalidArgument("unknown filter type " +
                                 std::to_string(static_cast<int>(p.type)));
}

Result<std::unique_ptr<Filter>> DeserializeFilter(std::string_view bytes) {
  SF_ASSIGN_OR_RETURN(EnvelopeView env, OpenEnvelope(bytes));
  switch (env.type) {
    case FilterType::kBloom:
      return Upcast(BloomFilter::Deserialize(bytes));
    case FilterType::kCountingBloom:
      return Upcast(CountingBloomFilter::Deserialize(bytes));
    case FilterType::kCuckoo:
      return Upcast(CuckooFilter::Deserialize(bytes));
  }
  return Status::Corruption("serialized filter has unknown type " +
                            std::to_string(static_cast<int>(env.type)));
}

}  // namespace shardfilter
