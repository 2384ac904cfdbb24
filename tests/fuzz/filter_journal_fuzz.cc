// libFuzzer target for the filters' memory-mapped journal decoders
// (persistence/log/format.h): a segment header and a records area,
// read as within the writing boot and as after a reboot. Any input must decode
// or fail with a Status, never crash, hang or read out of bounds.
//
// Input: byte 0 bit 0 selects the boot rule, bit 1 the format version of a
// bare records area (1 or 2: short records), bit 2 a thread segment's
// records (persistence/log/format.h) of a filter of 1 + (byte
// 0 >> 3) shards; the rest is a records area (and, when it starts with the
// segment magic, a whole segment file, read as its header's version).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "shardfilter/persistence/log/paths.h"
#include "shardfilter/persistence/log/segment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardfilter::persistence;
  if (size == 0) return 0;
  const bool later_boot = (data[0] & 1) != 0;
  const uint32_t version = (data[0] & 2) != 0 ? 2 : 1;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<FilterJournalRecord> out;
  uint64_t uncommitted = 0;
  if (bytes.substr(0, 8) == "SFFJSEG1") {
    auto h = DecodeSegmentHeader(bytes, "fuzz");
    if (h.ok() && bytes.size() > kSegmentHeaderBytes) {
      (void)DecodeSegmentRecords(bytes.substr(kSegmentHeaderBytes), h->version,
                                 later_boot, "fuzz", &out, &uncommitted);
    }
    return 0;
  }
  if ((data[0] & 4) != 0) {
    const uint32_t shards = 1u + (data[0] >> 3);
    std::vector<ThreadRecord> recs;
    (void)DecodeThreadRecords(bytes, later_boot, shards, "fuzz", &recs,
                              &uncommitted);
    for (const ThreadRecord& r : recs) {
      // Only whole records of this filter's shards come out.
      if (r.shard >= shards) __builtin_trap();
    }
    return 0;
  }
  (void)DecodeSegmentRecords(bytes, version, later_boot, "fuzz", &out,
                             &uncommitted);
  for (const FilterJournalRecord& r : out) {
    if (r.op > 2 || (r.op == 0) != r.hashes.empty()) __builtin_trap();
  }
  return 0;
}
