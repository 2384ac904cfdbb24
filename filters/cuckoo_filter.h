// CuckooFilter: a concurrent, lock-striped cuckoo filter with deletes and
// counts (partial-key cuckoo hashing, Fan, Andersen, Kaminsky, Mitzenmacher,
// CoNEXT 2014), persisted in the shared envelope (docs/format-cuckoo.md).
//
// Each key hash h gives an f-bit fingerprint (f = 8, 12 or 16) and two
// candidate buckets of b slots (b = 2, 4 or 8):
//   fp = h & (2^f - 1), mapped 0 -> 1 (0 marks an empty slot)
//   i1 = FastRange64(h with its low 16 bits cleared, n)
//   i2 = (H(fp) - i1) mod n,  H(fp) = FastRange64(fp * odd constant, n)
// Fingerprint and bucket come from disjoint bits of h; the engine's shard
// routers leave both uniform within a shard (ShardRouter). i -> (H(fp) - i) mod
// n is an involution for every n, so the bucket count need not be a power of
// two and memory follows the capacity: 12-bit fingerprints, b = 4, sized for
// 94% load -> 12.77 bits per item, FPR 0.18% at capacity (sizing.h).
//
// Thread safety: every method may be called concurrently with any other.
// Writers lock the stripe of the one bucket they write (the fast paths,
// invariant 7) or of the two buckets they touch (AddHashCappedSoleWriter
// none: its caller excludes every other writer); queries take no lock.
// Serialize() takes all stripes and is an exact snapshot.
//
// Locking protocol, numbered invariants (referred to in the code):
//  1. Stripe of bucket i = (i / 8) & (stripes - 1): whole 8-bucket groups.
//     A thread holds at most two
//     stripes at once, taken in ascending order (TwoStripeLock), or all of
//     them in ascending order (AllStripesLock), and never waits for another
//     stripe while holding some otherwise: no deadlock. Guards are RAII.
//  2. A slot changes only under the lock of its bucket's stripe: filled
//     (0 -> fp) by an add, cleared (fp -> 0) by a remove, or as the two
//     halves of a move. An 8-bucket group spans whole 64-bit words (8*b*f
//     bits), so every word belongs to one group, hence one stripe: its
//     holder is the only writer and updates words with a relaxed load and
//     a relaxed store (no locked read-modify-write); readers load words
//     with relaxed atomic loads (no data race, never a torn word).
//  3. A move takes the stripes of both the source and destination buckets
//     (the fingerprint's two candidate buckets), re-validates that the
//     source slot still holds the fingerprint the unlocked path search saw
//     and that the destination has an empty slot, then copies the
//     fingerprint into the destination before clearing the source. No
//     fingerprint is ever overwritten: a failed insert (Full) evicts
//     nothing, and every acknowledged key stays in one of its two buckets.
//  4. Only moves can make a present key momentarily invisible to a reader
//     scanning i1 then i2 (adds only fill empty slots, removes clear the
//     remover's own copy), and only a move of the key's own fingerprint
//     between its own two buckets: a fingerprint's two buckets are a pair
//     ((bucket, fp) determines the other), so no other move takes a copy
//     of fp out of {i1, i2}. Each move makes the move version of the lower
//     of its two buckets' stripes odd before writing and even (+2) after;
//     the mover holds that stripe (3), so the version has one writer at a
//     time. A reader of a key checks that same word: the version of
//     min(stripe(i1), stripe(i2)): one version word per query, where a
//     move that bumped both stripes' versions would cost a reader two more
//     loads.
//  5. Memory order of a move: version store (relaxed), release fence, slot
//     stores (relaxed), version store (release). A reader loads the version
//     (acquire), reads the buckets (relaxed), issues an acquire fence and
//     reloads the version. If the reader saw any slot write of the move,
//     the fence pair makes the odd version visible to its reload; if its
//     first load saw the final version, the release/acquire pair makes the
//     whole move visible. So an unchanged, even version means no move
//     between the key's two buckets ran during the scan (Boehm's seqlock
//     argument).
//  6. A positive query answer needs no validation (a matching fingerprint
//     was in a candidate bucket); a negative answer or a count is returned
//     only from a validated scan, otherwise the scan is retried. Queries
//     never write shared memory.
//  7. An add or remove that writes one bucket may hold only that bucket's
//     stripe (the single-stripe fast paths): slots change only under their
//     own stripe (2), and moves into or out of the bucket hold it too (3).
//     Add and remove counters are per stripe, incremented only under that
//     stripe's lock by the op that holds it (the stripe of the bucket it
//     wrote, or of i1 in the two-stripe paths), or by a sole writer
//     (AddHashCappedSoleWriter: stripe 0's, with every other writer
//     excluded by the caller); items = the sum of adds minus the sum of
//     removes, exact under AllStripesLock.
//
// Removal risk: RemoveHash removes one fingerprint equal to the key's from
// one of its buckets. Removing a key that was never added (or removed more
// often than added) may remove a different key that shares fingerprint and
// bucket pair, which then becomes a false negative. Callers that cannot rule
// that out must check an exact source of truth first (the dedup store does).
//
// A little over 400 lines: most of it is the inline one-at-a-time query
// path and the contract comments of a public API header.
#ifndef SHARDFILTER_FILTERS_CUCKOO_FILTER_H_
#define SHARDFILTER_FILTERS_CUCKOO_FILTER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "shardfilter/filters/detail/cuckoo_stripes.h"
#include "shardfilter/filters/detail/cuckoo_table.h"
#include "shardfilter/filters/filter.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/filters/sizing.h"
#include "shardfilter/filters/status.h"

namespace shardfilter {

struct CuckooOptions {
  // Required (> 0): items the filter must hold with the promised rate. The
  // table is sized for CuckooDesignLoad(bucket_size) at this count (94% for
  // b = 4), so inserts past it soon fail with Full (near 95-96% load).
  uint64_t capacity = 0;
  // Target false-positive rate at capacity, in (0, 1). Picks the
  // fingerprint width needing the fewest bytes (0.01 -> 12 bits, 0.001 ->
  // 16 bits). Smaller rates cost more bits per item.
  double fpp = 0.01;
  // 0 = choose from fpp; else 8, 12 or 16. A width too narrow for fpp is
  // honoured by sizing for a lower load (more buckets, more memory), so the
  // rate at capacity still holds. Wider = fewer false positives, more bytes.
  uint32_t fingerprint_bits = 0;
  // Slots per bucket: 2, 4 (default) or 8. Larger buckets reach higher load
  // (84% / 95% / 98%) but compare more slots per query: FPR ~ 2b/2^f.
  uint32_t bucket_size = 4;
  // Budget of the displacement search: buckets examined breadth-first
  // (1..65536). Larger = inserts succeed closer to the load limit, at the
  // cost of slower failing inserts near it. 500 reaches >= 95% with b = 4.
  uint32_t max_kicks = 500;
  // Hash seed, stored with the filter (HashKey(key, seed)).
  uint64_t seed = kDefaultSeed;
  // Upper bound on the table's memory; larger requests are InvalidArgument.
  uint64_t max_bytes = kDefaultMaxFilterBytes;
  // 0 = sized from capacity and fpp (above). Else exactly this many buckets
  // (>= 1; fingerprint_bits must then be 8, 12 or 16), whatever the load at
  // capacity: RedisBloom's geometry (a power of two from capacity / bucket
  // size) is built this way. fpp is then only the rate the filter reports
  // as its target (target_fpr()).
  uint64_t buckets = 0;
};

// Everything FilterStats reports plus the cuckoo layout.
struct CuckooStats {
  FilterStats base;
  uint64_t buckets = 0;
  uint32_t bucket_size = 0;
  uint32_t fingerprint_bits = 0;
  uint32_t max_kicks = 0;
  uint64_t stripes = 0;
};

// Cache-line aligned, so its size is whole lines: every call reads the
// parameters in this object, and a heap neighbour written by another thread
// on a shared line makes 2 threads of the mixed benchmark slower than one
// (measured, 1e6 items: 0.75x one thread unaligned, 1.77x aligned).
class alignas(64) CuckooFilter final : public Filter {
 public:
  static constexpr uint8_t kFormatVersion = 1;
  static constexpr size_t kParamsSize = 56;  // docs/format-cuckoo.md

  static Result<std::unique_ptr<CuckooFilter>> Create(const CuckooOptions& o);
  // The bytes of the table Create(o) would allocate, without allocating;
  // Create's errors otherwise.
  static Result<uint64_t> TableBytes(const CuckooOptions& o);
  // Decodes a whole envelope from Serialize(). WrongType for another filter
  // type, NotSupported for a future version, Corruption for anything
  // inconsistent, InvalidArgument for foreign bytes. Allocates no more than
  // the input's size (plus the fixed stripe array).
  static Result<std::unique_ptr<CuckooFilter>> Deserialize(
      std::string_view bytes);

  CuckooFilter(const CuckooFilter&) = delete;
  CuckooFilter& operator=(const CuckooFilter&) = delete;
  ~CuckooFilter() override = default;

  FilterType type() const override { return FilterType::kCuckoo; }
  uint64_t seed() const override { return hasher_.seed(); }
  uint64_t capacity() const override { return capacity_; }
  double target_fpr() const override { return fpp_; }

  // Adds one copy (duplicates allowed while the two buckets have room).
  // Full when no displacement path exists within max_kicks: nothing moved
  // out of the table, every earlier key is still present.
  Status AddHash(uint64_t hash) override;
  // As AddHash, but OK without change when the fingerprint is already in
  // one of the two buckets (atomic with respect to other AddUniqueHash).
  Status AddUniqueHash(uint64_t hash) { return Insert(hash, true); }
  // Removes one copy; NotFound if absent. READ THE "Removal risk" NOTE at
  // the top of this file: a never-added key can remove a colliding one.
  Status RemoveHash(uint64_t hash) override;
  bool MayContainHash(uint64_t hash) const override;
  // Copies of the fingerprint in the two buckets (each counted once when
  // both candidates are the same bucket).
  uint32_t CountHash(uint64_t hash) const override;
  // The count from the fast path's own look at the pair (Filter's
  // REQUIRES: no concurrent writer).
  Status AddHashCapped(uint64_t hash, uint32_t max_copies,
                       uint32_t* held) override;
  // AddHashCapped's common case, inline: the default layout, the key below
  // max_copies, a free slot in one of its buckets. True when added; false,
  // with nothing changed, otherwise: AddHashCapped decides then. *held:
  // the key's copies before the call (0 for other layouts). REQUIRES: as
  // AddHashCapped's (no concurrent writer).
  bool AddHashCappedInline(uint64_t hash, uint32_t max_copies, uint32_t* held) {
    return CappedAdd<true>(hash, max_copies, held);
  }
  // The same without the stripe lock, for an owner that serializes every
  // writer of this filter itself (the sharded engine's one-link shard add:
  // each writer of an ordered shard's link holds the shard's order_mu, S3,
  // engine/detail/shard_fast_path.h). The lock's only work here is to
  // exclude other writers (queries validate against moves, which this add
  // never makes, and Serialize runs with writers excluded too).
  // REQUIRES: no other thread writes this filter during the call, and
  // every earlier write happened before it (a lock the writers share).
  bool AddHashCappedSoleWriter(uint64_t hash, uint32_t max_copies,
                               uint32_t* held) {
    return CappedAdd<false>(hash, max_copies, held);
  }
  // What an add of `hash` writes, prefetched for writing (both buckets),
  // for owners that take locks of their own before the add.
  void PrefetchAdd(uint64_t hash) const {
    const Position p = Locate(hash);
    table_.Prefetch<true>(p.i1);
    table_.Prefetch<true>(p.i2);
  }
  Status AddHashes(std::span<const uint64_t> hashes, size_t* added) override;
  void PrefetchHash(uint64_t hash, bool for_write) const override {
    if (for_write) {
      PrefetchForWrite(Locate(hash));
    } else {
      PrefetchBuckets(hash);
    }
  }
  void MayContainHashes(std::span<const uint64_t> hashes,
                        std::span<uint8_t> out) const override;
  // Batch RemoveHash, prefetching a window ahead: removed[i] = 1 when a
  // copy of hashes[i]'s fingerprint was removed, 0 when none was there
  // (RemoveHash's NotFound). Same risk as RemoveHash. REQUIRES:
  // removed.size() >= hashes.size().
  void RemoveHashes(std::span<const uint64_t> hashes,
                    std::span<uint8_t> removed);

  FilterStats Stats() const override { return CuckooStatistics().base; }
  CuckooStats CuckooStatistics() const;
  std::string Serialize() const override;
  bool Equals(const Filter& other) const override;

  // --- Key forms: the hash inline, the operation out of line. ---
  // AddHash, RemoveHash and MayContainHash are compiled in
  // cuckoo_filter.cc, not inlined into the caller: at 5e7 items a loop of
  // one-at-a-time calls runs as fast as the CPU overlaps consecutive calls'
  // misses, and the kernels inlined into a caller's loop come out slower
  // (register pressure, spills; measured: the query 1.2x the time, insert
  // and remove within noise). The class is final, so these are direct calls.
  Status Add(std::string_view key) { return AddHash(hasher_(key)); }
  Status AddUnique(std::string_view key) { return Insert(hasher_(key), true); }
  bool MayContain(std::string_view key) const {
    return MayContainHash(hasher_(key));
  }
  // Same risk as RemoveHash.
  Status Remove(std::string_view key) { return RemoveHash(hasher_(key)); }
  // The query kernel, inlined (the batch loops).
  inline bool MayContainHashInline(uint64_t hash) const;
  // Every layout but the default (k4x12), out of line.
  bool MayContainHashOtherLayout(uint64_t hash) const;
  uint32_t Count(std::string_view key) const { return CountHash(hasher_(key)); }
  // Batch forms over keys: hash a chunk, then prefetch both buckets of the
  // key a window ahead. Same contracts as AddHashes / MayContainHashes.
  Status AddKeys(std::span<const std::string_view> keys, size_t* added);
  void MayContainKeys(std::span<const std::string_view> keys,
                      std::span<uint8_t> out) const;
  // Same risk as RemoveHash; contract of RemoveHashes.
  void RemoveKeys(std::span<const std::string_view> keys,
                  std::span<uint8_t> removed);

  uint64_t num_buckets() const { return table_.buckets(); }
  uint32_t bucket_size() const { return table_.bucket_size(); }
  uint32_t fingerprint_bits() const { return table_.fp_bits(); }
  uint32_t max_kicks() const { return max_kicks_; }

 private:
  struct Position {
    uint64_t i1;
    uint64_t i2;
    uint32_t fp;
  };
  // Prefetch distance of the batch loops, in keys: about one DRAM latency
  // (~100 ns) of work per key times the misses we want in flight.
  static constexpr size_t kPrefetchWindow = 12;
  // The batch query's for a table larger than the caches hold, into L2
  // (internal/prefetch.h): L2 tracks more misses in flight than L1's fill
  // buffers. cuckoo_bench BM_QueryBatch at 95% load, 5 rounds, L2 against
  // L1 prefetches: 5e7 items 1.6x the keys/s; 1e6 (a 1.6 MB table) 0.92x,
  // hence the threshold: smaller tables keep L1 prefetches 12 ahead.
  static constexpr size_t kQueryPrefetchWindow = 32;
  static constexpr uint64_t kL2PrefetchMinBytes = uint64_t{8} << 20;

  CuckooFilter() = default;
  Status Init(uint64_t buckets, uint32_t bucket_size, uint32_t fp_bits);

  Position Locate(uint64_t h) const {
    Position p;
    const uint64_t fp = h & fp_mask_;
    p.fp = static_cast<uint32_t>(fp + (fp == 0));
    p.i1 = FastRange64(h & ~uint64_t{0xFFFF}, table_.buckets());
    p.i2 = AltBucket(p.i1, p.fp);
    return p;
  }
  // (H(fp) - i) mod n, an involution: AltBucket(AltBucket(i, fp), fp) == i.
  // H uses the top bits of fp * (2^64 / golden ratio): a Weyl sequence, so
  // distinct fingerprints give well-spread offsets.
  uint64_t AltBucket(uint64_t i, uint32_t fp) const {
    const uint64_t n = table_.buckets();
    const uint64_t t = FastRange64(fp * 0x9E3779B97F4A7C15ULL, n);
    return t >= i ? t - i : t + n - i;
  }
  void PrefetchBuckets(uint64_t h) const {
    const Position p = Locate(h);
    table_.Prefetch(p.i1);
    table_.Prefetch(p.i2);
  }
  void PrefetchBucketsL2(uint64_t h) const {
    const Position p = Locate(h);
    table_.PrefetchL2(p.i1);
    table_.PrefetchL2(p.i2);
  }
  // Before a writer locks: prefetch instructions are not ordered by the
  // lock's locked exchange, so the buckets' and locks' misses overlap with
  // one another and with the previous operation's tail.
  void PrefetchForWrite(const Position& p) const {
    table_.Prefetch<true>(p.i1);
    table_.Prefetch<true>(p.i2);
    stripes_.PrefetchLock(stripes_.StripeOf(p.i1));
    stripes_.PrefetchLock(stripes_.StripeOf(p.i2));
  }

  // The default layout's single-stripe fast path is inlined into the
  // caller; everything else (other layouts, displacement, AddUnique, the
  // exact Full / NotFound verdicts) is out of line in the *Slow forms.
  // tried_fast: the fast path already ran and found no room / no copy.
  inline Status Insert(uint64_t h, bool unique);
  // Take the hash, not the Position: a 24-byte struct passed by address
  // would be stored to the stack on the fast path too (measured: ~10 ns
  // per remove at 5e7 items, where every instruction in the loop counts).
  Status InsertSlow(uint64_t h, bool unique, bool tried_fast);
  Status RemoveSlow(uint64_t h, bool tried_fast);
  // Single-stripe fast paths (invariant 7): an unlocked look picks the
  // bucket, its stripe alone is locked and the look re-checked. False:
  // nothing changed, take the two-stripe path (which is exact, e.g. for
  // Full and NotFound). Add*: an empty slot of i1 or i2 (placement rule
  // in AddOneStripe<kB, kF>).
  // Remove*: the first copy of fp in i1, else in i2. The untemplated
  // forms dispatch on the layout (false for the generic one).
  bool AddOneStripe(const Position& p);
  bool RemoveOneStripe(const Position& p);
  template <uint32_t kB, uint32_t kF>
  bool AddOneStripe(const Position& p);
  // The same, with the look already made: e1, e2 the empty-slot masks of
  // p.i1 and p.i2 (MatchBucket<kB, kF>(i, 0)). kLock false: without the
  // stripe lock (AddHashCappedSoleWriter's REQUIRES).
  template <uint32_t kB, uint32_t kF, bool kLock = true>
  bool AddOneStripe(const Position& p, uint64_t e1, uint64_t e2);
  // AddHashCappedInline (kLock) or AddHashCappedSoleWriter.
  template <bool kLock>
  inline bool CappedAdd(uint64_t hash, uint32_t max_copies, uint32_t* held);
  template <uint32_t kB, uint32_t kF>
  bool RemoveOneStripe(const Position& p);
  // Under the stripes of p.i1 and p.i2: fills an empty slot. False if none.
  bool TryPlace(const Position& p);
  // The query for a table of layout (kB, kF) (0, 0: any layout).
  template <uint32_t kB, uint32_t kF>
  bool Query(uint64_t hash) const;
  bool ContainsUnlocked(const Position& p) const {
    return table_.EitherContains(p.i1, p.i2, p.fp);
  }
  // The exhaustive insert under all stripes (after the optimistic one
  // found no path): the Full verdict is exact, not a race artefact.
  Status InsertExclusive(const Position& p, bool unique);

  friend class CuckooPathFinder;  // filters/cuckoo_filter.cc

  KeyHasher hasher_;  // the seed, stored with the filter
  uint64_t capacity_ = 0;
  double fpp_ = 0;
  uint32_t max_kicks_ = 0;
  uint64_t fp_mask_ = 0;
  internal::CuckooTable table_;
  mutable internal::CuckooStripes stripes_;
};

inline bool CuckooFilter::MayContainHashInline(uint64_t hash) const {
  using Layout = internal::CuckooTable::Layout;
  // The default layout first, alone: the other layouts' queries live in a
  // separate function, so this one's registers need no saving (the switch
  // over all four kept six callee-saved registers: 12 pushes and pops of
  // the query's ~80 instructions, bench/instructions.sh cuckoo_query).
  if (table_.layout() == Layout::k4x12) [[likely]] {
    return Query<4, 12>(hash);
  }
  return MayContainHashOtherLayout(hash);
}

// Invariants 5-6: validated optimistic read, no lock, no shared write.
// Straight-line on purpose (measured at 5e7 items, where a query waits on
// two DRAM misses): a loop of independent queries is as fast as the number
// of queries the CPU keeps in flight, i.e. as short as each query's
// instruction stream, and any branch on bucket contents risks a flush. So
// no prefetches (the loads themselves issue at once), both buckets tested
// without a branch, and the versions re-checked on every answer so that
// the one branch left (retry or not) goes the same way for hits and misses.
template <uint32_t kB, uint32_t kF>
inline bool CuckooFilter::Query(uint64_t hash) const {
  const Position p = Locate(hash);
  internal::PairVersions versions(stripes_, p.i1, p.i2);
  for (;;) {
    versions.Begin();
    const bool hit = table_.EitherContains<kB, kF>(p.i1, p.i2, p.fp);
    internal::CuckooStripes::ReadFence();
    // A hit needs no validation (invariant 6); the check is done anyway,
    // only to keep the branch below data-independent.
    if (hit | versions.Valid()) return hit;
    internal::CpuRelax();
  }
}

// The writers' fast paths. Measured at 5e7 items (2 DRAM misses per op):
// the time of a loop of independent ops follows its instruction count
// (the CPU overlaps as many ops' misses as its reorder window holds), so
// these are short: one locked exchange instead of two, no prefetches (the
// unlocked look issues both loads at once), constant-layout kernels, and
// for the default layout no call at all.
template <uint32_t kB, uint32_t kF>
inline bool CuckooFilter::AddOneStripe(const Position& p) {
  return AddOneStripe<kB, kF>(p, table_.MatchBucket<kB, kF>(p.i1, 0),
                              table_.MatchBucket<kB, kF>(p.i2, 0));
}

template <uint32_t kB, uint32_t kF, bool kLock>
inline bool CuckooFilter::AddOneStripe(const Position& p, uint64_t e1,
                                       uint64_t e2) {
  using internal::CuckooTable;
  if ((e1 | e2) == 0) return false;  // both (seem) full: displacement
  // Placement: i1 while it has at least 3 free slots, else the bucket
  // with more free slots (i1 on a tie). Balancing the pair late (two
  // choices) leaves fewer inserts with both buckets full, i.e. fewer
  // displacements near 95% load; keeping i1 early keeps the choice
  // predictable. Measured at 5e7 items, filling to 95% (CPU time): i1
  // first 139 ns per insert, always the emptier 137, this rule 121.
  // A branch, not a select, on purpose: on the predicted path the lock's
  // address is known before the bucket's miss returns, so the locked
  // exchange does not wait for it (a select: +30% below 50% load).
  const uint32_t free1 = CuckooTable::CountMarks<kB, kF>(e1);
  const bool one = free1 >= 3 || free1 >= CuckooTable::CountMarks<kB, kF>(e2);
  const uint64_t bucket = one ? p.i1 : p.i2;
  const uint64_t s = stripes_.StripeOf(bucket);
  const uint64_t e = one ? e1 : e2;
  internal::MaybeStripeLock<kLock> g(stripes_, s);
  // Re-checked under the lock (the bucket's words are now still), by the
  // update itself: another writer may have filled the slot since the look.
  if (!table_.ReplaceSlot<kB, kF>(bucket, e, 0, p.fp)) return false;
  // Invariant 7; a sole writer counts on stripe 0, a line that stays in
  // cache (the bucket's stripe is a random one of up to 1024).
  stripes_.CountAdd(kLock ? s : 0);
  return true;
}

template <uint32_t kB, uint32_t kF>
inline bool CuckooFilter::RemoveOneStripe(const Position& p) {
  using internal::CuckooTable;
  const uint64_t m1 = table_.MatchBucket<kB, kF>(p.i1, p.fp);
  const uint64_t m2 = table_.MatchBucket<kB, kF>(p.i2, p.fp);
  const uint64_t m = m1 != 0 ? m1 : m2;
  if (m == 0) return false;  // NotFound is decided under locks
  const uint64_t bucket = m1 != 0 ? p.i1 : p.i2;  // a branch: see AddOneStripe
  const uint64_t s = stripes_.StripeOf(bucket);
  internal::OneStripeLock g(stripes_, s);
  // Moved or removed since the look: the two-stripe path decides.
  if (!table_.ReplaceSlot<kB, kF>(bucket, m, p.fp, 0)) return false;
  stripes_.CountRemove(s);  // invariant 7
  return true;
}

template <bool kLock>
inline bool CuckooFilter::CappedAdd(uint64_t hash, uint32_t max_copies,
                                    uint32_t* held) {
  using internal::CuckooTable;
  *held = 0;
  if (table_.layout() != CuckooTable::Layout::k4x12) [[unlikely]] {
    return false;
  }
  const Position p = Locate(hash);
  // No writer runs (REQUIRES), so a plain look is exact: no versions. One
  // load per bucket serves the count and the insert's look. A pair of one
  // bucket counts its copies once.
  const uint64_t b1 = table_.LoadBucket<4, 12>(p.i1);
  const uint64_t b2 = table_.LoadBucket<4, 12>(p.i2);
  const uint64_t m1 = CuckooTable::MatchBits<4, 12>(b1, p.fp);
  const uint64_t m2 =
      p.i2 != p.i1 ? CuckooTable::MatchBits<4, 12>(b2, p.fp) : 0;
  // The common case, a key without a copy in its pair: nothing to count.
  if ((m1 | m2) != 0) [[unlikely]] {
    *held =
        CuckooTable::CountMarks<4, 12>(m1) + CuckooTable::CountMarks<4, 12>(m2);
  }
  return *held < max_copies &&
         AddOneStripe<4, 12, kLock>(p, CuckooTable::MatchBits<4, 12>(b1, 0),
                                    CuckooTable::MatchBits<4, 12>(b2, 0));
}

inline Status CuckooFilter::Insert(uint64_t h, bool unique) {
  const Position p = Locate(h);
  const bool fast =
      !unique && table_.layout() == internal::CuckooTable::Layout::k4x12;
  if (fast && AddOneStripe<4, 12>(p)) return Status::OK();
  return InsertSlow(h, unique, fast);
}

}  // namespace shardfilter

#endif  // SHARDFILTER_FILTERS_CUCKOO_FILTER_H_
