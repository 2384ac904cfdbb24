#include "shardfilter/engine/internal/dedup_ring.h"

namespace shardfilter::internal {

DedupRing::DedupRing(const FilterSpec& spec, uint32_t slots) : spec_(spec) {
  for (uint32_t i = 0; i < slots; ++i) {
    slots_.push_back(std::make_unique<Slot>());
  }
}

Result<std::unique_ptr<DedupRing>> DedupRing::Create(const FilterSpec& spec,
                                                     uint32_t slots) {
  std::unique_ptr<DedupRing> ring(new DedupRing(spec, slots));
  for (uint32_t i = 0; i < slots; ++i) {
    SF_ASSIGN_OR_RETURN(std::unique_ptr<ShardedFilter> f, ring->NewLink());
    ring->Reset(i, std::move(f));
  }
  return ring;
}

Result<std::unique_ptr<ShardedFilter>> DedupRing::NewLink() const {
  return ShardedFilter::Create(spec_);
}

void DedupRing::Reset(uint64_t bucket, std::unique_ptr<ShardedFilter> fresh) {
  Slot& s = *slots_[SlotIndex(bucket)];
  for (auto& l : s.link) l.reset();
  s.link[0] = std::move(fresh);
  s.bucket = bucket;
  s.saturated.store(false, std::memory_order_relaxed);
  // Readers are excluded by the caller; release for tidiness.
  s.links.store(1, std::memory_order_release);
}

bool DedupRing::MayContain(uint64_t hash) const {
  for (const auto& sp : slots_) {
    const Slot& s = *sp;
    if (s.saturated.load(std::memory_order_relaxed)) return true;
    uint32_t n = s.links.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < n; ++i) {
      if (s.link[i]->MayContainHash(hash)) return true;
    }
  }
  return false;
}

void DedupRing::MayContainBatch(std::span<const uint64_t> hashes,
                                std::span<uint8_t> out) const {
  std::vector<uint8_t> one(hashes.size());
  for (const auto& sp : slots_) {
    const Slot& s = *sp;
    if (s.saturated.load(std::memory_order_relaxed)) {
      for (uint8_t& o : out) o = 1;
      return;
    }
    uint32_t n = s.links.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < n; ++i) {
      s.link[i]->MayContainHashes(hashes, one);
      for (size_t j = 0; j < out.size(); ++j) out[j] |= one[j];
    }
  }
}

void DedupRing::Add(uint64_t bucket, uint64_t hash) {
  Slot& s = *slots_[SlotIndex(bucket)];
  while (!s.saturated.load(std::memory_order_relaxed)) {
    uint32_t n = s.links.load(std::memory_order_acquire);
    if (s.link[n - 1]->AddHash(hash).ok()) return;
    // Full (or out of memory): grow the chain unless another thread did.
    std::lock_guard lock(s.grow_mu);
    if (s.links.load(std::memory_order_relaxed) != n) continue;
    if (n == kMaxLinks) {
      s.saturated.store(true, std::memory_order_relaxed);
      return;
    }
    auto f = ShardedFilter::Create(spec_);
    if (!f.ok()) {  // no memory for another link: answer "maybe" instead
      s.saturated.store(true, std::memory_order_relaxed);
      return;
    }
    s.link[n] = std::move(*f);
    s.links.store(n + 1, std::memory_order_release);
  }
}

void DedupRing::Remove(uint64_t bucket, uint64_t hash) {
  Slot& s = *slots_[SlotIndex(bucket)];
  if (s.saturated.load(std::memory_order_relaxed)) return;
  uint32_t n = s.links.load(std::memory_order_acquire);
  ShardedFilter* holder = nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    if (!s.link[i]->MayContainHash(hash)) continue;
    if (holder != nullptr) return;  // ambiguous: leave a stale entry
    holder = s.link[i].get();
  }
  // NotSupported (Bloom) or NotFound: nothing to undo either way.
  if (holder != nullptr) holder->RemoveHash(hash).ok();
}

void DedupRing::AppendStats(std::vector<DedupPartitionStats>* out) const {
  for (const auto& sp : slots_) {
    const Slot& s = *sp;
    DedupPartitionStats p;
    p.bucket = s.bucket;
    p.filters = s.links.load(std::memory_order_acquire);
    p.saturated = s.saturated.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < p.filters; ++i) {
      ShardedStats st = s.link[i]->Counts();  // items and bytes only
      p.filter_items += st.total.items;
      p.filter_bytes += st.total.bytes;
    }
    out->push_back(p);
  }
}

}  // namespace shardfilter::internal
