// CuckooFilter: creation, inserts with a locked-after-search displacement
// path, removes, counts, batches and statistics. Serialization lives in
// filters/internal/cuckoo_codec.cc. Invariant numbers refer to the block in
// cuckoo_filter.h.
#include "shardfilter/filters/cuckoo_filter.h"

#include <algorithm>
#include <string>
#include <vector>

namespace shardfilter {

// Invariant 2: a stripe covers whole bucket groups, so it owns their words.
static_assert(internal::CuckooTable::kGroupBuckets ==
              (uint64_t{1} << internal::CuckooStripes::kGroupShift));

// Breadth-first search for a displacement path (libcuckoo's approach): the
// search reads the table without locks; the path is then executed one move
// at a time from its free end back to the key's bucket, each move locking
// its two buckets and re-validating what the search saw (invariant 3).
// BFS rather than a random walk: the shortest path means the fewest moves
// to lock and validate, and with b = 4 a budget of 500 buckets reaches
// depth ~4 from both roots, enough for >= 95% load.
class CuckooPathFinder {
 public:
  struct Node {
    uint64_t bucket;
    int32_t parent;  // index in nodes_, -1 for the key's own buckets
    uint32_t slot;   // slot of the parent's bucket whose fingerprint...
    uint32_t fp;     // ...fp moves into `bucket`
  };

  explicit CuckooPathFinder(CuckooFilter& f) : f_(f), nodes_(Scratch()) {}

  // Searches from p's buckets for a bucket with a free slot. On success
  // the path ends at nodes_[leaf_]. Reads are racy by design: every move
  // re-validates under locks.
  bool Search(const CuckooFilter::Position& p) {
    const internal::CuckooTable& t = f_.table_;
    const size_t budget = std::max<uint32_t>(f_.max_kicks_, 2);
    nodes_.clear();
    nodes_.push_back({p.i1, -1, 0, 0});
    if (p.i2 != p.i1) nodes_.push_back({p.i2, -1, 0, 0});
    for (size_t head = 0; head < nodes_.size(); ++head) {
      const uint64_t bucket = nodes_[head].bucket;
      // One node ahead: the next head's bucket is cached (a root, or a
      // child just tested), so its children's misses can overlap this
      // head's instead of costing a DRAM latency of their own.
      if (head + 1 < nodes_.size()) PrefetchChildren(nodes_[head + 1].bucket);
      // All children first, prefetched together, then tested: their
      // misses overlap instead of one DRAM latency per child.
      Node kids[8];
      uint32_t n_kids = 0;
      for (uint32_t g = 0; g < t.groups(); ++g) {
        const uint64_t x = t.LoadGroup(bucket, g);
        for (uint32_t k = 0; k < t.group_slots(); ++k) {
          const uint32_t fp = t.Field(x, k);
          if (fp == 0) continue;  // raced with a remove; the retry sees it
          const uint64_t alt = f_.AltBucket(bucket, fp);
          if (alt == bucket || OnPath(head, alt)) continue;
          t.Prefetch(alt);
          kids[n_kids++] = {alt, static_cast<int32_t>(head),
                            g * t.group_slots() + k, fp};
        }
      }
      for (uint32_t k = 0; k < n_kids; ++k) {
        if (nodes_.size() >= budget) return false;
        nodes_.push_back(kids[k]);
        if (t.FindSlot(kids[k].bucket, 0) >= 0) {
          leaf_ = nodes_.size() - 1;
          return true;
        }
      }
    }
    return false;
  }

  // Moves fingerprints along the path, free end first. kLocked: the
  // caller holds every stripe (all-stripes mode); otherwise each move takes
  // its two stripes. False when a validation fails (a concurrent writer
  // changed the path): nothing is lost, the caller searches again.
  // place != nullptr (not kLocked): the last move empties a slot of one of
  // the key's buckets, and place->fp fills it under that move's locks (an
  // add that needs only its own bucket, invariant 7), saving a second
  // round of locks; *placed says whether it did.
  template <bool kLocked>
  bool Execute(const CuckooFilter::Position* place = nullptr,
               bool* placed = nullptr) {
    for (size_t v = leaf_; nodes_[v].parent >= 0;
         v = static_cast<size_t>(nodes_[v].parent)) {
      const Node& n = nodes_[v];
      const uint64_t src = nodes_[n.parent].bucket;
      if constexpr (kLocked) {
        if (!Move(src, n.slot, n.fp, n.bucket, nullptr)) return false;
      } else {
        internal::TwoStripeLock g(f_.stripes_, src, n.bucket);
        if (!Move(src, n.slot, n.fp, n.bucket, &g)) return false;
        if (place != nullptr && nodes_[n.parent].parent < 0) {
          f_.table_.FillSlot(src, n.slot, place->fp);
          f_.stripes_.CountAdd(f_.stripes_.StripeOf(src));
          *placed = true;
        }
      }
    }
    return true;
  }

 private:
  static std::vector<Node>& Scratch() {
    thread_local std::vector<Node> nodes;
    return nodes;
  }

  void PrefetchChildren(uint64_t bucket) const {
    const internal::CuckooTable& t = f_.table_;
    for (uint32_t g = 0; g < t.groups(); ++g) {
      const uint64_t x = t.LoadGroup(bucket, g);
      for (uint32_t k = 0; k < t.group_slots(); ++k) {
        const uint32_t fp = t.Field(x, k);
        if (fp != 0) t.Prefetch(f_.AltBucket(bucket, fp));
      }
    }
  }

  // True if `bucket` is `head` or one of its ancestors: a path visits each
  // bucket once, so its moves never undo one another.
  bool OnPath(size_t head, uint64_t bucket) const {
    for (int64_t v = static_cast<int64_t>(head); v >= 0; v = nodes_[v].parent) {
      if (nodes_[v].bucket == bucket) return true;
    }
    return false;
  }

  // REQUIRES: stripes of src and dst held. Copy, then clear (invariant 3),
  // inside a move-version window (invariants 4-5).
  bool Move(uint64_t src, uint32_t slot, uint32_t fp, uint64_t dst,
            internal::TwoStripeLock* g) {
    internal::CuckooTable& t = f_.table_;
    internal::CuckooStripes& st = f_.stripes_;
    if (t.ReadSlot(src, slot) != fp) return false;
    const int free_slot = t.FindSlot(dst, 0);
    if (free_slot < 0) return false;
    // Invariant 4: the version of the pair's lower stripe (held: 3).
    const uint64_t s_lo = std::min(st.StripeOf(src), st.StripeOf(dst));
    if (g != nullptr) {
      g->BeginMove();
    } else {
      st.MoveBegin(s_lo);
      internal::CuckooStripes::MoveFence();
    }
    t.FillSlot(dst, static_cast<uint32_t>(free_slot), fp);
    t.ClearSlot(src, slot);
    if (g != nullptr) {
      g->EndMove();
    } else {
      st.MoveEnd(s_lo);
    }
    return true;
  }

  CuckooFilter& f_;
  std::vector<Node>& nodes_;
  size_t leaf_ = 0;
};

Result<uint64_t> CuckooFilter::TableBytes(const CuckooOptions& o) {
  SF_ASSIGN_OR_RETURN(CuckooSizing sz,
                      CuckooFilterSizing(o.capacity, o.fpp, o.fingerprint_bits,
                                         o.bucket_size, o.max_bytes));
  if (o.max_kicks == 0 || o.max_kicks > kCuckooMaxKicksLimit) {
    return Status::InvalidArgument("cuckoo max_kicks must be in 1.." +
                                   std::to_string(kCuckooMaxKicksLimit) +
                                   ", got " + std::to_string(o.max_kicks));
  }
  // Plus the padding word the table allocates (CuckooTable::bytes()).
  return CuckooTableBytes(sz.buckets, sz.bucket_size, sz.fingerprint_bits) + 8;
}

Result<std::unique_ptr<CuckooFilter>> CuckooFilter::Create(
    const CuckooOptions& o) {
  SF_ASSIGN_OR_RETURN(CuckooSizing sz,
                      CuckooFilterSizing(o.capacity, o.fpp, o.fingerprint_bits,
                                         o.bucket_size, o.max_bytes));
  if (o.max_kicks == 0 || o.max_kicks > kCuckooMaxKicksLimit) {
    return Status::InvalidArgument("cuckoo max_kicks must be in 1.." +
                                   std::to_string(kCuckooMaxKicksLimit) +
                                   ", got " + std::to_string(o.max_kicks));
  }
  std::unique_ptr<CuckooFilter> f(new CuckooFilter());
  f->hasher_ = KeyHasher(o.seed);
  f->capacity_ = o.capacity;
  f->fpp_ = o.fpp;
  f->max_kicks_ = o.max_kicks;
  SF_RETURN_IF_ERROR(f->Init(sz.buckets, sz.bucket_size, sz.fingerprint_bits));
  return f;
}

Status CuckooFilter::Init(uint64_t buckets, uint32_t bucket_size,
                          uint32_t fp_bits) {
  fp_mask_ = (uint64_t{1} << fp_bits) - 1;
  if (!table_.Init(buckets, bucket_size, fp_bits) ||
      !stripes_.Init(buckets,
                     CuckooTableBytes(buckets, bucket_size, fp_bits))) {
    return Status::ResourceExhausted(
        "out of memory allocating a cuckoo table of " +
        std::to_string(CuckooTableBytes(buckets, bucket_size, fp_bits)) +
        " bytes");
  }
  return Status::OK();
}

bool CuckooFilter::TryPlace(const Position& p) {
  uint64_t bucket;
  uint32_t slot;
  if (!table_.FindInPair(p.i1, p.i2, 0, &bucket, &slot)) return false;
  table_.FillSlot(bucket, slot, p.fp);
  stripes_.CountAdd(stripes_.StripeOf(p.i1));  // invariant 7
  return true;
}

bool CuckooFilter::AddOneStripe(const Position& p) {
  using Layout = internal::CuckooTable::Layout;
  switch (table_.layout()) {
    case Layout::k4x12:
      return AddOneStripe<4, 12>(p);
    case Layout::k4x8:
      return AddOneStripe<4, 8>(p);
    case Layout::k4x16:
      return AddOneStripe<4, 16>(p);
    default:
      return false;
  }
}

bool CuckooFilter::RemoveOneStripe(const Position& p) {
  using Layout = internal::CuckooTable::Layout;
  switch (table_.layout()) {
    case Layout::k4x12:
      return RemoveOneStripe<4, 12>(p);
    case Layout::k4x8:
      return RemoveOneStripe<4, 8>(p);
    case Layout::k4x16:
      return RemoveOneStripe<4, 16>(p);
    default:
      return false;
  }
}

Status CuckooFilter::AddHash(uint64_t hash) { return Insert(hash, false); }

Status CuckooFilter::RemoveHash(uint64_t hash) {
  const Position p = Locate(hash);
  const bool fast = table_.layout() == internal::CuckooTable::Layout::k4x12;
  if (fast && RemoveOneStripe<4, 12>(p)) return Status::OK();
  return RemoveSlow(hash, fast);
}

bool CuckooFilter::MayContainHash(uint64_t hash) const {
  return MayContainHashInline(hash);
}

bool CuckooFilter::MayContainHashOtherLayout(uint64_t hash) const {
  using Layout = internal::CuckooTable::Layout;
  switch (table_.layout()) {
    case Layout::k4x8:
      return Query<4, 8>(hash);
    case Layout::k4x16:
      return Query<4, 16>(hash);
    default:
      return Query<0, 0>(hash);
  }
}

Status CuckooFilter::InsertSlow(uint64_t h, bool unique, bool tried_fast) {
  const Position p = Locate(h);
  using Layout = internal::CuckooTable::Layout;
  // AddUnique needs both buckets still while it checks for fp.
  if (!unique && !tried_fast && AddOneStripe(p)) return Status::OK();
  PrefetchForWrite(p);
  // Optimistic rounds: a validation failure means another writer got in
  // between; after a few, settle it under all stripes.
  // A failed fast path already saw both buckets full: straight to the
  // displacement search, whose last move makes room for fp.
  const bool fast = !unique && table_.layout() != Layout::kGeneric;
  for (int round = 0; round < 8; ++round) {
    if (round > 0 || !fast) {
      internal::TwoStripeLock g(stripes_, p.i1, p.i2);
      if (unique && ContainsUnlocked(p)) return Status::OK();
      if (TryPlace(p)) return Status::OK();
    }
    CuckooPathFinder finder(*this);
    if (!finder.Search(p)) break;  // confirm "no path" exclusively
    bool placed = false;
    // Success or not, unless fp was placed, try to place again.
    (void)finder.Execute<false>(unique ? nullptr : &p, &placed);
    if (placed) return Status::OK();
  }
  return InsertExclusive(p, unique);
}

Status CuckooFilter::InsertExclusive(const Position& p, bool unique) {
  internal::AllStripesLock all(stripes_);
  if (unique && ContainsUnlocked(p)) return Status::OK();
  if (TryPlace(p)) return Status::OK();
  CuckooPathFinder finder(*this);
  // With every stripe held the table is still, so the search is exact and
  // the moves validate; Full is then the truth, with nothing evicted.
  if (finder.Search(p) && finder.Execute<true>() && TryPlace(p)) {
    return Status::OK();
  }
  const uint64_t items = stripes_.Items();
  return Status::Full(
      "cuckoo filter full: no free slot within " + std::to_string(max_kicks_) +
      " buckets of displacement search at load " +
      std::to_string(static_cast<double>(items) / table_.slots()) +
      " (capacity " + std::to_string(capacity_) + ")");
}

Status CuckooFilter::RemoveSlow(uint64_t h, bool tried_fast) {
  const Position p = Locate(h);
  if (!tried_fast && RemoveOneStripe(p)) return Status::OK();
  PrefetchForWrite(p);
  internal::TwoStripeLock g(stripes_, p.i1, p.i2);
  uint64_t bucket;
  uint32_t slot;
  if (!table_.FindInPair(p.i1, p.i2, p.fp, &bucket, &slot)) {
    return Status::NotFound("key not in the cuckoo filter");
  }
  table_.ClearSlot(bucket, slot);
  const uint64_t s1 = stripes_.StripeOf(p.i1);  // invariant 7
  stripes_.CountRemove(s1);
  return Status::OK();
}

Status CuckooFilter::AddHashCapped(uint64_t hash, uint32_t max_copies,
                                   uint32_t* held) {
  const bool fast = table_.layout() == internal::CuckooTable::Layout::k4x12;
  if (fast) {
    if (AddHashCappedInline(hash, max_copies, held)) return Status::OK();
  } else {
    // No writer runs (REQUIRES), so a plain look is exact: no versions.
    const Position p = Locate(hash);
    *held = table_.CountInBucket(p.i1, p.fp);
    if (p.i2 != p.i1) *held += table_.CountInBucket(p.i2, p.fp);
  }
  if (*held >= max_copies) {
    return Status::Full("the item already holds " + std::to_string(*held) +
                        " copies");
  }
  return InsertSlow(hash, false, fast);
}

uint32_t CuckooFilter::CountHash(uint64_t hash) const {
  const Position p = Locate(hash);
  internal::PairVersions versions(stripes_, p.i1, p.i2);
  for (;;) {  // invariant 6: counts only from a validated scan
    versions.Begin();
    uint32_t n = table_.CountInBucket(p.i1, p.fp);
    if (p.i2 != p.i1) n += table_.CountInBucket(p.i2, p.fp);
    internal::CuckooStripes::ReadFence();
    if (versions.Valid()) return n;
    internal::CpuRelax();
  }
}

CuckooStats CuckooFilter::CuckooStatistics() const {
  CuckooStats s;
  FilterStats& b = s.base;
  b.type = FilterType::kCuckoo;
  b.capacity = capacity_;
  b.target_fpr = fpp_;
  b.bytes = table_.bytes();
  b.slots = table_.slots();
  b.items = stripes_.Items();
  b.deletes = stripes_.Deletes();
  b.fill_ratio = static_cast<double>(b.items) / static_cast<double>(b.slots);
  // 1 - (1 - s)^(2 b load): each of the 2b compared slots is occupied
  // with probability `load` and then matches with probability
  // s = CuckooSlotMatch(f) (filters/sizing.h).
  b.estimated_fpr =
      CuckooFpr(table_.fp_bits(), table_.bucket_size(), b.fill_ratio);
  b.estimated_cardinality = static_cast<double>(b.items);
  b.bits_per_item =
      static_cast<double>(b.bytes) * 8.0 / static_cast<double>(capacity_);
  s.buckets = table_.buckets();
  s.bucket_size = table_.bucket_size();
  s.fingerprint_bits = table_.fp_bits();
  s.max_kicks = max_kicks_;
  s.stripes = stripes_.count();
  return s;
}

}  // namespace shardfilter
