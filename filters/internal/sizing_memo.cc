// The sizing memo (filters/internal/sizing_memo.h, M1-M3) and the public
// blocked sizings, which consult it before searching.
#include "shardfilter/filters/internal/sizing_memo.h"

#include <bit>
#include <string>

#include "shardfilter/filters/sizing.h"

namespace shardfilter {
namespace internal {

size_t SizingMemo::SlotOf(const SizingKey& key) {
  uint64_t h = 0;
  for (const uint64_t w : key.words) {
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
  }
  return static_cast<size_t>(h >> 32) % kSlots;
}

bool SizingMemo::Find(const SizingKey& key, BlockedSizing* out) const {
  const Slot& s = slots_[SlotOf(key)];
  // M3: acquire pairs with the writer's release of the even sequence.
  const uint64_t before = s.seq.load(std::memory_order_acquire);
  if ((before & 1) != 0) return false;
  bool match = true;
  for (size_t i = 0; i < 4; ++i) {
    match &= s.key[i].load(std::memory_order_relaxed) == key.words[i];
  }
  const uint64_t blocks = s.value[0].load(std::memory_order_relaxed);
  const uint64_t k = s.value[1].load(std::memory_order_relaxed);
  const uint64_t fpr = s.value[2].load(std::memory_order_relaxed);
  // M3: the loads above happen before the sequence's second load.
  std::atomic_thread_fence(std::memory_order_acquire);
  if (!match || s.seq.load(std::memory_order_relaxed) != before) return false;
  out->blocks = blocks;
  out->k = static_cast<uint32_t>(k);
  out->expected_fpr = std::bit_cast<double>(fpr);
  return true;
}

void SizingMemo::Put(const SizingKey& key, const BlockedSizing& value) {
  Slot& s = slots_[SlotOf(key)];
  uint64_t seq = s.seq.load(std::memory_order_relaxed);
  // M3: odd while written; another writer holds the slot: skip.
  if ((seq & 1) != 0 ||
      !s.seq.compare_exchange_strong(seq, seq + 1, std::memory_order_relaxed)) {
    return;
  }
  // The odd sequence is visible before any word changes.
  std::atomic_thread_fence(std::memory_order_release);
  for (size_t i = 0; i < 4; ++i) {
    s.key[i].store(key.words[i], std::memory_order_relaxed);
  }
  s.value[0].store(value.blocks, std::memory_order_relaxed);
  s.value[1].store(value.k, std::memory_order_relaxed);
  s.value[2].store(std::bit_cast<uint64_t>(value.expected_fpr),
                   std::memory_order_relaxed);
  s.seq.store(seq + 2, std::memory_order_release);
}

namespace {

constinit SizingMemo g_sizing_memo;

// Word 0 of a key: the layout (low byte) and its fixed parameters.
enum : uint64_t { kSplitTag = 1, kWordTag = 2, kBlockedTag = 3 };

template <typename Compute>
Result<BlockedSizing> Memoized(const SizingKey& key, Compute&& compute) {
  BlockedSizing s;
  if (g_sizing_memo.Find(key, &s)) return s;
  SF_ASSIGN_OR_RETURN(s, compute());
  g_sizing_memo.Put(key, s);  // M2: results only
  return s;
}

}  // namespace

SizingMemo& GlobalSizingMemo() { return g_sizing_memo; }

}  // namespace internal

Result<BlockedSizing> SplitBlockBloomSizing(uint64_t n, double p,
                                            uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  const internal::SizingKey key{
      {internal::kSplitTag, n, std::bit_cast<uint64_t>(p), max_bytes}};
  return internal::Memoized(
      key, [&] { return internal::ComputeSplitBlockSizing(n, p, max_bytes); });
}

Result<BlockedSizing> WordBlockedBloomSizing(uint64_t n, double p, uint32_t k,
                                             uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  // Its error, not a key whose k bits spill into other fields (M2).
  if (k > kMaxHashFunctions) {
    return internal::ComputeWordBlockedSizing(n, p, k, max_bytes);
  }
  const internal::SizingKey key{{internal::kWordTag | uint64_t{k} << 8, n,
                                 std::bit_cast<uint64_t>(p), max_bytes}};
  return internal::Memoized(key, [&] {
    return internal::ComputeWordBlockedSizing(n, p, k, max_bytes);
  });
}

Result<BlockedSizing> BlockedBloomSizing(uint64_t n, double p, uint32_t k,
                                         uint32_t slots_per_block,
                                         uint64_t max_bytes) {
  SF_RETURN_IF_ERROR(ValidateCapacityAndFpp(n, p));
  // Its error, not a key whose k bits spill into other fields (M2).
  if (k > kMaxHashFunctions) {
    return internal::ComputeBlockedSizing(n, p, k, slots_per_block, max_bytes);
  }
  const internal::SizingKey key{{internal::kBlockedTag | uint64_t{k} << 8 |
                                     uint64_t{slots_per_block} << 32,
                                 n, std::bit_cast<uint64_t>(p), max_bytes}};
  return internal::Memoized(key, [&] {
    return internal::ComputeBlockedSizing(n, p, k, slots_per_block, max_bytes);
  });
}

}  // namespace shardfilter
