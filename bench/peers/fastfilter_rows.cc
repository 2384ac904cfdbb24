// fastfilter_cpp's rows of the side-by-side (fastfilter_api.h).
#include "fastfilter_api.h"
#include "harness.h"

namespace sbs {
namespace {

const bool registered = [] {
#ifdef __AVX2__
  RegisterRow(MakeRow<FfBlock<hashing::SimpleMixSplit>>("ff_block"));
  RegisterRow(MakeRow<FfBlock<SfKeyHash>>("ff_block_xxh3"));
#endif
  RegisterRow(MakeRow<FfCounting<hashing::SimpleMixSplit>>("ff_counting"));
  return true;
}();

}  // namespace
}  // namespace sbs
