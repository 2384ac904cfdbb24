// ShardedFilter: construction, single-key operations and statistics.
// Batch operations are in sharded_batch.cc.
#include "shardfilter/engine/sharded_filter.h"

#include <bit>
#include <mutex>
#include <shared_mutex>

#include "shardfilter/engine/internal/access.h"
#include "shardfilter/engine/internal/filter_log.h"
#include "shardfilter/engine/internal/filter_spec.h"
#include "shardfilter/engine/internal/journal_sink.h"
#include "shardfilter/engine/internal/memory_account.h"
#include "shardfilter/engine/internal/migration.h"
#include "shardfilter/engine/internal/shard.h"
#include "shardfilter/engine/internal/shard_chain.h"
#include "shardfilter/filters/bloom_filter.h"
#include "shardfilter/filters/counting_bloom_filter.h"
#include "shardfilter/filters/cuckoo_filter.h"

namespace shardfilter {

using internal::Shard;

const char* DurabilityName(Durability d) {
  switch (d) {
    case Durability::kNone:
      return "none";
    case Durability::kJournal:
      return "journal";
    case Durability::kSync:
      return "sync";
  }
  return "unknown";
}

Result<Durability> ParseDurability(std::string_view name) {
  if (name == "none") return Durability::kNone;
  if (name == "journal") return Durability::kJournal;
  if (name == "sync") return Durability::kSync;
  return Status::InvalidArgument("unknown durability \"" + std::string(name) +
                                 "\" (expected none, journal or sync)");
}

uint32_t DefaultShardCount(uint64_t capacity) {
  constexpr uint64_t kItemsPerShard = 1'000'000;
  uint64_t want = (capacity + kItemsPerShard - 1) / kItemsPerShard;
  if (capacity >= kItemsPerShard && want < 2) want = 2;
  if (want > kMaxShards) want = kMaxShards;
  if (want < 1) want = 1;
  return static_cast<uint32_t>(std::bit_ceil(want));
}

namespace {
std::atomic<uint64_t> next_filter_id{1};

// REQUIRES: link is an F (the spec's type).
template <typename F>
bool OneLinkQuery(const Filter& link, uint64_t hash) {
  return static_cast<const F&>(link).MayContainHashInline(hash);
}
}  // namespace

ShardedFilter::ShardedFilter(std::string name, FilterSpec resolved)
    // Relaxed: an identity, nothing is ordered by it.
    : id_(next_filter_id.fetch_add(1, std::memory_order_relaxed)),
      name_(std::move(name)),
      spec_(std::move(resolved)),
      shard_count_(spec_.shards),
      shard_shift_(64 - std::countr_zero(spec_.shards)),
      remix_router_(spec_.router == ShardRouter::kRemix),
      shards_(std::make_unique<Shard[]>(spec_.shards)),
      fast_(std::make_unique<internal::ShardFastPath[]>(spec_.shards)),
      durability_(spec_.durability.value_or(Durability::kNone)) {
  hasher_ = KeyHasher(spec_.seed);
  UpdateFastAdd();
  for (uint32_t i = 0; i < shard_count_; ++i) {
    shards_[i].fast = &fast_[i];
    shards_[i].ordered = spec_.type != FilterType::kBloom;  // S3
    fast_[i].head = &shards_[i];
  }
  inline_fast_ =
      remix_router_ && shard_count_ > 1 ? internal::kNoFastPaths : fast_.get();
  // The type is fixed by the spec (DecodeLinkFilter checks every link's).
  switch (spec_.type) {
    case FilterType::kBloom:
      one_link_query_ = &OneLinkQuery<BloomFilter>;
      break;
    case FilterType::kCountingBloom:
      one_link_query_ = &OneLinkQuery<CountingBloomFilter>;
      break;
    case FilterType::kCuckoo:
      one_link_query_ = &OneLinkQuery<CuckooFilter>;
      break;
  }
}

ShardedFilter::~ShardedFilter() = default;

Result<std::unique_ptr<ShardedFilter>> ShardedFilter::Create(
    const FilterSpec& spec) {
  return Create(spec, nullptr);
}

Result<std::unique_ptr<ShardedFilter>> ShardedFilter::Create(
    const FilterSpec& spec, std::shared_ptr<MemoryBudget> budget) {
  if (spec.retain_hashes) {
    return Status::InvalidArgument(
        "retain_hashes needs a Database (a standalone filter keeps nothing)");
  }
  SF_ASSIGN_OR_RETURN(FilterSpec resolved,
                      internal::ResolveSpec(spec, Durability::kNone));
  auto account = std::make_shared<internal::MemoryAccount>(std::move(budget));
  SF_ASSIGN_OR_RETURN(
      auto filters,
      internal::MakeShardFilters(resolved, *account, "creating the filter"));
  return internal::ShardedFilterAccess::Make("", resolved, std::move(filters),
                                             std::move(account));
}

const Filter& ShardedFilter::shard_filter(uint32_t shard, uint32_t link) const {
  return *Live().shards_[shard].link(link);
}

uint32_t ShardedFilter::shard_links(uint32_t shard) const {
  return Live().shards_[shard].links_visible();
}

uint64_t ShardedFilter::shard_link_items(uint32_t shard, uint32_t link) const {
  const internal::Shard& s = Live().shards_[shard];
  if (Live().spec_.type == FilterType::kBloom) return s.Fill(link);
  return s.link(link)->Counts().items;
}

Status ShardedFilter::ReadOnlyError() {
  return Status::NotSupported("filter is in a store opened read-only");
}

namespace {

// Sequence order must be apply order for types whose ops do not commute
// (Shard invariant S3).
bool NeedsOrder(FilterType t) { return t != FilterType::kBloom; }

Status DetachedError(uint8_t state) {
  if (state == internal::kDropped) {
    return Status::NotFound("filter was dropped");
  }
  return Status::NotSupported("the database was closed");
}

}  // namespace

// The single-key mutation path (Shard invariants S2, S3): under the shard's
// lock shared, apply and take a sequence, journal it (engine/
// sharded_journal.cc, FilterLog L1-L4), release, return (the
// acknowledgement).
namespace {
// ShardedFilter::PrefetchShard's body, with internal linkage so that
// InsertHash and RemoveHash (every add's path) inline it: a member defined
// here could be interposed in the shared library and would stay a call.
inline void PrefetchShardBody(const internal::ShardFastPath& p, const Shard& s,
                              uint64_t hash, bool for_write) {
  if (const std::atomic<uint64_t>* t =
          p.table.load(std::memory_order_relaxed)) {
    const auto* block =
        t + internal::SplitBlockOffset(hash, p.blocks) / sizeof(uint64_t);
    if (for_write) {
      __builtin_prefetch(block, 1);
    } else {
      __builtin_prefetch(block, 0);
    }
  } else {
    internal::ChainPrefetch(s, hash, for_write);
  }
}
}  // namespace

void ShardedFilter::PrefetchShard(uint32_t index, uint64_t hash,
                                  bool for_write) const {
  PrefetchShardBody(fast_[index], shards_[index], hash, for_write);
}

// Inline (hidden, -fvisibility-inlines-hidden): the two entry points below
// are each one call from the caller's inline add, as InsertHashSlow alone
// was (callgrind: a wrapper calling InsertHashSlow cost the counting and
// cuckoo handle adds ~20 instructions).
[[gnu::always_inline]] inline Result<AddOutcome> ShardedFilter::InsertSlow(
    uint64_t hash) {
  if (ShardedFilter* f = Forward()) return f->InsertHash(hash);
  SF_RETURN_IF_ERROR(CheckWritable());
  uint32_t index = LocalShardOf(hash);
  Shard& s = shards_[index];
  // The table's miss starts before the lock's and the fill's locked
  // instructions, which do not wait for a prefetch (they would wait for a
  // load or a locked OR of the table): at DRAM sizes one add then costs
  // about one miss less (bench/persistence_bench BM_DurableAdd, medians of
  // 3, against no prefetch: Bloom 1.6x the adds/s at durability none, 1.4x
  // journalled).
  PrefetchShardBody(fast_[index], s, hash, /*for_write=*/true);
  auto lock = internal::LockShared(s);  // S2, S5
  if (ShardedFilter* f = Forward()) {   // switched while we waited
    lock.unlock();
    return f->InsertHash(hash);
  }
  if (uint8_t d = detached_.load(std::memory_order_relaxed)) {
    return DetachedError(d);
  }
  if (Journalled()) return JournalledInsert(index, s, hash);
  AddOutcome outcome = AddOutcome::kAdded;
  if (NeedsOrder(spec_.type)) {
    std::lock_guard order(s.order_mu);
    SF_RETURN_IF_ERROR(internal::ChainAddOrdered(spec_, s, hash, &outcome));
    s.TakeOrderedSeq();
    RecordForMigration(index, hash, false);
  } else {
    // No sequence: an unjournalled Bloom add takes none (ShardHead's
    // last_seq).
    SF_RETURN_IF_ERROR(
        internal::ChainAddAt(spec_, s, fast_[index], hash, &outcome));
    RecordForMigration(index, hash, false,
                       outcome == AddOutcome::kAlreadyPresent);
  }
  s.dirty.store(true, std::memory_order_relaxed);
  return outcome;
}

Result<AddOutcome> ShardedFilter::InsertHashSlow(uint64_t hash) {
  return InsertSlow(hash);
}

Status ShardedFilter::AddHashSlow(uint64_t hash) {
  return InsertSlow(hash).status();
}

void ShardedFilter::RecordForMigration(internal::Migration* m, uint32_t shard,
                                       uint64_t hash, bool remove,
                                       bool maybe_present) {
  m->Record(shard, hash, remove, maybe_present);
}

Status ShardedFilter::RemoveHash(uint64_t hash) {
  if (ShardedFilter* f = Forward()) return f->RemoveHash(hash);
  SF_RETURN_IF_ERROR(CheckWritable());
  if (spec_.type == FilterType::kBloom) {
    return Status::NotSupported(
        "remove is not supported by Bloom filters (use a counting or cuckoo "
        "filter)");
  }
  uint32_t index = LocalShardOf(hash);
  Shard& s = shards_[index];
  PrefetchShardBody(fast_[index], s, hash, /*for_write=*/true);  // as Insert
  auto lock = internal::LockShared(s);                           // S2, S5
  if (ShardedFilter* f = Forward()) {  // switched while we waited
    lock.unlock();
    return f->RemoveHash(hash);
  }
  if (uint8_t d = detached_.load(std::memory_order_relaxed)) {
    return DetachedError(d);
  }
  if (Journalled()) return JournalledRemove(index, s, hash);
  {
    std::lock_guard order(s.order_mu);
    SF_RETURN_IF_ERROR(internal::ChainRemove(s, hash));
    s.TakeOrderedSeq();
    RecordForMigration(index, hash, true);
  }
  s.dirty.store(true, std::memory_order_relaxed);
  return Status::OK();
}

bool ShardedFilter::MayContainHashSlow(uint64_t hash) const {
  if (ShardedFilter* f = Forward()) return f->MayContainHash(hash);
  const Shard& s = shards_[LocalShardOf(hash)];
  // A one-link shard (the common case) is asked directly through its
  // type's inline query: no loop, no virtual call. S1: links_visible's
  // acquire publishes the link.
  if (s.links_visible() == 1) [[likely]] {
    return one_link_query_(*s.link(0), hash);
  }
  return internal::ChainMayContain(s, hash);  // S1
}

uint32_t ShardedFilter::CountHash(uint64_t hash) const {
  if (ShardedFilter* f = Forward()) return f->CountHash(hash);
  return internal::ChainCount(shards_[LocalShardOf(hash)], hash);  // S1
}

ShardedStats ShardedFilter::Stats() const { return Statistics(true); }
ShardedStats ShardedFilter::Counts() const { return Statistics(false); }

ShardedStats ShardedFilter::Statistics(bool scan) const {
  if (ShardedFilter* f = Forward()) return f->Statistics(scan);
  ShardedStats out;
  out.shards.resize(shard_count_);
  FilterStats& t = out.total;
  double filled_slots = 0;
  uint64_t grown_capacity = 0;  // links beyond the first
  for (uint32_t i = 0; i < shard_count_; ++i) {
    const Shard& s = shards_[i];
    ShardStats& ss = out.shards[i];
    ss.shard = i;
    ss.filter = internal::ChainStatistics(spec_, s, scan);
    ss.links = s.links_visible();
    grown_capacity += ss.filter.capacity - s.link(0)->capacity();
    ss.last_sequence = s.last_seq.load(std::memory_order_relaxed);
    ss.checkpoint_sequence =
        s.checkpoint_sequence.load(std::memory_order_relaxed);
    ss.checkpoint_generation =
        s.checkpoint_generation.load(std::memory_order_relaxed);
    ss.checkpoint_bytes = s.checkpoint_bytes.load(std::memory_order_relaxed);
    ss.dirty = s.dirty.load(std::memory_order_relaxed);
    const FilterStats& f = ss.filter;
    t.bytes += f.bytes;
    t.slots += f.slots;
    t.items += f.items;
    t.deletes += f.deletes;
    t.estimated_cardinality += f.estimated_cardinality;
    t.estimated_fpr += f.estimated_fpr / shard_count_;
    filled_slots += f.fill_ratio * static_cast<double>(f.slots);
    t.k = f.k;
  }
  t.type = spec_.type;
  // The declared capacity plus every link appended since; the compound
  // target is the declared rate (every shard's chain stays under it).
  t.capacity = spec_.capacity + grown_capacity;
  t.target_fpr = spec_.fpp;
  t.fill_ratio = t.slots ? filled_slots / static_cast<double>(t.slots) : 0;
  t.bits_per_item =
      static_cast<double>(t.bytes) * 8.0 / static_cast<double>(t.capacity);
  return out;
}

bool ShardedFilter::Equals(const ShardedFilter& other) const {
  if (ShardedFilter* f = Forward()) return f->Equals(other);
  if (ShardedFilter* o = other.Forward()) return Equals(*o);
  if (shard_count_ != other.shard_count_ || spec_.type != other.spec_.type ||
      spec_.seed != other.spec_.seed) {
    return false;
  }
  for (uint32_t i = 0; i < shard_count_; ++i) {
    if (!internal::ChainEquals(shards_[i], other.shards_[i])) return false;
  }
  return true;
}

namespace internal {

constinit const ShardFastPath kNoFastPaths[kNoFastPathCount] = {};

void ShardedFilterAccess::SetAccount(ShardedFilter& f,
                                     std::shared_ptr<MemoryAccount> account) {
  if (account == nullptr) account = std::make_shared<MemoryAccount>(nullptr);
  for (uint32_t i = 0; i < f.shard_count_; ++i) {
    f.shards_[i].account = account.get();
  }
  f.account_ = std::move(account);
}

std::unique_ptr<ShardedFilter> ShardedFilterAccess::Make(
    std::string name, const FilterSpec& spec,
    std::vector<std::unique_ptr<Filter>> filters,
    std::shared_ptr<MemoryAccount> account) {
  std::unique_ptr<ShardedFilter> f(new ShardedFilter(std::move(name), spec));
  SetAccount(*f, std::move(account));
  for (uint32_t i = 0; i < spec.shards; ++i) {
    LoadedChain chain;
    chain.links.push_back(std::move(filters[i]));
    chain.fill.push_back(0);
    InstallChain(f->shards_[i], std::move(chain));
  }
  return f;
}

std::unique_ptr<ShardedFilter> ShardedFilterAccess::MakeEmpty(
    std::string name, const FilterSpec& spec,
    std::shared_ptr<MemoryAccount> account) {
  std::unique_ptr<ShardedFilter> f(new ShardedFilter(std::move(name), spec));
  SetAccount(*f, std::move(account));
  return f;
}

void ShardedFilterAccess::Detach(ShardedFilter& f, uint8_t state) {
  const auto locks = LockAll(f);  // S4 ascending, S5
  MarkDetached(f, state);
}

}  // namespace internal

}  // namespace shardfilter
