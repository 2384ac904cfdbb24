// The one interface every structure of the side-by-side goes through, in the
// style of fastfilter_cpp's benchmarks/filterapi.h: one specialization of
// FilterAPI<Tag> per structure, every member static, so that the timed
// loops (harness.h) are instantiated per structure with each call inline in
// them, the structure's own natural call and nothing around it.
//
//   template <> struct FilterAPI<MyTag> {
//     using Table = ...;  // the structure
//     // Sized for `capacity` keys the way the structure's own constructor
//     // sizes itself (its natural load).
//     static std::shared_ptr<Table> Construct(uint64_t capacity);
//     // One key; false when the structure refused it (full).
//     static bool Add(const uint64_t& key, Table* t);
//     static bool Contain(const uint64_t& key, const Table* t);
//     // kRemove only; false when the key was not found.
//     static bool Remove(const uint64_t& key, Table* t);
//     // kBatch only: out[i] = Contain(keys[i]) for n <= kMaxBatch keys, by
//     // the structure's own batch form.
//     static void ContainBatch(const uint64_t* keys, size_t n, uint8_t* out,
//                              const Table* t);
//     static uint64_t Bytes(const Table& t);  // memory of the table itself
//     static uint64_t Slots(const Table& t);  // cuckoo: fingerprint slots
//     static constexpr bool kRemove = ..., kBatch = ...;
//   };
//
// Keys are 8-byte integers read from arrays (harness.h). Structures that
// take keys as bytes (shardfilter's) get the key's 8 bytes in memory, as a
// user hands them over: hashing is part of every operation.
#ifndef SHARDFILTER_BENCH_PEERS_FILTER_API_H_
#define SHARDFILTER_BENCH_PEERS_FILTER_API_H_

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace sbs {

template <typename Tag>
struct FilterAPI;

// Keys per ContainBatch call (the harness's batched cells call it with
// exactly this many).
inline constexpr size_t kMaxBatch = 1024;

template <typename A>
concept Adaptor = requires(const uint64_t& key, typename A::Table* t,
                           const typename A::Table* ct, uint64_t* keys,
                           uint8_t* out) {
  { A::Construct(uint64_t{1}) } -> std::same_as<std::shared_ptr<typename A::Table>>;
  { A::Add(key, t) } -> std::same_as<bool>;
  { A::Contain(key, ct) } -> std::same_as<bool>;
  { A::Bytes(*ct) } -> std::same_as<uint64_t>;
  { A::Slots(*ct) } -> std::same_as<uint64_t>;
  { A::kRemove } -> std::convertible_to<bool>;
  { A::kBatch } -> std::convertible_to<bool>;
};

// efficient/cuckoofilter's table size for `n` keys (src/cuckoofilter.h,
// CuckooFilter's constructor): buckets of 4 slots, a power of two of them
// for n / 4, doubled when that would be more than 96% full. The matched-load
// cells size shardfilter's cuckoo filter and fill the peer's table from it.
inline uint64_t EfficientCuckooSlots(uint64_t n) {
  uint64_t want = n / 4 > 1 ? n / 4 : 1;
  uint64_t buckets = 1;
  while (buckets < want) buckets <<= 1;
  if (static_cast<double>(n) / static_cast<double>(buckets) / 4 > 0.96) {
    buckets <<= 1;
  }
  return buckets * 4;
}

}  // namespace sbs

#endif  // SHARDFILTER_BENCH_PEERS_FILTER_API_H_
