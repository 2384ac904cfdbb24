// MultiPartFilter: one logical filter spread over N ordinary filter keys
// ("parts"), so that a filter bigger than one Redis Cluster node, or than
// Redis's 512 MB DUMP/RESTORE/MIGRATE bulk limit, lives on many nodes with
// no coordinator: every client computes the same routing from the name, the
// part count and the seed. The scheme (docs/redis-module.md, "Multi-part
// filters") is small enough to reimplement in any language:
//
//   tag(name)        = hex16(XXH3_64(name, seed 0))        16 lowercase hex
//   part key(name, i) = "{" tag "." i "}" name             i in decimal
//   part of an item  = ((XXH3_64(item, seed + 1) >> 32) * N) >> 32
//
// - The key's first "{...}" is always ours, so Redis Cluster hashes only
//   "tag.i" (the parts of one filter land on different slots, and two
//   filters' parts on different slots), whatever braces `name` holds.
// - Items are routed with seed + 1 where the parts' filters hash with
//   `seed` (a filter's default seed, kDefaultSeed): the bits choosing the
//   part are independent of the bits choosing blocks or buckets inside it
//   (routing on the same bits would leave 1 - 1/N of each part unused).
// - Each item is in exactly one part, so the whole answers with each part's
//   false-positive rate, and a part holds capacity / N items (PartCapacity).
//
// Not a filter itself: it names keys and routes items; a cluster client
// (the CLI's `shardfilter cluster`) sends the commands. CheckParts judges
// what a client saw of the parts: the parts are one filter only when every
// one exists with the same parameters. A part lost alone (deleted, expired
// apart from the others, flushed with its node, not restored after a
// failover) would answer "absent" for every item routed to it, so it makes
// the filter damaged (an error), never smaller; "not found" is a filter
// none of whose parts exists.
//
// Thread safety: immutable after Make; every method is const and pure.
#ifndef SHARDFILTER_ENGINE_MULTI_PART_H_
#define SHARDFILTER_ENGINE_MULTI_PART_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

// More parts than Redis Cluster's 16384 slots cannot spread further.
inline constexpr uint32_t kMaxFilterParts = 16384;
// The longest part key suffix MultiPartFilter adds to a name:
// "{" + 16 hex + "." + 5 digits + "}".
inline constexpr size_t kPartKeyOverhead = 24;
// Largest part the CLI and SuggestedParts aim for: half of Redis's 512 MB
// proto-max-bulk-len, so a part's DUMP always fits one MIGRATE.
inline constexpr uint64_t kMaxPartBytes = 256ull << 20;

class MultiPartFilter {
 public:
  // InvalidArgument for an empty name, a name longer than
  // max_name_bytes - kPartKeyOverhead (its part keys must stay valid keys;
  // 1024 is Database's and shardfilter-server's limit), or parts outside
  // 1..kMaxFilterParts.
  static Result<MultiPartFilter> Make(std::string_view name, uint32_t parts,
                                      uint64_t seed = kDefaultSeed,
                                      size_t max_name_bytes = 1024);

  const std::string& name() const { return name_; }
  uint32_t parts() const { return parts_; }
  uint64_t seed() const { return seed_; }
  // "0123456789abcdef": the hash tag's first 16 characters.
  const std::string& tag() const { return tag_; }

  // The key of part i (< parts()).
  std::string PartKey(uint32_t i) const;
  // The part an item belongs to (< parts()).
  uint32_t PartOf(std::string_view item) const {
    uint64_t h = HashKey(item, seed_ + 1);
    return static_cast<uint32_t>(((h >> 32) * parts_) >> 32);
  }
  // Capacity each part is created with for `capacity` items in all:
  // ceil(capacity / parts), at least 1.
  uint64_t PartCapacity(uint64_t capacity) const;

 private:
  MultiPartFilter() = default;
  std::string name_;
  std::string tag_;
  uint32_t parts_ = 1;
  uint64_t seed_ = kDefaultSeed;
};

// What a client saw of one part of a multi-part filter.
struct PartView {
  bool exists = false;
  // OK when the part is a filter the host can read; otherwise the host's
  // reason (WrongType: the key holds something else).
  Status readable;
  // The part's type and creation parameters as comparable text
  // ("type=bloom declared_capacity=250 ..."): equal for every part of one
  // filter, whatever each part holds.
  std::string identity;
  // When the part expires, unix time in ms; -1: never.
  int64_t deadline_ms = -1;
};

// Whether parts[0..f.parts()) are the whole filter f (next_exists: whether
// a part numbered f.parts() exists). In this order:
// - InvalidArgument when next_exists: f has more parts than --parts says;
// - NotFound when no part exists (the only "not found");
// - a part's `readable` status when it exists but cannot be read;
// - Corruption ("damaged") when some parts are missing, naming the first
//   kMaxPartsNamed of them, or when a part's identity differs from the
//   first part's.
// REQUIRES: parts.size() == f.parts().
Status CheckParts(const MultiPartFilter& f, std::span<const PartView> parts,
                  bool next_exists);
inline constexpr size_t kMaxPartsNamed = 10;

// True when every existing part has the same deadline (parts of one
// filter should expire together; one that outlives the rest, or expires
// first, damages the filter when it does).
bool SameDeadline(std::span<const PartView> parts);

// The fewest parts (a power of two, for even slot spreading and easy
// mental arithmetic) that keep each part of a `total_bytes` filter at or
// under max_part_bytes; at most kMaxFilterParts.
uint32_t SuggestedParts(uint64_t total_bytes,
                        uint64_t max_part_bytes = kMaxPartBytes);

}  // namespace shardfilter

#endif  // SHARDFILTER_ENGINE_MULTI_PART_H_
