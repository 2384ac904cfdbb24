// This checkout's rows of the side-by-side (shardfilter_api.h).
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>

#include "filter_api.h"
#include "harness.h"
#include "shardfilter/engine/database.h"
#include "shardfilter_api.h"

namespace sbs {

namespace {

using shardfilter::FilterType;
constexpr FilterType kBloom = FilterType::kBloom;
constexpr FilterType kCounting = FilterType::kCountingBloom;
constexpr FilterType kCuckoo = FilterType::kCuckoo;

// Owns the store's directory; closes the store and removes it at exit.
class Store {
 public:
  Store() {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
        "/side_by_side_store_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp " + tmpl + " failed");
    dir_ = tmpl;
    shardfilter::DatabaseOptions o;
    o.path = dir_ + "/db";
    o.checkpoint_on_close = false;
    auto opened = shardfilter::Database::Open(o);
    if (!opened.ok()) Die("Database::Open: " + opened.status().ToString());
    db_ = std::move(*opened);
  }
  ~Store() {
    if (auto s = db_->Close(); !s.ok()) {
      std::fprintf(stderr, "side_by_side: Database::Close: %s\n",
                   s.ToString().c_str());
    }
    db_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  shardfilter::Database& db() { return *db_; }

 private:
  std::string dir_;
  std::unique_ptr<shardfilter::Database> db_;
};

// The matched-load cells (README.md here): shardfilter's cuckoo filter
// sized to hold 94% of efficient/cuckoofilter's table for n keys, that is
// a table of the same slots, filled with the n keys the peer holds there.
uint64_t PeerTableAt94(uint64_t n) {
  return static_cast<uint64_t>(
      std::floor(0.94 * static_cast<double>(EfficientCuckooSlots(n))));
}
bool PeerLoadAtMost94(uint64_t n) { return n <= PeerTableAt94(n); }

template <typename Tag>
Row WithBatch(const char* id) {
  Row r = MakeRow<Tag>(id);
  r.batch = true;
  return r;
}

const bool registered = [] {
  RegisterRow(WithBatch<Raw<kBloom, 0.01>>("sf_bloom"));
  RegisterRow(WithBatch<Raw<kCounting, 0.01>>("sf_counting"));
  RegisterRow(WithBatch<Raw<kCuckoo, 0.01, 12>>("sf_cuckoo"));
  RegisterRow(MakeRow<Raw<kBloom, 0.005>>("link0_bloom"));
  RegisterRow(MakeRow<Raw<kCounting, 0.005>>("link0_counting"));
  RegisterRow(MakeRow<Raw<kCuckoo, 0.005>>("link0_cuckoo"));
  RegisterRow(MakeRow<Handle<kBloom, 1>>("db_bloom_1"));
  RegisterRow(MakeRow<Handle<kBloom, 16>>("db_bloom_16"));
  RegisterRow(MakeRow<Handle<kCounting, 1>>("db_counting_1"));
  RegisterRow(MakeRow<Handle<kCounting, 16>>("db_counting_16"));
  RegisterRow(MakeRow<Handle<kCuckoo, 1>>("db_cuckoo_1"));
  RegisterRow(MakeRow<Handle<kCuckoo, 16>>("db_cuckoo_16"));
  Row matched = MakeRow<Raw<kCuckoo, 0.01, 12>>("sf_cuckoo_peer_load");
  matched.every_size = false;
  matched.capacity = &PeerTableAt94;
  matched.applies = &PeerLoadAtMost94;
  matched.remove = true;
  RegisterRow(matched);
  return true;
}();

}  // namespace

shardfilter::Database& HandleStore() {
  static Store store;
  return store.db();
}

}  // namespace sbs
