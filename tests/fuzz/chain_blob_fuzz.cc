// Fuzzes the shard blob decoder (persistence/chain_blob.cc) and the link
// envelopes it frames, as recovery reads a checkpoint. Mode byte:
// fuzz_fixup.h. A decoded blob re-encodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_exercise.h"
#include "fuzz_fixup.h"
#include "shardfilter/persistence/chain_blob.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardfilter;
  if (size == 0) return 0;
  std::string b(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) fuzz::FixChain(&b, 0, b.size());
  auto links = persistence::DecodeChainBlob(b, "fuzz");
  if (!links.ok()) return 0;
  if (links->empty() || links->size() > persistence::kChainMaxLinks) {
    fuzz::Fail("chain blob with a link count out of range decoded");
  }
  if (persistence::EncodeChainBlob(*links) != b) {
    fuzz::Fail("decoded chain blob does not re-encode to its bytes");
  }
  for (const auto& link : *links) {
    auto f = DeserializeFilter(link.envelope);
    if (f.ok()) fuzz::ExerciseFilter(**f);
  }
  return 0;
}
