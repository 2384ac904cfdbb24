// Tests only: the rocksdb::Env that every Store opened afterwards uses, so
// that fault-injection tests (tests/fault_fs.h) can fail writes with ENOSPC
// or EIO and drop unsynced data at a simulated power loss. Kept out of
// DatabaseOptions on purpose: no production caller sets it.
//
// Thread safety: set it while no Store is being opened; the Env must
// outlive every Store opened with it.
#ifndef SHARDFILTER_PERSISTENCE_TEST_ENV_H_
#define SHARDFILTER_PERSISTENCE_TEST_ENV_H_

namespace rocksdb {
class Env;
}

namespace shardfilter::persistence::internal {

// nullptr restores RocksDB's default Env.
void SetStoreEnvForTesting(rocksdb::Env* env);
rocksdb::Env* StoreEnvForTesting();

}  // namespace shardfilter::persistence::internal

#endif  // SHARDFILTER_PERSISTENCE_TEST_ENV_H_
