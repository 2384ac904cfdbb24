// Fuzzes the journal entry decoder (persistence/values.cc) and the journal
// and chunk key parsers (persistence/keys.cc): what recovery replays.
// Input: mode byte (fuzz_fixup.h; bit 1 = parse the rest as a key instead).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_exercise.h"
#include "fuzz_fixup.h"
#include "shardfilter/persistence/keys.h"
#include "shardfilter/persistence/values.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardfilter;
  using namespace shardfilter::persistence;
  if (size == 0) return 0;
  std::string b(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 2) {
    if (auto k = ParseJournalKey(b)) {
      if (JournalKey(k->name, k->shard, k->number) != b) {
        fuzz::Fail("parsed journal key does not re-encode");
      }
    }
    if (auto k = ParseChunkKey(b)) {
      if (ChunkKey(k->name, k->shard, k->number, k->chunk) != b) {
        fuzz::Fail("parsed chunk key does not re-encode");
      }
    }
    return 0;
  }
  if ((data[0] & 1) == 0) fuzz::FixValue(&b);
  auto e = DecodeJournalEntry(b, "fuzz");
  if (e.ok() && EncodeJournalEntry(e->op, e->hashes) != b) {
    fuzz::Fail("decoded journal entry does not re-encode to its bytes");
  }
  (void)DecodeChunk(b, "fuzz");
  return 0;
}
