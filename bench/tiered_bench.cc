// A 90%-absent query workload (a blacklist check: 1 query in 10 is a listed
// key) against 1e6 listed 8-byte keys, answered by:
//   Tiered      Bloom 10% -> Bloom 1% -> exact level (RocksDB, in a
//               Database); no false positive. Single key and batches.
//   Single      one in-memory sharded Bloom filter of the tiered filters'
//               compound FPR (0.1%): no exact answer (0.1% false positives).
//   ExactOnly   the key set alone in RocksDB, one Get per query, with
//               (bloom:1, 10 bits/key whole-key filter) and without (bloom:0)
//               RocksDB's block-based Bloom filter policy.
// Every RocksDB set is flushed and compacted into SST files first (reads
// then go through the block cache, RocksDB's default 32 MiB LRU), as a
// long-running service's would. Counters: ops_per_s, filter_bytes (the
// in-memory filters), rocks_gets_per_query, fp_pct (wrong "listed").
//
//   build/bench/tiered_bench --benchmark_counters_tabular=true
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/tiered_filter.h"

namespace shardfilter::bench {
namespace {

constexpr uint64_t kListed = 1'000'000;
constexpr size_t kBatch = 1 << 16;

std::string& Root() {
  static std::string root = [] {
    std::string t = "/tmp/sf_tiered_bench_XXXXXX";
    if (mkdtemp(t.data()) == nullptr) abort();
    return t;
  }();
  return root;
}

// Query q: every tenth is a listed key, the others absent.
uint64_t QueryKey(uint64_t q, bool* listed) {
  *listed = q % 10 == 0;
  return *listed ? PresentKey((q / 10) % kListed) : AbsentKey(q);
}

// Flushes and compacts every column family of a closed RocksDB directory.
void Compact(const std::string& path) {
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies({}, path, &names).ok()) abort();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& n : names)
    cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::Open({}, path, cfs, &handles, &db).ok()) abort();
  for (auto* h : handles) {
    if (!db->Flush({}, h).ok()) abort();
    if (!db->CompactRange({}, h, nullptr, nullptr).ok()) abort();
    db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  }
  delete db;
}

struct TieredSetup {
  std::unique_ptr<Database> db;
  std::shared_ptr<TieredFilter> filter;
};

TieredSetup& Tiered() {
  static TieredSetup s = [] {
    std::string path = Root() + "/tiered";
    TieredSpec spec;
    FilterSpec coarse, fine;
    coarse.capacity = fine.capacity = kListed;
    coarse.fpp = 0.1;
    fine.fpp = 0.01;
    spec.levels = {coarse, fine};
    spec.exact_level = true;
    spec.durability = Durability::kNone;  // build speed; reads are measured
    {
      auto db = Database::Open({.path = path});
      if (!db.ok()) abort();
      auto t = TieredFilter::Create(db->get(), "blacklist", spec);
      if (!t.ok()) abort();
      std::vector<uint64_t> keys(kBatch);
      std::vector<std::string_view> views(kBatch);
      for (uint64_t i = 0; i < kListed; i += kBatch) {
        size_t n = std::min<uint64_t>(kBatch, kListed - i);
        for (size_t j = 0; j < n; ++j) {
          keys[j] = PresentKey(i + j);
          views[j] = KeyBytes(keys[j]);
        }
        if (!(*t)->AddKeys({views.data(), n}).ok()) abort();
      }
      if (!(*db)->Close().ok()) abort();
    }
    Compact(path);
    TieredSetup out;
    auto db = Database::Open({.path = path});
    if (!db.ok()) abort();
    out.db = std::move(*db);
    auto t = TieredFilter::Open(out.db.get(), "blacklist");
    if (!t.ok()) abort();
    out.filter = *t;
    return out;
  }();
  return s;
}

void Report(benchmark::State& state, uint64_t queries, uint64_t wrong,
            double gets, double filter_bytes) {
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(queries),
                                                   benchmark::Counter::kIsRate);
  state.counters["fp_pct"] = 100.0 * wrong / queries;
  state.counters["rocks_gets_per_query"] = gets / queries;
  state.counters["filter_bytes"] = filter_bytes;
}

void BM_Tiered(benchmark::State& state) {
  TieredFilter& t = *Tiered().filter;
  TieredStats before = t.Stats();
  uint64_t q = 0, wrong = 0;
  for (auto _ : state) {
    bool listed;
    uint64_t k = QueryKey(q++, &listed);
    Result<bool> r = t.Contains(KeyBytes(k));
    wrong += (!r.ok() || *r != listed);
  }
  TieredStats after = t.Stats();
  Report(state, q, wrong, after.exact_reached - before.exact_reached,
         after.filter_bytes);
  state.counters["settled_l0_pct"] =
      100.0 * (after.levels[0].settled - before.levels[0].settled) / q;
}
BENCHMARK(BM_Tiered);

void BM_TieredBatch(benchmark::State& state) {
  TieredFilter& t = *Tiered().filter;
  TieredStats before = t.Stats();
  size_t batch = static_cast<size_t>(state.range(0));
  std::vector<uint64_t> keys(batch);
  std::vector<std::string_view> views(batch);
  std::vector<uint8_t> listed(batch), out(batch);
  uint64_t q = 0, wrong = 0;
  for (auto _ : state) {
    for (size_t j = 0; j < batch; ++j) {
      bool l;
      keys[j] = QueryKey(q++, &l);
      listed[j] = l;
      views[j] = KeyBytes(keys[j]);
    }
    if (!t.ContainsKeys(views, out).ok()) abort();
    for (size_t j = 0; j < batch; ++j) wrong += out[j] != listed[j];
  }
  TieredStats after = t.Stats();
  Report(state, q, wrong, after.exact_reached - before.exact_reached,
         after.filter_bytes);
}
BENCHMARK(BM_TieredBatch)->ArgName("batch")->Arg(1024);

void BM_Single(benchmark::State& state) {
  static std::shared_ptr<ShardedFilter> f = [] {
    FilterSpec spec;
    spec.capacity = kListed;
    spec.fpp = 0.001;  // the tiered filter levels' compound rate
    auto r = ShardedFilter::Create(spec);
    if (!r.ok()) abort();
    std::vector<uint64_t> h(kBatch);
    for (uint64_t i = 0; i < kListed; i += kBatch) {
      size_t n = std::min<uint64_t>(kBatch, kListed - i);
      for (size_t j = 0; j < n; ++j)
        h[j] = (*r)->Hash(KeyBytes(PresentKey(i + j)));
      if (!(*r)->AddHashes({h.data(), n}).ok()) abort();
    }
    return std::shared_ptr<ShardedFilter>(std::move(*r));
  }();
  uint64_t q = 0, wrong = 0;
  for (auto _ : state) {
    bool listed;
    uint64_t k = QueryKey(q++, &listed);
    wrong += f->MayContain(KeyBytes(k)) != listed;
  }
  Report(state, q, wrong, 0, static_cast<double>(f->Stats().total.bytes));
}
BENCHMARK(BM_Single);

rocksdb::DB* ExactOnly(bool bloom) {
  static rocksdb::DB* dbs[2] = {nullptr, nullptr};
  if (dbs[bloom] != nullptr) return dbs[bloom];
  std::string path = Root() + (bloom ? "/exact_bloom" : "/exact_plain");
  rocksdb::Options o;
  o.create_if_missing = true;
  if (bloom) {
    rocksdb::BlockBasedTableOptions t;
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  }
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::Open(o, path, &db).ok()) abort();
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  for (uint64_t i = 0; i < kListed; ++i) {
    uint64_t k = PresentKey(i);
    if (!db->Put(wo, KeyBytes(k), "").ok()) abort();
  }
  if (!db->Flush({}).ok()) abort();
  if (!db->CompactRange({}, nullptr, nullptr).ok()) abort();
  dbs[bloom] = db;
  return db;
}

void BM_ExactOnly(benchmark::State& state) {
  rocksdb::DB* db = ExactOnly(state.range(0) != 0);
  std::string value;
  uint64_t q = 0, wrong = 0;
  for (auto _ : state) {
    bool listed;
    uint64_t k = QueryKey(q++, &listed);
    rocksdb::Status s = db->Get({}, KeyBytes(k), &value);
    wrong += s.ok() != listed;
  }
  Report(state, q, wrong, static_cast<double>(q), 0);
}
BENCHMARK(BM_ExactOnly)->ArgName("bloom")->Arg(0)->Arg(1);

}  // namespace
}  // namespace shardfilter::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  std::filesystem::remove_all(shardfilter::bench::Root(), ec);
  return 0;
}
