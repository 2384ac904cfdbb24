// RocksDB's row of the side-by-side (rocksdb_api.h).
#include "harness.h"
#include "rocksdb_api.h"

namespace sbs {
namespace {

const bool registered = [] {
  Row r;
  r.id = "rocksdb";
  r.run = &RunUnit<FilterAPI<RocksDb>>;
  r.batch = true;
  return RegisterRow(r);
}();

}  // namespace
}  // namespace sbs
