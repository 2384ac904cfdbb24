// DeserializeFilter: the one decoder for any filter type's envelope.
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

}  // namespace

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
