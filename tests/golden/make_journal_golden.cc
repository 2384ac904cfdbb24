// make_journal_golden <out-dir>: writes the golden journal data that
// tests/journal_golden_test.cc reads (tests/data/golden/journal/: see
// README.md there). Run once with the code whose formats it pins; the
// output is committed and never regenerated for a format change (a change
// adds a new version and keeps reading this one).
//
//   1. segments/: one file per kind of log, from the fixed operations of
//      tests/golden/journal_golden.h (the test writes them again and
//      compares the bytes).
//   2. store/ (in a child that _exits without closing, as a kill leaves
//      it): filters whose journals are memory-mapped segments (per-shard
//      segments of a counting, a cuckoo (durability sync) and a Bloom
//      filter, the Bloom filter's single-key adds in thread segments),
//      each checkpointed and then written on, and a dedup set in
//      durability journal with records in its log. Its segments name the
//      boot kJournalBoot.
//   3. manifest.txt (tests/golden/golden_manifest.h's format).
#include <rocksdb/file_system.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "golden_manifest.h"
#include "journal_golden.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/persistence/log/fs_env.h"

namespace shardfilter::golden {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "make_journal_golden: %s: %s\n", what.c_str(),
               s.ToString().c_str());
  _exit(1);
}
#define CHECK_OK(what, expr)         \
  do {                               \
    const Status st_ = (expr);       \
    if (!st_.ok()) Die((what), st_); \
  } while (0)

FilterSpec Base(FilterType type, uint64_t capacity, uint32_t shards,
                Durability d) {
  FilterSpec s;
  s.type = type;
  s.capacity = capacity;
  s.fpp = 0.01;
  s.shards = shards;
  s.seed = 0x601d;
  s.durability = d;
  s.scalable = false;
  return s;
}

void Add(ShardedFilter& f, const std::string& prefix, uint64_t a, uint64_t b) {
  for (uint64_t i = a; i < b; ++i) {
    CHECK_OK(f.name() + " add", f.Add(KeyOf(prefix, i)));
  }
}
void Remove(ShardedFilter& f, const std::string& prefix, uint64_t a,
            uint64_t b) {
  for (uint64_t i = a; i < b; ++i) {
    CHECK_OK(f.name() + " remove", f.Remove(KeyOf(prefix, i)));
  }
}
void AddBatch(ShardedFilter& f, const std::string& prefix, uint64_t a,
              uint64_t b) {
  std::vector<std::string> keys;
  for (uint64_t i = a; i < b; ++i) keys.push_back(KeyOf(prefix, i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  CHECK_OK(f.name() + " batch", f.AddKeys(views));
}

// Step 2 (child): never returns; _exits with every journal unclosed.
[[noreturn]] void MakeStore(const std::string& out,
                            const std::string& manifest_path) {
  persistence::SetBootIdForTesting(kJournalBoot);
  persistence::SetSegmentBytesForTesting(kJournalSegmentBytes);
  DatabaseOptions o;
  o.path = out + "/store";
  o.checkpoint_on_close = false;
  o.mapped_journal_min_bytes = 0;  // every filter maps its journal
  auto db = Database::Open(o);
  CHECK_OK("open", db.status());
  auto counting = (*db)->Create(
      "counting",
      Base(FilterType::kCountingBloom, 10'000, 2, Durability::kJournal));
  CHECK_OK("create counting", counting.status());
  auto cuckoo = (*db)->Create(
      "cuckoo-sync", Base(FilterType::kCuckoo, 10'000, 1, Durability::kSync));
  CHECK_OK("create cuckoo-sync", cuckoo.status());
  auto bloom = (*db)->Create(
      "bloom", Base(FilterType::kBloom, 20'000, 2, Durability::kJournal));
  CHECK_OK("create bloom", bloom.status());
  Add(**counting, "k", 0, 300);
  Add(**cuckoo, "k", 0, 200);
  Add(**bloom, "k", 0, 300);  // thread segments (this thread's stripe)
  CHECK_OK("checkpoint", (*db)->CheckpointAll().status());
  Add(**counting, "k", 300, 1200);  // several segments per shard
  Remove(**counting, "k", 0, 50);
  Add(**cuckoo, "k", 200, 400);
  Remove(**cuckoo, "k", 0, 20);
  AddBatch(**cuckoo, "b", 0, 100);
  Add(**bloom, "k", 300, 1300);    // two thread segments
  AddBatch(**bloom, "b", 0, 200);  // per-shard segments
  std::string manifest =
      "# Written by tests/golden/make_journal_golden.cc; format in "
      "tests/golden/golden_manifest.h\n";
  struct Line {
    std::string name;
    std::vector<std::string> ranges;
  };
  const std::vector<Line> lines = {
      {"counting", {"k 50 1200"}},
      {"cuckoo-sync", {"k 20 400", "b 0 100"}},
      {"bloom", {"k 0 1300", "b 0 200"}},
  };
  for (const Line& l : lines) {
    auto f = (*db)->Get(l.name);
    CHECK_OK("get " + l.name, f.status());
    manifest += "filter " + l.name + " " + SpecText((*f)->spec()) + "\n";
    manifest += "items " + l.name + " " +
                std::to_string((*f)->Stats().total.items) + "\n";
    for (const std::string& r : l.ranges) {
      manifest += "keys " + l.name + " " + r + "\n";
    }
  }
  DedupOptions d;
  d.durability = Durability::kJournal;
  d.journal_bytes = 128 << 10;  // the smallest journal file
  d.expected_keys = 1000;
  auto set = DedupStore::Open(**db, "dedup", d);
  CHECK_OK("dedup open", set.status());
  for (uint64_t i = 0; i < 400; ++i) {
    CHECK_OK("dedup insert", (*set)->InsertIfAbsent(KeyOf("d", i)).status());
  }
  CHECK_OK("dedup flush", (*set)->Flush());  // these are in RocksDB
  for (uint64_t i = 400; i < 600; ++i) {     // these only in the journal
    CHECK_OK("dedup insert", (*set)->InsertIfAbsent(KeyOf("d", i)).status());
  }
  for (uint64_t i = 0; i < 20; ++i) {
    CHECK_OK("dedup remove", (*set)->Remove(KeyOf("d", i)).status());
  }
  manifest +=
      "dedup dedup\ndedup-keys dedup d 20 600\ndedup-gone dedup d 0 20\n";
  std::ofstream(manifest_path, std::ios::trunc) << manifest;
  // The spare segments' thread goes idle after a second without work: no
  // file is half made when the process ends.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::fflush(nullptr);
  _exit(0);
}

void RunChild(const std::function<void()>& fn) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die("child step", Status::Aborted("failed"));
  }
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_journal_golden <out-dir>\n");
    return 2;
  }
  const std::string out = argv[1];
  fs::remove_all(out + "/segments");
  fs::remove_all(out + "/store");
  fs::create_directories(out + "/segments");
  RunChild([&] {
    const std::shared_ptr<persistence::Env> env =
        persistence::NewFileSystemEnv(rocksdb::FileSystem::Default());
    CHECK_OK("segments", WriteGoldenJournals(*env, out + "/segments"));
  });
  RunChild([&] { MakeStore(out, out + "/manifest.txt"); });
  // RocksDB's info logs are not part of the format.
  for (const auto& e : fs::directory_iterator(out + "/store")) {
    const std::string n = e.path().filename().string();
    if (n.rfind("LOG", 0) == 0) fs::remove(e.path());
  }
  return 0;
}

}  // namespace
}  // namespace shardfilter::golden

int main(int argc, char** argv) {
  return shardfilter::golden::Main(argc, argv);
}
