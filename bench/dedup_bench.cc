// InsertIfAbsent throughput of the dedup store against the baseline a user
// would write: RocksDB Get, then Put when absent, with RocksDB's own SST
// Bloom filters (BlockBasedTableOptions::filter_policy =
// NewBloomFilterPolicy(10)) and the same WAL settings (WAL on, no sync:
// durability journal). Workloads: 90% and 10% of the offered keys new.
// Each run first loads `base` keys (so that duplicates have something to
// hit and RocksDB holds SSTs), then times `ops` InsertIfAbsent calls, single
// and batched (1024 keys: MultiGet + one WriteBatch for the baseline too).
//
//   build/bench/dedup_bench                          # 1e6 keys (default)
//   SF_DEDUP_BENCH_KEYS=10000000 build/bench/dedup_bench   # the 1e7 run
//
// Prints one line per case: ops/s and the ratio to the baseline. Keys are
// 16-byte strings. The stores live under $TMPDIR (default /tmp).
//
// SF_DEDUP_BENCH_JOURNAL_BYTES=N sets DedupOptions::journal_bytes (0: no
// journal file: a RocksDB write per call).
//
// SF_DEDUP_BENCH_BASELINE_MEMTABLE=hash gives the baseline the dedup
// family's hash-indexed memtable too (persistence/hash_memtable.h,
// allow_concurrent_memtable_write off): not what a user would write, but it
// shows how much of the gain is the memtable and how much the filter.
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/persistence/hash_memtable.h"

namespace shardfilter::bench {
namespace {

std::string TempPath() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/sfdedup_XXXXXX";
  return mkdtemp(tmpl.data()) ? tmpl : "/tmp/sfdedup";
}

void Check(bool ok, const std::string& what) {
  if (!ok) {
    fprintf(stderr, "dedup_bench: %s\n", what.c_str());
    exit(1);
  }
}

std::string KeyOf(uint64_t i) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx",
           static_cast<unsigned long long>(Remix(i + 1)));
  return std::string(buf, 16);
}

// The offered keys: `ops` keys of which new_pct% are fresh (ids >= base)
// and the rest already loaded (ids < base), interleaved at random.
std::vector<std::string> Workload(uint64_t base, uint64_t ops, int new_pct) {
  std::vector<std::string> keys;
  keys.reserve(ops);
  uint64_t fresh = base, state = 12345;
  for (uint64_t i = 0; i < ops; ++i) {
    state = Remix(state + i);
    bool is_new = state % 100 < static_cast<uint64_t>(new_pct);
    keys.push_back(KeyOf(is_new ? fresh++ : (state >> 8) % base));
  }
  return keys;
}

// SF_DEDUP_BENCH_BASELINE_MEMTABLE=hash (see the top of the file).
bool BaselineHashMemtable() {
  const char* mem = getenv("SF_DEDUP_BENCH_BASELINE_MEMTABLE");
  return mem != nullptr && strcmp(mem, "hash") == 0;
}

struct Baseline {
  rocksdb::DB* db = nullptr;
  explicit Baseline(const std::string& path) {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::BlockBasedTableOptions t;
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    if (BaselineHashMemtable()) {
      o.memtable_factory = persistence::internal::NewHashIndexMemTableFactory(
          o.write_buffer_size / 64);
      o.allow_concurrent_memtable_write = false;
    }
    Check(rocksdb::DB::Open(o, path, &db).ok(), "baseline open");
  }
  ~Baseline() { delete db; }
  // Returns the number of new keys.
  uint64_t Single(const std::vector<std::string>& keys) {
    uint64_t n = 0;
    std::string v;
    for (const auto& k : keys) {
      if (db->Get({}, k, &v).IsNotFound()) {
        Check(db->Put({}, k, "t").ok(), "put");
        ++n;
      }
    }
    return n;
  }
  uint64_t Batched(const std::vector<std::string>& keys, size_t batch) {
    uint64_t n = 0;
    for (size_t at = 0; at < keys.size(); at += batch) {
      size_t len = std::min(batch, keys.size() - at);
      std::vector<rocksdb::Slice> ks(keys.begin() + at,
                                     keys.begin() + at + len);
      std::vector<std::string> vs;
      std::vector<rocksdb::Status> st = db->MultiGet({}, ks, &vs);
      rocksdb::WriteBatch wb;
      for (size_t i = 0; i < len; ++i) {
        if (st[i].IsNotFound()) {
          wb.Put(ks[i], "t").PermitUncheckedError();
          ++n;
        }
      }
      Check(db->Write({}, &wb).ok(), "write");
    }
    return n;
  }
};

// "L0=a L1=b ..." for the family's non-empty levels.
std::string Shape(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
  std::string out, v;
  for (int l = 0; l < 7; ++l) {
    std::string prop = "rocksdb.num-files-at-level" + std::to_string(l);
    if (db->GetProperty(cf, prop, &v) && v != "0") {
      out += (out.empty() ? "L" : " L") + std::to_string(l) + "=" + v;
    }
  }
  return out.empty() ? "memtable only" : out;
}

// The dedup family's shape in the store at `path` (read-only open beside
// the writer: the state of its last flush).
std::string DedupShape(const std::string& path) {
  std::vector<std::string> names;
  rocksdb::DBOptions o;
  if (!rocksdb::DB::ListColumnFamilies(o, path, &names).ok()) return "?";
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& n : names)
    cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> h;
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(o, path, cfs, &h, &db).ok()) return "?";
  std::string out = "?";
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "dedup") out = Shape(db, h[i]);
  }
  for (auto* x : h) db->DestroyColumnFamilyHandle(x).PermitUncheckedError();
  delete db;
  return out;
}

// CPU seconds of the calling thread (the shared machine's load inflates
// wall time; background flushes and compactions are not counted).
double CpuNow(clockid_t clock = CLOCK_THREAD_CPUTIME_ID) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
// CPU seconds of the whole process: the foreground plus RocksDB's flushes
// and compactions while the phase ran (work they owe for the phase that
// runs after it is not counted, on either side).
double ProcessCpuNow() { return CpuNow(CLOCK_PROCESS_CPUTIME_ID); }

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

void RunCase(uint64_t base, uint64_t ops, int new_pct, bool batched) {
  const size_t kBatch = 1024;
  std::vector<std::string> load;
  for (uint64_t i = 0; i < base; ++i) load.push_back(KeyOf(i));
  std::vector<std::string> keys = Workload(base, ops, new_pct);
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<std::string_view> load_views(load.begin(), load.end());

  std::string bpath = TempPath();
  double base_s, base_cpu, ours_cpu, base_all, ours_all;
  std::string base_shape, ours_shape;
  {
    Baseline b(bpath);
    b.Batched(load, kBatch);
    // Both sides time against their loaded keys flushed to SSTs (the
    // memtable empty): the state of a store holding far more keys than
    // one memtable, and the same for both whatever their entry sizes.
    Check(b.db->Flush({}).ok(), "baseline flush");
    base_shape = Shape(b.db, b.db->DefaultColumnFamily());
    auto t0 = std::chrono::steady_clock::now();
    double c0 = CpuNow(), a0 = ProcessCpuNow();
    uint64_t n = batched ? b.Batched(keys, kBatch) : b.Single(keys);
    base_s = Seconds(t0);
    base_cpu = CpuNow() - c0;
    base_all = ProcessCpuNow() - a0;
    Check(n >= ops * new_pct / 100 * 9 / 10, "baseline new count");
  }
  std::string dpath = TempPath();
  double ours_s, open_s;
  DedupStats st;
  {
    auto db = Database::Open({.path = dpath});
    Check(db.ok(), "open");
    DedupOptions o;
    o.expected_keys = base + ops;
    if (const char* j = getenv("SF_DEDUP_BENCH_JOURNAL_BYTES")) {
      o.journal_bytes = strtoull(j, nullptr, 10);
    }
    auto d = DedupStore::Open(**db, "bench", o);
    Check(d.ok(), d.status().ToString());
    std::vector<uint8_t> out;
    for (size_t at = 0; at < load_views.size(); at += kBatch) {
      size_t len = std::min(kBatch, load_views.size() - at);
      Check((*d)->InsertIfAbsentBatch(std::span(load_views).subspan(at, len),
                                      &out)
                .ok(),
            "load");
    }
    Check((*d)->Flush().ok(), "flush");
    ours_shape = DedupShape(dpath);
    auto t0 = std::chrono::steady_clock::now();
    double c0 = CpuNow(), a0 = ProcessCpuNow();
    if (batched) {
      for (size_t at = 0; at < views.size(); at += kBatch) {
        size_t len = std::min(kBatch, views.size() - at);
        Check((*d)->InsertIfAbsentBatch(std::span(views).subspan(at, len), &out)
                  .ok(),
              "batch");
      }
    } else {
      for (auto k : views) Check((*d)->InsertIfAbsent(k).ok(), "insert");
    }
    ours_s = Seconds(t0);
    ours_cpu = CpuNow() - c0;
    ours_all = ProcessCpuNow() - a0;
    st = (*d)->Stats();
    d->reset();
    // Reopen: the filter is rebuilt from the exact set (scan).
    auto t1 = std::chrono::steady_clock::now();
    auto again = DedupStore::Open(**db, "bench", o);
    open_s = Seconds(t1);
    Check(again.ok(), "reopen");
  }
  std::filesystem::remove_all(bpath);
  std::filesystem::remove_all(dpath);
  double keys_m = (base + st.new_keys) / 1e6;
  printf(
      "%-7s %2d%% new  base=%llu ops=%llu  baseline%s %9.0f ops/s  dedup "
      "%9.0f ops/s  ratio %.2fx  cpu us/op %.2f vs %.2f = %.2fx  "
      "process cpu us/op %.2f vs %.2f = %.2fx  (reads "
      "avoided %.1f%%, observed FPR %.4f, "
      "reopen %.2f s = %.2f s per 1M keys; timed on baseline %s, dedup "
      "%s)\n",
      batched ? "batched" : "single", new_pct,
      static_cast<unsigned long long>(base),
      static_cast<unsigned long long>(ops),
      BaselineHashMemtable() ? "(hash memtable)" : "", ops / base_s,
      ops / ours_s, base_s / ours_s, 1e6 * base_cpu / ops, 1e6 * ours_cpu / ops,
      base_cpu / ours_cpu, 1e6 * base_all / ops, 1e6 * ours_all / ops,
      base_all / ours_all,
      100.0 * st.reads_avoided / std::max<uint64_t>(1, st.inserts),
      st.observed_fpr, open_s, open_s / keys_m, base_shape.c_str(),
      ours_shape.c_str());
  fflush(stdout);
}

}  // namespace
}  // namespace shardfilter::bench

int main() {
  const char* env = getenv("SF_DEDUP_BENCH_KEYS");
  uint64_t total = env ? strtoull(env, nullptr, 10) : 1'000'000;
  if (total < 1000) total = 1000;
  // Half loaded first, half offered to InsertIfAbsent.
  uint64_t base = total / 2, ops = total / 2;
  // SF_DEDUP_BENCH_CASES: a subset of "s90,s10,b90,b10" (default: all).
  const char* cases = getenv("SF_DEDUP_BENCH_CASES");
  for (bool batched : {false, true}) {
    for (int pct : {90, 10}) {
      std::string id = (batched ? "b" : "s") + std::to_string(pct);
      if (cases != nullptr && !strstr(cases, id.c_str())) continue;
      shardfilter::bench::RunCase(base, ops, pct, batched);
    }
  }
  return 0;
}
