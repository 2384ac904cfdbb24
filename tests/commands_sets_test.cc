// SF.DEDUP* and SF.TIER* through the command layer on the server's keyspace
// (docs/server.md): dedup sets' exact answers, tiered filters' levels, and
// one keyspace for filters, dedup sets and tiered filters (TYPE, KEYS, DEL,
// FLUSHALL, WRONGTYPE, one kind per name, reserved level names).
#include <string>

#include "commands_test_util.h"

namespace shardfilter::testing {
namespace {

using SetCommandsTest = CommandsFixture;

const std::string kLevel0("t\0level/0", 9);

TEST_F(SetCommandsTest, DedupSetAnswersNewOrSeenExactly) {
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "seen", "CAPACITY", "1000", "ERROR", "0.01",
                 "FILTER", "cuckoo"}),
            "+OK\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "seen"}), "-ERR item exists\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "seen", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "seen", "a"}), ":0\r\n");
  // Within one call a repeat is new at its first occurrence only.
  EXPECT_EQ(Run({"SF.DEDUPMADD", "seen", "a", "b", "c", "b"}),
            "*4\r\n:0\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPEXISTS", "seen", "b"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.DEDUPMEXISTS", "seen", "a", "zz"}), "*2\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPDEL", "seen", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.DEDUPDEL", "seen", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPDEL", "seen", "b", "q"}), "*2\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPEXISTS", "seen", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "seen", "a"}), ":1\r\n");  // new again
  // Exact: none of 2000 never-added items is reported present.
  std::vector<std::string> probe = {"SF.DEDUPMEXISTS", "seen"};
  for (int i = 0; i < 2000; ++i) probe.push_back("absent-" + std::to_string(i));
  std::string expect = "*2000\r\n";
  for (int i = 0; i < 2000; ++i) expect += ":0\r\n";
  EXPECT_EQ(Run(probe), expect);
  const std::string info = Run({"SF.DEDUPINFO", "seen"});
  EXPECT_NE(info.find("new_keys\r\n:4\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("duplicates\r\n:3\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("ttl_ms\r\n:0\r\n"), std::string::npos) << info;
  // Missing keys: queries answer absent, DEL and INFO "not found", ADD
  // creates a set with the defaults.
  EXPECT_EQ(Run({"SF.DEDUPEXISTS", "none", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPMEXISTS", "none", "a", "b"}), "*2\r\n:0\r\n:0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPDEL", "none", "a"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"SF.DEDUPINFO", "none"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "auto", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"TYPE", "auto"}), "+SFdedupst\r\n");
}

TEST_F(SetCommandsTest, DedupOptionsAndErrors) {
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "CAPACITY", "0"}).substr(0, 17),
            "-ERR bad capacity");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "ERROR", "1"}),
            "-ERR 0 < error rate range < 1\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "TTL", "-1"}),
            "-ERR TTL must be a number of milliseconds >= 0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "PARTITIONS", "4"}),
            "-ERR PARTITIONS needs a TTL\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "TTL", "1000", "PARTITIONS", "0"}),
            "-ERR PARTITIONS must be in 1..1024\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "FILTER", "xor"}),
            "-ERR FILTER must be cuckoo, counting or bloom\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "DURABILITY", "maybe"}),
            "-ERR DURABILITY must be none, journal or sync\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "TTL"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "COLOR", "red"}),
            "-ERR syntax error\r\n");
  // The engine's own check: a TTL not a multiple of the partitions.
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "TTL", "1001", "PARTITIONS", "2"})
                .substr(0, 5),
            "-ERR ");
  EXPECT_EQ(Run({"EXISTS", "d"}), ":0\r\n");  // none of them created it
  // Items over the engine's bound are refused, nothing written.
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "d", "TTL", "60000"}), "+OK\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "d", std::string(kMaxDedupKeyBytes + 1, 'k')})
                .substr(0, 5),
            "-ERR ");
  EXPECT_NE(Run({"SF.DEDUPINFO", "d"}).find("ttl_ms\r\n:60000\r\n"),
            std::string::npos);
  EXPECT_EQ(Run({"SF.DEDUPINFO", "d"}).find("new_keys\r\n:1"),
            std::string::npos);
}

// --max-filter-bytes bounds every filter a client can make the server
// build: a dedup set's filters too (before, only the memory budget did).
TEST_F(SetCommandsTest, FiltersOverMaxFilterBytesAreRefused) {
  ks_options_.max_filter_bytes = 1 << 20;
  OpenStore();
  std::string r = Run({"SF.DEDUPCREATE", "big", "CAPACITY", "100000000"});
  EXPECT_EQ(r.rfind("-ERR", 0), 0u) << r;
  EXPECT_EQ(Run({"EXISTS", "big"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "small", "CAPACITY", "1000"}), "+OK\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "small", "a"}), ":1\r\n");
  r = Run({"SF.TIERCREATE", "t", "LEVEL", "bloom", "100000000"});
  EXPECT_EQ(r.rfind("-ERR", 0), 0u) << r;
  EXPECT_EQ(Run({"EXISTS", "t"}), ":0\r\n");
}

TEST_F(SetCommandsTest, DedupSetsAndTieredFiltersSurviveAReopen) {
  EXPECT_EQ(Run({"SF.DEDUPMADD", "seen", "a", "b"}), "*2\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Run({"SF.TIERCREATE", "t", "EXACT", "LEVEL", "bloom", "1000",
                 "ERROR", "0.1", "LEVEL", "bloom", "1000"}),
            "+OK\r\n");
  EXPECT_EQ(Run({"SF.TIERMADD", "t", "x", "y"}), "*2\r\n:1\r\n:1\r\n");
  OpenStore();  // closes the sets (journals into RocksDB), reopens
  EXPECT_EQ(Run({"SF.DEDUPMEXISTS", "seen", "a", "b", "c"}),
            "*3\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "seen", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.TIERMEXISTS", "t", "x", "y", "z"}),
            "*3\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Run({"KEYS", "*"}), "*2\r\n$4\r\nseen\r\n$1\r\nt\r\n");
  EXPECT_EQ(Run({"TYPE", "t"}), "+SFtiered-\r\n");
}

TEST_F(SetCommandsTest, TieredFilterLevelsExactLevelAndRemoval) {
  EXPECT_EQ(Run({"SF.TIERCREATE", "bl", "EXACT", "LEVEL", "bloom", "1000",
                 "ERROR", "0.1", "LEVEL", "bloom", "1000", "ERROR", "0.01"}),
            "+OK\r\n");
  EXPECT_EQ(Run({"SF.TIERADD", "bl", "10.0.0.1"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.TIEREXISTS", "bl", "10.0.0.1"}), ":1\r\n");
  // With the exact level no absent item is ever reported present.
  std::vector<std::string> probe = {"SF.TIERMEXISTS", "bl"};
  for (int i = 0; i < 3000; ++i) probe.push_back("other-" + std::to_string(i));
  std::string expect = "*3000\r\n";
  for (int i = 0; i < 3000; ++i) expect += ":0\r\n";
  EXPECT_EQ(Run(probe), expect);
  EXPECT_EQ(Run({"SF.TIERDEL", "bl", "10.0.0.1"}).substr(0, 48),
            "-ERR this tiered filter cannot remove items: tie");
  EXPECT_EQ(Run({"SF.TIEREXISTS", "bl", "10.0.0.1"}), ":1\r\n");  // unchanged
  const std::string info = Run({"SF.TIERINFO", "bl"});
  EXPECT_NE(info.find("exact_level\r\n:1\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("levels\r\n*2\r\n"), std::string::npos) << info;
  // Counting and cuckoo levels with an exact level remove.
  EXPECT_EQ(Run({"SF.TIERCREATE", "c", "EXACT", "LEVEL", "counting", "1000",
                 "LEVEL", "cuckoo", "1000"}),
            "+OK\r\n");
  EXPECT_EQ(Run({"SF.TIERADD", "c", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.TIERDEL", "c", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.TIERDEL", "c", "x"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.TIEREXISTS", "c", "x"}), ":0\r\n");
  // Missing keys.
  EXPECT_EQ(Run({"SF.TIEREXISTS", "none", "x"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.TIERADD", "none", "x"}), "-ERR not found\r\n");
  EXPECT_EQ(Run({"SF.TIERINFO", "none"}), "-ERR not found\r\n");
}

TEST_F(SetCommandsTest, TieredCreateErrors) {
  EXPECT_EQ(Run({"SF.TIERCREATE", "t", "EXACT", "LEVEL", "bloom"}),
            "-ERR LEVEL needs a type and a capacity\r\n");
  EXPECT_EQ(Run({"SF.TIERCREATE", "t", "SOMETHING", "LEVEL", "bloom", "10"}),
            "-ERR syntax error\r\n");
  EXPECT_EQ(
      Run({"SF.TIERCREATE", "t", "LEVEL", "bloom", "10", "DURABILITY", "sync"})
          .substr(0, 40),
      "-ERR DURABILITY is set for the whole tie");
  EXPECT_EQ(Run({"SF.TIERCREATE", "t", "LEVEL", "xor", "10"}),
            "-ERR unknown filter type 'xor' (bloom, counting or cuckoo)\r\n");
  std::vector<std::string> nine = {"SF.TIERCREATE", "t"};
  for (int i = 0; i < 9; ++i) {
    nine.insert(nine.end(), {"LEVEL", "bloom", "10"});
  }
  EXPECT_EQ(Run(nine), "-ERR a tiered filter has 1..8 levels (LEVEL ...)\r\n");
  EXPECT_EQ(Run({"EXISTS", "t"}), ":0\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");
}

TEST_F(SetCommandsTest, OneKeyspaceOneKindPerName) {
  EXPECT_EQ(Run({"BF.ADD", "f", "1"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "d", "1"}), ":1\r\n");
  EXPECT_EQ(Run({"SF.TIERCREATE", "t", "LEVEL", "bloom", "100"}), "+OK\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":3\r\n");
  EXPECT_EQ(Run({"KEYS", "*"}), "*3\r\n$1\r\nd\r\n$1\r\nf\r\n$1\r\nt\r\n");
  EXPECT_EQ(Run({"EXISTS", "d", "f", "t", "x"}), ":3\r\n");
  EXPECT_EQ(Run({"TYPE", "f"}), "+MBbloom--\r\n");
  // A key of one kind refuses the others' creates and writes.
  const std::string wrong =
      "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
  for (const char* key : {"d", "t"}) {
    EXPECT_EQ(Run({"BF.ADD", key, "1"}), wrong) << key;
    EXPECT_EQ(Run({"CF.ADD", key, "1"}), wrong) << key;
    EXPECT_EQ(Run({"SF.ADD", key, "1"}), wrong) << key;
    EXPECT_EQ(Run({"SF.EXISTS", key, "1"}), wrong) << key;
    EXPECT_EQ(Run({"BF.RESERVE", key, "0.01", "100"}), wrong);  // as for CF
    EXPECT_EQ(Run({"SF.CREATE", key, "bloom", "100"}).substr(0, 4), "-ERR");
    EXPECT_EQ(Run({"BF.EXISTS", key, "1"}), ":0\r\n");  // as RedisBloom
  }
  EXPECT_EQ(Run({"SF.DEDUPADD", "f", "1"}), wrong);
  EXPECT_EQ(Run({"SF.DEDUPEXISTS", "t", "1"}), wrong);
  EXPECT_EQ(Run({"SF.TIERADD", "f", "1"}), wrong);
  EXPECT_EQ(Run({"SF.TIEREXISTS", "d", "1"}), wrong);
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "f"}), "-ERR item exists\r\n");
  EXPECT_EQ(Run({"SF.DEDUPCREATE", "t"}), "-ERR item exists\r\n");
  EXPECT_EQ(Run({"SF.TIERCREATE", "d", "LEVEL", "bloom", "10"}),
            "-ERR item exists\r\n");
  // EXPIRE is for filters; TTL of the others: no deadline.
  EXPECT_EQ(Run({"EXPIRE", "d", "10"}).substr(0, 30),
            "-ERR EXPIRE applies to filters");
  EXPECT_EQ(Run({"TTL", "d"}), ":-1\r\n");
  EXPECT_EQ(Run({"SCAN", "0", "TYPE", "SFdedupst"}),
            "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nd\r\n");
  // DEL and FLUSHALL reach every kind.
  EXPECT_EQ(Run({"DEL", "d", "t"}), ":2\r\n");
  EXPECT_EQ(Run({"SF.DEDUPEXISTS", "d", "1"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.TIEREXISTS", "t", "1"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "t", "1"}), ":1\r\n");  // the name is free
  EXPECT_EQ(Run({"SF.TIERCREATE", "u", "LEVEL", "cuckoo", "100"}), "+OK\r\n");
  EXPECT_EQ(Run({"FLUSHALL"}), "+OK\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");
  EXPECT_TRUE(db_->List().empty());
}

TEST_F(SetCommandsTest, LevelNamesAreReservedAndUnreachable) {
  EXPECT_EQ(Run({"SF.TIERCREATE", "t", "LEVEL", "bloom", "100"}), "+OK\r\n");
  EXPECT_EQ(Run({"SF.TIERADD", "t", "x"}), ":1\r\n");
  // The level is a catalog filter, but no command reaches it as a key.
  EXPECT_EQ(Run({"DEL", kLevel0}), ":0\r\n");
  EXPECT_EQ(Run({"EXISTS", kLevel0}), ":0\r\n");
  EXPECT_EQ(Run({"TYPE", kLevel0}), "+none\r\n");
  EXPECT_EQ(Run({"TTL", kLevel0}), ":-2\r\n");
  EXPECT_EQ(Run({"EXPIRE", kLevel0, "10"}), ":0\r\n");
  EXPECT_EQ(Run({"BF.ADD", kLevel0, "y"}).substr(0, 4), "-ERR");
  EXPECT_EQ(Run({"SF.DEDUPADD", kLevel0, "y"}).substr(0, 4), "-ERR");
  EXPECT_EQ(Run({"SF.TIEREXISTS", "t", "x"}), ":1\r\n");  // intact
  EXPECT_EQ(Run({"SF.TIEREXISTS", "t", "y"}), ":0\r\n");
  EXPECT_EQ(Run({"KEYS", "*"}), "*1\r\n$1\r\nt\r\n");
  // And a name posing as another tiered filter's level cannot be made,
  // so a later SF.TIERCREATE never replaces a user's filter.
  const std::string other("u\0level/0", 9);
  EXPECT_EQ(Run({"SF.CREATE", other, "bloom", "10"}).substr(0, 4), "-ERR");
  EXPECT_EQ(Run({"SF.TIERCREATE", "u", "LEVEL", "bloom", "100"}), "+OK\r\n");
}

// A refused SF.DEDUPADD / SF.DEDUPMADD (an item over 4096 bytes) creates
// nothing.
TEST_F(SetCommandsTest, RefusedDedupAddCreatesNoSet) {
  const std::string big(4097, 'x');
  EXPECT_EQ(Run({"SF.DEDUPADD", "d", big}),
            "-ERR dedup key of 4097 bytes exceeds the limit of 4096\r\n");
  EXPECT_EQ(
      Run({"SF.DEDUPMADD", "d", "a", big}),
      "-ERR key #2: dedup key of 4097 bytes exceeds the limit of 4096\r\n");
  EXPECT_EQ(Run({"EXISTS", "d"}), ":0\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(Run({"SF.DEDUPADD", "d", std::string(4096, 'x')}), ":1\r\n");
}

// Names no key can have (empty, over 1024 bytes) are absent to the dedup
// and tiered commands, and refused by the writes that would create them.
TEST_F(SetCommandsTest, NamesTheHostCannotHoldAreAbsent) {
  const std::string refused =
      "-ERR key length must be 1..1024 bytes (shardfilter-server)\r\n";
  for (const std::string& key : {std::string(), std::string(1025, 'k')}) {
    EXPECT_EQ(Run({"SF.DEDUPADD", key, "x"}), refused);
    EXPECT_EQ(Run({"SF.DEDUPEXISTS", key, "x"}), ":0\r\n");
    EXPECT_EQ(Run({"SF.DEDUPDEL", key, "x"}), "-ERR not found\r\n");
    EXPECT_EQ(Run({"SF.TIEREXISTS", key, "x"}), ":0\r\n");
    EXPECT_EQ(Run({"SF.TIERADD", key, "x"}), "-ERR not found\r\n");
  }
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");
}

}  // namespace
}  // namespace shardfilter::testing
