#include "shardfilter/persistence/hash_memtable.h"

#include <rocksdb/memtablerep.h>
#include <rocksdb/version.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "shardfilter/filters/hash.h"

namespace shardfilter::persistence::internal {

namespace {

using rocksdb::KeyHandle;
using rocksdb::MemTableRep;
using rocksdb::Slice;
using KeyComparator = rocksdb::MemTableRep::KeyComparator;

// rocksdb::LookupKey is declared in RocksDB's internal db/dbformat.h (not
// installed). Its first member is `const char* start_`, the lookup's
// memtable key (varint32 length | internal key), the same since LevelDB;
// MemTableRep::Get has no other way to reach the key. Check this on a
// RocksDB major version upgrade (hash_memtable_test covers Get).
static_assert(ROCKSDB_MAJOR >= 6 && ROCKSDB_MAJOR <= 9,
              "check rocksdb::LookupKey's layout (start_ first)");
const char* MemtableKeyOf(const rocksdb::LookupKey& k) {
  const char* p;
  std::memcpy(&p, static_cast<const void*>(&k), sizeof p);
  return p;
}

// A node: [char* next][memtable entry: varint32 len | internal key | ...].
constexpr size_t kLink = sizeof(char*);

std::atomic_ref<char*> LinkOf(char* node) {
  return std::atomic_ref<char*>(*reinterpret_cast<char**>(node));
}

// The user key of a memtable entry (internal key minus its 8-byte tag).
std::string_view UserKeyOf(const char* entry) {
  Slice ikey = rocksdb::GetLengthPrefixedSlice(entry);
  return {ikey.data(), ikey.size() >= 8 ? ikey.size() - 8 : 0};
}

constexpr uint64_t kBucketSeed = 0x68617368696478ULL;  // "hashidx"

using Sorted = std::shared_ptr<const std::vector<const char*>>;

// Counts a reader (Get, Contains, an iterator) of a rep while it runs. The
// rep is destroyed (with its arena, right after) only when RocksDB drops
// the memtable's last reference, which it does after every reader is done;
// its destructor's acquire load of the count pairs with each reader's
// release, making that order explicit (and visible to ThreadSanitizer,
// which cannot see RocksDB's own reference counting in the uninstrumented
// library).
class ReaderRef {
 public:
  explicit ReaderRef(std::atomic<int64_t>* n) : n_(n) {
    n_->fetch_add(1, std::memory_order_relaxed);
  }
  ReaderRef(ReaderRef&& o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
  ReaderRef(const ReaderRef&) = delete;
  ReaderRef& operator=(const ReaderRef&) = delete;
  ReaderRef& operator=(ReaderRef&&) = delete;
  ~ReaderRef() {
    // Release: every access of this reader happens before the rep's end.
    if (n_ != nullptr) n_->fetch_sub(1, std::memory_order_release);
  }

 private:
  std::atomic<int64_t>* n_;
};

// Holds the iterator's ReaderRef as its first base: destroyed last, after
// the members and the Iterator base.
struct ReaderHold {
  ReaderRef ref;
};

// Ordered iteration over a sorted snapshot of entries.
class SortedIterator final : private ReaderHold, public MemTableRep::Iterator {
 public:
  SortedIterator(ReaderRef ref, Sorted entries, const KeyComparator& cmp)
      : ReaderHold{std::move(ref)},
        v_(std::move(entries)),
        cmp_(cmp),
        i_(v_->size()) {}

  bool Valid() const override { return i_ < v_->size(); }
  const char* key() const override { return (*v_)[i_]; }
  void Next() override { ++i_; }
  void Prev() override { i_ = i_ == 0 ? v_->size() : i_ - 1; }
  // First entry >= target.
  void Seek(const Slice& ikey, const char* memkey) override {
    auto it = std::partition_point(v_->begin(), v_->end(), [&](const char* e) {
      return Compare(e, ikey, memkey) < 0;
    });
    i_ = it - v_->begin();
  }
  // Last entry <= target.
  void SeekForPrev(const Slice& ikey, const char* memkey) override {
    auto it = std::partition_point(v_->begin(), v_->end(), [&](const char* e) {
      return Compare(e, ikey, memkey) <= 0;
    });
    i_ = it == v_->begin() ? v_->size() : (it - v_->begin()) - 1;
  }
  void SeekToFirst() override { i_ = 0; }
  void SeekToLast() override { i_ = v_->empty() ? 0 : v_->size() - 1; }

 private:
  int Compare(const char* e, const Slice& ikey, const char* memkey) const {
    return memkey != nullptr ? cmp_(e, memkey) : cmp_(e, ikey);
  }

  Sorted v_;
  const KeyComparator& cmp_;
  size_t i_;
};

class HashIndexRep final : public MemTableRep {
 public:
  HashIndexRep(const KeyComparator& cmp, rocksdb::Allocator* allocator,
               size_t buckets)
      : MemTableRep(allocator), cmp_(cmp), mask_(buckets - 1) {
    char* raw = nullptr;
    MemTableRep::Allocate(buckets * kLink + 63, &raw);
    auto at = (reinterpret_cast<uintptr_t>(raw) + 63) & ~uintptr_t{63};
    buckets_ = reinterpret_cast<char**>(at);
    std::memset(buckets_, 0, buckets * kLink);  // arena memory is not zeroed
  }

  // The node header (8-byte aligned: atomic_ref needs it; the arena's
  // unaligned Allocate gives no alignment) precedes the entry.
  KeyHandle Allocate(const size_t len, char** buf) override {
    char* raw = nullptr;
    MemTableRep::Allocate(len + kLink + kLink - 1, &raw);
    auto at = (reinterpret_cast<uintptr_t>(raw) + kLink - 1) & ~(kLink - 1);
    char* node = reinterpret_cast<char*>(at);
    *buf = node + kLink;
    return node;
  }

  // REQUIRES: no concurrent Insert (one writer).
  void Insert(KeyHandle handle) override {
    char* node = static_cast<char*>(handle);
    std::atomic_ref<char*> head(*Bucket(UserKeyOf(node + kLink)));
    LinkOf(node).store(head.load(std::memory_order_relaxed),
                       std::memory_order_relaxed);
    // Release: the entry bytes and its link are visible with the head.
    head.store(node, std::memory_order_release);
    count_.fetch_add(1, std::memory_order_relaxed);
  }

  ~HashIndexRep() override {
    // Pairs with each reader's release (ReaderRef): none is left.
    [[maybe_unused]] int64_t left = readers_.load(std::memory_order_acquire);
    assert(left == 0);
  }

  bool Contains(const char* key) const override {
    ReaderRef ref(&readers_);
    for (char* n = Head(UserKeyOf(key)); n != nullptr; n = Next(n)) {
      if (cmp_(n + kLink, key) == 0) return true;
    }
    return false;
  }

  void MarkReadOnly() override {
    read_only_.store(true, std::memory_order_release);
  }

  // Calls back with the user key's entries at or after the lookup key
  // (sequence <= the lookup's), in internal key order (newest first).
  void Get(const rocksdb::LookupKey& k, void* arg,
           bool (*callback)(void* arg, const char* entry)) override {
    ReaderRef ref(&readers_);
    const char* memkey = MemtableKeyOf(k);
    const std::string_view ukey = UserKeyOf(memkey);
    const char* one[4];
    std::vector<const char*> more;
    size_t n_found = 0;
    for (char* n = Head(ukey); n != nullptr; n = Next(n)) {
      const char* e = n + kLink;
      if (UserKeyOf(e) != ukey || cmp_(e, memkey) < 0) continue;
      if (n_found < 4) {
        one[n_found] = e;
      } else {
        if (more.empty()) more.assign(one, one + 4);
        more.push_back(e);
      }
      ++n_found;
    }
    const char** first = more.empty() ? one : more.data();
    // Chains are newest first already; the sort makes the order a fact.
    std::sort(first, first + n_found,
              [&](const char* a, const char* b) { return cmp_(a, b) < 0; });
    for (size_t i = 0; i < n_found; ++i) {
      if (!callback(arg, first[i])) break;
    }
  }

  size_t ApproximateMemoryUsage() override { return 0; }  // all in the arena

  Iterator* GetIterator(rocksdb::Arena* arena) override {
    ReaderRef ref(&readers_);
    Sorted entries = SortedEntries();
    if (arena == nullptr) {
      return new SortedIterator(std::move(ref), std::move(entries), cmp_);
    }
    // RocksDB only destroys an iterator placed in its arena (the arena
    // frees the bytes); ours are placed in storage this rep owns and frees
    // (one small block per ordered scan of this memtable).
    std::lock_guard lock(mu_);
    iterator_storage_.emplace_back(new IteratorBytes);
    return new (iterator_storage_.back()->bytes)
        SortedIterator(std::move(ref), std::move(entries), cmp_);
  }

 private:
  struct IteratorBytes {
    alignas(SortedIterator) unsigned char bytes[sizeof(SortedIterator)];
  };

  char** Bucket(std::string_view ukey) const {
    return &buckets_[HashKey(ukey, kBucketSeed) & mask_];
  }
  char* Head(std::string_view ukey) const {
    return std::atomic_ref<char*>(*Bucket(ukey))
        .load(std::memory_order_acquire);
  }
  static char* Next(char* node) {
    return LinkOf(node).load(std::memory_order_acquire);
  }

  // Every entry, sorted; cached once the memtable is read-only (no insert
  // can follow MarkReadOnly).
  Sorted SortedEntries() {
    if (!read_only_.load(std::memory_order_acquire)) return Snapshot();
    std::lock_guard lock(mu_);
    if (sorted_ == nullptr) sorted_ = Snapshot();
    return sorted_;
  }

  // Sorting 1M entry pointers with the comparator costs ~20 dependent
  // cache misses per entry (~1.5 s here). Instead each entry gets a sort
  // key: the 8 user-key bytes after the prefix all keys share, big-endian,
  // zero-padded; pairs (sort key, entry) sort in cache-friendly arrays and
  // only ties consult the comparator. This is the comparator's order
  // because it is bytewise (REQUIRES above): keys equal up to `common`
  // bytes are ordered by the bytes after it, and zero padding puts a key
  // before its extensions (ties go to the comparator).
  Sorted Snapshot() const {
    std::vector<const char*> entries;
    entries.reserve(count_.load(std::memory_order_relaxed) + 64);
    for (size_t b = 0; b <= mask_; ++b) {
      char* n =
          std::atomic_ref<char*>(buckets_[b]).load(std::memory_order_acquire);
      for (; n != nullptr; n = Next(n)) entries.push_back(n + kLink);
    }
    size_t common = SIZE_MAX;
    std::string_view first;
    for (const char* e : entries) {
      std::string_view u = UserKeyOf(e);
      if (common == SIZE_MAX) {
        first = u;
        common = u.size();
        continue;
      }
      size_t n = std::min(common, u.size());
      common =
          std::mismatch(first.begin(), first.begin() + n, u.begin()).first -
          first.begin();
    }
    struct Item {
      uint64_t key8;
      const char* entry;
    };
    std::vector<Item> items(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      std::string_view u = UserKeyOf(entries[i]);
      uint64_t k = 0;
      for (size_t j = common; j < common + 8; ++j) {
        k = (k << 8) | (j < u.size() ? static_cast<uint8_t>(u[j]) : 0);
      }
      items[i] = {k, entries[i]};
    }
    std::sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
      if (a.key8 != b.key8) return a.key8 < b.key8;
      return cmp_(a.entry, b.entry) < 0;
    });
    for (size_t i = 0; i < items.size(); ++i) entries[i] = items[i].entry;
    return std::make_shared<const std::vector<const char*>>(std::move(entries));
  }

  const KeyComparator& cmp_;
  const size_t mask_;
  char** buckets_;  // mask_ + 1 heads, in the arena
  std::atomic<size_t> count_{0};
  std::atomic<bool> read_only_{false};
  mutable std::atomic<int64_t> readers_{0};  // ReaderRef
  std::mutex mu_;
  Sorted sorted_;  // GUARDED_BY(mu_), once read-only
  std::vector<std::unique_ptr<IteratorBytes>> iterator_storage_;  // mu_
};

class HashIndexFactory final : public rocksdb::MemTableRepFactory {
 public:
  explicit HashIndexFactory(size_t buckets) : buckets_(buckets) {}
  const char* Name() const override { return "ShardfilterHashIndex"; }
  MemTableRep* CreateMemTableRep(const KeyComparator& cmp,
                                 rocksdb::Allocator* allocator,
                                 const rocksdb::SliceTransform*,
                                 rocksdb::Logger*) override {
    return new HashIndexRep(cmp, allocator, buckets_);
  }

 private:
  size_t buckets_;
};

}  // namespace

std::shared_ptr<rocksdb::MemTableRepFactory> NewHashIndexMemTableFactory(
    size_t bucket_count) {
  return std::make_shared<HashIndexFactory>(
      std::bit_ceil(std::max<size_t>(bucket_count, 1024)));
}

}  // namespace shardfilter::persistence::internal
