// MultiPartFilter (engine/multi_part.h): names and routing of a filter's
// parts. Pure: no store, no I/O.
#include "shardfilter/engine/multi_part.h"

#include <cstdio>
#include <string>
#include <vector>

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

namespace {

std::string Named(const MultiPartFilter& f, uint32_t i) {
  return "part " + std::to_string(i) + " (" + f.PartKey(i) + ")";
}

}  // namespace

Status CheckParts(const MultiPartFilter& f, std::span<const PartView> parts,
                  bool next_exists) {
  const std::string whose = "'" + f.name() + "'";
  const std::string n = std::to_string(f.parts());
  if (next_exists) {
    return Status::InvalidArgument(
        whose + " has more than " + n +
        " parts: give the --parts it was created with");
  }
  std::vector<uint32_t> missing;
  const PartView* first = nullptr;
  uint32_t first_at = 0;
  for (uint32_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].exists) {
      missing.push_back(i);
    } else if (first == nullptr) {
      first = &parts[i];
      first_at = i;
    }
  }
  if (first == nullptr) {
    return Status::NotFound(whose + " not found: it has no " + n +
                            " parts here, not one exists (create it with "
                            "`shardfilter cluster create`, or give the "
                            "--parts it was created with)");
  }
  for (uint32_t i = 0; i < parts.size(); ++i) {
    if (parts[i].exists && !parts[i].readable.ok()) {
      return Status(parts[i].readable.code(),
                    whose + ": " + Named(f, i) +
                        " cannot be read: " + parts[i].readable.message());
    }
  }
  if (!missing.empty()) {
    std::string which;
    if (missing.size() == 1) {
      which = Named(f, missing[0]) + " is missing";
    } else {
      which =
          std::to_string(missing.size()) + " of " + n + " parts are missing: ";
      for (size_t j = 0; j < missing.size() && j < kMaxPartsNamed; ++j) {
        which += (j == 0 ? "" : ", ") + Named(f, missing[j]);
      }
      if (missing.size() > kMaxPartsNamed) {
        which +=
            " and " + std::to_string(missing.size() - kMaxPartsNamed) + " more";
      }
    }
    // Missing parts that are exactly the last ones: maybe a wrong --parts.
    const uint32_t k = missing.front();
    std::string hint;
    if (missing.back() == f.parts() - 1 && missing.size() == f.parts() - k) {
      hint = "; or it has " + std::to_string(k) +
             " parts: give the --parts it was created with";
    }
    return Status::Corruption(
        whose + " is damaged: " + which +
        " (deleted, expired apart from the others, flushed, or not "
        "restored after a failover): the items routed to a missing part "
        "cannot be answered" +
        hint);
  }
  for (uint32_t i = first_at + 1; i < parts.size(); ++i) {
    if (parts[i].identity != first->identity) {
      return Status::Corruption(
          whose + " is damaged: " + Named(f, i) + " differs from part " +
          std::to_string(first_at) + " (" + parts[i].identity + " where part " +
          std::to_string(first_at) + " has " + first->identity +
          "): a part made again apart from the others");
    }
  }
  return Status::OK();
}

bool SameDeadline(std::span<const PartView> parts) {
  const PartView* first = nullptr;
  for (const PartView& p : parts) {
    if (!p.exists) continue;
    if (first == nullptr) {
      first = &p;
    } else if (p.deadline_ms != first->deadline_ms) {
      return false;
    }
  }
  return true;
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
