// MultiPartFilter (engine/multi_part.h): names and routing of a filter's
// parts. Pure: no store, no I/O.
#include "shardfilter/engine/multi_part.h"

#include <cstdio>
#include <string>

namespace shardfilter {

Result<MultiPartFilter> MultiPartFilter::Make(std::string_view name,
                                              uint32_t parts, uint64_t seed,
                                              size_t max_name_bytes) {
  if (name.empty()) {
    return Status::InvalidArgument("a multi-part filter needs a name");
  }
  if (max_name_bytes <= kPartKeyOverhead ||
      name.size() > max_name_bytes - kPartKeyOverhead) {
    return Status::InvalidArgument(
        "a multi-part filter's name is at most " +
        std::to_string(max_name_bytes > kPartKeyOverhead
                           ? max_name_bytes - kPartKeyOverhead
                           : 0) +
        " bytes (its part keys add " + std::to_string(kPartKeyOverhead) + ")");
  }
  if (parts < 1 || parts > kMaxFilterParts) {
    return Status::InvalidArgument("a multi-part filter has 1.." +
                                   std::to_string(kMaxFilterParts) + " parts");
  }
  MultiPartFilter f;
  f.name_ = std::string(name);
  f.parts_ = parts;
  f.seed_ = seed;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(HashKey(name, 0)));
  f.tag_ = hex;
  return f;
}

std::string MultiPartFilter::PartKey(uint32_t i) const {
  std::string key;
  key.reserve(name_.size() + kPartKeyOverhead);
  key += '{';
  key += tag_;
  key += '.';
  key += std::to_string(i);
  key += '}';
  key += name_;
  return key;
}

uint64_t MultiPartFilter::PartCapacity(uint64_t capacity) const {
  uint64_t per = capacity / parts_ + (capacity % parts_ != 0 ? 1 : 0);
  return per == 0 ? 1 : per;
}

uint32_t SuggestedParts(uint64_t total_bytes, uint64_t max_part_bytes) {
  if (max_part_bytes == 0) return kMaxFilterParts;
  uint32_t parts = 1;
  while (parts < kMaxFilterParts &&
         total_bytes > max_part_bytes * static_cast<uint64_t>(parts)) {
    parts *= 2;
  }
  return parts;
}

}  // namespace shardfilter
