// CuckooFilter's batch forms: hash a chunk of keys, then walk it with the
// buckets of the key kPrefetchWindow ahead already requested (write intent
// for adds and removes), so a batch keeps many DRAM misses in flight
// whatever the CPU's reorder window. Same contracts as the single calls
// (filters/cuckoo_filter.h).
#include <algorithm>

#include "shardfilter/filters/cuckoo_filter.h"

namespace shardfilter {

Status CuckooFilter::AddHashes(std::span<const uint64_t> hashes,
                               size_t* added) {
  const size_t n = hashes.size();
  for (size_t i = 0; i < std::min(n, kPrefetchWindow); ++i) {
    PrefetchBuckets(hashes[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchWindow < n) PrefetchBuckets(hashes[i + kPrefetchWindow]);
    Status s = Insert(hashes[i], false);
    if (!s.ok()) {
      if (added != nullptr) *added = i;
      return s;
    }
  }
  if (added != nullptr) *added = n;
  return Status::OK();
}

void CuckooFilter::MayContainHashes(std::span<const uint64_t> hashes,
                                    std::span<uint8_t> out) const {
  const size_t n = std::min(hashes.size(), out.size());
  // `window` keys ahead through `prefetch`: into L1 for a table the caches
  // hold, into L2 past kL2PrefetchMinBytes (cuckoo_filter.h).
  auto run = [&](size_t window, auto prefetch) {
    for (size_t i = 0; i < std::min(n, window); ++i) prefetch(hashes[i]);
    for (size_t i = 0; i < n; ++i) {
      if (i + window < n) prefetch(hashes[i + window]);
      out[i] = MayContainHashInline(hashes[i]) ? 1 : 0;
    }
  };
  if (table_.bytes() < kL2PrefetchMinBytes) {
    run(kPrefetchWindow, [this](uint64_t h) { PrefetchBuckets(h); });
  } else {
    run(kQueryPrefetchWindow, [this](uint64_t h) { PrefetchBucketsL2(h); });
  }
}

void CuckooFilter::RemoveHashes(std::span<const uint64_t> hashes,
                                std::span<uint8_t> removed) {
  const size_t n = std::min(hashes.size(), removed.size());
  for (size_t i = 0; i < std::min(n, kPrefetchWindow); ++i) {
    PrefetchForWrite(Locate(hashes[i]));
  }
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchWindow < n) {
      PrefetchForWrite(Locate(hashes[i + kPrefetchWindow]));
    }
    removed[i] = RemoveHash(hashes[i]).ok() ? 1 : 0;
  }
}

namespace {

constexpr size_t kHashChunk = 256;

// Hashes keys in chunks of kHashChunk and hands each chunk, with its slice
// of out, to fn(hashes, out_slice).
template <typename Fn>
void ForHashChunks(const KeyHasher& hasher,
                   std::span<const std::string_view> keys,
                   std::span<uint8_t> out, Fn&& fn) {
  uint64_t hashes[kHashChunk];
  const size_t n = std::min(keys.size(), out.size());
  for (size_t done = 0; done < n;) {
    const size_t m = std::min(kHashChunk, n - done);
    for (size_t i = 0; i < m; ++i) hashes[i] = hasher(keys[done + i]);
    fn(std::span<const uint64_t>(hashes, m), out.subspan(done, m));
    done += m;
  }
}

}  // namespace

Status CuckooFilter::AddKeys(std::span<const std::string_view> keys,
                             size_t* added) {
  uint64_t hashes[kHashChunk];
  size_t done = 0;
  while (done < keys.size()) {
    const size_t m = std::min(kHashChunk, keys.size() - done);
    for (size_t i = 0; i < m; ++i) hashes[i] = hasher_(keys[done + i]);
    size_t chunk_added = 0;
    Status s = AddHashes(std::span<const uint64_t>(hashes, m), &chunk_added);
    done += chunk_added;
    if (!s.ok()) {
      if (added != nullptr) *added = done;
      return s;
    }
  }
  if (added != nullptr) *added = done;
  return Status::OK();
}

void CuckooFilter::MayContainKeys(std::span<const std::string_view> keys,
                                  std::span<uint8_t> out) const {
  ForHashChunks(hasher_, keys, out, [&](auto hashes, auto slice) {
    MayContainHashes(hashes, slice);
  });
}

void CuckooFilter::RemoveKeys(std::span<const std::string_view> keys,
                              std::span<uint8_t> removed) {
  ForHashChunks(hasher_, keys, removed,
                [&](auto hashes, auto slice) { RemoveHashes(hashes, slice); });
}

}  // namespace shardfilter
