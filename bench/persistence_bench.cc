// Persistence benchmarks: checkpoint throughput (full and incremental),
// recovery time, and add throughput under each durability mode with one and
// two writer threads.
//
//   build/bench/persistence_bench --benchmark_counters_tabular=true
// Recovery of a 1 GiB filter (takes minutes and ~3 GiB of disk):
//   SF_BENCH_RECOVERY_MB=1024 build/bench/persistence_bench \
//       --benchmark_filter=Recovery
// The store lives under $TMPDIR (default /tmp): put it on the disk whose
// fsync you want to measure.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench_util.h"
#include "shardfilter/engine/database.h"

namespace shardfilter::bench {
namespace {

// A blocked Bloom filter at 1% costs ~10 bits per item.
uint64_t CapacityForMb(int64_t mb) { return mb * 1'000'000 * 8 / 10; }

struct Fixture {
  std::string path = TempPath();
  std::unique_ptr<Database> db;
  std::shared_ptr<ShardedFilter> filter;

  Fixture(int64_t mb, uint32_t shards, Durability d, bool fill)
      : db(OpenBenchStore(path)) {
    FilterSpec spec;
    spec.capacity = CapacityForMb(mb);
    spec.shards = shards;
    spec.durability = d;
    auto f = db->Create("f", spec);
    Check(f.status());
    filter = *f;
    if (fill) {
      std::vector<uint64_t> batch(1 << 16);
      for (uint64_t i = 0; i < spec.capacity / 2; i += batch.size()) {
        batch.resize(std::min<uint64_t>(batch.size(), spec.capacity / 2 - i));
        for (size_t j = 0; j < batch.size(); ++j) batch[j] = PresentKey(i + j);
        Check(filter->AddHashes(batch));
      }
    }
  }
  // An already open store (the caller made its filter).
  Fixture(std::string p, std::unique_ptr<Database> d)
      : path(std::move(p)), db(std::move(d)) {}
  ~Fixture() {
    filter.reset();
    if (db) Check(db->Close());
    db.reset();
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Touches `shards` shards (one add each) so that they are dirty.
void Dirty(ShardedFilter& f, uint32_t shards, uint64_t* next) {
  std::vector<bool> done(f.shard_count());
  uint32_t left = shards;
  while (left > 0) {
    uint64_t h = PresentKey((*next)++);
    uint32_t s = f.ShardOf(h);
    if (s >= shards || done[s]) continue;
    Check(f.AddHash(h));
    done[s] = true;
    --left;
  }
}

// Arg 0: filter MiB; arg 1: shards dirtied per checkpoint (of 16).
void BM_Checkpoint(benchmark::State& state) {
  Fixture fx(state.range(0), 16, Durability::kNone, true);
  uint64_t next = 1ULL << 40, bytes = 0, max_hold = 0;
  Check(fx.db->Checkpoint("f").status());
  for (auto _ : state) {
    state.PauseTiming();
    Dirty(*fx.filter, static_cast<uint32_t>(state.range(1)), &next);
    state.ResumeTiming();
    auto st = fx.db->Checkpoint("f");
    Check(st.status());
    bytes += st->bytes_written;
    max_hold = std::max(max_hold, st->max_lock_hold_ns);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["max_lock_hold_ms"] = max_hold / 1e6;
}
BENCHMARK(BM_Checkpoint)
    ->ArgNames({"mb", "dirty_shards"})
    ->Args({64, 16})
    ->Args({64, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Open (load + verify every chunk + deserialize) of a checkpointed filter.
void BM_Recovery(benchmark::State& state) {
  std::string path;
  {
    Fixture fx(state.range(0), 0, Durability::kJournal, true);
    Check(fx.db->Checkpoint("f").status());
    path = fx.path;
    fx.path = TempPath();  // keep the store: the fixture removes the other
  }
  DatabaseOptions o;
  o.path = path;
  o.checkpoint_on_close = false;
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto db = Database::Open(o);
    Check(db.status());
    auto info = (*db)->Info("f");
    Check(info.status());
    bytes += info->checkpoint_bytes;
    Check((*db)->Close());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

// Single-key adds under a durability mode; run with 1 and 2 threads (sync
// with 2 threads shows RocksDB's group commit sharing one fsync).
std::unique_ptr<Fixture> g_fixture;
std::atomic<uint64_t> g_next{0};

void BM_AddDurability(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_fixture = std::make_unique<Fixture>(
        16, 16, static_cast<Durability>(state.range(0)), false);
  }
  for (auto _ : state) {
    Check(g_fixture->filter->AddHash(PresentKey(g_next.fetch_add(1))));
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    state.counters["journal_writes"] =
        static_cast<double>(g_fixture->db->counters().journal_writes);
    g_fixture.reset();
  }
}
// None and journal: a fixed 4e6 adds a thread, under the 1.28e7 capacity
// with two threads (as BM_DurableAdd's rows).
BENCHMARK(BM_AddDurability)
    ->ArgName("durability")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(4'000'000)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK(BM_AddDurability)
    ->ArgName("durability")
    ->Arg(2)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// Batched adds (AddHashes of range(1) items: one journal write, one fsync
// for sync) under a durability mode.
void BM_AddBatchDurability(benchmark::State& state) {
  Fixture fx(16, 16, static_cast<Durability>(state.range(0)), false);
  std::vector<uint64_t> batch(state.range(1));
  uint64_t next = 0;
  for (auto _ : state) {
    for (uint64_t& h : batch) h = PresentKey(next++);
    Check(fx.filter->AddHashes(batch));
  }
  state.SetItemsProcessed(state.iterations() * batch.size());
}
BENCHMARK(BM_AddBatchDurability)
    ->ArgNames({"durability", "batch"})
    ->Args({1, 64})
    ->Args({2, 64})
    ->Args({2, 1024})
    ->UseRealTime();

// The CPU time of the whole process (every thread: the writers, the
// journal's spare-segment thread, the kernel's work for them) over thread
// 0's timed loop: per op (`cpu_ns_per_op`) and over the loop's wall time
// (`busy_cores`). If one writer keeps b cores busy, two writers on two
// cores reach at most 2 / b times its rate: a journalled add's fresh
// page-cache pages cost the spare thread CPU time (docs/performance.md,
// "Durable adds").
class ProcessCpu {
 public:
  void Start() {
    cpu0_ = Now(CLOCK_PROCESS_CPUTIME_ID);
    wall0_ = Now(CLOCK_MONOTONIC);
  }
  void Report(benchmark::State& state, uint64_t ops) const {
    if (wall0_ == 0 || ops == 0) return;
    const double cpu = Now(CLOCK_PROCESS_CPUTIME_ID) - cpu0_;
    const double wall = Now(CLOCK_MONOTONIC) - wall0_;
    state.counters["cpu_ns_per_op"] = cpu / static_cast<double>(ops);
    state.counters["busy_cores"] = cpu / wall;
  }

 private:
  static double Now(clockid_t clock) {
    timespec t;
    clock_gettime(clock, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
  }
  double cpu0_ = 0;
  double wall0_ = 0;
};

// Durable single-key adds through a Database handle: one 8-byte key per
// Add call (hashing included), 16 shards, 1e7 capacity; arg 0 the type (1
// Bloom, 2 counting, 3 cuckoo), arg 1 the durability (1 journal: the
// memory-mapped filter journal; 2 sync: plus fdatasync, shared by
// concurrent writers of a shard). Reported: acknowledged adds per second
// (items_per_second) for 1 and 2 threads, and the process's CPU time
// (ProcessCpu).
//   build/bench/persistence_bench --benchmark_filter=DurableAdd
std::unique_ptr<Fixture> g_durable;
std::shared_ptr<ShardedFilter> g_durable_filter;

void DurableAdd(benchmark::State& state, uint64_t capacity, uint32_t shards,
                bool force_mapped) {
  if (state.thread_index() == 0) {
    std::string path = TempPath();
    DatabaseOptions o;
    o.path = path;
    o.checkpoint_on_close = false;
    if (force_mapped) o.mapped_journal_min_bytes = 0;
    auto opened = Database::Open(o);
    Check(opened.status());
    auto db = std::move(*opened);
    FilterSpec spec;
    spec.type = static_cast<FilterType>(state.range(0));
    spec.capacity = capacity;
    spec.shards = shards;
    spec.durability = static_cast<Durability>(state.range(1));
    auto f = db->Create("f", spec);
    Check(f.status());
    g_durable_filter = *f;
    g_durable = std::make_unique<Fixture>(std::move(path), std::move(db));
  }
  // Keys: 8 bytes, distinct per thread; a cuckoo filter takes up to 2b
  // copies of a key, so the sequence never repeats within a run.
  uint64_t k = (static_cast<uint64_t>(state.thread_index()) << 56) + 1;
  // Read inside the loop: its start is where thread 0's setup is done.
  ShardedFilter* f = nullptr;
  ProcessCpu cpu;
  for (auto _ : state) {
    const uint64_t v = k++ * 0x9e3779b97f4a7c15ULL;
    char key[8];
    std::memcpy(key, &v, 8);
    if (f == nullptr) {
      f = g_durable_filter.get();
      cpu.Start();
    }
    Check(f->Add(std::string_view(key, 8)));
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    cpu.Report(state, state.iterations() * state.threads());
    g_durable_filter.reset();
    g_durable.reset();
  }
}
// 16 shards of 1e7 items. The rows of durability none and journal add a
// fixed 4e6 keys a thread, so that two threads (8e6) stay in each shard's
// first link, as one does: run for a time, two threads at 25M adds/s
// would pass the capacity, and the row would measure adds to two-link
// chains (ChainAdd and a query of the older link per add) against one
// thread's one-link adds. The sync rows run for a time (~10k adds/s).
void BM_DurableAdd(benchmark::State& state) {
  DurableAdd(state, 10'000'000, 16, false);
}
BENCHMARK(BM_DurableAdd)
    ->ArgNames({"type", "durability"})
    ->ArgsProduct({{1, 2, 3}, {0, 1}})
    ->Iterations(4'000'000)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK(BM_DurableAdd)
    ->ArgNames({"type", "durability"})
    ->ArgsProduct({{1, 2, 3}, {2}})
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// The device's floor for BM_DurableAdd's sync rows, without the library:
// per op a 16-byte record stored into a shared mapping of a preallocated
// file (as a journal segment), then fdatasync. shared 0: each thread its
// own file (the filter journal's case: per-shard segments, and two writers
// rarely on one shard); shared 1: one file for all threads, writers sharing
// syncs as leader and followers (a sync covers every record stored before
// it started; records_per_sync says how many it covered). Which scales
// better with threads is the device's property. On the 2-core development
// VM (virtio disk, ext4), three runs, ops/s for 1 / 2 / 4 threads: a file
// each 9.1-10.7k / 13.7-15.4k / 19.8-22.7k; one shared file 9.1-10.2k /
// 10.4-12.7k / 17.3-20.3k (1.16-1.28 and 2.1-2.2 records a sync): the
// device completes concurrent flushes of different files nearly in
// parallel, so sharing one file's syncs never won here, and the journal
// keeps per-shard files (docs/performance.md, "Durable adds").
struct SyncFloorFile {
  int fd = -1;
  char* map = nullptr;
  size_t bytes = 0;
  explicit SyncFloorFile(const std::string& path, size_t n) : bytes(n) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    Check(fd >= 0 && ::posix_fallocate(fd, 0, static_cast<off_t>(n)) == 0 &&
                  ::fdatasync(fd) == 0
              ? Status::OK()
              : Status::IOError("sync floor file " + path));
    void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    Check(m != MAP_FAILED ? Status::OK() : Status::IOError("mmap"));
    map = static_cast<char*>(m);
    ::unlink(path.c_str());
  }
  ~SyncFloorFile() {
    ::munmap(map, bytes);
    ::close(fd);
  }
};
struct SyncFloorShared {
  explicit SyncFloorShared(const std::string& path) : file(path, kBytes) {}
  static constexpr size_t kBytes = size_t{64} << 20;
  SyncFloorFile file;
  std::mutex mu;
  std::condition_variable cv;
  uint64_t tail = 0;     // GUARDED_BY(mu)
  uint64_t stored = 0;   // records stored, GUARDED_BY(mu)
  uint64_t synced = 0;   // records on disk, GUARDED_BY(mu)
  bool syncing = false;  // GUARDED_BY(mu)
  std::atomic<uint64_t> syncs{0};
};
std::unique_ptr<SyncFloorShared> g_sync_floor;

void BM_SyncFloor(benchmark::State& state) {
  const bool shared = state.range(0) != 0;
  const std::string dir = TempPath("sfsyncfloor");
  if (shared && state.thread_index() == 0) {
    g_sync_floor = std::make_unique<SyncFloorShared>(dir + "/shared");
  }
  std::unique_ptr<SyncFloorFile> own;
  if (!shared) own = std::make_unique<SyncFloorFile>(dir + "/own", 64 << 20);
  uint64_t off = 0;
  uint64_t v = 1;
  SyncFloorShared* S = nullptr;
  for (auto _ : state) {
    if (!shared) {
      std::memcpy(own->map + off, &v, 8);
      off = (off + 16) % own->bytes;
      if (::fdatasync(own->fd) != 0) Check(Status::IOError("fdatasync"));
    } else {
      if (S == nullptr) S = g_sync_floor.get();
      std::unique_lock lock(S->mu);
      std::memcpy(S->file.map + S->tail, &v, 8);
      S->tail = (S->tail + 16) % SyncFloorShared::kBytes;
      const uint64_t mine = ++S->stored;
      while (S->synced < mine) {
        if (S->syncing) {
          S->cv.wait(lock);
          continue;
        }
        S->syncing = true;
        const uint64_t target = S->stored;
        lock.unlock();
        if (::fdatasync(S->file.fd) != 0) Check(Status::IOError("fdatasync"));
        S->syncs.fetch_add(1, std::memory_order_relaxed);
        lock.lock();
        S->syncing = false;
        S->synced = target;
        S->cv.notify_all();
      }
    }
    ++v;
  }
  state.SetItemsProcessed(state.iterations());
  own.reset();
  std::filesystem::remove_all(dir);
  if (shared && state.thread_index() == 0) {
    // Every thread's iterations are done once thread 0 leaves its loop.
    state.counters["records_per_sync"] =
        static_cast<double>(g_sync_floor->stored) /
        static_cast<double>(std::max<uint64_t>(g_sync_floor->syncs.load(), 1));
    g_sync_floor.reset();
  }
}
BENCHMARK(BM_SyncFloor)
    ->ArgNames({"shared"})
    ->Arg(0)
    ->Arg(1)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

// The floor of BM_DurableAdd's Bloom `journal` rows with thread segments
// (filter_log.h L7), without the library: each thread appends 16-byte
// records (a hash, then a tag) to files of its own, 1.5 MiB each (the
// segment size of that benchmark's filter), made fallocated and mapped
// with their pages faulted in writable, unlinked when full; with
// table:1 each record also follows one locked OR into a random word of a
// 16 MiB table shared by the threads (the add's miss). Two threads'
// records per second against one's is the ceiling the page cache's work
// (allocating, zeroing, writing back and dropping 16 bytes per add) leaves
// two journalled writers on this machine. written:1 makes the files by
// writing zeros instead of fallocating (as a `sync` segment is made): one
// thread ran faster here (113 against 50-59M records/s), two no faster
// than one (114-122M), and the library's journalled adds with thread
// segments made so measured the same as with fallocated ones
// (docs/performance.md, "Tried and not kept").
//   build/bench/persistence_bench --benchmark_filter=JournalBytesFloor
std::vector<std::atomic<uint64_t>> g_floor_table(size_t{2} << 20);

void BM_JournalBytesFloor(benchmark::State& state) {
  const bool table = state.range(0) != 0;
  const bool written = state.range(1) != 0;
  const std::string dir = TempPath("sfjfloor");
  std::filesystem::create_directories(dir);
  constexpr size_t kBytes = size_t{1536} << 10;
  char* map = nullptr;
  size_t at = kBytes;
  int n = 0;
  auto next_file = [&] {
    if (map != nullptr) ::munmap(map, kBytes);
    const std::string path = dir + "/" + std::to_string(n++);
    const int fd =
        ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool made = fd >= 0;
    if (made && written) {
      // Blocks written with zeros (as a `sync` segment's), not fallocated.
      static const std::string zeros(size_t{1} << 20, '\0');
      for (size_t off = 0; made && off < kBytes; off += zeros.size()) {
        const size_t len = std::min(zeros.size(), kBytes - off);
        made = ::pwrite(fd, zeros.data(), len, static_cast<off_t>(off)) ==
               static_cast<ssize_t>(len);
      }
    } else if (made) {
      made = ::posix_fallocate(fd, 0, kBytes) == 0;
    }
    Check(made ? Status::OK() : Status::IOError("journal floor file " + path));
    void* m =
        ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    Check(m != MAP_FAILED ? Status::OK() : Status::IOError("mmap"));
#ifdef MADV_POPULATE_WRITE
    (void)::madvise(m, kBytes, MADV_POPULATE_WRITE);
#endif
    ::close(fd);
    ::unlink(path.c_str());
    map = static_cast<char*>(m);
    at = 0;
  };
  uint64_t v = static_cast<uint64_t>(state.thread_index() + 1) << 56;
  for (auto _ : state) {
    const uint64_t h = (++v) * 0x9e3779b97f4a7c15ULL;
    if (table) {
      g_floor_table[h >> 43].fetch_or(uint64_t{1} << (h & 63),
                                      std::memory_order_relaxed);
    }
    if (at == kBytes) next_file();
    reinterpret_cast<std::atomic<uint64_t>*>(map + at + 8)
        ->store(h, std::memory_order_relaxed);
    reinterpret_cast<std::atomic<uint64_t>*>(map + at)->store(
        h | 3, std::memory_order_release);
    at += 16;
  }
  state.SetItemsProcessed(state.iterations());
  if (map != nullptr) ::munmap(map, kBytes);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_JournalBytesFloor)
    ->ArgNames({"table", "written"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Iterations(4'000'000)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// The same on a small filter (1e5 items, 1 shard: ~120 KB), which
// journals in RocksDB's WAL by default (FilterLog L6); arg 2: 1 forces
// memory-mapped segments for comparison.
void BM_DurableAddSmall(benchmark::State& state) {
  DurableAdd(state, 100'000, 1, state.range(2) != 0);
}
BENCHMARK(BM_DurableAddSmall)
    ->ArgNames({"type", "durability", "mapped"})
    ->ArgsProduct({{1, 3}, {1, 2}, {0, 1}})
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// Open of a store of many small checkpointed filters (arg 0), read-only
// and writable: D4 loads none of them, so the difference is the writable
// open's collection of debris (persistence/store_garbage.cc: seeks only).
void BM_OpenManyFilters(benchmark::State& state) {
  const int64_t filters = state.range(0);
  const bool writable = state.range(1) != 0;
  static std::string path;
  static int64_t built = 0;
  if (built != filters) {
    if (!path.empty()) std::filesystem::remove_all(path);
    path = TempPath();
    auto db = OpenBenchStore(path);
    FilterSpec spec;
    spec.capacity = 1000;
    spec.shards = 4;
    for (int64_t i = 0; i < filters; ++i) {
      auto f = db->Create("filter:" + std::to_string(i), spec);
      Check(f.status());
      Check((*f)->AddHash(PresentKey(i)));
    }
    Check(db->CheckpointAll().status());
    Check(db->Close());
    built = filters;
  }
  DatabaseOptions o;
  o.path = path;
  o.read_only = !writable;
  o.checkpoint_on_close = false;
  o.checkpoint_interval_ms = 0;
  for (auto _ : state) {
    auto db = Database::Open(o);
    Check(db.status());
    state.PauseTiming();
    Check((*db)->Close());
    db->reset();
    state.ResumeTiming();
  }
  state.counters["filters"] = static_cast<double>(filters);
}
BENCHMARK(BM_OpenManyFilters)
    ->ArgNames({"filters", "writable"})
    ->ArgsProduct({{1000, 10000}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace shardfilter::bench

int main(int argc, char** argv) {
  using shardfilter::bench::BM_Recovery;
  int64_t mb = 64;
  if (const char* env = getenv("SF_BENCH_RECOVERY_MB")) mb = atoll(env);
  benchmark::RegisterBenchmark("BM_Recovery", BM_Recovery)
      ->ArgName("mb")
      ->Arg(mb)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(3);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
