// Generic commands through the command layer: connection handshake, AUTH,
// MULTI/EXEC, keyspace commands, COMMAND, INFO, CONFIG, unknown commands.
#include <algorithm>
#include <set>
#include <string>
#include <thread>

#include "commands_test_util.h"
#include "tools/commands/util.h"

namespace shardfilter::testing {
namespace {

using GenericCommandsTest = CommandsFixture;

TEST_F(GenericCommandsTest, PingEchoSelectTime) {
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(Run({"ping", "hi"}), "$2\r\nhi\r\n");
  EXPECT_EQ(Run({"PING", "a", "b"}),
            "-ERR wrong number of arguments for 'ping' command\r\n");
  EXPECT_EQ(Run({"ECHO", "x"}), "$1\r\nx\r\n");
  EXPECT_EQ(Run({"SELECT", "0"}), "+OK\r\n");
  EXPECT_EQ(Run({"SELECT", "1"}), "-ERR DB index is out of range\r\n");
  EXPECT_EQ(Run({"TIME"}).rfind("*2\r\n$", 0), 0u);
}

TEST_F(GenericCommandsTest, UnknownCommandUsesRedisText) {
  EXPECT_EQ(
      Run({"FOO", "a", "b"}),
      "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n");
  EXPECT_EQ(Run({"nope"}),
            "-ERR unknown command 'nope', with args beginning with: \r\n");
}

TEST_F(GenericCommandsTest, HelloSwitchesProtocol) {
  const std::string hello2 = Run({"HELLO"});
  EXPECT_EQ(hello2.rfind("*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n", 0), 0u);
  const std::string hello3 = Run({"HELLO", "3", "SETNAME", "me"});
  EXPECT_EQ(hello3.rfind("%7\r\n", 0), 0u);
  EXPECT_NE(hello3.find("$5\r\nproto\r\n:3\r\n"), std::string::npos);
  EXPECT_EQ(writer_.protocol(), 3);
  EXPECT_EQ(Run({"CLIENT", "GETNAME"}), "$2\r\nme\r\n");
  EXPECT_EQ(Run({"HELLO", "4"}), "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(Run({"HELLO", "x"}),
            "-ERR Protocol version is not an integer or out of range\r\n");
  EXPECT_EQ(Run({"HELLO", "3", "BOGUS"}),
            "-ERR Syntax error in HELLO option 'BOGUS'\r\n");
  EXPECT_EQ(Run({"RESET"}), "+RESET\r\n");
  EXPECT_EQ(writer_.protocol(), 2);
  EXPECT_EQ(Run({"CLIENT", "GETNAME"}), "$-1\r\n");
}

TEST_F(GenericCommandsTest, AuthGatesCommands) {
  host_.password = "secret";
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), "-NOAUTH Authentication required.\r\n");
  EXPECT_EQ(Run({"AUTH", "wrong"}),
            "-WRONGPASS invalid username-password pair or user is "
            "disabled.\r\n");
  EXPECT_EQ(Run({"HELLO", "3"}).rfind("-NOAUTH HELLO must be called", 0), 0u);
  EXPECT_EQ(Run({"AUTH", "secret"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), ":1\r\n");
  EXPECT_EQ(Run({"RESET"}), "+RESET\r\n");  // deauthenticates
  EXPECT_EQ(Run({"PING"}), "-NOAUTH Authentication required.\r\n");
  EXPECT_EQ(Run({"HELLO", "2", "AUTH", "default", "secret"}).rfind("*14", 0),
            0u);
  EXPECT_EQ(Run({"PING"}), "+PONG\r\n");
}

TEST_F(GenericCommandsTest, AuthWithoutPasswordConfigured) {
  EXPECT_EQ(Run({"AUTH", "x"}).rfind("-ERR AUTH <password> called without", 0),
            0u);
}

TEST_F(GenericCommandsTest, ClientSubcommands) {
  session_.id = 7;
  EXPECT_EQ(Run({"CLIENT", "ID"}), ":7\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETNAME", "a b"}),
            "-ERR Client names cannot contain spaces, newlines or special "
            "characters.\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETNAME", "ok"}), "+OK\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETINFO", "LIB-NAME", "redis-py"}), "+OK\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETINFO", "LIB-VER", "4.3.4"}), "+OK\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETINFO", "X", "1"}),
            "-ERR Unrecognized option 'X'\r\n");
  EXPECT_EQ(Run({"CLIENT", "LIST"}), "$5\r\nid=7\n\r\n");
  EXPECT_EQ(Run({"CLIENT", "FOO"}),
            "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n");
  EXPECT_EQ(Run({"CLIENT", "SETNAME"}),
            "-ERR wrong number of arguments for 'client|setname' command\r\n");
}

TEST_F(GenericCommandsTest, MultiQueuesThenRuns) {
  EXPECT_EQ(Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(Run({"MULTI"}), "-ERR MULTI calls can not be nested\r\n");
  EXPECT_EQ(Run({"BF.ADD", "k", "a"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "k", "a"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXISTS", "k"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXEC"}), "*3\r\n:1\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Run({"EXEC"}), "-ERR EXEC without MULTI\r\n");
  EXPECT_EQ(Run({"DISCARD"}), "-ERR DISCARD without MULTI\r\n");
  // A refused command aborts the transaction.
  EXPECT_EQ(Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.ADD", "k", "b"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"NOSUCH"}).rfind("-ERR unknown command", 0), 0u);
  EXPECT_EQ(Run({"EXEC"}),
            "-EXECABORT Transaction discarded because of previous errors.\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "k", "b"}), ":0\r\n");
  // DISCARD drops the queue.
  EXPECT_EQ(Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.ADD", "k", "c"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"DISCARD"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "k", "c"}), ":0\r\n");
  // Runtime errors inside EXEC are elements of its array.
  EXPECT_EQ(Run({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(Run({"BF.INFO", "missing"}), "+QUEUED\r\n");
  EXPECT_EQ(Run({"EXEC"}), "*1\r\n-ERR not found\r\n");
}

TEST_F(GenericCommandsTest, KeyspaceCommands) {
  ASSERT_EQ(Run({"BF.ADD", "b1", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"BF.ADD", "b2", "x"}), ":1\r\n");
  ASSERT_EQ(Run({"CF.ADD", "c1", "x"}), ":1\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":3\r\n");
  EXPECT_EQ(Run({"EXISTS", "b1", "c1", "zz", "b1"}), ":3\r\n");
  EXPECT_EQ(Run({"TYPE", "b1"}), "+MBbloom--\r\n");
  EXPECT_EQ(Run({"TYPE", "zz"}), "+none\r\n");
  EXPECT_EQ(Run({"KEYS", "*"}), "*3\r\n$2\r\nb1\r\n$2\r\nb2\r\n$2\r\nc1\r\n");
  EXPECT_EQ(Run({"KEYS", "b[2-9]"}), "*1\r\n$2\r\nb2\r\n");
  EXPECT_EQ(Run({"DEL", "b1", "zz"}), ":1\r\n");
  EXPECT_EQ(Run({"UNLINK", "b1"}), ":0\r\n");
  EXPECT_EQ(Run({"SAVE"}), "+OK\r\n");
  EXPECT_EQ(Run({"BGSAVE"}), "+Background saving started\r\n");
  EXPECT_EQ(Run({"LASTSAVE"}).rfind(":", 0), 0u);
  EXPECT_EQ(Run({"FLUSHALL"}), "+OK\r\n");
  EXPECT_EQ(Run({"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(Run({"FLUSHDB", "BOGUS"}), "-ERR syntax error\r\n");
}

// The server caches filter handles per thread: a DEL or FLUSHALL answered
// on one thread must be seen by the next command of every other thread.
TEST_F(GenericCommandsTest, DeleteIsSeenByOtherThreadsCachedHandles) {
  ASSERT_EQ(Run({"BF.ADD", "k", "a"}), ":1\r\n");
  ASSERT_EQ(Run({"BF.EXISTS", "k", "a"}), ":1\r\n");  // cached here
  auto on_other_thread = [this](std::vector<std::string> args) {
    std::string out;
    std::thread t([&] {
      commands::Session session;
      resp::RespWriter writer(&out, 2);
      commands::CommandContext ctx{session, *keyspace_, host_, writer};
      std::vector<std::string_view> views(args.begin(), args.end());
      commands::Dispatch(ctx, views);
    });
    t.join();
    return out;
  };
  EXPECT_EQ(on_other_thread({"DEL", "k"}), ":1\r\n");
  EXPECT_EQ(Run({"BF.EXISTS", "k", "a"}), ":0\r\n");
  EXPECT_EQ(Run({"CF.ADD", "k", "a"}), ":1\r\n");  // a new key, new type
  EXPECT_EQ(on_other_thread({"TYPE", "k"}), "+MBbloomCF\r\n");
  EXPECT_EQ(on_other_thread({"FLUSHALL"}), "+OK\r\n");
  EXPECT_EQ(Run({"CF.EXISTS", "k", "a"}), ":0\r\n");
}

TEST_F(GenericCommandsTest, ScanVisitsEveryKeyOnce) {
  std::set<std::string> want;
  for (int i = 0; i < 57; ++i) {
    const std::string k = "key:" + std::to_string(i);
    ASSERT_EQ(Run({"BF.ADD", k, "x"}), ":1\r\n");
    want.insert(k);
  }
  ASSERT_EQ(Run({"CF.ADD", "cuckoo", "x"}), ":1\r\n");
  std::set<std::string> seen;
  std::string cursor = "0";
  int calls = 0;
  do {
    std::vector<std::string> names;
    const std::string reply =
        Run({"SCAN", cursor, "MATCH", "key:*", "COUNT", "10"});
    // *2\r\n$N\r\n<cursor>\r\n*M\r\n($L\r\n<key>\r\n)*
    size_t p = reply.find('$');
    size_t nl = reply.find("\r\n", p);
    cursor = reply.substr(nl + 2, reply.find("\r\n", nl + 2) - nl - 2);
    p = reply.find('*', nl);
    p = reply.find("\r\n", p) + 2;
    while (p < reply.size()) {
      const size_t e = reply.find("\r\n", p);
      const size_t len = std::stoul(reply.substr(p + 1, e - p - 1));
      names.push_back(reply.substr(e + 2, len));
      p = e + 2 + len + 2;
    }
    for (const auto& n : names) EXPECT_TRUE(seen.insert(n).second) << n;
    ASSERT_LT(++calls, 100);
  } while (cursor != "0");
  EXPECT_EQ(seen, want);
  EXPECT_GT(calls, 3);  // COUNT bounded each call
  EXPECT_EQ(Run({"SCAN", "0", "TYPE", "MBbloomCF", "COUNT", "1000"}),
            "*2\r\n$1\r\n0\r\n*1\r\n$6\r\ncuckoo\r\n");
  EXPECT_EQ(Run({"SCAN", "x"}), "-ERR invalid cursor\r\n");
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "0"}), "-ERR syntax error\r\n");
}

TEST_F(GenericCommandsTest, CommandIntrospection) {
  const auto all = commands::AllCommands();
  EXPECT_TRUE(
      std::is_sorted(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return std::string_view(a.name) < std::string_view(b.name);
      }));
  EXPECT_EQ(Run({"COMMAND", "COUNT"}),
            ":" + std::to_string(all.size()) + "\r\n");
  EXPECT_EQ(Run({"COMMAND", "GETKEYS", "BF.MADD", "k", "a", "b"}),
            "*1\r\n$1\r\nk\r\n");
  EXPECT_EQ(Run({"COMMAND", "GETKEYS", "DEL", "a", "b"}),
            "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  EXPECT_EQ(Run({"COMMAND", "GETKEYS", "PING"}),
            "-ERR The command has no key arguments\r\n");
  EXPECT_EQ(Run({"COMMAND", "GETKEYS", "NOPE"}),
            "-ERR Invalid command specified\r\n");
  const std::string info = Run({"COMMAND", "INFO", "bf.add", "nope"});
  EXPECT_EQ(
      info.rfind("*2\r\n*10\r\n$6\r\nbf.add\r\n:3\r\n*2\r\n+write\r\n+denyoom"
                 "\r\n:1\r\n:1\r\n:1\r\n",
                 0),
      0u)
      << info;
  EXPECT_NE(info.find("*-1\r\n"), std::string::npos);
  EXPECT_EQ(
      Run({"COMMAND", "DOCS", "bf.add"}).rfind("*2\r\n$6\r\nbf.add\r\n*6", 0),
      0u);
  EXPECT_EQ(Run({"COMMAND"}).rfind("*" + std::to_string(all.size()), 0), 0u);
}

TEST_F(GenericCommandsTest, InfoAndConfig) {
  ASSERT_EQ(Run({"BF.ADD", "k", "x"}), ":1\r\n");
  const std::string info = Run({"INFO"});
  EXPECT_NE(info.find("# Server\r\nredis_version:7.0.0"), std::string::npos);
  EXPECT_NE(info.find("# Persistence\r\nloading:0\r\n"), std::string::npos);
  EXPECT_NE(info.find("db0:keys=1,expires=0"), std::string::npos);
  const std::string body = "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n";
  EXPECT_EQ(Run({"INFO", "keyspace"}),
            "$" + std::to_string(body.size()) + "\r\n" + body + "\r\n");
  EXPECT_EQ(Run({"CONFIG", "GET", "save"}), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
  EXPECT_EQ(
      Run({"CONFIG", "GET", "APPEND*", "databases"}),
      "*4\r\n$10\r\nappendonly\r\n$2\r\nno\r\n$9\r\ndatabases\r\n$1\r\n1\r\n");
  writer_.SetProtocol(3);
  EXPECT_EQ(Run({"CONFIG", "GET", "save"}), "%1\r\n$4\r\nsave\r\n$0\r\n\r\n");
}

TEST_F(GenericCommandsTest, ShutdownAsksTheHost) {
  EXPECT_EQ(Run({"SHUTDOWN", "BOGUS"}), "-ERR syntax error\r\n");
  EXPECT_EQ(Run({"SHUTDOWN", "NOSAVE"}), "");
  EXPECT_EQ(host_.shutdowns, 1);
  EXPECT_TRUE(session_.close_after_reply);
}

TEST_F(GenericCommandsTest, QuitClosesAfterReply) {
  EXPECT_EQ(Run({"QUIT"}), "+OK\r\n");
  EXPECT_TRUE(session_.close_after_reply);
}

TEST(GlobMatchTest, FollowsRedisRules) {
  using commands::GlobMatch;
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("h?llo", "hello"));
  EXPECT_TRUE(GlobMatch("h*llo", "heeeello"));
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[a-b]llo", "hbllo"));
  EXPECT_TRUE(GlobMatch("a\\*b", "a*b"));
  EXPECT_FALSE(GlobMatch("a\\*b", "axb"));
  EXPECT_TRUE(GlobMatch("*a*b*c*", "xxaxxbxxcxx"));
  EXPECT_FALSE(GlobMatch("*a*b*c*", "xxaxxcxxbxx"));
  EXPECT_TRUE(GlobMatch("SAVE", "save", /*nocase=*/true));
}

}  // namespace
}  // namespace shardfilter::testing
