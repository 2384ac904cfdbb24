// Fuzzes the export file decoder (engine/import.cc: ParseExport, then
// LoadExportedFilter, which decodes every shard's chain against the header's
// spec as recovery does), the bytes `shardfilter import-filter` reads from a
// user's file. Mode byte: fuzz_fixup.h. An accepted export must give a
// filter that works, and exporting it again must load to an equal filter.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_exercise.h"
#include "fuzz_fixup.h"
#include "shardfilter/engine/export.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardfilter;
  if (size == 0) return 0;
  std::string b(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) fuzz::FixExport(&b);
  (void)ParseExport(b);
  auto f = LoadExportedFilter(b);
  if (!f.ok()) return 0;
  ShardedFilter& sf = **f;
  const std::string again = ExportShardedFilter(sf);
  auto reloaded = LoadExportedFilter(again);
  if (!reloaded.ok()) fuzz::Fail("re-exported filter does not load");
  if (!(*reloaded)->Equals(sf)) fuzz::Fail("re-exported filter differs");
  for (uint64_t h = 1; h < 64; h += 7) {
    const uint64_t x = h * 0x9e3779b97f4a7c15ull;
    if (sf.AddHash(x).ok() && !sf.MayContainHash(x)) {
      fuzz::Fail("false negative after an add");
    }
    (void)sf.CountHash(x);
    if (sf.type() != FilterType::kBloom) (void)sf.RemoveHash(x);
  }
  (void)sf.Stats();
  return 0;
}
