// What one small filter costs: N standalone ShardedFilter::Create of the
// Redis module's BF.RESERVE spec (capacity 500, rate 1%, scaling,
// expansion 2, max_bytes 1 GiB, one shard; or CF.RESERVE's with "cf"),
// then M adds each, an export of each and its decode (the module's RDB
// save and load). Prints, per filter: heap bytes (glibc mallinfo2), calls
// and bytes of operator new (counted here), table bytes, the bytes the
// engine charges the memory budget per filter (MemoryBudget::used) and the
// CPU time of a create and of a decode. A plain program: no Google Benchmark.
//
//   build/bench/sf_small_filters [N] [bf|cf|cbf] [adds per filter]
// (cbf: a counting Bloom filter of the same capacity and rate, SF.CREATE's
// counting type).
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "shardfilter/engine/export.h"
#include "shardfilter/engine/memory_budget.h"
#include "shardfilter/engine/sharded_filter.h"

namespace {
std::atomic<uint64_t> g_news{0}, g_new_bytes{0};

void* Counted(size_t n, size_t align) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  g_new_bytes.fetch_add(n, std::memory_order_relaxed);
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(n == 0 ? 1 : n)
                : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) { return Counted(n, 0); }
void* operator new[](size_t n) { return Counted(n, 0); }
void* operator new(size_t n, std::align_val_t a) {
  return Counted(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a) {
  return Counted(n, static_cast<size_t>(a));
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return Counted(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  try {
    return Counted(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(size_t n, std::align_val_t a,
                   const std::nothrow_t&) noexcept {
  try {
    return Counted(n, static_cast<size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, std::align_val_t a,
                     const std::nothrow_t&) noexcept {
  try {
    return Counted(n, static_cast<size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace {

using shardfilter::FilterSpec;
using shardfilter::FilterType;
using shardfilter::ShardedFilter;

double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

uint64_t HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

void Die(const shardfilter::Status& s) {
  std::fprintf(stderr, "sf_small_filters: %s\n", s.ToString().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  const std::string_view kind = argc > 2 ? argv[2] : "bf";
  const bool cuckoo = kind == "cf";
  const bool counting = kind == "cbf";
  const int adds = argc > 3 ? std::atoi(argv[3]) : 20;
  if (n <= 0 || adds < 0 || (!cuckoo && !counting && kind != "bf")) {
    std::fprintf(stderr, "usage: %s [N > 0] [bf|cf|cbf] [adds per filter]\n",
                 argv[0]);
    return 2;
  }
  FilterSpec spec;  // the module's ToFilterSpec (tools/module)
  spec.type = cuckoo     ? FilterType::kCuckoo
              : counting ? FilterType::kCountingBloom
                         : FilterType::kBloom;
  spec.capacity = 500;
  spec.fpp = 0.01;
  spec.expansion = 2;
  spec.max_bytes = uint64_t{1} << 30;
  spec.durability = shardfilter::Durability::kNone;
  if (cuckoo) spec.bucket_size = 2;  // CF.RESERVE's default
  auto budget = std::make_shared<shardfilter::MemoryBudget>(uint64_t{16} << 30);

  std::vector<std::unique_ptr<ShardedFilter>> filters;
  filters.reserve(n);
  malloc_trim(0);
  const uint64_t heap0 = HeapBytes(), news0 = g_news, bytes0 = g_new_bytes;
  const uint64_t charged0 = budget->used();
  const double t0 = CpuSeconds();
  for (int i = 0; i < n; ++i) {
    auto f = ShardedFilter::Create(spec, budget);
    if (!f.ok()) Die(f.status());
    filters.push_back(std::move(f).value());
  }
  const double t1 = CpuSeconds();
  const uint64_t heap1 = HeapBytes(), news1 = g_news, bytes1 = g_new_bytes;
  const uint64_t charged1 = budget->used();
  char key[64];
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < adds; ++j) {
      const int len = std::snprintf(key, sizeof key, "item:%d:%d", i, j);
      const shardfilter::Status s =
          filters[i]->Add(std::string_view(key, static_cast<size_t>(len)));
      if (!s.ok()) Die(s);
    }
  }
  const uint64_t heap2 = HeapBytes();
  const shardfilter::ShardedStats st = filters[0]->Counts();

  // The module's save and load: an export each, then its decode.
  std::vector<std::string> exports;
  exports.reserve(n);
  for (const auto& f : filters) exports.push_back(ExportShardedFilter(*f));
  filters.clear();
  malloc_trim(0);
  const double t2 = CpuSeconds();
  for (const std::string& e : exports) {
    auto f = shardfilter::LoadExportedFilter(e, budget);
    if (!f.ok()) Die(f.status());
    filters.push_back(std::move(f).value());
  }
  const double t3 = CpuSeconds();

  const double per = 1.0 / n;
  std::printf(
      "filters %d (%s, capacity 500, rate 0.01, scaling), adds %d each\n", n,
      cuckoo     ? "cuckoo"
      : counting ? "counting"
                 : "bloom",
      adds);
  std::printf("table bytes          %llu\n",
              static_cast<unsigned long long>(st.total.bytes));
  std::printf("heap bytes/filter    %.0f (after the adds %.0f)\n",
              static_cast<double>(heap1 - heap0) * per,
              static_cast<double>(heap2 - heap0) * per);
  std::printf("operator new/filter  %.1f calls, %.0f bytes\n",
              static_cast<double>(news1 - news0) * per,
              static_cast<double>(bytes1 - bytes0) * per);
  std::printf("budget bytes/filter  %.0f\n",
              static_cast<double>(charged1 - charged0) * per);
  std::printf("create               %.2f us CPU\n", (t1 - t0) * 1e6 * per);
  std::printf("decode (load)        %.2f us CPU\n", (t3 - t2) * 1e6 * per);
  return 0;
}
