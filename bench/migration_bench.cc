// Online migration (engine/migration.h): how fast a live filter is rebuilt
// from its retained hashes into another type and shard count, how long
// writers pause (cut + switch), with and without a writer adding during the
// migration; and what retaining hashes costs per journalled add.
//
//   build/bench/migration_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "shardfilter/engine/database.h"

namespace shardfilter::bench {
namespace {

struct Store {
  std::string path = TempPath("sfmig");
  std::unique_ptr<Database> db;
  Store() : db(OpenBenchStore(path)) {}
  ~Store() {
    db.reset();
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// items, from type, to type, writer (0/1).
void BM_OnlineMigration(benchmark::State& state) {
  const uint64_t n = state.range(0);
  const auto from = static_cast<FilterType>(state.range(1));
  const auto to = static_cast<FilterType>(state.range(2));
  const bool writer = state.range(3) != 0;
  for (auto _ : state) {
    state.PauseTiming();
    Store s;
    FilterSpec spec;
    spec.type = from;
    spec.capacity = n;
    spec.retain_hashes = true;
    auto f = s.db->Create("f", spec);
    Check(f.status());
    std::vector<uint64_t> batch;
    for (uint64_t i = 0; i < n; ++i) {
      batch.push_back(PresentKey(i));
      if (batch.size() == 65536 || i + 1 == n) {
        Check((*f)->AddHashes(batch));
        batch.clear();
      }
    }
    FilterSpec target = spec;
    target.type = to;
    target.capacity = 2 * n;
    target.shards = 0;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> adds{0};
    std::thread w;
    state.ResumeTiming();
    if (writer) {
      w = std::thread([&] {
        for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
          Check((*f)->AddHash(PresentKey(n + i)));
          adds.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    auto p = s.db->Migrate("f", target);
    state.PauseTiming();
    stop = true;
    if (w.joinable()) w.join();
    Check(p.status());
    state.counters["keys_per_s"] = static_cast<double>(p->items_done) /
                                   (p->seconds > 0 ? p->seconds : 1e-9);
    state.counters["pause_ms"] = p->write_pause_ns / 1e6;
    state.counters["ops_replayed"] = static_cast<double>(p->ops_replayed);
    state.counters["writer_adds_per_s"] =
        static_cast<double>(adds.load()) / (p->seconds > 0 ? p->seconds : 1e-9);
    state.counters["target_MiB"] = (*f)->Stats().total.bytes / 1048576.0;
    state.ResumeTiming();
  }
}
BENCHMARK(BM_OnlineMigration)
    ->ArgNames({"items", "from", "to", "writer"})
    ->Args({1'000'000, 3, 1, 0})
    ->Args({1'000'000, 3, 1, 1})
    ->Args({1'000'000, 1, 3, 0})
    ->Args({5'000'000, 2, 3, 0})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Journalled single adds, without and with retained hashes.
void BM_AddRetaining(benchmark::State& state) {
  const bool retain = state.range(0) != 0;
  Store s;
  FilterSpec spec;
  spec.type = FilterType::kCuckoo;
  spec.capacity = 10'000'000;
  spec.retain_hashes = retain;
  spec.durability = Durability::kJournal;
  auto f = s.db->Create("f", spec);
  Check(f.status());
  uint64_t i = 0;
  for (auto _ : state) Check((*f)->AddHash(PresentKey(i++)));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AddRetaining)->ArgNames({"retain"})->Arg(0)->Arg(1);

}  // namespace
}  // namespace shardfilter::bench

BENCHMARK_MAIN();
