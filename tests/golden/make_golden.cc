// make_golden <out-dir>: writes the golden format data that
// tests/golden_format_test.cc loads (tests/data/golden/: see README.md
// there). Run once with the code whose formats it pins; the output is
// committed and never regenerated for a format change (a change adds a new
// version and keeps reading this one).
//
// What it writes, each step in a child process so that no thread of one
// step (RocksDB, oneTBB) exists when the next one forks:
//   1. store/: one filter per type and layout (blocked and classic Bloom,
//      counting, cuckoo with 8/12/16-bit fingerprints), scalable filters
//      grown to several links, one that retains hashes, one sync filter, a
//      tiered filter with an exact level. Everything is checkpointed, then
//      some filters get more adds and removes that stay in the journal
//      (closed without a final checkpoint). exports/<name>.sfx: each
//      filter's export at that final state.
//   2. Two dedup sets (one with a TTL) on the same store, filled partly
//      into RocksDB and partly into their journal files only; the process
//      then _exits without closing, as a kill leaves them.
//   3. manifest.txt (tests/golden/golden_manifest.h).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "golden_manifest.h"
#include "shardfilter/engine/database.h"
#include "shardfilter/engine/dedup_store.h"
#include "shardfilter/engine/export.h"
#include "shardfilter/engine/tiered_filter.h"

namespace shardfilter::golden {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "make_golden: %s: %s\n", what.c_str(),
               s.ToString().c_str());
  _exit(1);
}
#define CHECK_OK(what, expr)         \
  do {                               \
    const Status st_ = (expr);       \
    if (!st_.ok()) Die((what), st_); \
  } while (0)

struct Plan {
  std::string name;
  FilterSpec spec;
  uint64_t checkpointed_keys;  // keys k0 .. before the checkpoint
  uint64_t journal_keys;       // more adds after it (journal only)
  uint64_t journal_removes;    // removes of the first keys after it
};

FilterSpec Base(FilterType type, uint64_t capacity, uint32_t shards) {
  FilterSpec s;
  s.type = type;
  s.capacity = capacity;
  s.fpp = 0.01;
  s.shards = shards;
  s.seed = 0x601d;
  s.durability = Durability::kJournal;
  s.scalable = false;
  return s;
}

std::vector<Plan> Plans() {
  std::vector<Plan> p;
  FilterSpec blocked = Base(FilterType::kBloom, 2000, 2);
  blocked.layout = BloomLayout::kBlocked;  // as stored before kAuto existed
  p.push_back({"bloom-blocked", blocked, 800, 100, 0});
  FilterSpec classic = Base(FilterType::kBloom, 1000, 1);
  classic.layout = BloomLayout::kClassic;
  p.push_back({"bloom-classic", classic, 600, 0, 0});
  p.push_back(
      {"counting", Base(FilterType::kCountingBloom, 1000, 2), 600, 100, 50});
  for (uint32_t bits : {8u, 12u, 16u}) {
    FilterSpec c = Base(FilterType::kCuckoo, 1000, 2);
    c.fingerprint_bits = bits;
    c.fpp = bits == 8 ? 0.05 : bits == 12 ? 0.01 : 0.001;
    p.push_back({"cuckoo" + std::to_string(bits), c, 600,
                 bits == 12 ? 100u : 0u, bits == 12 ? 40u : 0u});
  }
  FilterSpec sb = Base(FilterType::kBloom, 300, 1);
  sb.scalable = true;
  p.push_back({"scalable-bloom", sb, 1500, 300, 0});
  FilterSpec sc = Base(FilterType::kCuckoo, 300, 2);
  sc.scalable = true;
  p.push_back({"scalable-cuckoo", sc, 1500, 200, 30});
  FilterSpec sk = Base(FilterType::kCountingBloom, 200, 1);
  sk.scalable = true;
  sk.expansion = 4;
  p.push_back({"scalable-counting", sk, 700, 0, 0});
  FilterSpec rh = Base(FilterType::kCuckoo, 1000, 2);
  rh.retain_hashes = true;
  p.push_back({"retained", rh, 500, 100, 20});
  FilterSpec sy = Base(FilterType::kBloom, 500, 1);
  sy.durability = Durability::kSync;
  p.push_back({"sync-bloom", sy, 300, 50, 0});
  return p;
}

void AddRange(ShardedFilter& f, const std::string& prefix, uint64_t a,
              uint64_t b) {
  for (uint64_t i = a; i < b; ++i) {
    CHECK_OK(f.name() + " add", f.Add(KeyOf(prefix, i)));
  }
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) Die("write " + path, Status::IOError(path));
}

// Step 1 (child). Appends its manifest lines to `manifest`.
void MakeFilters(const std::string& out, std::string* manifest) {
  DatabaseOptions o;
  o.path = out + "/store";
  o.checkpoint_on_close = false;  // leave the journal entries in place
  o.chunk_bytes = 4096;           // the large shards take several chunks
  auto db = Database::Open(o);
  CHECK_OK("open", db.status());
  const std::vector<Plan> plans = Plans();
  for (const Plan& p : plans) {
    auto f = (*db)->Create(p.name, p.spec);
    CHECK_OK("create " + p.name, f.status());
    AddRange(**f, "k", 0, p.checkpointed_keys);
  }
  TieredSpec ts;
  ts.levels = {Base(FilterType::kBloom, 500, 1),
               Base(FilterType::kCuckoo, 500, 1)};
  ts.levels[0].fpp = 0.1;
  ts.levels[1].seed = kDefaultSeed;  // derived: LevelSeed(seed, 1)
  ts.exact_level = true;
  ts.seed = 0x71e4;
  auto tiered = TieredFilter::Create(db->get(), "tiered", ts);
  CHECK_OK("tiered", tiered.status());
  for (uint64_t i = 0; i < 300; ++i) {
    CHECK_OK("tiered add", (*tiered)->Add(KeyOf("t", i)));
  }
  CHECK_OK("checkpoint", (*db)->CheckpointAll().status());
  for (const Plan& p : plans) {
    auto f = (*db)->Get(p.name);
    CHECK_OK("get " + p.name, f.status());
    AddRange(**f, "k", p.checkpointed_keys,
             p.checkpointed_keys + p.journal_keys);
    for (uint64_t i = 0; i < p.journal_removes; ++i) {
      CHECK_OK(p.name + " remove", (*f)->Remove(KeyOf("k", i)));
    }
  }
  for (uint64_t i = 300; i < 350; ++i) {
    CHECK_OK("tiered add", (*tiered)->Add(KeyOf("t", i)));
  }
  fs::create_directories(out + "/exports");
  for (const Plan& p : plans) {
    auto f = (*db)->Get(p.name);
    CHECK_OK("get " + p.name, f.status());
    *manifest += "filter " + p.name + " " + SpecText((*f)->spec()) + "\n";
    *manifest += "items " + p.name + " " +
                 std::to_string((*f)->Stats().total.items) + "\n";
    // Removed keys may still answer present (another key's bits), so only
    // the keys never removed are listed.
    *manifest += "keys " + p.name + " k " + std::to_string(p.journal_removes) +
                 " " + std::to_string(p.checkpointed_keys + p.journal_keys) +
                 "\n";
    auto bytes = ExportFilter(**db, p.name);
    CHECK_OK("export " + p.name, bytes.status());
    WriteBytes(out + "/exports/" + p.name + ".sfx", *bytes);
    *manifest += "export " + p.name + ".sfx " + p.name + "\n";
  }
  *manifest += "tiered tiered 2 1\nkeys tiered t 0 350\n";
  tiered->reset();
  CHECK_OK("close", (*db)->Close());
}

// Step 2 (child): never returns; _exits with the journals unclosed.
[[noreturn]] void MakeDedup(const std::string& out) {
  DatabaseOptions o;
  o.path = out + "/store";
  auto db = Database::Open(o);
  CHECK_OK("open", db.status());
  DedupOptions plain;
  plain.durability = Durability::kJournal;
  plain.journal_bytes = 128 << 10;  // the smallest journal file
  plain.expected_keys = 1000;
  auto d = DedupStore::Open(**db, "dedup", plain);
  CHECK_OK("dedup open", d.status());
  for (uint64_t i = 0; i < 400; ++i) {
    auto r = (*d)->InsertIfAbsent(KeyOf("d", i));
    CHECK_OK("dedup insert", r.status());
  }
  CHECK_OK("dedup flush", (*d)->Flush());  // these are in RocksDB
  for (uint64_t i = 400; i < 600; ++i) {   // these only in the journal
    CHECK_OK("dedup insert", (*d)->InsertIfAbsent(KeyOf("d", i)).status());
  }
  for (uint64_t i = 0; i < 20; ++i) {
    CHECK_OK("dedup remove", (*d)->Remove(KeyOf("d", i)).status());
  }
  for (uint64_t i = 590; i < 600; ++i) {
    CHECK_OK("dedup remove", (*d)->Remove(KeyOf("d", i)).status());
  }
  DedupOptions ttl = plain;
  // A window of ~100 years in 8 partitions: nothing expires while the
  // golden data is in use.
  ttl.ttl_ms = 8 * 400'000'000'000ull;
  ttl.partitions = 8;
  ttl.filter_type = FilterType::kCountingBloom;
  auto t = DedupStore::Open(**db, "dedup-ttl", ttl);
  CHECK_OK("dedup-ttl open", t.status());
  std::vector<std::string> keys;
  for (uint64_t i = 0; i < 200; ++i) keys.push_back(KeyOf("e", i));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<uint8_t> fresh;
  CHECK_OK("dedup-ttl batch", (*t)->InsertIfAbsentBatch(views, &fresh));
  for (uint64_t i = 200; i < 300; ++i) {
    CHECK_OK("dedup-ttl insert", (*t)->InsertIfAbsent(KeyOf("e", i)).status());
  }
  for (uint64_t i = 0; i < 10; ++i) {
    CHECK_OK("dedup-ttl remove", (*t)->Remove(KeyOf("e", i)).status());
  }
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
    std::fprintf(stderr, "usage: make_golden <out-dir>\n");
    return 2;
  }
  const std::string out = argv[1];
  fs::remove_all(out + "/store");
  fs::remove_all(out + "/exports");
  fs::create_directories(out);
  const std::string manifest_path = out + "/manifest.txt";
  RunChild([&] {
    std::string manifest =
        "# Written by tests/golden/make_golden.cc; format in "
        "tests/golden/golden_manifest.h\n";
    MakeFilters(out, &manifest);
    WriteBytes(manifest_path, manifest);
  });
  RunChild([&] { MakeDedup(out); });
  std::string dedup =
      "dedup dedup\ndedup-keys dedup d 20 590\ndedup-gone dedup d 0 20\n"
      "dedup-gone dedup d 590 600\ndedup dedup-ttl\n"
      "dedup-keys dedup-ttl e 10 300\ndedup-gone dedup-ttl e 0 10\n";
  std::ofstream(manifest_path, std::ios::app) << dedup;
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
