#!/usr/bin/python3
"""shardfilter-server against real clients: redis-py (Debian's python3-redis,
RESP2, and its RedisCluster against --cluster-emulation), raw sockets (inline commands, pipelining, malformed protocol, a
client that never reads), redis-cli (-2 and -3) and redis-benchmark.

Starts the server itself on a free loopback port, stops it with SIGTERM
(exit 0 expected), restarts it on the same directory and checks the data
survived; kill -9 with journalled writes; AUTH from a password file.

Usage: server_integration_test.py --server PATH [--keep]
Exit 0 = pass, 77 = skipped (a client tool is missing), else failure.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

try:
    import redis
except ImportError:
    print("SKIP: python3-redis is not installed (apt-get install python3-redis)")
    sys.exit(1 if os.environ.get("SF_REQUIRE_CLIENTS") else 77)

import cluster_stats_checks

# Every client tool the test drives must be there: a missing one is a skip
# (77), or a failure where CI requires the clients (SF_REQUIRE_CLIENTS=1),
# as for python3-redis above, never a silent pass of the tests that need it.
for _tool in ("redis-cli", "redis-benchmark"):
    if shutil.which(_tool) is None:
        print("SKIP: %s is not installed (apt-get install redis-tools)" % _tool)
        sys.exit(1 if os.environ.get("SF_REQUIRE_CLIENTS") else 77)

CHECKS = 0


def check(cond, what):
    global CHECKS
    CHECKS += 1
    if not cond:
        raise AssertionError(what)


def raises(fn, text):
    try:
        fn()
    except (redis.ResponseError, redis.AuthenticationError) as e:
        check(text in str(e), "error %r lacks %r" % (str(e), text))
        return
    raise AssertionError("expected an error containing %r" % text)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


STARTED = []  # every server process, killed at exit whatever happened


class Server:
    def __init__(self, binary, db, extra=()):
        self.binary, self.db, self.extra = binary, db, list(extra)
        self.port = None  # the server's own pick at each start (--port 0)
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "--db", self.db, "--port", "0",
             "--threads", "2", "--bind", "127.0.0.1"] + self.extra,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        STARTED.append(self.proc)
        line = self.proc.stdout.readline()
        check("ready" in line, "server did not start: %r" % line)
        m = re.search(r"ready: port (\d+)", line)
        check(m is not None, "no port in the ready line %r" % line)
        self.port = int(m.group(1))
        return self

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=60)
        self.proc.stdout.read()
        return rc

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


def raw(port, payload, expect_close=False, timeout=5.0):
    """Sends payload on a fresh connection; returns what came back (until
    the server closes it when expect_close, else until a short silence)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(payload)
    s.settimeout(timeout if expect_close else 0.5)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        check(not expect_close, "server did not close the connection")
    except ConnectionResetError:
        # The server closed with our unread bytes pending (TCP sends RST).
        check(expect_close, "connection reset")
    s.close()
    return data


def test_bloom(r):
    bf = r.bf()
    check(bf.create("b", 0.01, 1000) in (True, b"OK", "OK"), "BF.RESERVE")
    raises(lambda: bf.create("b", 0.01, 1000), "item exists")
    check(bf.add("b", "x") == 1, "BF.ADD new")
    check(bf.add("b", "x") == 0, "BF.ADD again")
    check(bf.madd("b", "y", "z", "x") == [1, 1, 0], "BF.MADD")
    check(bf.exists("b", "y") == 1, "BF.EXISTS")
    check(bf.mexists("b", "x", "nope") == [1, 0], "BF.MEXISTS")
    info = bf.info("b")
    check(info.capacity == 1000 and info.insertedNum == 3, "BF.INFO")
    check(info.expansionRate == 2 and info.filterNum == 1, "BF.INFO 2")
    check(r.execute_command("BF.CARD", "b") == 3, "BF.CARD")
    check(bf.insert("bi", ["a", "b"], capacity=500, error=0.001) == [1, 1],
          "BF.INSERT")
    raises(lambda: bf.insert("nokey", ["a"], noCreate=True), "not found")
    port = r.connection_pool.connection_kwargs["port"]
    check(raw(port, b"BF.INFO bi CAPACITY\r\n") == b"*1\r\n:500\r\n",
          "BF.INFO CAPACITY")
    raises(lambda: r.execute_command("BF.RESERVE", "e", "2", "100"),
           "(0 < error rate range < 1)")
    raises(lambda: r.execute_command("BF.ADD", "b"), "wrong number of arguments")
    it, chunks = 0, []
    while True:
        it, data = bf.scandump("b", it)
        if it == 0:
            break
        chunks.append((it, data))
    for it, data in chunks:
        bf.loadchunk("bcopy", it, data)
    check(bf.mexists("bcopy", "x", "y", "z", "nope") == [1, 1, 1, 0],
          "BF.SCANDUMP / BF.LOADCHUNK round trip")
    check(bf.create("ns", 0.01, 2, noScale=True) in (True, b"OK", "OK"),
          "NONSCALING")
    res = r.execute_command("BF.MADD", "ns", "1", "2", "3")
    check(res[:2] == [1, 1] and isinstance(res[2], redis.ResponseError),
          "non-scaling full: %r" % (res,))
    # SF.UNION: "bunion" made like "b", then b's items ORed in.
    check(bf.create("bunion", 0.01, 1000) in (True, b"OK", "OK"), "RESERVE")
    bf.add("bunion", "own")
    check(r.execute_command("SF.UNION", "bunion", "b") == b"OK", "SF.UNION")
    check(bf.mexists("bunion", "x", "y", "z", "own") == [1, 1, 1, 1],
          "SF.UNION holds both")
    raises(lambda: r.execute_command("SF.UNION", "bunion", "ns"),
           "differ in shape")


def test_cuckoo(r):
    cf = r.cf()
    check(cf.create("c", 1000) in (True, b"OK", "OK"), "CF.RESERVE")
    check(cf.add("c", "x") == 1, "CF.ADD")
    check(cf.addnx("c", "x") == 0, "CF.ADDNX")
    check(cf.insert("c", ["x", "y"]) == [1, 1], "CF.INSERT")
    check(cf.insertnx("c", ["y", "w"]) == [0, 1], "CF.INSERTNX")
    check(cf.exists("c", "x") == 1, "CF.EXISTS")
    check(r.execute_command("CF.MEXISTS", "c", "x", "nope") == [1, 0],
          "CF.MEXISTS")
    check(cf.count("c", "x") == 2, "CF.COUNT")
    check(cf.delete("c", "x") == 1, "CF.DEL")
    check(cf.count("c", "x") == 1, "CF.COUNT after DEL")
    info = cf.info("c")
    check(info.bucketSize == 2 and info.maxIteration == 20, "CF.INFO")
    check(info.expansionRate == 1 and info.deletedNum == 1, "CF.INFO 2")
    raises(lambda: cf.delete("missing", "x"), "Not found")
    raises(lambda: cf.add("b", "x"), "WRONGTYPE")
    raises(lambda: cf.create("c9", 1000, bucket_size=300),
           "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.")
    raises(lambda: cf.create("c9", 1000, bucket_size=16),
           "BUCKETSIZE must be 2, 4 or 8 (shardfilter)")


def test_generic(r, port):
    check(r.ping() is True, "PING")
    check(r.echo("hi") == b"hi", "ECHO")
    check(r.type("b") == b"MBbloom--" and r.type("c") == b"MBbloomCF", "TYPE")
    check(r.type("zz") == b"none", "TYPE none")
    check(r.exists("b", "c", "zz") == 2, "EXISTS")
    keys = set(r.keys("*"))
    check({b"b", b"c", b"bi", b"ns"} <= keys, "KEYS %r" % keys)
    check(set(r.scan_iter(count=2)) == keys, "SCAN")
    check(r.dbsize() == len(keys), "DBSIZE")
    check(r.client_setname("tester") is True, "CLIENT SETNAME")
    check(r.client_getname() in ("tester", b"tester"), "CLIENT GETNAME")
    check(isinstance(r.client_id(), int), "CLIENT ID")
    check(r.execute_command("SELECT", "0") in (True, b"OK"), "SELECT 0")
    raises(lambda: r.execute_command("SELECT", "1"), "DB index is out of range")
    check(len(r.time()) == 2, "TIME")
    info = r.info()
    check(info["loading"] == 0 and info["redis_version"] == "7.0.0", "INFO")
    check(r.info("keyspace")["db0"]["keys"] == len(keys), "INFO keyspace")
    check(r.config_get("save") == {"save": ""}, "CONFIG GET save")
    check(r.config_get("appendonly") == {"appendonly": "no"}, "appendonly")
    check(r.command_count() > 40, "COMMAND COUNT")
    cmds = r.command()
    check(cmds["bf.add"]["first_key_pos"] == 1, "COMMAND key positions")
    raises(lambda: r.execute_command("NOSUCH", "a"),
           "unknown command 'NOSUCH', with args beginning with: 'a'")
    check(r.lastsave() is not None, "LASTSAVE")
    check(r.save() is True, "SAVE")
    check(r.bgsave() in (True, b"Background saving started"), "BGSAVE")
    r.bf().add("gone", "x")
    check(r.delete("gone") == 1 and r.exists("gone") == 0, "DEL")
    check(r.unlink("gone") == 0, "UNLINK missing")
    # Transactions (redis-py pipelines are MULTI/EXEC by default).
    p = r.pipeline()
    p.execute_command("BF.ADD", "tx", "1")
    p.execute_command("BF.ADD", "tx", "1")
    p.execute_command("BF.EXISTS", "tx", "1")
    check(p.execute() == [1, 0, 1], "MULTI/EXEC")
    p = r.pipeline(transaction=False)
    for i in range(1000):
        p.execute_command("BF.ADD", "pl", str(i))
    check(sum(p.execute()) >= 990, "pipelined BF.ADD")
    check(r.execute_command("BF.CARD", "pl") >= 990, "pipelined BF.CARD")


def test_raw_protocol(port):
    check(raw(port, b"PING\r\n") == b"+PONG\r\n", "inline PING")
    check(raw(port, b"BF.ADD rawkey 'a b'\r\nBF.EXISTS rawkey \"a b\"\r\n")
          == b":1\r\n:1\r\n", "inline with quotes")
    many = raw(port, b"PING\r\n" * 500 + b"*1\r\n$4\r\nPING\r\n" * 500)
    check(many == b"+PONG\r\n" * 1000, "1000 pipelined PINGs: %d bytes" % len(many))
    # Malformed: an error reply, the connection closed, others unaffected.
    other = socket.create_connection(("127.0.0.1", port))
    got = raw(port, b"PING\r\n*1\r\n$-5\r\nPING\r\n", expect_close=True)
    check(got == b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n",
          "malformed bulk: %r" % got)
    got = raw(port, b"*2\r\n+x\r\n", expect_close=True)
    check(got == b"-ERR Protocol error: expected '$', got '+'\r\n",
          "malformed type: %r" % got)
    got = raw(port, b"*1\r\n$" + b"9" * 100 + b"\r\n", expect_close=True)
    check(got.startswith(b"-ERR Protocol error"), "huge bulk: %r" % got)
    other.sendall(b"PING\r\n")
    check(other.recv(100) == b"+PONG\r\n", "other client still served")
    other.close()
    # QUIT answers then closes.
    check(raw(port, b"QUIT\r\nPING\r\n", expect_close=True) == b"+OK\r\n",
          "QUIT")


def test_slow_reader(server):
    """A client that pipelines and never reads must not grow the server."""
    port = server.port
    before = server.rss_kb()
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    chunk = b"BF.MEXISTS pl 1 2 3 4 5 6 7 8 9 10\r\n" * 2000
    sent = 0
    deadline = time.time() + 10
    while time.time() < deadline and sent < 400 << 20:
        try:
            sent += s.send(chunk)
        except BlockingIOError:
            time.sleep(0.01)
    time.sleep(0.5)
    grown_mb = (server.rss_kb() - before) / 1024.0
    # Replies would be ~40 MB per 100 MB of requests: bounded instead.
    check(grown_mb < 64, "server grew %.0f MB for a non-reading client "
          "(sent %d MB)" % (grown_mb, sent >> 20))
    print("  slow reader: sent %d MB unread, server grew %.1f MB"
          % (sent >> 20, grown_mb))
    check(redis.Redis(port=port).ping(), "others still served")
    s.close()


def test_concurrent_clients(port):
    errors = []

    def worker(t):
        try:
            c = redis.Redis(port=port)
            for i in range(300):
                c.bf().add("conc", "%d-%d" % (t, i))
            for i in range(300):
                if c.bf().exists("conc", "%d-%d" % (t, i)) != 1:
                    errors.append("false negative %d-%d" % (t, i))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "concurrent clients: %s" % errors[:3])


def test_redis_cli(port):
    cli = shutil.which("redis-cli")

    def run(*args):
        return subprocess.run([cli, "-p", str(port)] + list(args),
                              capture_output=True, text=True,
                              timeout=30).stdout

    check(run("BF.ADD", "clikey", "a").strip() == "1", "redis-cli BF.ADD")
    check(run("-3", "BF.MEXISTS", "clikey", "a", "b").split() ==
          ["(true)", "(false)"], "redis-cli -3 booleans")
    check(run("-3", "--no-raw", "BF.MEXISTS", "clikey", "a", "b").split() ==
          ["1)", "(true)", "2)", "(false)"], "redis-cli -3 --no-raw")
    check("proto\n3\n" in run("-3", "HELLO", "3").replace(" ", "\n"),
          "redis-cli -3 HELLO")
    check("1# Capacity => (integer) 100" in
          run("-3", "--no-raw", "BF.INFO", "clikey"), "redis-cli -3 map")
    check(run("-2", "CF.INSERT", "clic", "ITEMS", "a").strip() == "1",
          "redis-cli -2 CF.INSERT")
    check("Capacity" in run("-3", "BF.INFO", "clikey"), "redis-cli -3 BF.INFO")


def test_benchmark(port):
    bench = shutil.which("redis-benchmark")
    for args in (["-t", "ping"],
                 ["BF.ADD", "benchkey", "__rand_int__"],
                 ["BF.MADD", "benchkey"] + ["__rand_int__"] * 10,
                 ["BF.EXISTS", "benchkey", "__rand_int__"]):
        out = subprocess.run([bench, "-p", str(port), "-n", "2000", "-c", "5",
                              "-P", "16", "-r", "100000", "-q"] + args,
                             capture_output=True, text=True, timeout=120)
        check(out.returncode == 0 and "requests per second" in out.stdout,
              "redis-benchmark %s: %s %s" % (args[:2], out.stdout, out.stderr))
        print("  redis-benchmark %s: %s" % (" ".join(args[:2]),
                                            out.stdout.strip().splitlines()[-1]))


def test_auth(binary, root):
    pwfile = os.path.join(root, "pw")
    with open(pwfile, "w") as f:
        f.write("s3cret\n")
    srv = Server(binary, os.path.join(root, "authdb"),
                 ["--requirepass-file", pwfile]).start()
    try:
        raises(lambda: redis.Redis(port=srv.port).ping(), "Authentication required")
        raises(lambda: redis.Redis(port=srv.port, password="bad").ping(),
               "invalid username-password pair")
        check(redis.Redis(port=srv.port, password="s3cret").ping(), "AUTH ok")
        check(raw(srv.port, b"PING\r\nAUTH x\r\nAUTH s3cret\r\nPING\r\n") ==
              b"-NOAUTH Authentication required.\r\n"
              b"-WRONGPASS invalid username-password pair or user is "
              b"disabled.\r\n+OK\r\n+PONG\r\n", "raw AUTH")
        got = raw(srv.port, b"*11\r\n", expect_close=True)
        check(got == b"-ERR Protocol error: unauthenticated multibulk length\r\n",
              "unauthenticated limit: %r" % got)
    finally:
        check(srv.stop() == 0, "auth server exit code")


def non_loopback_ipv4():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent
        ip = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if ip.startswith("127.") else ip


def test_protected_mode(binary, root):
    ip = non_loopback_ipv4()
    if ip is None:
        print("  no non-loopback address: protected mode not tested")
        return
    srv = Server(binary, os.path.join(root, "pmdb"), ["--bind", "0.0.0.0"])
    srv.start()
    try:
        s = socket.create_connection((ip, srv.port))
        s.settimeout(5)
        data = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
        s.close()
        check(data.startswith(b"-DENIED"), "protected mode: %r" % data)
        check(redis.Redis(port=srv.port).ping(), "loopback still served")
    finally:
        check(srv.stop() == 0, "protected-mode server exit code")


def test_limits(binary, root):
    srv = Server(binary, os.path.join(root, "limitsdb"),
                 ["--maxclients", "2", "--timeout", "1",
                  "--client-query-buffer-limit", "1mb",
                  "--proto-max-bulk-len", "4mb"]).start()
    try:
        a = socket.create_connection(("127.0.0.1", srv.port))
        b = socket.create_connection(("127.0.0.1", srv.port))
        for c in (a, b):  # both accepted before the third connects
            c.sendall(b"PING\r\n")
            check(c.recv(100) == b"+PONG\r\n", "first clients served")
        got = raw(srv.port, b"PING\r\n", expect_close=True)
        check(got == b"-ERR max number of clients reached\r\n",
              "maxclients: %r" % got)
        # Idle clients are closed after --timeout.
        time.sleep(2.5)
        a.settimeout(2)
        check(a.recv(10) == b"", "idle client closed")
        b.close()
        a.close()
        time.sleep(0.2)
        # A bulk over --proto-max-bulk-len is a protocol error.
        got = raw(srv.port, b"*1\r\n$5000000\r\n", expect_close=True)
        check(got == b"-ERR Protocol error: invalid bulk length\r\n",
              "bulk limit: %r" % got)
        # Unparsed input past --client-query-buffer-limit: disconnected.
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.sendall(b"*2\r\n$4\r\nECHO\r\n$3000000\r\n")
        closed = False
        try:
            for _ in range(40):
                s.sendall(b"x" * 65536)
        except OSError:
            closed = True
        if not closed:
            s.settimeout(5)
            try:
                closed = s.recv(10) == b""
            except OSError:
                closed = True
        check(closed, "query buffer limit closes the client")
        s.close()
        check(redis.Redis(port=srv.port).ping(), "server still serving")
    finally:
        check(srv.stop() == 0, "limits server exit code")


def damage_filter_journal(db):
    """Flips one byte inside the first record of every written segment of
    the store's memory-mapped filter journal (docs/format-store.md: records
    from offset 4096; a long record's body at +16): its checksum fails, which
    within the boot that wrote it is damage (Corruption at the filter's
    load). Returns how many segments it damaged."""
    damaged = 0
    for dirpath, _, files in os.walk(os.path.join(db, "filter-journal")):
        for name in files:
            if not name.endswith(".sfj"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, "r+b") as f:
                f.seek(4096)
                head = f.read(32)
                if len(head) < 32 or head[:8] == bytes(8):
                    continue  # no record (a spare segment)
                f.seek(4096 + 16 + 8 + 3)  # inside the first record's hash
                b = f.read(1)
                f.seek(4096 + 16 + 8 + 3)
                f.write(bytes([b[0] ^ 0x40]))
            damaged += 1
    return damaged


def test_unloadable(binary, root):
    """A filter that exists but cannot be loaded (its journal damaged on
    disk) answers every command with "ERR key '<k>' cannot be loaded:
    <reason>", never 0 or "item exists"; the store's other filters serve,
    and DEL removes it."""
    db = os.path.join(root, "damagedb")
    opts = ["--checkpoint-interval-ms", "0"]  # the adds stay in the journal
    srv = Server(binary, db, opts).start()
    r = redis.Redis(port=srv.port)
    # Large enough to journal in memory-mapped segments of its own (a
    # table of 1 MiB or more); "small" journals in RocksDB.
    r.execute_command("BF.RESERVE", "big", 0.01, 2000000)
    r.execute_command("BF.MADD", "big", *["i%d" % i for i in range(500)])
    r.execute_command("BF.ADD", "small", "x")
    r.close()
    srv.stop(signal.SIGKILL)
    check(damage_filter_journal(db) > 0, "a journal segment to damage")
    srv = Server(binary, db, opts).start()
    r = redis.Redis(port=srv.port)
    try:
        prefix = "key 'big' cannot be loaded: "
        for cmd in (("BF.EXISTS", "big", "i1"), ("BF.MEXISTS", "big", "i1"),
                    ("CF.EXISTS", "big", "i1"), ("BF.ADD", "big", "new"),
                    ("BF.MADD", "big", "new"), ("BF.INFO", "big"),
                    ("SF.EXISTS", "big", "i1"), ("TYPE", "big"),
                    ("EXISTS", "big")):
            raises(lambda: r.execute_command(*cmd), prefix)
        raises(lambda: r.execute_command("BF.EXISTS", "big", "i1"),
               "checksum")
        # Pipelined (one batch of queries of one key): each answers it.
        p = r.pipeline(transaction=False)
        for i in range(3):
            p.execute_command("BF.EXISTS", "big", "i%d" % i)
        got = p.execute(raise_on_error=False)
        check(all(isinstance(e, redis.ResponseError) and prefix in str(e)
                  for e in got), "pipelined BF.EXISTS: %r" % got)
        check(r.execute_command("BF.EXISTS", "small", "x") == 1,
              "the other filter serves")
        check(sorted(r.keys("*")) == [b"big", b"small"], "KEYS lists it")
        check(r.delete("big") == 1, "DEL removes it")
        check(r.execute_command("BF.ADD", "big", "i1") == 1, "a new one")
    finally:
        r.close()
        check(srv.stop() == 0, "damaged-store server exit code")


def test_keyspace_scan(binary, root):
    """SCAN over a few thousand keys (redis-py's scan_iter, COUNT 10) while
    another client creates and drops keys, MATCH, TYPE, DBSIZE, KEYS, and
    INFO's expires / avg_ttl / expired_keys."""
    srv = Server(binary, os.path.join(root, "keyspace_db")).start()
    try:
        r = redis.Redis(port=srv.port)
        n, ncf, nexp = 3000, 50, 1000

        def create(part):
            c = redis.Redis(port=srv.port)
            p = c.pipeline(transaction=False)
            for i in range(part, n, 4):
                p.execute_command("BF.RESERVE", "user:%d" % i, "0.01", "100")
                if i < nexp:
                    p.execute_command("EXPIRE", "user:%d" % i, "86400")
            p.execute()
            c.close()
        threads = [threading.Thread(target=create, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(ncf):
            r.execute_command("CF.RESERVE", "cf:%d" % i, "100")
        stay = {b"user:%d" % i for i in range(n)} | {b"cf:%d" % i for i in range(ncf)}
        check(r.dbsize() == n + ncf, "DBSIZE %d" % r.dbsize())

        stop = threading.Event()
        churned = [0]

        def churn():
            c = redis.Redis(port=srv.port)
            i = 0
            while not stop.is_set():
                c.execute_command("BF.RESERVE", "churn:%d" % i, "0.01", "100")
                if i >= 2:
                    c.delete("churn:%d" % (i - 2))
                i += 1
                churned[0] = i
            c.close()
        t = threading.Thread(target=churn)
        t.start()
        seen, calls, cursor = set(), 0, 0
        try:
            while True:
                cursor, keys = r.scan(cursor=cursor, count=10)
                check(len(keys) <= 10, "SCAN COUNT 10 answered %d keys" % len(keys))
                seen.update(keys)
                calls += 1
                if cursor == 0:
                    break
        finally:
            stop.set()
            t.join()
        check(stay <= seen, "SCAN missed %d keys present throughout" % len(stay - seen))
        check(calls >= (n + ncf) // 10, "SCAN took %d calls" % calls)
        check(churned[0] > 0, "keys were created during the scan")
        check(set(r.scan_iter(match="cf:*", count=100)) == {b"cf:%d" % i for i in range(ncf)},
              "SCAN MATCH")
        check(set(r.scan_iter(_type="MBbloomCF", count=100)) == {b"cf:%d" % i for i in range(ncf)},
              "SCAN TYPE")
        check(r.keys("cf:1*") == sorted(b"cf:%d" % i for i in range(ncf)
                                        if str(i).startswith("1")), "KEYS")
        ks = r.info("keyspace")["db0"]
        check(ks["expires"] == nexp, "INFO keyspace expires: %r" % ks)
        check(86_000_000 < ks["avg_ttl"] <= 86_400_000, "INFO keyspace avg_ttl: %r" % ks)
        # Ten keys expire; the active expiry drops them (waits for that).
        p = r.pipeline(transaction=False)
        for i in range(10):
            p.pexpire("user:%d" % i, 1)
        p.execute()
        deadline = time.time() + 30
        while r.info("stats")["expired_keys"] < 10 and time.time() < deadline:
            time.sleep(0.05)
        check(r.info("stats")["expired_keys"] >= 10, "INFO expired_keys")
        check(r.exists(*["user:%d" % i for i in range(10)]) == 0, "expired keys gone")
        check(r.info("keyspace")["db0"]["expires"] == nexp - 10, "expires after expiry")
        check(r.dbsize() == n + ncf - 10 + min(churned[0], 2), "DBSIZE after expiry")
        r.close()
    finally:
        check(srv.stop() == 0, "keyspace server SIGTERM exit code")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="sfserver_")
    db = os.path.join(root, "db")
    try:
        srv = Server(args.server, db).start()
        r = redis.Redis(port=srv.port)
        for name, fn in (("bloom", lambda: test_bloom(r)),
                         ("cuckoo", lambda: test_cuckoo(r)),
                         ("generic", lambda: test_generic(r, srv.port)),
                         ("raw protocol", lambda: test_raw_protocol(srv.port)),
                         ("concurrent", lambda: test_concurrent_clients(srv.port)),
                         ("slow reader", lambda: test_slow_reader(srv)),
                         ("redis-cli", lambda: test_redis_cli(srv.port)),
                         ("redis-benchmark", lambda: test_benchmark(srv.port)),
                         ("commandstats", lambda: cluster_stats_checks
                          .test_commandstats(srv.port, check, raises)),
                         ("cluster disabled", lambda: cluster_stats_checks
                          .test_disabled(srv.port, raises))):
            fn()
            print("ok  %s" % name)
        expected_keys = set(r.keys("*"))
        r.close()
        check(srv.stop() == 0, "SIGTERM exit code")
        print("ok  SIGTERM -> exit 0")

        # Restart on the same directory: everything survived.
        srv = Server(args.server, db).start()
        r = redis.Redis(port=srv.port)
        check(set(r.keys("*")) == expected_keys, "keys after restart")
        check(r.bf().mexists("b", "x", "y", "z") == [1, 1, 1], "bloom survived")
        check(r.cf().count("c", "x") == 1 and r.cf().count("c", "w") == 1,
              "cuckoo survived")
        check(r.execute_command("BF.CARD", "b") == 3, "BF.CARD survived")
        # Journalled writes survive kill -9.
        acked = ["k9-%d" % i for i in range(2000)]
        p = r.pipeline(transaction=False)
        for item in acked:
            p.execute_command("BF.ADD", "k9", item)
            p.execute_command("CF.ADD", "k9c", item)
        # Creates of journal filters are acknowledged once in RocksDB's log
        # (no fsync each): they survive kill -9 too.
        created = ["r9-%d" % i for i in range(500)]
        for name in created:
            p.execute_command("BF.RESERVE", name, "0.01", "100")
        # So are their deadlines (an EXPIRE is as durable as the adds) and
        # the removal of one (PERSIST).
        for name in created:
            p.execute_command("EXPIRE", name, "86400")
        p.execute_command("PERSIST", created[0])
        p.execute()
        r.close()
        srv.stop(signal.SIGKILL)
        srv = Server(args.server, db).start()
        r = redis.Redis(port=srv.port)
        check(r.exists(*created) == len(created),
              "acknowledged BF.RESERVE after kill -9: %d of %d"
              % (r.exists(*created), len(created)))
        ttls = [r.ttl(name) for name in created]
        check(ttls[0] == -1 and all(80000 < t <= 86400 for t in ttls[1:]),
              "acknowledged EXPIRE/PERSIST after kill -9: %s" % ttls[:3])
        check(all(r.bf().mexists("k9", *acked)), "journalled BF.ADD after kill -9")
        check(all(r.execute_command("CF.MEXISTS", "k9c", *acked)),
              "journalled CF.ADD after kill -9")
        print("ok  restart after SIGTERM and after kill -9")
        # SHUTDOWN: the connection closes, the server exits 0.
        try:
            r.shutdown()
        except redis.ConnectionError:
            pass
        check(srv.proc.wait(timeout=60) == 0, "SHUTDOWN exit code")
        print("ok  SHUTDOWN -> exit 0")
        test_auth(args.server, root)
        print("ok  auth")
        test_protected_mode(args.server, root)
        print("ok  protected mode")
        test_limits(args.server, root)
        print("ok  limits (maxclients, timeout, bulk, query buffer)")
        test_unloadable(args.server, root)
        print("ok  a filter that cannot be loaded answers an error")
        test_keyspace_scan(args.server, root)
        print("ok  keyspace: SCAN, MATCH, TYPE, DBSIZE, INFO expires")
        # A second server in emulated cluster mode, for RedisCluster.
        csrv = Server(args.server, os.path.join(root, "cluster_db"),
                      ["--cluster-emulation"]).start()
        cluster_stats_checks.test_cluster(csrv.port, check, raises)
        check(csrv.stop() == 0, "cluster server SIGTERM exit code")
        print("ok  cluster emulation (RedisCluster)")
        print("PASS: %d checks" % CHECKS)
        return 0
    finally:
        for proc in STARTED:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
