// Cluster emulation through the command layer: Redis's key slot (CRC16
// with hash tags, against values a real Redis 7.0 answered for CLUSTER
// KEYSLOT), and CLUSTER / READONLY / READWRITE / ASKING replies with and
// without a cluster node (RESP2 and RESP3 shapes of Redis 7.0).
#include <string>

#include "commands_test_util.h"
#include "tools/commands/key_slot.h"

namespace shardfilter::testing {
namespace {

using commands::KeySlot;

TEST(KeySlotTest, Crc16IsXmodem) {
  EXPECT_EQ(commands::Crc16("123456789"), 0x31C3);  // the check value
  EXPECT_EQ(commands::Crc16(""), 0);
}

TEST(KeySlotTest, MatchesRedis) {
  // CLUSTER KEYSLOT of redis-server 7.0.15.
  EXPECT_EQ(KeySlot("foo"), 12182);
  EXPECT_EQ(KeySlot(""), 0);
  EXPECT_EQ(KeySlot("bar"), 5061);
  EXPECT_EQ(KeySlot("123456789"), 12739);
  EXPECT_EQ(KeySlot("{user1000}.following"), 3443);
  EXPECT_EQ(KeySlot("{user1000}.followers"), 3443);
  EXPECT_EQ(KeySlot("a{b}c"), 3300);
}

TEST(KeySlotTest, HashTags) {
  // The first '{' and the first '}' after it; an empty tag hashes it all.
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), KeySlot("bar"));
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), 5061);
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), KeySlot("{bar"));
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), 4015);
  EXPECT_EQ(KeySlot("foo{}{bar}"), 8363);  // whole key
  EXPECT_EQ(KeySlot("{}"), 15257);         // whole key
  EXPECT_EQ(KeySlot("{unclosed"), KeySlot(std::string("{unclosed")));
  EXPECT_NE(KeySlot("{unclosed"), KeySlot("unclosed"));
  // Binary keys: every byte counts, slots stay below 16384.
  const std::string binary("\0\xff{\x01}", 5);
  EXPECT_EQ(KeySlot(binary), KeySlot(std::string("\x01", 1)));
  for (int i = 0; i < 1000; ++i) {
    EXPECT_LT(KeySlot("key:" + std::to_string(i)), 16384);
  }
}

class ClusterCommandsTest : public CommandsFixture {
 protected:
  void Enable() {
    node_.id = std::string(40, 'a');
    node_.ip = "127.0.0.1";
    node_.port = 7000;
    host_.cluster = &node_;
  }
  commands::ClusterNode node_;
};

TEST_F(ClusterCommandsTest, DisabledByDefault) {
  const std::string disabled =
      "-ERR This instance has cluster support disabled\r\n";
  EXPECT_EQ(Run({"CLUSTER", "INFO"}), disabled);
  EXPECT_EQ(Run({"CLUSTER", "KEYSLOT", "foo"}), disabled);
  EXPECT_EQ(Run({"READONLY"}), disabled);
  EXPECT_EQ(Run({"READWRITE"}), disabled);
  EXPECT_EQ(Run({"ASKING"}), disabled);
  // Arity and unknown subcommands are checked first, as in Redis.
  EXPECT_EQ(Run({"CLUSTER", "KEYSLOT"}),
            "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n");
  EXPECT_EQ(Run({"CLUSTER", "bogus"}),
            "-ERR unknown subcommand 'bogus'. Try CLUSTER HELP.\r\n");
  EXPECT_EQ(Run({"CLUSTER"}),
            "-ERR wrong number of arguments for 'cluster' command\r\n");
  EXPECT_NE(Run({"INFO"}).find("# Cluster\r\ncluster_enabled:0\r\n"),
            std::string::npos);
}

TEST_F(ClusterCommandsTest, SlotsShardsNodesInfoResp2) {
  Enable();
  const std::string id(40, 'a');
  EXPECT_EQ(Run({"CLUSTER", "SLOTS"}),
            "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:7000\r\n$40"
            "\r\n" +
                id + "\r\n*0\r\n");
  EXPECT_EQ(Run({"cluster", "shards"}),
            "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n"
            "*1\r\n*14\r\n$2\r\nid\r\n$40\r\n" +
                id +
                "\r\n$4\r\nport\r\n:7000\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r"
                "\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r"
                "\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\non"
                "line\r\n");
  const std::string nodes =
      id + " 127.0.0.1:7000@17000 myself,master - 0 0 0 connected 0-16383\n";
  EXPECT_EQ(Run({"CLUSTER", "NODES"}),
            "$" + std::to_string(nodes.size()) + "\r\n" + nodes + "\r\n");
  const std::string info = Run({"CLUSTER", "INFO"});
  EXPECT_EQ(info.rfind("$312\r\ncluster_state:ok\r\n", 0), 0u) << info;
  EXPECT_NE(info.find("cluster_known_nodes:1\r\ncluster_size:1\r\n"),
            std::string::npos);
  EXPECT_EQ(Run({"CLUSTER", "MYID"}), "$40\r\n" + id + "\r\n");
  EXPECT_EQ(Run({"CLUSTER", "KEYSLOT", "foo"}), ":12182\r\n");
  EXPECT_EQ(Run({"READONLY"}), "+OK\r\n");
  EXPECT_EQ(Run({"READWRITE"}), "+OK\r\n");
  EXPECT_EQ(Run({"ASKING"}), "+OK\r\n");
  EXPECT_EQ(Run({"CLUSTER", "ADDSLOTS", "1"})
                .rfind("-ERR CLUSTER ADDSLOTS is not supported", 0),
            0u);
  EXPECT_NE(Run({"INFO"}).find("# Cluster\r\ncluster_enabled:1\r\n"),
            std::string::npos);
  EXPECT_NE(Run({"HELLO"}).find("$4\r\nmode\r\n$7\r\ncluster\r\n"),
            std::string::npos);
}

TEST_F(ClusterCommandsTest, Resp3Shapes) {
  Enable();
  writer_.SetProtocol(3);
  const std::string id(40, 'a');
  EXPECT_EQ(Run({"CLUSTER", "SLOTS"}),
            "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:7000\r\n$40"
            "\r\n" +
                id + "\r\n%0\r\n");
  EXPECT_EQ(Run({"CLUSTER", "SHARDS"})
                .rfind("*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r"
                       "\nnodes\r\n*1\r\n%7\r\n$2\r\nid\r\n",
                       0),
            0u);
  EXPECT_EQ(Run({"CLUSTER", "NODES"}).rfind("=106\r\ntxt:" + id + " ", 0), 0u);
  EXPECT_EQ(Run({"CLUSTER", "INFO"}).rfind("=316\r\ntxt:cluster_state:ok", 0),
            0u);
}

TEST_F(ClusterCommandsTest, CrossSlotMultiKeyCommandsRefused) {
  EXPECT_EQ(Run({"BF.ADD", "a", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"BF.ADD", "b", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"EXISTS", "a", "b"}), ":2\r\n");  // standalone: fine
  Enable();
  const std::string crossslot =
      "-CROSSSLOT Keys in request don't hash to the same slot\r\n";
  EXPECT_EQ(Run({"EXISTS", "a", "b"}), crossslot);
  EXPECT_EQ(Run({"DEL", "a", "b"}), crossslot);
  EXPECT_EQ(Run({"EXISTS", "a", "a"}), ":2\r\n");
  EXPECT_EQ(Run({"BF.ADD", "{t}1", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"BF.ADD", "{t}2", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"DEL", "{t}1", "{t}2"}), ":2\r\n");  // one slot
  // BF/CF commands have one key: items never count as keys.
  EXPECT_EQ(Run({"BF.MADD", "a", "b", "c"}), "*2\r\n:1\r\n:1\r\n");
}

TEST_F(ClusterCommandsTest, KeysInSlot) {
  Enable();
  EXPECT_EQ(Run({"BF.ADD", "{user1000}.following", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"CF.ADD", "{user1000}.followers", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"BF.ADD", "foo", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "3443"}), ":2\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "12182"}), ":1\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "0"}), ":0\r\n");
  EXPECT_EQ(Run({"CLUSTER", "GETKEYSINSLOT", "3443", "1"}),
            "*1\r\n$20\r\n{user1000}.followers\r\n");
  EXPECT_EQ(Run({"CLUSTER", "GETKEYSINSLOT", "3443", "10"}),
            "*2\r\n$20\r\n{user1000}.followers\r\n$20\r\n{user1000}."
            "following\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "16384"}),
            "-ERR Invalid slot\r\n");
  EXPECT_EQ(Run({"CLUSTER", "COUNTKEYSINSLOT", "x"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"CLUSTER", "GETKEYSINSLOT", "5", "-1"}),
            "-ERR Invalid slot or number of keys\r\n");
}

}  // namespace
}  // namespace shardfilter::testing
