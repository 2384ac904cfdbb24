// Writes on a full disk through the command layer on the server's keyspace:
// every write command's error reply names the cause (the engine's message,
// which says the disk is full), never only "problem inserting into filter".
#include <string>
#include <vector>

#include "commands_test_util.h"
#include "fault_fs.h"
#include "persistence/test_env.h"

namespace shardfilter::testing {
namespace {

using DiskFullCommandsTest = CommandsFixture;

using testing::EnvScope;

TEST_F(DiskFullCommandsTest, WritesOnAFullDiskSayTheDiskIsFull) {
  FaultEnv fe;
  EnvScope scope(fe);
  OpenStore();  // through the faulty file system
  // Small filters journal in RocksDB's WAL (through the env).
  ASSERT_EQ(Run({"BF.RESERVE", "b", "0.01", "100"}), "+OK\r\n");
  ASSERT_EQ(Run({"CF.RESERVE", "c", "100"}), "+OK\r\n");
  ASSERT_EQ(Run({"SF.CREATE", "s", "counting", "100"}), "+OK\r\n");
  ASSERT_EQ(Run({"BF.ADD", "b", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"CF.ADD", "c", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"SF.ADD", "s", "x"}), ":1\r\n");
  fe.fs->SetBudget(0);
  const std::string full = "the disk is full";
  // Each command its own items (a failed write may still have set them).
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"BF.ADD", "b", "y1"},
           {"BF.MADD", "b", "y2", "z2"},
           {"BF.INSERT", "b", "ITEMS", "y3"},
           {"CF.ADD", "c", "y4"},
           {"CF.ADDNX", "c", "y5"},
           {"CF.INSERT", "c", "ITEMS", "y6"},
           {"CF.INSERTNX", "c", "ITEMS", "y7"},
           {"CF.DEL", "c", "x"},
           {"SF.ADD", "s", "y8"},
           {"SF.MADD", "s", "y9"},
           {"SF.REMOVE", "s", "x"},
           {"BF.RESERVE", "b2", "0.01", "100"},
           {"CF.RESERVE", "c2", "100"},
           {"SF.CREATE", "s2", "bloom", "100"},
           {"BF.ADD", "b3", "x"},
           {"CF.ADD", "c3", "x"},
           {"SF.TIERCREATE", "t", "LEVEL", "bloom", "100"},
           {"EXPIRE", "b", "1000"},
           {"DEL", "b"}}) {
    const std::string got = Run(args);
    EXPECT_NE(got.find(full), std::string::npos)
        << args[0] << " answered " << got;
  }
  // Closed while the disk is still full (its final checkpoint may fail),
  // before the fault file system goes away.
  keyspace_.reset();
  (void)db_->Close();
  db_.reset();
}

}  // namespace
}  // namespace shardfilter::testing
