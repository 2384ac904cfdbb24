#include "shardfilter/filters/filter.h"

namespace shardfilter {

const char* FilterTypeName(FilterType type) {
  switch (type) {
    case FilterType::kBloom:
      return "bloom";
    case FilterType::kCountingBloom:
      return "counting";
    case FilterType::kCuckoo:
      return "cuckoo";
  }
  return "unknown";
}

Status Filter::AddHashCapped(uint64_t hash, uint32_t max_copies,
                             uint32_t* held) {
  *held = CountHash(hash);
  if (*held >= max_copies) {
    return Status::Full("the item already holds " + std::to_string(*held) +
                        " copies");
  }
  return AddHash(hash);
}

Result<FilterType> ParseFilterType(std::string_view name) {
  if (name == "bloom") return FilterType::kBloom;
  if (name == "counting") return FilterType::kCountingBloom;
  if (name == "cuckoo") return FilterType::kCuckoo;
  return Status::InvalidArgument("unknown filter type \"" + std::string(name) +
                                 "\" (expected bloom, counting or cuckoo)");
}

const char* BloomLayoutName(BloomLayout layout) {
  switch (layout) {
    case BloomLayout::kAuto:
      return "auto";
    case BloomLayout::kBlocked:
      return "blocked";
    case BloomLayout::kClassic:
      return "classic";
    case BloomLayout::kSplitBlock:
      return "split";
  }
  return "unknown";
}

Result<BloomLayout> ParseBloomLayout(std::string_view name) {
  for (BloomLayout l : {BloomLayout::kAuto, BloomLayout::kBlocked,
                        BloomLayout::kClassic, BloomLayout::kSplitBlock}) {
    if (name == BloomLayoutName(l)) return l;
  }
  return Status::InvalidArgument(
      "unknown Bloom layout \"" + std::string(name) +
      "\" (expected auto, split, blocked or classic)");
}

}  // namespace shardfilter
