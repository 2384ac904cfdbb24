// make_seeds <golden-dir> <corpus-dir>: writes the committed seed corpora
// (tests/fuzz/corpus/<target>/) from the golden format data
// (tests/data/golden, tests/golden/make_golden.cc): every value kind read
// raw from a copy of the golden store's column families, the export files,
// their chain blobs and link envelopes, and the dedup journal files'
// headers and regions. Each seed is the target's mode byte (0: repair
// checksums, see fuzz_fixup.h) and the bytes. At most a few seeds per kind,
// smallest first, so that the corpus stays small.
#include <rocksdb/db.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "shardfilter/engine/export.h"
#include "shardfilter/filters/hash.h"
#include "shardfilter/persistence/chain_blob.h"

namespace {

namespace fs = std::filesystem;
using namespace shardfilter;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// target -> candidate seeds (mode byte included), grouped by kind.
std::map<std::string, std::map<std::string, std::set<std::string>>> seeds;

void Seed(const std::string& target, const std::string& kind, uint8_t mode,
          std::string_view bytes) {
  std::string s(1, static_cast<char>(mode));
  s.append(bytes);
  seeds[target][kind].insert(std::move(s));
}

std::string TrimZeros(std::string_view b) {
  size_t n = b.size();
  while (n > 0 && b[n - 1] == 0) --n;
  return std::string(b.substr(0, n + (n < b.size() ? 8 : 0)));
}

void FromStore(const std::string& golden) {
  const std::string copy = fs::temp_directory_path() / "sf_make_seeds_store";
  fs::remove_all(copy);
  fs::copy(golden + "/store", copy, fs::copy_options::recursive);
  std::vector<std::string> names;
  rocksdb::DB::ListColumnFamilies({}, copy, &names).PermitUncheckedError();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& n : names) cfs.push_back({n, {}});
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s =
      rocksdb::DB::OpenForReadOnly({}, copy, cfs, &handles, &db);
  if (!s.ok()) {
    // The hashes family has a merge operator RocksDB insists on: skip it.
    std::fprintf(stderr, "make_seeds: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  for (auto* h : handles) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator({}, h));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const std::string_view k = it->key().ToStringView();
      const std::string_view v = it->value().ToStringView();
      const std::string cf = h->GetName();
      if (cf == "journal" || cf == "shards")
        Seed("journal_entry_fuzz", cf, 2, k);
      if (v.size() < 2) continue;
      switch (static_cast<uint8_t>(v[1])) {
        case 1:
          Seed("descriptor_fuzz", "descriptor", 0, v);
          break;
        case 2:
          Seed("store_values_fuzz", "chunk", 8, v);
          break;
        case 3:
          Seed("journal_entry_fuzz", "entry", 0, v);
          break;
        case 4:
          Seed("store_values_fuzz", "dedup entry", 0, v);
          break;
        case 5:
          Seed("store_values_fuzz", "dedup meta", 2, v);
          break;
        default:
          if (cf == "catalog") {
            Seed("store_values_fuzz", "tiered descriptor", 4, v);
          } else if (k.size() < 256) {
            std::string e(1, static_cast<char>(k.size()));
            e.append(k);
            e.append(v);
            Seed("store_values_fuzz", "exact " + cf, 6, e);
          }
      }
    }
  }
  for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
  delete db;
  fs::remove_all(copy);
}

void FromExports(const std::string& golden) {
  for (const auto& e : fs::directory_iterator(golden + "/exports")) {
    const std::string bytes = ReadFile(e.path());
    Seed("export_fuzz", "export", 0, bytes);
    auto parsed = ParseExport(bytes);
    if (!parsed.ok()) continue;
    for (std::string_view chain : parsed->shards) {
      Seed("chain_blob_fuzz", "chain", 0, chain);
      auto links = persistence::DecodeChainBlob(chain, "seed");
      if (!links.ok()) continue;
      for (const auto& l : *links) {
        Seed("filter_envelope_fuzz", e.path().stem().string(), 0, l.envelope);
      }
    }
  }
}

void FromDedupJournals(const std::string& golden) {
  for (const auto& e :
       fs::directory_iterator(golden + "/store/dedup-journal")) {
    const std::string b = ReadFile(e.path());
    if (b.size() < 4096 + 2 * 65536) continue;
    const size_t region = (b.size() - 4096) / 2;
    Seed("dedup_log_fuzz", "file header", 8, TrimZeros(b.substr(0, 4096)));
    Seed("dedup_log_fuzz", "region 0", 0,
         TrimZeros(std::string_view(b).substr(4096, region)));
    Seed("dedup_log_fuzz", "region 1", 4,
         TrimZeros(std::string_view(b).substr(4096 + region, region)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_seeds <golden-dir> <corpus-dir>\n");
    return 2;
  }
  FromStore(argv[1]);
  FromExports(argv[1]);
  FromDedupJournals(argv[1]);
  const std::string out = argv[2];
  for (const auto& [target, kinds] : seeds) {
    const std::string dir = out + "/" + target;
    fs::create_directories(dir);
    for (const auto& [kind, set] : kinds) {
      std::vector<std::string> v(set.begin(), set.end());
      std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
        return a.size() < b.size();
      });
      // The smallest two, and the largest (for the deepest structure).
      std::vector<std::string> pick(v.begin(),
                                    v.begin() + std::min<size_t>(2, v.size()));
      if (v.size() > 2) pick.push_back(v.back());
      for (const std::string& s : pick) {
        char name[32];
        std::snprintf(
            name, sizeof name, "%016llx",
            static_cast<unsigned long long>(Checksum64(s.data(), s.size())));
        std::ofstream(dir + "/" + name, std::ios::binary)
            .write(s.data(), static_cast<std::streamsize>(s.size()));
        // The same bytes with checksums taken as they are (mode bit 0).
        std::string raw = s;
        raw[0] = static_cast<char>(raw[0] | 1);
        std::snprintf(name, sizeof name, "%016llx",
                      static_cast<unsigned long long>(
                          Checksum64(raw.data(), raw.size())));
        std::ofstream(dir + "/" + name, std::ios::binary)
            .write(raw.data(), static_cast<std::streamsize>(raw.size()));
      }
    }
  }
  return 0;
}
