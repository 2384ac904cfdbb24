// efficient/cuckoofilter's rows of the side-by-side (cuckoofilter_api.h).
#include <cmath>

#include "cuckoofilter_api.h"
#include "filter_api.h"
#include "harness.h"

namespace sbs {
namespace {

// The matched-load cell: the table the peer makes for n keys, filled to
// 94% of its slots (shardfilter's cuckoo filter's load at its capacity).
uint64_t FillTo94(uint64_t n) {
  return static_cast<uint64_t>(
      std::floor(0.94 * static_cast<double>(EfficientCuckooSlots(n))));
}

const bool registered = [] {
  using Own = cuckoofilter::TwoIndependentMultiplyShift;
  // At its natural load; at the largest size it also removes every key.
  Row ecf = MakeRow<Ecf<Own>>("ecf");
  ecf.remove = true;
  RegisterRow(ecf);
  RegisterRow(MakeRow<Ecf<SfKeyHash>>("ecf_xxh3"));
  Row at94 = MakeRow<Ecf<Own>>("ecf_at94");
  at94.every_size = false;
  at94.inserts = &FillTo94;
  RegisterRow(at94);
  return true;
}();

}  // namespace
}  // namespace sbs
