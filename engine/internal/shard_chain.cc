#include "shardfilter/engine/internal/shard_chain.h"

#include <algorithm>
#include <mutex>
#include <new>

#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/memory_account.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"
#include "shardfilter/filters/sizing.h"
#include "shardfilter/persistence/chain_blob.h"

namespace shardfilter::internal {

namespace {

// Q1: the shard's fast path for a chain of `links` links, before that count
// is published. A lone link gets `link`, a lone split-block Bloom link
// `table` too, a lone counting link of k <= 8 `counters`; a lone counting
// or split-block link its add limit before (and `blocks`, `mult`, `k` for
// the tables; capacity[0] is written before this is called, S1). Growth
// (links > 1) clears the pointers and leaves the rest alone (a reader may
// still be using them).
void SetFastPath(Shard& s, uint32_t links) {
  if (s.fast == nullptr) return;
  std::atomic<uint64_t>* table = nullptr;
  const std::atomic<uint64_t>* counters = nullptr;
  if (links == 1 && s.link(0)->type() != FilterType::kBloom) {
    s.fast_add_limit = s.capacity(0);  // ShardFastOrderedAdd
  }
  if constexpr (CountingBloomFilter::kTableQuery) {
    if (links == 1 && s.link(0)->type() == FilterType::kCountingBloom) {
      const auto& c = static_cast<const CountingBloomFilter&>(*s.link(0));
      if (c.k() <= 8) {
        s.fast->blocks = c.num_blocks();
        s.fast->mult = c.lane_multipliers();
        s.fast->k = c.k();
        counters = c.table_data();
      }
    }
  }
  if (links == 1 && s.link(0)->type() == FilterType::kBloom) {
    auto& bloom = static_cast<BloomFilter&>(*s.link(0));
    table = bloom.split_table();
    if (table != nullptr) {
      s.fast->blocks = bloom.num_blocks();
      s.fast_add_limit = s.capacity(0) > kBloomReserveSlack
                             ? s.capacity(0) - kBloomReserveSlack
                             : 0;
      // S9: the stripes' lines, which ShardFastAdd uses below a limit
      // above 0; without them (allocation failed) the limit is 0 and every
      // add takes ChainAdd.
      if (s.fast_add_limit > 0 && s.unflushed == nullptr) {
        s.unflushed.reset(new (std::nothrow)
                              ShardHead::UnflushedLine[kOwnedStripes]);
        if (s.unflushed == nullptr) s.fast_add_limit = 0;
      }
    }
  }
  s.fast->link.store(links == 1 ? s.link(0) : nullptr,
                     std::memory_order_release);
  s.fast->table.store(table, std::memory_order_release);
  s.fast->counters.store(counters, std::memory_order_release);
}

// S7: takes one unit of a link's fill unless it is at capacity. Relaxed:
// fill is a counter that orders nothing (links are published by S1's
// release/acquire on link_count); the CAS alone keeps fill <= capacity.
bool Reserve(std::atomic<uint64_t>& fill, uint64_t capacity) {
  uint64_t f = fill.load(std::memory_order_relaxed);
  while (f < capacity) {
    if (fill.compare_exchange_weak(f, f + 1, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

// Gives a unit back, never below 0 (a remove of a colliding key may succeed
// in a link whose own adds were all removed).
void Release(std::atomic<uint64_t>& fill) {
  uint64_t f = fill.load(std::memory_order_relaxed);
  while (f > 0 &&
         !fill.compare_exchange_weak(f, f - 1, std::memory_order_relaxed)) {
  }
}

// Appends link n unless another writer already did (S6). `full` is what to
// report when the chain may not grow.
Status Grow(const FilterSpec& spec, Shard& s, uint32_t n, Status full) {
  std::lock_guard grow(s.grow_mu);  // S4: under mu shared (and order_mu)
  // Relaxed: every store to link_count happens under grow_mu, which we hold.
  if (s.link_count.load(std::memory_order_relaxed) != n) return Status::OK();
  if (!spec.scalable) return full;
  if (n >= kMaxLinks) {
    return Status::Full("the shard's chain has " + std::to_string(kMaxLinks) +
                        " links, the most it may have (for a cuckoo filter, "
                        "RedisBloom's cf-max-expansions)");
  }
  uint64_t budget = ShardMaxBytes(spec);
  if (spec.max_bytes != 0) {
    // The budget covers all links (Counts(): no scan under the lock).
    uint64_t used = 0;
    for (uint32_t i = 0; i < n; ++i) used += s.link(i)->Counts().bytes;
    if (used >= budget) {
      return Status::Full("the shard's links use " + std::to_string(used) +
                          " bytes of its " + std::to_string(budget) +
                          "-byte budget (max_bytes / shards)");
    }
    budget -= used;
  }
  auto cannot_grow = [n](const Status& why) {
    return Status::Full("the shard cannot grow to link " + std::to_string(n) +
                        ": " + why.message());
  };
  // The link's rate follows from the links before it (NextLinkFpp: a
  // function of the chain's state, so replay grows the same chain, S6).
  const Filter* older[kMaxLinks];
  for (uint32_t i = 0; i < n; ++i) older[i] = s.link(i);
  auto fpp = NextLinkFpp(spec, std::span<const Filter* const>(older, n));
  if (!fpp.ok()) return cannot_grow(fpp.status());
  // The memory budget is checked before the link is allocated (invariant
  // 8); over it, the add fails with ResourceExhausted and nothing changes.
  if (s.sized_link != n || s.sized_bytes == 0) {
    auto bytes = LinkTableBytes(spec, n, *fpp, budget);
    if (!bytes.ok()) return cannot_grow(bytes.status());
    s.sized_link = n;
    s.sized_bytes = *bytes;
  }
  const uint64_t bytes = s.sized_bytes;
  if (s.account != nullptr) {
    SF_RETURN_IF_ERROR(s.account->Charge(
        bytes, "growing a shard's chain to link " + std::to_string(n)));
  }
  auto link = MakeLinkFilter(spec, n, *fpp, budget);
  if (!link.ok()) {
    if (s.account != nullptr) s.account->Refund(bytes);
    return cannot_grow(link.status());
  }
  if (!s.SetLink(n, std::move(*link), 0)) {  // S10: the tail, first
    if (s.account != nullptr) s.account->Refund(bytes);
    return Status::ResourceExhausted(
        "out of memory allocating the shard's link tail (" +
        std::to_string(sizeof(LinkTail)) + " bytes) to grow to link " +
        std::to_string(n));
  }
  SetFastPath(s, n + 1);  // Q1: before the count is published
  // S1: the release publishes links[n] (and fill[n], capacity[n], and for
  // link 1 the tail that holds them, S10) to readers that acquire the new
  // count.
  s.link_count.store(n + 1, std::memory_order_release);
  return Status::OK();
}

// The most copies of one key a chain keeps, by the newest link's type
// (MaxOwnCopies, engine/detail/shard_fast_path.h).
uint32_t MaxCopies(const Filter& link) {
  if (link.type() == FilterType::kCuckoo) {
    return MaxOwnCopies(static_cast<const CuckooFilter&>(link));
  }
  return MaxOwnCopies(static_cast<const CountingBloomFilter&>(link));
}

Status TooManyCopies(const Filter& link, uint32_t held) {
  return Status::Full(
      "the key already holds " + std::to_string(held) + " copies, the most " +
      (link.type() == FilterType::kCuckoo
           ? std::string("a cuckoo filter keeps of one key (2 x bucket size "
                         "- 1)")
           : std::string("a counting filter can count (its counters stop at "
                         "15)")) +
      "; nothing was added");
}

}  // namespace

void InstallChain(Shard& s, LoadedChain chain) {
  const uint32_t n = static_cast<uint32_t>(chain.links.size());
  for (uint32_t i = 0; i < n; ++i) {
    // S10: a chain of two or more links needs the tail.
    if (!s.SetLink(i, std::move(chain.links[i]), chain.fill[i])) {
      throw std::bad_alloc();
    }
  }
  if (s.unflushed != nullptr) {  // S9: all in chain.fill[0]
    for (uint32_t k = 0; k < kOwnedStripes; ++k) {
      s.unflushed[k].n.store(0, std::memory_order_relaxed);
    }
  }
  SetFastPath(s, n);                                 // Q1
  s.link_count.store(n, std::memory_order_release);  // S1
}

Status ChainAdd(const FilterSpec& spec, Shard& s, uint64_t hash,
                AddOutcome* outcome) {
  AddOutcome unused;
  if (outcome == nullptr) outcome = &unused;
  *outcome = AddOutcome::kAdded;
  const bool bloom = spec.type == FilterType::kBloom;
  // S8: a Bloom key present in any link is a no-op: it uses no capacity
  // and never grows the chain. The older links are asked first; the
  // newest answers through its own add (AddHashUncounted reports whether a
  // bit was new), and, when it has no capacity left, before any growth.
  // (Asking every link before the add cost a whole query per add.)
  // Near the newest link's capacity the newest is asked first too: a
  // repeated key's reservation, held while its add finds every bit set,
  // could otherwise make a racing add of a new key see the link full (a
  // spurious Full or growth). kBloomReserveSlack in-flight adds would be
  // needed to reach the boundary from below it.
  if (bloom) {
    const uint32_t n = s.links_visible();
    const bool near_full =
        s.Fill(n - 1) + kBloomReserveSlack >= s.capacity(n - 1);  // S9
    for (uint32_t i = near_full ? n : n - 1; i-- > 0;) {
      if (s.link(i)->MayContainHash(hash)) {
        *outcome = AddOutcome::kAlreadyPresent;
        return Status::OK();
      }
    }
  }
  for (;;) {
    const uint32_t n = s.links_visible();
    Filter& newest = *s.link(n - 1);
    Status full;
    // S9: a Bloom link 0 also holds its stripes' unflushed adds.
    const uint64_t unflushed = bloom && n == 1 ? s.UnflushedAdds() : 0;
    const uint64_t room =
        s.capacity(n - 1) > unflushed ? s.capacity(n - 1) - unflushed : 0;
    if (Reserve(s.fill(n - 1), room)) {
      if (bloom) {
        // The type is fixed by the spec (DecodeLinkFilter checks it).
        // Uncounted: fill is the count (S8; ChainStatistics reports it).
        if (!static_cast<BloomFilter&>(newest).AddHashUncounted(hash)) {
          Release(s.fill(n - 1));  // S8: present, or a racing add won
          *outcome = AddOutcome::kAlreadyPresent;
        }
        return Status::OK();
      }
      // Invariant 8: a multiset keeps at most MaxCopies of one key. The
      // count is exact under order_mu (S3), which the caller holds: the
      // older links' copies, then the newest link's, taken by its capped
      // add from the same look at the key's slots as the insert (one pass:
      // a separate validated count before each add was 46% of a cuckoo
      // add's time, bench/sharded_bench OneAdd).
      const uint32_t max = MaxCopies(newest);
      uint32_t older = 0;
      for (uint32_t i = 0; i + 1 < n; ++i) older += s.link(i)->CountHash(hash);
      uint32_t own = 0;
      Status st = older < max ? newest.AddHashCapped(hash, max - older, &own)
                              : Status::Full("");
      if (st.ok()) return st;
      Release(s.fill(n - 1));
      if (older + own >= max) return TooManyCopies(newest, older + own);
      if (!st.IsFull()) return st;
      // A cuckoo pair at least half full of the key's own copies is not a
      // full table: copies never grow the chain (invariant 8).
      if (newest.type() == FilterType::kCuckoo &&
          own >= static_cast<const CuckooFilter&>(newest).bucket_size()) {
        return TooManyCopies(newest, older + own);
      }
      full = std::move(st);  // a cuckoo table with no room: grow
    } else {
      if (bloom && newest.MayContainHash(hash)) {  // S8, before growing
        *outcome = AddOutcome::kAlreadyPresent;
        return Status::OK();
      }
      full = Status::Full("the shard holds its capacity of " +
                          std::to_string(newest.capacity()) +
                          " items and the filter is non-scaling");
    }
    SF_RETURN_IF_ERROR(Grow(spec, s, n, std::move(full)));
  }
}

Status ChainRemove(Shard& s, uint64_t hash) {
  const uint32_t n = s.links_visible();
  uint32_t holder = n, holders = 0;
  for (uint32_t i = n; i-- > 0;) {
    if (s.link(i)->MayContainHash(hash)) {
      if (holders++ == 0) holder = i;
    }
  }
  if (holders == 0) {
    return s.link(n - 1)->RemoveHash(hash);  // the type's own NotFound
  }
  if (holders > 1) {
    // The key tests positive in two links: it was added on both sides of a
    // growth, or collides with another key in one of them (rate < p). Taking
    // a copy from the wrong link would remove that other key's presence (a
    // false negative), so nothing is removed.
    return Status::NotSupported(
        "remove is ambiguous: the key may be in " + std::to_string(holders) +
        " links of its shard's chain; nothing was removed (the key stays "
        "present)");
  }
  Status st = s.link(holder)->RemoveHash(hash);
  if (st.ok()) Release(s.fill(holder));
  return st;
}

bool ChainMayContain(const Shard& s, uint64_t hash) {
  for (uint32_t i = s.links_visible(); i-- > 0;) {
    if (s.link(i)->MayContainHash(hash)) return true;
  }
  return false;
}

uint32_t ChainCount(const Shard& s, uint64_t hash) {
  const uint32_t n = s.links_visible();
  // A Bloom key is present or not (0/1), whichever links hold it.
  if (s.link(0)->type() == FilterType::kBloom) {
    return ChainMayContain(s, hash) ? 1 : 0;
  }
  uint32_t count = 0;
  for (uint32_t i = n; i-- > 0;) count += s.link(i)->CountHash(hash);
  return count;
}

void ChainPrefetch(const Shard& s, uint64_t hash, bool for_write) {
  s.link(s.links_visible() - 1)->PrefetchHash(hash, for_write);
}

void ChainMayContainHashes(const Shard& s, std::span<const uint64_t> hashes,
                           std::span<uint8_t> out) {
  const uint32_t n = s.links_visible();
  s.link(n - 1)->MayContainHashes(hashes, out);
  if (n == 1) return;
  std::vector<uint8_t> more(hashes.size());
  for (uint32_t i = n - 1; i-- > 0;) {
    s.link(i)->MayContainHashes(hashes, more);
    for (size_t j = 0; j < hashes.size(); ++j) out[j] |= more[j];
  }
}

std::string ChainSerialize(const Shard& s) {
  const uint32_t n = s.links_visible();
  std::vector<std::string> envelopes(n);
  std::vector<persistence::ChainLinkBytes> links(n);
  for (uint32_t i = 0; i < n; ++i) {
    envelopes[i] = s.link(i)->Serialize();
    // S9: exact under mu exclusive. S7: at most the capacity (a Bloom link
    // 0 may hold a few adds more, which decoding would call corrupt).
    links[i] = {envelopes[i], std::min(s.Fill(i), s.capacity(i))};
  }
  return persistence::EncodeChainBlob(links);
}

namespace {
Result<LoadedChain> DecodeChainLinks(const FilterSpec& spec,
                                     std::string_view blob,
                                     std::string_view what);
}  // namespace

Result<LoadedChain> DecodeChain(const FilterSpec& spec, std::string_view blob,
                                std::string_view what, MemoryAccount* account) {
  // The links' tables are about the blob's size: charged before decoding,
  // refunded if decoding fails.
  if (account != nullptr) {
    SF_RETURN_IF_ERROR(account->Charge(blob.size(), std::string(what)));
  }
  auto chain = DecodeChainLinks(spec, blob, what);
  if (!chain.ok() && account != nullptr) account->Refund(blob.size());
  return chain;
}

namespace {

Result<LoadedChain> DecodeChainLinks(const FilterSpec& spec,
                                     std::string_view blob,
                                     std::string_view what) {
  SF_ASSIGN_OR_RETURN(auto links, persistence::DecodeChainBlob(blob, what));
  if (!spec.scalable && links.size() != 1) {
    return Status::Corruption(std::string(what) + ": a non-scaling filter's " +
                              "shard has " + std::to_string(links.size()) +
                              " links");
  }
  LoadedChain chain;
  double promised = 0;
  for (uint32_t i = 0; i < links.size(); ++i) {
    std::string link_what = std::string(what) + " link " + std::to_string(i);
    SF_ASSIGN_OR_RETURN(
        auto f, DecodeLinkFilter(spec, i, links[i].envelope, link_what));
    if (links[i].fill > f->capacity()) {
      return Status::Corruption(
          link_what + ": holds " + std::to_string(links[i].fill) +
          " adds, more than its capacity " + std::to_string(f->capacity()));
    }
    promised += LinkPromisedRate(*f);
    chain.links.push_back(std::move(f));
    chain.fill.push_back(links[i].fill);
  }
  // The chain rule's promise (filter_spec.h): the links' rates together
  // stay under the target, whatever rule sized each one. (A little slack
  // for the sum's rounding.) The power-of-two cuckoo geometry promises its
  // rate per link instead (DecodeLinkFilter checks each one).
  if (!spec.cuckoo_pow2_buckets && promised > spec.fpp * (1 + 1e-9)) {
    return Status::Corruption(
        std::string(what) + ": its " + std::to_string(links.size()) +
        " links promise rates summing to " + FormatRate(promised) +
        ", above the filter's target rate " + FormatRate(spec.fpp));
  }
  return chain;
}

}  // namespace

FilterStats ChainStatistics(const FilterSpec& spec, const Shard& s, bool scan) {
  const uint32_t n = s.links_visible();
  FilterStats t;
  double filled = 0, pass = 1;
  for (uint32_t i = 0; i < n; ++i) {
    FilterStats f = scan ? s.link(i)->Stats() : s.link(i)->Counts();
    if (i == 0) t = f;  // type, k
    if (i > 0) {
      t.capacity += f.capacity;
      t.bytes += f.bytes;
      t.slots += f.slots;
      t.items += f.items;
      t.deletes += f.deletes;
      t.estimated_cardinality += f.estimated_cardinality;
    }
    filled += f.fill_ratio * static_cast<double>(f.slots);
    pass *= 1 - f.estimated_fpr;
  }
  if (spec.type == FilterType::kBloom) {
    // The links' own counters are not kept (ChainAdd adds uncounted): fill
    // counts the distinct keys each link took (S8). Relaxed: a figure.
    t.items = 0;
    for (uint32_t i = 0; i < n; ++i) t.items += s.Fill(i);  // S9
  }
  // The links' promises (filter_spec.h): the halving rule's compound
  // target for Bloom and counting chains, what a cuckoo chain's links keep.
  t.target_fpr = 0;
  for (uint32_t i = 0; i < n; ++i) t.target_fpr += LinkPromisedRate(*s.link(i));
  t.estimated_fpr = 1 - pass;
  t.fill_ratio = t.slots ? filled / static_cast<double>(t.slots) : 0;
  t.bits_per_item = t.capacity ? static_cast<double>(t.bytes) * 8.0 /
                                     static_cast<double>(t.capacity)
                               : 0;
  return t;
}

bool ChainEquals(const Shard& a, const Shard& b) {
  const uint32_t n = a.links_visible();
  if (n != b.links_visible()) return false;
  for (uint32_t i = 0; i < n; ++i) {
    if (a.Fill(i) != b.Fill(i) || !a.link(i)->Equals(*b.link(i))) {
      return false;
    }
  }
  return true;
}

}  // namespace shardfilter::internal
