// A RocksDB memtable representation for column families that are read and
// written by point operations only, such as the dedup family
// (persistence/store.cc, docs/dedup.md "Performance"): a fixed array of
// hash buckets over the user key, each bucket a singly linked chain of
// entries (newest first). An insert costs a hash and ~2 cache misses (the
// bucket, the entry) instead of a skiplist descent (~20 dependent misses
// at 1M entries: measured 75% of a dedup insert); a point Get walks one
// chain (~1 entry at the sizing below). Ordered iteration (flush, scans)
// sorts a snapshot of the entries: done once per immutable memtable (the
// flush, cached for later scans), and once per iterator over the mutable
// memtable (a scan of a set while a memtable holds 1M entries sorts them:
// about 1 s here, estimated from the dedup bench's reopen times).
//
// Requirements (REQUIRES, checked by RocksDB or documented):
//  * one writer at a time: the rep reports no concurrent-insert support, so
//    RocksDB refuses DBOptions::allow_concurrent_memtable_write = true;
//    any number of readers run concurrently with that writer;
//  * the family's comparator is BytewiseComparator (the default): entries
//    are hashed by their user key bytes, and sorted by a bytewise key;
//  * no prefix extractor on the family (iteration is always total order).
//
// Concurrency: a bucket head and each entry's `next` pointer are written
// by the one writer with release (the entry's bytes, written before, become
// visible with it) and read with acquire, so a reader that reaches an entry
// sees it whole. A reader never sees a half-linked chain: an entry's next is
// set before the entry is published. An iterator over the mutable memtable
// sees at least every entry published before it was created, which covers
// every sequence number its DB snapshot can see (RocksDB publishes a
// sequence only after its memtable inserts).
#ifndef SHARDFILTER_PERSISTENCE_HASH_MEMTABLE_H_
#define SHARDFILTER_PERSISTENCE_HASH_MEMTABLE_H_

#include <cstddef>
#include <memory>

namespace rocksdb {
class MemTableRepFactory;
}  // namespace rocksdb

namespace shardfilter::persistence::internal {

// bucket_count: rounded up to a power of two (at least 1024); 8 bytes each,
// charged to the memtable's arena. About one bucket per entry the memtable
// holds at write_buffer_size keeps chains at ~1 entry.
std::shared_ptr<rocksdb::MemTableRepFactory> NewHashIndexMemTableFactory(
    size_t bucket_count);

}  // namespace shardfilter::persistence::internal

#endif  // SHARDFILTER_PERSISTENCE_HASH_MEMTABLE_H_
