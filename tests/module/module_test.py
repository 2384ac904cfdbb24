#!/usr/bin/env python3
"""Integration test of shardfilter.so inside Debian's redis-server (7.0).

Usage: module_test.py <path to shardfilter.so> [test name ...]

Starts every redis-server it needs on free loopback ports (in a temporary
directory), drives it with redis-py (Debian's python3-redis), and stops
every server it started, whatever happens. Exit status 0 when every test
passed.
"""
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

import redis

MODULE = None
WORK = None


# --- Redis's CRC-64 (Jones polynomial, reflected), for DUMP payloads and
# RDB files whose bytes a test changes on purpose.
def _crc64_table():
    poly = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9, bit-reversed
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc64_table()


def crc64(data, crc=0):
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA  # Redis's own check value


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One redis-server with the module loaded, in its own directory."""

    def __init__(self, name, module_args=(), args=()):
        self.dir = os.path.join(WORK, name)
        os.makedirs(self.dir, exist_ok=True)
        self.module_args = list(module_args)
        self.args = list(args)
        self.proc = None
        self.port = None

    def start(self, extra=(), port=None):
        self.port = port or free_port()
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
               "--dir", self.dir, "--save", "", "--enable-debug-command", "yes",
               "--logfile", os.path.join(self.dir, "redis.log"),
               "--loadmodule", MODULE] + self.module_args + self.args + list(extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited at start; log:\n" +
                                   self.log())
            try:
                c = self.client()
                c.ping()
                # Wait until any dataset is loaded.
                if c.info("persistence").get("loading", 0) == 0:
                    return self
            except (redis.ConnectionError, redis.BusyLoadingError):
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer; log:\n" + self.log())

    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port,
                           socket_timeout=60, **kw)

    def log(self):
        try:
            with open(os.path.join(self.dir, "redis.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: Redis's clean shutdown
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self, extra=()):
        self.stop()
        return self.start(extra)


SERVERS = []


def free_cluster_port():
    """A port p with p and its cluster bus port p + 10000 both free."""
    import random
    for _ in range(200):
        p = random.randint(20000, 45000)
        try:
            for q in (p, p + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", q))
            return p
        except OSError:
            continue
    raise RuntimeError("no free port pair")


def server(name, module_args=(), args=()):
    s = Server(name, module_args, args)
    SERVERS.append(s)
    return s.start()


def expect_error(fn, *fragments):
    try:
        fn()
    except redis.ResponseError as e:
        text = str(e)
        for f in fragments:
            assert f in text, "error %r lacks %r" % (text, f)
        return text
    raise AssertionError("no error (expected %r)" % (fragments,))


def wait_for(pred, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


# --- Tests ---------------------------------------------------------------

def test_commands():
    s = server("commands")
    c = s.client()
    assert c.execute_command("BF.RESERVE", "b", 0.01, 1000) == b"OK"
    assert c.execute_command("BF.ADD", "b", "x") == 1
    assert c.execute_command("BF.ADD", "b", "x") == 0
    assert c.execute_command("BF.MADD", "b", "x", "y", "z") == [0, 1, 1]
    assert c.execute_command("BF.EXISTS", "b", "y") == 1
    assert c.execute_command("BF.MEXISTS", "b", "x", "nope") == [1, 0]
    assert c.execute_command("BF.CARD", "b") == 3
    info = c.execute_command("BF.INFO", "b")
    assert info[0] == b"Capacity" and info[1] == 1000, info
    # Auto-creation with RedisBloom's defaults.
    assert c.execute_command("BF.ADD", "auto", "a") == 1
    assert c.execute_command("BF.INFO", "auto", "CAPACITY") == [100]
    # Errors.
    expect_error(lambda: c.execute_command("BF.INFO", "missing"), "not found")
    expect_error(lambda: c.execute_command("BF.RESERVE", "b", 0.01, 10),
                 "item exists")
    # Arity errors are RedisModule_WrongArity's, as RedisBloom's are.
    expect_error(lambda: c.execute_command("BF.ADD", "b"),
                 "wrong number of arguments for 'bf.add' command")
    expect_error(lambda: c.execute_command("BF.RESERVE", "e", 2, 10))
    # WRONGTYPE against a plain string, and across filter families; but
    # the existence queries answer 0 for a key of another type, as
    # RedisBloom's do (it reads any other value as an empty filter).
    c.set("str", "v")
    for cmd in (("BF.ADD", "str", "a"), ("CF.ADD", "str", "a"),
                ("CF.ADD", "b", "a"), ("BF.INFO", "str"), ("CF.INFO", "str")):
        expect_error(lambda: c.execute_command(*cmd), "WRONGTYPE")
    assert c.execute_command("BF.EXISTS", "str", "a") == 0
    assert c.execute_command("BF.MEXISTS", "str", "a", "b") == [0, 0]
    assert c.execute_command("CF.EXISTS", "str", "a") == 0
    assert c.execute_command("CF.MEXISTS", "str", "a") == [0]
    assert c.execute_command("CF.EXISTS", "b", "a") == 0
    assert c.get("str") == b"v"
    # Cuckoo.
    assert c.execute_command("CF.RESERVE", "c", 1000) == b"OK"
    assert c.execute_command("CF.ADD", "c", "p") == 1
    assert c.execute_command("CF.ADDNX", "c", "p") == 0
    assert c.execute_command("CF.COUNT", "c", "p") == 1
    assert c.execute_command("CF.DEL", "c", "p") == 1
    assert c.execute_command("CF.EXISTS", "c", "p") == 0
    assert c.execute_command("CF.INSERT", "c", "ITEMS", "q", "r") == [1, 1]
    assert c.execute_command("CF.MEXISTS", "c", "q", "zz") == [1, 0]
    assert c.type("b") == b"shardfltr" and c.type("c") == b"shardfltr"
    # COMMAND: flags, arity and the first key for cluster clients.
    raw = s.client()
    raw.response_callbacks = {}  # COMMAND's replies as Redis sends them
    entry = raw.execute_command("COMMAND", "INFO", "bf.add")[0]
    assert entry[0] == b"bf.add" and entry[1] == -1, entry
    assert b"write" in entry[2] and b"denyoom" in entry[2], entry
    assert entry[3:6] == [1, 1, 1], entry
    entry = raw.execute_command("COMMAND", "INFO", "bf.exists")[0]
    assert b"readonly" in entry[2] and b"fast" in entry[2], entry
    assert raw.execute_command("COMMAND", "GETKEYS", "BF.MADD", "k1", "a",
                               "b") == [b"k1"]
    # The module registers only BF/CF/SF commands: CLUSTER, READONLY,
    # READWRITE and ASKING of the command layer (the server's emulated
    # cluster) stay Redis's own.
    mine = set(raw.execute_command("COMMAND", "LIST", "FILTERBY", "MODULE",
                                   "shardfilter"))
    assert b"bf.add" in mine and b"cf.add" in mine, mine
    assert not mine & {b"cluster", b"readonly", b"readwrite", b"asking"}, mine
    expect_error(lambda: c.execute_command("CLUSTER", "SLOTS"),
                 "cluster support disabled")
    # The key spec (7.0: the 9th field): argv[1], insert access.
    specs = entry[8]
    assert b"RO" in specs[0][1] and b"access" in specs[0][1], specs
    # Generic commands are Redis's own and see the filters.
    assert c.exists("b", "c") == 2
    assert c.delete("auto") == 1 and c.exists("auto") == 0
    assert c.execute_command("COPY", "b", "b2") == 1
    assert c.execute_command("BF.EXISTS", "b2", "z") == 1
    assert c.dump("b") == c.dump("b2")
    # MULTI/EXEC around module commands.
    p = c.pipeline(transaction=True)
    p.execute_command("BF.ADD", "tx", "1")
    p.execute_command("BF.EXISTS", "tx", "1")
    assert p.execute() == [1, 1]
    # WATCH sees a filter changed by another client.
    w = s.client()
    p = w.pipeline(transaction=True)
    p.watch("b")
    c.execute_command("BF.ADD", "b", "changed")
    p.multi()
    p.execute_command("BF.ADD", "b", "mine")
    try:
        p.execute()
        raise AssertionError("EXEC ran although the watched filter changed")
    except redis.WatchError:
        pass
    # A big filter is freed in the background (free_effort) on UNLINK.
    c.execute_command("BF.RESERVE", "huge", 0.001, 50000000)
    assert c.unlink("huge") == 1
    wait_for(lambda: c.info("memory").get("lazyfree_pending_objects", 0) == 0,
             "the background free")
    assert c.info("memory").get("lazyfreed_objects", 0) >= 1
    # Expiry of filter keys is Redis's.
    assert c.expire("tx", 100) and 0 < c.ttl("tx") <= 100


def test_redis_cli():
    """redis-cli (RESP2 and -3) against the module, as against the server
    (tests/server/server_integration_test.py, test_redis_cli)."""
    s = server("cli")

    def run(*args):
        p = subprocess.run(["redis-cli", "-p", str(s.port)] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=30)
        assert p.returncode == 0, p.stdout
        return p.stdout.decode()

    assert run("BF.ADD", "clikey", "a").strip() == "1"
    assert run("-3", "BF.MEXISTS", "clikey", "a", "b").split() == \
        ["(true)", "(false)"]
    assert run("-3", "--no-raw", "BF.MEXISTS", "clikey", "a", "b").split() \
        == ["1)", "(true)", "2)", "(false)"]
    out = run("-3", "--no-raw", "BF.INFO", "clikey")
    assert "1# Capacity => (integer) 100" in out, out
    assert run("-2", "CF.INSERT", "clic", "ITEMS", "a").strip() == "1"
    assert run("SF.CREATE", "clis", "counting", "1000").strip() == "OK"
    assert run("SF.MADD", "clis", "x", "x").split() == ["1", "1"]
    assert run("SF.COUNT", "clis", "x").strip() == "2"
    assert "WRONGTYPE" in run("SET", "str", "v") + run("BF.ADD", "str", "a")


def test_sf_commands():
    """SF.*: the same command layer as the server's; the module refuses
    what Redis keeps itself (durability, retained hashes, migration)."""
    s = server("sf")
    c = s.client()
    assert c.execute_command("SF.CREATE", "cnt", "counting", 1000,
                             "SHARDS", 2) == b"OK"
    assert c.execute_command("SF.ADD", "cnt", "a") == 1
    assert c.execute_command("SF.ADD", "cnt", "a") == 1
    assert c.execute_command("SF.COUNT", "cnt", "a") == 2
    assert c.execute_command("SF.REMOVE", "cnt", "a") == 1
    assert c.execute_command("SF.MEXISTS", "cnt", "a", "zz") == [1, 0]
    info = c.execute_command("SF.INFO", "cnt")
    fields = dict(zip(info[0::2], info[1::2]))
    assert fields[b"type"] == b"counting" and fields[b"shards"] == 2, info
    assert len(c.execute_command("SF.SHARDS", "cnt")) == 2
    expect_error(lambda: c.execute_command("SF.CREATE", "d", "bloom", 10,
                                           "DURABILITY", "sync"),
                 "DURABILITY is not available in the module")
    expect_error(lambda: c.execute_command("SF.CREATE", "d", "bloom", 10,
                                           "RETAIN"), "RETAIN")
    assert c.exists("d") == 0
    expect_error(lambda: c.execute_command("SF.MIGRATE", "cnt", "cuckoo",
                                           100), "not available")
    # SF.UNION: Bloom filters of one shape; nothing changes on an error.
    for key in ("u1", "u2", "u3"):
        c.execute_command("BF.RESERVE", key, 0.01, 1000)
    c.execute_command("BF.MADD", "u1", "a", "b")
    c.execute_command("BF.MADD", "u2", "c")
    assert c.execute_command("SF.UNION", "u3", "u1", "u2") == b"OK"
    assert c.execute_command("BF.MEXISTS", "u3", "a", "b", "c") == [1, 1, 1]
    expect_error(lambda: c.execute_command("SF.UNION", "u3", "cnt"),
                 "only Bloom filters can be unioned")
    expect_error(lambda: c.execute_command("SF.UNION", "u3", "nosuch"),
                 "not found")
    c.set("str", "x")
    expect_error(lambda: c.execute_command("SF.UNION", "u3", "str"),
                 "WRONGTYPE")
    # Persisted like every filter key: survives DEBUG RELOAD.
    c.execute_command("DEBUG", "RELOAD")
    assert c.execute_command("SF.COUNT", "cnt", "a") == 1


def test_resp3():
    s = server("resp3")
    sock = socket.create_connection(("127.0.0.1", s.port))
    f = sock.makefile("rwb")

    def send(*args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        f.write(out)
        f.flush()

    send("HELLO", "3")
    # Skip HELLO's map: read until its last field ("modules" array).
    line = f.readline()
    assert line.startswith(b"%"), line
    n = int(line[1:])
    depth = [2 * n]
    while depth:
        line = f.readline()
        depth[-1] -= 1
        if line[:1] in (b"*", b"%", b"~"):
            k = int(line[1:]) * (2 if line[:1] == b"%" else 1)
            depth.append(k)
        elif line[:1] == b"$":
            f.readline()
        while depth and depth[-1] == 0:
            depth.pop()
    send("BF.ADD", "b", "x")
    assert f.readline() == b"#t\r\n"
    send("BF.EXISTS", "b", "nope")
    assert f.readline() == b"#f\r\n"
    send("BF.INFO", "b")
    assert f.readline().startswith(b"%"), "BF.INFO is a map under RESP3"
    sock.close()


def test_prefix():
    s = server("prefix", module_args=["PREFIX", "sf"])
    c = s.client()
    assert c.execute_command("SF.BF.ADD", "k", "a") == 1
    assert c.execute_command("sf.bf.exists", "k", "a") == 1
    expect_error(lambda: c.execute_command("BF.ADD", "k", "a"),
                 "unknown command")
    # SFM.* are not prefixed: an AOF rewrite stays loadable anywhere.
    raw = s.client()
    raw.response_callbacks = {}
    for name in ("sfm.chunk", "sfm.create", "sfm.loadchunk"):
        assert raw.execute_command("COMMAND", "INFO", name)[0], name


def test_budget():
    s = server("budget", module_args=["MAX-FILTER-BYTES", "1000000"])
    c = s.client()
    expect_error(lambda: c.execute_command("BF.RESERVE", "b", 0.01, 10000000),
                 "Insufficient memory")
    expect_error(lambda: c.execute_command("CF.RESERVE", "c", 10000000),
                 "Insufficient memory")
    assert c.exists("b", "c") == 0
    assert c.execute_command("BF.RESERVE", "small", 0.01, 10000) == b"OK"
    # SFM.CREATE (internal) cannot bypass the budget either.
    spec = "v1 1 100000000 0x1.47ae147ae147bp-7 1 0 2 0 0 0 0 0 2"
    expect_error(lambda: c.execute_command("SFM.CREATE", "x", spec))
    assert c.exists("x") == 0
    # MEMORY-BUDGET bounds the filters together; a DEL gives the bytes back.
    s = server("memory_budget", module_args=["MEMORY-BUDGET", "3mb"])
    c = s.client()
    assert c.info("shardfilter")["shardfilter_memory_budget"] == 3 << 20
    for key in ("a", "b"):  # 1.5 MB each
        assert c.execute_command("BF.RESERVE", key, 0.01, 1000000) == b"OK"
    expect_error(lambda: c.execute_command("BF.RESERVE", "c", 0.01, 1000000),
                 "Insufficient memory")
    used = c.info("shardfilter")["shardfilter_memory_budget_used"]
    assert 2000000 < used <= 3 << 20, used
    assert c.delete("a") == 1
    assert c.execute_command("BF.RESERVE", "c", 0.01, 1000000) == b"OK"


def test_bad_load_arguments():
    for args in (["SHARDS", "3"], ["NOPE", "1"], ["PREFIX"],
                 ["MEMORY-BUDGET", "0"], ["MEMORY-BUDGET", "lots"]):
        port = free_port()
        d = os.path.join(WORK, "badargs")
        os.makedirs(d, exist_ok=True)
        p = subprocess.run(["redis-server", "--port", str(port), "--dir", d,
                            "--save", "", "--loadmodule", MODULE] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=30)
        assert p.returncode != 0, args
        assert b"shardfilter" in p.stdout, p.stdout[-2000:]


def fill(c, key, n, prefix="i"):
    batch = 1000
    for at in range(0, n, batch):
        items = ["%s%d" % (prefix, i) for i in range(at, min(n, at + batch))]
        c.execute_command("BF.MADD", key, *items)


def check_present(c, key, n, prefix="i"):
    batch = 1000
    for at in range(0, n, batch):
        items = ["%s%d" % (prefix, i) for i in range(at, min(n, at + batch))]
        r = c.execute_command("BF.MEXISTS", key, *items)
        assert all(v == 1 for v in r), "false negative in %s" % key


def test_save_restart_and_debug_reload():
    s = server("save")
    c = s.client()
    c.execute_command("BF.RESERVE", "b", 0.001, 100000)
    fill(c, "b", 20000)
    c.execute_command("CF.RESERVE", "c", 10000)
    c.execute_command("CF.INSERT", "c", "ITEMS", "x", "y", "x")
    before = c.dump("b")
    assert c.save()
    s.restart()
    c = s.client()
    check_present(c, "b", 20000)
    assert c.dump("b") == before
    assert c.execute_command("CF.COUNT", "c", "x") == 2
    assert c.execute_command("DEBUG", "RELOAD") == b"OK"
    check_present(c, "b", 20000)
    assert c.execute_command("CF.COUNT", "c", "x") == 2
    assert c.dump("b") == before


def test_aof_rewrite_restart():
    s = server("aof", args=["--appendonly", "yes",
                            "--aof-use-rdb-preamble", "no"])
    c = s.client()
    # > 8 MiB, so the rewrite emits several SFM.CHUNK commands.
    c.execute_command("BF.RESERVE", "big", 0.0001, 4000000)
    fill(c, "big", 20000)
    c.execute_command("CF.ADD", "c", "one")
    c.bgrewriteaof()
    wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0 and
             c.info("persistence")["aof_rewrite_scheduled"] == 0,
             "the AOF rewrite")
    base = [f for f in os.listdir(os.path.join(s.dir, "appendonlydir"))
            if f.endswith(".base.aof")]
    assert base, "no AOF base file"
    with open(os.path.join(s.dir, "appendonlydir", base[0]), "rb") as f:
        text = f.read()
    assert text.count(b"sfm.chunk") >= 2, "the big filter is not chunked"
    # Writes after the rewrite (auto-create included) go to the AOF tail.
    c.execute_command("BF.ADD", "after", "late")
    fill(c, "big", 100, prefix="tail")
    before = c.dump("big")
    s.restart()
    c = s.client()
    check_present(c, "big", 20000)
    check_present(c, "big", 100, prefix="tail")
    assert c.execute_command("BF.EXISTS", "after", "late") == 1
    assert c.execute_command("CF.EXISTS", "c", "one") == 1
    assert c.dump("big") == before


def test_dump_restore_across_servers():
    a = server("dump_a")
    b = server("dump_b", module_args=["SHARDS", "4"])
    ca, cb = a.client(), b.client()
    ca.execute_command("BF.RESERVE", "f", 0.01, 50000)
    fill(ca, "f", 5000)
    ca.execute_command("CF.INSERT", "cf", "ITEMS", "a", "b")
    for key in ("f", "cf"):
        payload = ca.dump(key)
        assert cb.restore(key, 0, payload)
        assert cb.dump(key) == payload
    check_present(cb, "f", 5000)
    assert cb.execute_command("CF.EXISTS", "cf", "b") == 1
    # MIGRATE moves a filter between the servers the same way.
    ca.execute_command("BF.ADD", "mig", "m")
    assert ca.migrate("127.0.0.1", b.port, "mig", 0, 5000) == b"OK"
    assert cb.execute_command("BF.EXISTS", "mig", "m") == 1
    assert ca.exists("mig") == 0


def test_scandump_loadchunk():
    """BF/CF.SCANDUMP + LOADCHUNK between two servers; the chunks replicate
    to the loading server's replica."""
    a = server("scan_a")
    b = server("scan_b", args=["--repl-diskless-sync-delay", "0"])
    r = server("scan_replica")
    ca, cb, cr = a.client(), b.client(), r.client()
    cr.replicaof("127.0.0.1", b.port)
    wait_for(lambda: cr.info("replication").get("master_link_status") == "up",
             "the replica's sync")
    ca.execute_command("BF.RESERVE", "f", 0.01, 100000)
    fill(ca, "f", 3000)
    ca.execute_command("CF.INSERT", "c", "ITEMS", "x", "y")
    for cmd, key in (("BF", "f"), ("CF", "c")):
        it, chunks = 0, []
        while True:
            it, data = ca.execute_command(cmd + ".SCANDUMP", key, it)
            if it == 0:
                break
            chunks.append((it, data))
        for it, data in chunks:
            assert cb.execute_command(cmd + ".LOADCHUNK", key, it,
                                      data) == b"OK"
        assert cb.dump(key) == ca.dump(key), key
    check_present(cb, "f", 3000)
    assert cb.execute_command("WAIT", 1, 10000) == 1
    check_present(cr, "f", 3000)
    assert cr.dump("f") == ca.dump("f") and cr.dump("c") == ca.dump("c")


def envelope_at(data):
    at = data.find(b"SFRM")
    assert at >= 0, "no shardfilter envelope in the bytes"
    return at


def reseal_dump(body):
    """A DUMP payload with a correct Redis CRC-64 over `body`."""
    return body + struct.pack("<Q", crc64(body))


def test_corrupt_restore_refused():
    s = server("corrupt", args=["--rdbcompression", "no"])
    c = s.client()
    c.execute_command("BF.RESERVE", "f", 0.01, 1000)
    c.execute_command("BF.ADD", "f", "a")
    payload = c.dump("f")
    body = payload[:-8]
    at = envelope_at(body)
    # 1. Redis's own checksum catches a flipped byte.
    bad = bytearray(payload)
    bad[at + 40] ^= 0xFF
    expect_error(lambda: c.restore("x1", 0, bytes(bad)), "checksum")
    # 2. A flipped byte under a valid Redis checksum reaches the module,
    # whose envelope checksum refuses it.
    bad = bytearray(body)
    bad[at + 40] ^= 0xFF
    expect_error(lambda: c.restore("x2", 0, reseal_dump(bytes(bad))),
                 "Bad data format")
    # 3. A future envelope version is refused too.
    bad = bytearray(body)
    bad[at + 4] = 9
    expect_error(lambda: c.restore("x3", 0, reseal_dump(bytes(bad))),
                 "Bad data format")
    # 4. Truncated: the string length no longer matches.
    expect_error(lambda: c.restore("x4", 0, reseal_dump(body[:at + 10])))
    assert c.exists("x1", "x2", "x3", "x4") == 0
    assert c.ping() and s.alive()
    assert c.execute_command("BF.EXISTS", "f", "a") == 1
    # Redis's reply is its own "Bad data format"; the log names the key and
    # the reason, at warning level ("#").
    log = s.log()
    for key, reason in (("x2", "checksum mismatch"), ("x3", "newer")):
        assert any("# " in line and "'%s'" % key in line and reason in line
                   for line in log.splitlines()), (key, log[-2000:])
    info = c.info("shardfilter")
    # Cases 2 and 3 reached the envelope check (4 failed as a short read).
    assert info["shardfilter_restores_refused"] == 2, info


def test_damaged_rdb_loads_unavailable():
    s = server("damaged", args=["--rdbcompression", "no"])
    c = s.client()
    c.execute_command("BF.ADD", "good", "g")
    c.execute_command("BF.RESERVE", "bad", 0.01, 1000)
    c.execute_command("BF.ADD", "bad", "b")
    c.execute_command("BF.RESERVE", "future", 0.01, 1000)
    c.save()
    s.stop()
    path = os.path.join(s.dir, "dump.rdb")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    # The RDB holds the three envelopes; find each by its key name.
    for key, change in ((b"bad", "flip"), (b"future", "version")):
        k = data.find(b"\x03" + key if len(key) == 3 else b"\x06" + key)
        at = data.find(b"SFRM", k)
        if change == "flip":
            data[at + 40] ^= 0xFF
        else:
            data[at + 4] = 7
    body = bytes(data[:-8])
    data[-8:] = struct.pack("<Q", crc64(body))
    with open(path, "wb") as f:
        f.write(data)
    s.start()  # Redis starts: one bad filter does not take it down
    c = s.client()
    assert c.execute_command("BF.EXISTS", "good", "g") == 1
    expect_error(lambda: c.execute_command("BF.EXISTS", "bad", "b"),
                 "unavailable", "checksum")
    expect_error(lambda: c.execute_command("BF.ADD", "future", "b"),
                 "unavailable", "newer")
    assert c.type("bad") == b"shardfltr"
    info = c.info("shardfilter")
    assert info["shardfilter_unavailable_loaded"] == 2, info
    assert info["shardfilter_values_loaded"] == 1, info
    # Saved back unchanged: still unavailable (not lost) after a restart.
    c.save()
    s.restart()
    c = s.client()
    expect_error(lambda: c.execute_command("BF.INFO", "future"), "newer")
    assert c.execute_command("BF.EXISTS", "good", "g") == 1
    # The user can drop it.
    assert c.delete("bad", "future") == 2


def test_memory_usage():
    s = server("memory")
    c = s.client()
    used_before = c.info("memory")["used_memory"]
    total = 0
    for key, cmd in (("b", ("BF.RESERVE", "b", 0.01, 2000000)),
                     ("c", ("CF.RESERVE", "c", 2000000))):
        c.execute_command(*cmd)
        info = c.execute_command("BF.INFO" if key == "b" else "CF.INFO", key)
        size = info[info.index(b"Size") + 1]
        used = c.memory_usage(key)
        assert abs(used - size) <= 0.05 * size, (key, used, size)
        total += size
    # The tables come from Redis's allocator: INFO memory counts them.
    grown = c.info("memory")["used_memory"] - used_before
    assert grown >= 0.95 * total, (grown, total)
    # So maxmemory counts them: over it, writes are refused (deny-oom) and
    # queries still answer. (Without the filters, Redis would be under.)
    c.config_set("maxmemory", used_before + total // 2)
    expect_error(lambda: c.execute_command("BF.ADD", "b", "x"), "OOM")
    assert c.execute_command("BF.EXISTS", "b", "x") == 0
    c.config_set("maxmemory", 0)


def test_replica():
    m = server("master", args=["--repl-diskless-sync-delay", "0"])
    # The replica creates filters with other defaults: SFM.CREATE carries
    # the master's resolved spec, so it still holds identical bits.
    r = server("replica", module_args=["SHARDS", "8"])
    cm, cr = m.client(), r.client()
    cm.execute_command("BF.RESERVE", "before", 0.001, 3000000)  # ~5 MiB
    fill(cm, "before", 10000)
    cr.replicaof("127.0.0.1", m.port)
    wait_for(lambda: cr.info("replication").get("master_link_status") == "up"
             and cr.info("replication").get("master_sync_in_progress") == 0,
             "the replica's sync")
    cm.execute_command("BF.ADD", "auto", "a")  # auto-created on the master
    cm.execute_command("CF.INSERT", "cf", "ITEMS", "p", "q")
    fill(cm, "before", 100, prefix="live")
    # SF.UNION replicates verbatim: the replica ORs the same bits.
    cm.execute_command("BF.RESERVE", "other", 0.001, 3000000)
    fill(cm, "other", 500, prefix="o")
    assert cm.execute_command("SF.UNION", "before", "other") == b"OK"
    assert cm.execute_command("WAIT", 1, 10000) == 1
    check_present(cr, "before", 10000)
    check_present(cr, "before", 100, prefix="live")
    check_present(cr, "before", 500, prefix="o")
    for key in ("before", "auto", "cf", "other"):
        assert cr.dump(key) == cm.dump(key), key
    assert (cr.execute_command("DEBUG", "DIGEST") ==
            cm.execute_command("DEBUG", "DIGEST"))
    try:
        cr.execute_command("BF.ADD", "auto", "x")
        raise AssertionError("a replica accepted a write")
    except redis.ReadOnlyError:
        pass


def test_replica_big():
    """A replica syncing a big filter (SF_MODULE_BIG_MB, default 500 MB)."""
    mb = int(os.environ.get("SF_MODULE_BIG_MB", "500"))
    m = server("big_master", args=["--repl-diskless-sync-delay", "0"])
    r = server("big_replica")
    cm, cr = m.client(), r.client()
    # Bloom at 1%: ~1.2 bytes per item.
    cm.execute_command("BF.RESERVE", "big", 0.01, mb * 830000, "NONSCALING")
    size = cm.execute_command("BF.INFO", "big", "SIZE")[0]
    assert size >= mb * 0.9 * (1 << 20), size
    fill(cm, "big", 20000)
    start = time.time()
    cr.replicaof("127.0.0.1", m.port)
    wait_for(lambda: cr.info("replication").get("master_link_status") == "up"
             and cr.info("replication").get("master_sync_in_progress") == 0,
             "the replica's sync", timeout=600)
    print("  %d MB filter synced in %.1f s" % (size >> 20, time.time() - start))
    check_present(cr, "big", 20000)
    assert (cr.execute_command("DEBUG", "DIGEST-VALUE", "big") ==
            cm.execute_command("DEBUG", "DIGEST-VALUE", "big"))
    assert abs(cr.memory_usage("big") - size) <= 0.05 * size


def test_cluster():
    """3 masters, the module on each; redis-py's RedisCluster routes BF/CF
    commands by the key specs; a reshard moves slots holding filters
    (MIGRATE through the data type) and nothing is lost."""
    from redis.cluster import RedisCluster
    import logging
    # redis-py logs every MOVED it follows as an exception; expected here.
    logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)
    nodes = []
    for i in range(3):
        port = free_cluster_port()
        s = Server("cluster%d" % i, args=["--cluster-enabled", "yes",
                                          "--cluster-config-file",
                                          "nodes.conf",
                                          "--cluster-node-timeout", "5000"])
        SERVERS.append(s)
        nodes.append(s.start(port=port))
    addrs = ["127.0.0.1:%d" % s.port for s in nodes]
    p = subprocess.run(["redis-cli", "--cluster", "create"] + addrs +
                       ["--cluster-replicas", "0", "--cluster-yes"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    assert p.returncode == 0, p.stdout[-2000:]
    for s in nodes:
        wait_for(lambda: s.client().execute_command("CLUSTER", "INFO")
                 .decode().find("cluster_state:ok") >= 0, "cluster_state ok")
    rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
    keys = ["filter:%d" % i for i in range(64)]
    per_key = 2000
    for k in keys:
        for at in range(0, per_key, 500):
            rc.execute_command("BF.MADD", k,
                               *["%s:%d" % (k, j)
                                 for j in range(at, at + 500)])
        rc.execute_command("CF.ADD", "cf:" + k, "x")
    held = [s.client().dbsize() for s in nodes]
    assert all(h > 0 for h in held) and sum(held) == 128, held

    def check():
        for k in keys:
            r = rc.execute_command("BF.MEXISTS", k,
                                   *["%s:%d" % (k, j)
                                     for j in range(per_key)])
            assert all(v == 1 for v in r), "false negative in " + k
            assert rc.execute_command("CF.EXISTS", "cf:" + k, "x") == 1

    check()
    # Reshard: move 2000 slots from node 0 to node 1 (keys move by MIGRATE,
    # i.e. DUMP/RESTORE of the module's data type).
    ids = [s.client().execute_command("CLUSTER", "MYID").decode()
           for s in nodes]
    before = nodes[0].client().dbsize()
    p = subprocess.run(["redis-cli", "--cluster", "reshard", addrs[0],
                        "--cluster-from", ids[0], "--cluster-to", ids[1],
                        "--cluster-slots", "2000", "--cluster-yes"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=120)
    assert p.returncode == 0, p.stdout[-2000:]
    moved = before - nodes[0].client().dbsize()
    assert moved > 0, "the reshard moved no filter"
    check()  # the client follows MOVED and refreshes its slot map
    rc.close()
    cli_redirects(nodes, addrs)


def cli_redirects(nodes, addrs):
    """`shardfilter cluster exists` follows ASK while a part's slot is being
    migrated and MOVED once it moved, within one run (its map is stale)."""
    cli = os.environ.get("SF_CLI")
    if not cli:
        print("  SKIP the CLI part: SF_CLI is not set")
        return
    where = ["--node", addrs[0], "--parts", "4"]
    run = lambda *a, **kw: subprocess.run(  # noqa: E731
        [cli, "cluster"] + list(a) + where, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, timeout=120, **kw)
    p = run("create", "mp2", "--type", "cuckoo", "--capacity", "100000")
    assert p.returncode == 0, p.stderr
    round_keys = 65536  # one round of the CLI (kKeysPerRound)
    keys = "".join("k%d\n" % i for i in range(round_keys)).encode()
    p = run("add", "mp2", input=keys)
    assert p.returncode == 0, p.stderr
    info = run("info", "mp2").stdout.decode()
    assert "items: %d" % round_keys in info, info
    tag = info.split("hash tag: {")[1].split(".")[0]
    part0 = "{%s.0}mp2" % tag
    c0 = nodes[0].client()
    slot = c0.execute_command("CLUSTER", "KEYSLOT", part0)
    raw = nodes[0].client()
    raw.response_callbacks = {}
    owner_port = [r for r in raw.execute_command("CLUSTER", "SLOTS")
                  if r[0] <= slot <= r[1]][0][2][1]
    src = [s for s in nodes if s.port == owner_port][0]
    dst = [s for s in nodes if s is not src][0]
    ids = {s: s.client().execute_command("CLUSTER", "MYID").decode()
           for s in nodes}
    reader = subprocess.Popen([cli, "cluster", "exists", "mp2"] + where,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)

    def one_round():
        reader.stdin.write(keys)
        reader.stdin.flush()
        got = [reader.stdout.readline() for _ in range(round_keys)]
        assert all(g == b"1\n" for g in got), "false negative or error"

    one_round()  # the CLI has the slot map now
    dst.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING",
                                 ids[src])
    src.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING",
                                 ids[dst])
    src.client().execute_command("MIGRATE", "127.0.0.1", dst.port, part0, 0,
                                 10000)
    expect_error(lambda: src.client().exists(part0), "ASK", str(dst.port))
    one_round()  # part 0 answers from dst through ASK
    for s in nodes:
        s.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE",
                                   ids[dst])
    one_round()  # src now answers MOVED
    reader.stdin.close()
    assert reader.wait(60) == 0, reader.stderr.read().decode()
    p = run("exists", "mp2", "absent-key")
    assert p.returncode == 0 and p.stdout in (b"0\n", b"1\n"), p
    # drop: every part deleted, on whichever node holds it now; then the
    # filter is gone (parts 0 and 3 are checked).
    p = run("drop", "mp2")
    assert p.returncode == 0 and b"4 of 4 parts deleted" in p.stdout, p
    p = run("exists", "mp2", "k1")
    assert p.returncode == 3 and b"has no 4 parts" in p.stderr, p


class AckedWriter:
    """Adds items to filters of a Redis Cluster, each BF.MADD followed by
    WAIT 1 0 on the same connection, following MOVED and ASK by hand (the
    cluster specification's rules) so that a write counts as acknowledged
    only when its own node's WAIT said a replica has it."""

    def __init__(self, seed_port):
        self.conns = {}
        self.seed = ("127.0.0.1", seed_port)
        self.slots = {}
        self.moved = self.asked = self.retries = 0
        self.refresh()

    def conn(self, addr):
        if addr not in self.conns:
            self.conns[addr] = redis.Redis(host=addr[0], port=addr[1],
                                           socket_timeout=30)
        return self.conns[addr]

    def refresh(self):
        for addr in [self.seed] + list(self.conns):
            try:
                c = self.conn(addr)
                c.response_callbacks = {}
                rows = c.execute_command("CLUSTER", "SLOTS")
            except redis.RedisError:
                continue
            self.slots = {}
            for r in rows:
                owner = (r[2][0].decode() or addr[0], r[2][1])
                for slot in range(r[0], r[1] + 1):
                    self.slots[slot] = owner
            return
        raise AssertionError("no node answers CLUSTER SLOTS")

    def slot_of(self, key):
        return self.conn(self.seed).execute_command("CLUSTER", "KEYSLOT", key)

    def madd(self, key, items, slot, wait=True):
        """True once the items are written (and, with wait, on a replica)."""
        ask = None
        for _ in range(200):
            addr = ask or self.slots.get(slot, self.seed)
            pipe = self.conn(addr).pipeline(transaction=False)
            if ask:
                pipe.execute_command("ASKING")
            pipe.execute_command("BF.MADD", key, *items)
            if wait:
                pipe.execute_command("WAIT", 1, 0)
            try:
                res = pipe.execute(raise_on_error=False)
            except redis.ConnectionError:
                self.retries += 1
                time.sleep(0.1)
                self.refresh()
                ask = None
                continue
            if ask:
                res = res[1:]
            err = res[0]
            ask = None
            # A plain (non-cluster) client's pipeline hands back MOVED/ASK
            # as ResponseErrors (or their subclasses): read the text.
            text = str(err) if isinstance(err, Exception) else ""
            word = text.split(" ")[0]
            if word in ("MOVED", "ASK") or isinstance(
                    err, redis.exceptions.AskError):
                parts = text.split(" ")
                host, port = parts[-1].rsplit(":", 1)
                if word == "ASK" or (not isinstance(
                        err, redis.exceptions.MovedError) and word != "MOVED"):
                    self.asked += 1
                    ask = (host, int(port))
                else:
                    self.moved += 1
                    self.slots[slot] = (host, int(port))
                continue
            if word in ("TRYAGAIN", "CLUSTERDOWN") or isinstance(
                    err, (redis.exceptions.TryAgainError,
                          redis.exceptions.ClusterDownError)):
                self.retries += 1
                time.sleep(0.05)
                continue
            if isinstance(err, Exception):
                raise err
            assert len(err) == len(items)
            return not wait or res[1] >= 1
        raise AssertionError("gave up writing " + key)


def cluster_nodes(prefix, count, timeout_ms):
    nodes = []
    for i in range(count):
        port = free_cluster_port()
        s = Server("%s%d" % (prefix, i),
                   args=["--cluster-enabled", "yes", "--cluster-config-file",
                         "nodes.conf", "--cluster-node-timeout",
                         str(timeout_ms)])
        SERVERS.append(s)
        nodes.append(s.start(port=port))
    addrs = ["127.0.0.1:%d" % s.port for s in nodes]
    p = subprocess.run(["redis-cli", "--cluster", "create"] + addrs +
                       ["--cluster-replicas", "1" if count == 6 else "0",
                        "--cluster-yes"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    assert p.returncode == 0, p.stdout[-2000:]
    for s in nodes:
        wait_for(lambda: b"cluster_state:ok" in
                 s.client().execute_command("CLUSTER", "INFO"),
                 "cluster_state ok")
    return nodes, addrs


def masters_of(nodes):
    out = []
    for s in nodes:
        if s.alive() and s.client().info("replication")["role"] == "master":
            out.append(s)
    return out


def test_cluster_failover():
    """3 masters + 3 replicas. 1M items go into 64 filters (BF.MADD + WAIT 1
    0 per batch) while `redis-cli --cluster reshard` moves slots holding
    them, and the CLI loads a multi-part filter (`shardfilter cluster`,
    --wait-replicas 1) at the same time. Then the replicas catch up, a
    master is killed with SIGKILL and its replica takes over: every
    acknowledged item is still there (no false negative), the multi-part
    filter answers 1 for every item, and the unacknowledged writes lost at
    the kill are counted."""
    import signal
    import threading
    nodes, addrs = cluster_nodes("failover", 6, 2000)
    w = AckedWriter(nodes[0].port)
    keys = ["fo:%d" % i for i in range(64)]
    slots = {k: w.slot_of(k) for k in keys}
    per_key = int(os.environ.get("SF_CLUSTER_ITEMS", "1000000")) // 64
    batch = 1000
    state = {"done": False, "error": None, "acked": 0}

    def write_all():
        try:
            for at in range(0, per_key, batch):
                for k in keys:
                    items = ["%s:%d" % (k, j)
                             for j in range(at, min(per_key, at + batch))]
                    assert w.madd(k, items, slots[k]), "WAIT saw no replica"
                    state["acked"] += len(items)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            state["error"] = e
        state["done"] = True

    # The multi-part filter, created before and loaded during the reshard.
    cli = os.environ.get("SF_CLI")
    mp_items = 200000
    mp = None
    if cli:
        base = [cli, "cluster"]
        where = ["--node", addrs[0], "--parts", "8"]
        p = subprocess.run(base + ["create", "mp"] + where +
                           ["--type", "bloom", "--capacity", "400000",
                            "--fpp", "0.01"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        assert p.returncode == 0, p.stdout
        mp_keys = os.path.join(WORK, "mp-keys")
        with open(mp_keys, "w") as f:
            f.write("".join("mp:%d\n" % i for i in range(mp_items)))
        mp = subprocess.Popen(base + ["add", "mp"] + where +
                              ["--wait-replicas", "1"],
                              stdin=open(mp_keys, "rb"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    writer = threading.Thread(target=write_all)
    writer.start()
    # Reshard back and forth between the masters while the writes run.
    masters = masters_of(nodes)
    ids = [m.client().execute_command("CLUSTER", "MYID").decode()
           for m in masters]
    reshards = 0
    def agreed():
        # redis-cli refuses to reshard until every node has the new config.
        return subprocess.run(["redis-cli", "--cluster", "check",
                               "127.0.0.1:%d" % masters[0].port],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              timeout=60).returncode == 0

    while not state["done"] or reshards < 2:
        src, dst = reshards % 3, (reshards + 1) % 3
        wait_for(agreed, "the nodes to agree on the slot map", timeout=60)
        p = subprocess.run(["redis-cli", "--cluster", "reshard",
                            "127.0.0.1:%d" % masters[0].port,
                            "--cluster-from", ids[src], "--cluster-to",
                            ids[dst], "--cluster-slots", "1500",
                            "--cluster-yes"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=300)
        assert p.returncode == 0, p.stdout[-3000:]
        reshards += 1
    writer.join()
    assert state["error"] is None, repr(state["error"])
    assert state["acked"] == per_key * 64
    if mp is not None:
        out, err = mp.communicate(timeout=300)
        assert mp.returncode == 0, err.decode()[-2000:]
        print("  multi-part load: " + err.decode().strip())
    print("  %d reshards during %d acknowledged writes; the writer followed "
          "%d MOVED, %d ASK, %d retries" % (reshards, state["acked"],
                                            w.moved, w.asked, w.retries))
    assert w.moved > 0, "no write met a moved slot"
    # Unacknowledged writes to the victim's filters, then the replicas catch
    # up (WAIT), then writes the replica may not have when the kill comes.
    w.refresh()
    victim_addr = w.slots[slots[keys[0]]]
    victim = [s for s in nodes if s.port == victim_addr[1]][0]
    mine = [k for k in keys if w.slots[slots[k]] == victim_addr]
    for m in masters_of(nodes):
        m.client().execute_command("WAIT", 1, 5000)
    unacked = {}
    for k in mine:
        items = ["late:%s:%d" % (k, j) for j in range(2000)]
        w.madd(k, items, slots[k], wait=False)
        unacked[k] = items
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait()
    live = [s for s in nodes if s is not victim]
    raw = live[0].client()
    raw.response_callbacks = {}
    wait_for(lambda: all(r[2][1] != victim.port for r in
                         raw.execute_command("CLUSTER", "SLOTS")),
             "a replica to take the killed master's slots", timeout=60)
    wait_for(lambda: all(b"cluster_state:ok" in
                         s.client().execute_command("CLUSTER", "INFO")
                         for s in live), "the failover", timeout=60)
    w.seed = ("127.0.0.1", live[0].port)
    w.conns.pop(("127.0.0.1", victim.port), None)
    w.refresh()
    assert all(a[1] != victim.port for a in w.slots.values())
    for k in keys:
        owner = w.conn(w.slots[slots[k]])
        for at in range(0, per_key, 5000):
            items = ["%s:%d" % (k, j)
                     for j in range(at, min(per_key, at + 5000))]
            r = owner.execute_command("BF.MEXISTS", k, *items)
            assert all(v == 1 for v in r), "acknowledged item lost in " + k
    lost = total = 0
    for k, items in unacked.items():
        r = w.conn(w.slots[slots[k]]).execute_command("BF.MEXISTS", k, *items)
        total += len(items)
        lost += sum(1 for v in r if v == 0)
    print("  after the failover: every acknowledged item present; %d of %d "
          "unacknowledged writes to the killed master lost" % (lost, total))
    if mp is not None:
        p = subprocess.run([cli, "cluster", "exists", "mp", "--node",
                            "127.0.0.1:%d" % live[0].port, "--parts", "8"],
                           stdin=open(mp_keys, "rb"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        assert p.returncode == 0, p.stderr.decode()
        answers = p.stdout.decode().split()
        assert len(answers) == mp_items
        assert all(a == "1" for a in answers), \
            "multi-part filter lost %d items" % answers.count("0")
        held = [m.client().dbsize() for m in masters_of(live)]
        print("  multi-part filter: all %d items present; keys per master %s"
              % (mp_items, held))


# --- Replication, LOADCHUNK staging and the internal commands -------------

GOLDEN_AOF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                          "data", "golden", "module-aof")
MIB = 1 << 20


def scandump_chunks(c, family, key):
    """[(iterator, data)] of key's SCANDUMP, header first."""
    it, chunks = 0, []
    while True:
        it, data = c.execute_command(family + ".SCANDUMP", key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def wait_synced(cr):
    wait_for(lambda: cr.info("replication").get("master_link_status") == "up"
             and cr.info("replication").get("master_sync_in_progress") == 0,
             "the replica's sync")


def hang_up(c):
    """Closes the client's connections (redis-py's close() keeps them)."""
    c.connection_pool.disconnect()


def aof_commands(path):
    """Every command of an AOF file in RESP form, as lists of bytes."""
    with open(path, "rb") as f:
        data = f.read()
    at, out = 0, []
    while at < len(data):
        assert data[at:at + 1] == b"*", (path, at)
        nl = data.index(b"\r\n", at)
        n, at = int(data[at + 1:nl]), nl + 2
        args = []
        for _ in range(n):
            nl = data.index(b"\r\n", at)
            size, at = int(data[at + 1:nl]), nl + 2
            args.append(data[at:at + size])
            at += size + 2
        out.append(args)
    return out


def incr_aof_commands(s):
    d = os.path.join(s.dir, "appendonlydir")
    out = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".incr.aof"):
            out += aof_commands(os.path.join(d, name))
    return out


def test_golden_aof():
    """An AOF written by an earlier build (tests/data/golden/module-aof,
    tests/module/make_golden_aof.py) loads: SFM.CHUNK sequences of its
    rewrite, SFM.CREATE, and BF/CF.LOADCHUNK sequences replicated verbatim,
    two of them interleaved (tracked by key while the AOF loads)."""
    import gzip
    s = Server("golden_aof", args=["--appendonly", "yes"])
    SERVERS.append(s)
    d = os.path.join(s.dir, "appendonlydir")
    os.makedirs(d)
    for name in os.listdir(GOLDEN_AOF):
        src = os.path.join(GOLDEN_AOF, name)
        if name.endswith(".gz"):
            with gzip.open(src, "rb") as f, \
                    open(os.path.join(d, name[:-3]), "wb") as out:
                out.write(f.read())
        elif name != "expected.txt":
            shutil.copy(src, os.path.join(d, name))
    s.start()
    c = s.client()
    with open(os.path.join(GOLDEN_AOF, "expected.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            key, cmd, *items = line.split()
            assert c.exists(key) == 1, "%s missing after the AOF load" % key
            r = c.execute_command(cmd, key, *items)
            assert all(v == 1 for v in r), (key, r)
    assert c.dump("seq") == c.dump("srcb") and c.dump("il1") == c.dump("srcb")
    assert c.dump("il2") == c.dump("srcc")
    assert c.execute_command("CF.COUNT", "cf", "a") == 2


def test_loadchunk_interleaved():
    """Two clients' LOADCHUNK sequences interleave on a master: both keys
    reach its replica and survive an AOF reload; the master writes them as
    SFM.LOADCHUNK chunks of at most 8 MiB, never the clients' commands."""
    src = server("il_src")
    m = server("il_master", args=["--appendonly", "yes",
                                  "--aof-use-rdb-preamble", "no",
                                  "--repl-diskless-sync-delay", "0"])
    r = server("il_replica")
    cs, cm, cr = src.client(), m.client(), r.client()
    cr.replicaof("127.0.0.1", m.port)
    wait_synced(cr)
    # ~19 MB: SCANDUMP hands out a 16 MiB chunk, twice the AOF rewrite's.
    cs.execute_command("BF.RESERVE", "b", 0.0001, 8000000)
    fill(cs, "b", 2000)
    cs.execute_command("CF.INSERT", "c", "ITEMS", "x", "y", "x")
    bloom = [("BF.LOADCHUNK", "il1", it, d)
             for it, d in scandump_chunks(cs, "BF", "b")]
    cuckoo = [("CF.LOADCHUNK", "il2", it, d)
              for it, d in scandump_chunks(cs, "CF", "c")]
    assert max(len(cmd[3]) for cmd in bloom) > 8 * MIB
    want = {"il1": cs.dump("b"), "il2": cs.dump("c")}
    c1, c2 = m.client(), m.client()
    for i in range(max(len(bloom), len(cuckoo))):
        if i < len(bloom):
            assert c1.execute_command(*bloom[i]) == b"OK"
        if i < len(cuckoo):
            assert c2.execute_command(*cuckoo[i]) == b"OK"
    # A restore abandoned midway leaves nothing anywhere.
    c3 = m.client()
    assert c3.execute_command(*bloom[0][:1], "gone", *bloom[0][2:]) == b"OK"
    hang_up(c3)
    for key, value in want.items():
        assert cm.dump(key) == value, key
    assert cm.execute_command("WAIT", 1, 10000) == 1
    for key, value in want.items():
        assert cr.exists(key) == 1, "%s missing on the replica" % key
        assert cr.dump(key) == value, key
    assert cr.exists("gone") == 0
    assert (cr.execute_command("DEBUG", "DIGEST") ==
            cm.execute_command("DEBUG", "DIGEST"))
    # The AOF: every key back after a restart.
    m.restart()
    cm = m.client()
    for key, value in want.items():
        assert cm.exists(key) == 1, "%s missing after the AOF reload" % key
        assert cm.dump(key) == value, key
    # What the master wrote for them (and sent its replica).
    cmds = incr_aof_commands(m)
    names = {a[0].lower() for a in cmds}
    assert not names & {b"bf.loadchunk", b"cf.loadchunk"}, names
    chunks = [a for a in cmds if a[0].lower() == b"sfm.loadchunk"]
    assert len(chunks) >= 4, len(chunks)  # ~19 MB in 8 MiB chunks, + cuckoo
    assert max(len(a[-1]) for a in chunks) <= 8 * MIB


def dump_header(total):
    """A SCANDUMP header announcing a dump of `total` bytes."""
    return b"SFDUMP01" + struct.pack("<Q", total)


def test_loadchunk_staging_bounded():
    """LOADCHUNK staging comes from Redis's allocator (used_memory counts
    it), is refused past maxmemory (OOM), past a per-restore cap and past
    the pending-restore bound, and is freed when a restore completes, is
    abandoned for a newer one, or its client disconnects. SCANDUMP copies
    alike."""
    s = server("staging", args=["--maxmemory", "100mb"])
    c = s.client()

    def used():
        return c.info("memory")["used_memory"]

    base = used()
    a, b, d = s.client(), s.client(), s.client()
    assert a.execute_command("BF.LOADCHUNK", "ka", 1,
                             dump_header(40 * MIB)) == b"OK"
    assert used() >= base + 40 * MIB, (used(), base)
    assert b.execute_command("BF.LOADCHUNK", "kb", 1,
                             dump_header(40 * MIB)) == b"OK"
    expect_error(lambda: d.execute_command("BF.LOADCHUNK", "kd", 1,
                                           dump_header(40 * MIB)),
                 "OOM command not allowed")
    # A newer restore on a's connection frees the older one's staging.
    assert a.execute_command("BF.LOADCHUNK", "ka2", 1,
                             dump_header(MIB)) == b"OK"
    assert used() < base + 45 * MIB, (used(), base)
    assert d.execute_command("BF.LOADCHUNK", "kd", 1,
                             dump_header(40 * MIB)) == b"OK"
    # A client that disconnects midway frees its staging.
    hang_up(b)
    wait_for(lambda: used() < base + 45 * MIB, "b's staging freed")
    hang_up(a)
    hang_up(d)
    wait_for(lambda: used() < base + 4 * MIB, "every staging freed")
    # A restore that completes frees its staging.
    c.execute_command("BF.RESERVE", "src", 0.01, 1000000)
    chunks = scandump_chunks(c, "BF", "src")
    for it, data in chunks:
        assert c.execute_command("BF.LOADCHUNK", "copy", it, data) == b"OK"
    assert c.dump("copy") == c.dump("src")
    size = c.execute_command("BF.INFO", "src", "SIZE")[0]
    c.execute_command("DEL", "src", "copy")
    wait_for(lambda: used() < base + 4 * MIB, "the completed staging freed")

    # A SCANDUMP copy held for its connection is counted, and refused when
    # it cannot fit.
    c.config_set("maxmemory", 0)
    c.execute_command("BF.RESERVE", "f", 0.001, 10000000)
    size = c.execute_command("BF.INFO", "f", "SIZE")[0]
    before = used()
    it, _ = c.execute_command("BF.SCANDUMP", "f", 0)
    assert used() >= before + 0.9 * size, (used(), before, size)
    while it != 0:
        it, _ = c.execute_command("BF.SCANDUMP", "f", it)
    assert used() < before + 0.1 * size, (used(), before)
    c.config_set("maxmemory", used() + size // 2)
    expect_error(lambda: c.execute_command("BF.SCANDUMP", "f", 0), "OOM")
    c.config_set("maxmemory", 0)

    # The per-restore cap follows MAX-FILTER-BYTES; the pending restores
    # are bounded.
    s2 = server("staging_cap", module_args=["MAX-FILTER-BYTES", "8388608"])
    c2 = s2.client()
    expect_error(lambda: c2.execute_command("BF.LOADCHUNK", "k", 1,
                                            dump_header(64 * MIB)),
                 "larger than")
    clients = [s2.client() for _ in range(33)]
    for i, cl in enumerate(clients[:32]):
        assert cl.execute_command("BF.LOADCHUNK", "p%d" % i, 1,
                                  dump_header(1000)) == b"OK"
    expect_error(lambda: clients[32].execute_command(
        "BF.LOADCHUNK", "p32", 1, dump_header(1000)), "restores")
    hang_up(clients[0])
    wait_for(lambda: _ok(lambda: clients[32].execute_command(
        "BF.LOADCHUNK", "p32", 1, dump_header(1000))),
        "a slot freed by a disconnect")


def _ok(fn):
    try:
        fn()
        return True
    except redis.ResponseError:
        return False


def test_replica_obeys_master():
    """A replica with a smaller MEMORY-BUDGET (and maxmemory) applies every
    write its master applied: a full sync, SFM.CREATE, growth and LOADCHUNK
    staging; its own clients still meet its budget once it is promoted."""
    m = server("obey_master", args=["--repl-diskless-sync-delay", "0"])
    r = server("obey_replica", module_args=["MEMORY-BUDGET", "2097152"])
    cm, cr = m.client(), r.client()
    expect_error(lambda: cr.execute_command("BF.RESERVE", "x", 0.001,
                                            3000000), "Insufficient memory")
    cm.execute_command("BF.RESERVE", "pre", 0.001, 3000000)  # ~5 MiB
    fill(cm, "pre", 1000)
    cr.replicaof("127.0.0.1", m.port)
    wait_synced(cr)
    cm.execute_command("BF.RESERVE", "live", 0.001, 3000000)
    cm.execute_command("BF.RESERVE", "grow", 0.01, 1000, "EXPANSION", 4)
    fill(cm, "grow", 30000, prefix="g")
    info = cm.execute_command("BF.INFO", "grow")
    assert info[info.index(b"Number of filters") + 1] > 1, info
    # LOADCHUNK staging on a replica over its own maxmemory.
    cr.config_set("maxmemory", cr.info("memory")["used_memory"] + MIB)
    for it, data in scandump_chunks(cm, "BF", "pre"):
        assert cm.execute_command("BF.LOADCHUNK", "copy", it, data) == b"OK"
    assert cm.execute_command("WAIT", 1, 10000) == 1
    for key in ("pre", "live", "grow", "copy"):
        assert cr.exists(key) == 1, "%s missing on the replica" % key
        assert cr.dump(key) == cm.dump(key), key
    check_present(cr, "grow", 30000, prefix="g")
    check_present(cr, "pre", 1000)
    assert (cr.execute_command("DEBUG", "DIGEST") ==
            cm.execute_command("DEBUG", "DIGEST"))
    # Promoted, it serves what it holds; its clients meet its budget.
    cr.config_set("maxmemory", 0)
    cr.replicaof("NO", "ONE")
    check_present(cr, "grow", 30000, prefix="g")
    expect_error(lambda: cr.execute_command("BF.RESERVE", "y", 0.001,
                                            1000000), "Insufficient memory")


def test_internal_commands_refused():
    """SFM.* serve the replication stream and the AOF: a client (directly,
    in MULTI or in a script) is refused and nothing changes."""
    s = server("internal")
    c = s.client()
    c.execute_command("BF.ADD", "f", "a")
    spec = "v1 1 1000 0x1.47ae147ae147bp-7 1 0 2 0 0 0 0 0 2"
    for cmd in (("SFM.CHUNK", "f", 0, 2, "junk"),
                ("SFM.CHUNK", "n", 0, 1, "junk"),
                ("SFM.CREATE", "n", spec),
                ("SFM.LOADCHUNK", "f", 1, 0, 4, "junk")):
        expect_error(lambda: c.execute_command(*cmd), "internal")
    p = c.pipeline(transaction=True)
    p.execute_command("SFM.CHUNK", "f", 0, 2, "junk")
    p.execute_command("BF.EXISTS", "f", "a")
    out = p.execute(raise_on_error=False)
    assert isinstance(out[0], redis.ResponseError) and out[1] == 1, out
    expect_error(lambda: c.eval("return redis.call('SFM.CHUNK', KEYS[1], 0, "
                                "2, 'junk')", 1, "f"), "internal")
    assert c.execute_command("BF.EXISTS", "f", "a") == 1
    assert c.exists("n") == 0
    c.execute_command("DEBUG", "RELOAD")
    assert c.execute_command("BF.EXISTS", "f", "a") == 1


def module_type_id(name, encver):
    """Redis's 64-bit module type id: 9 name characters of 6 bits each, then
    the 10-bit encoding version (moduleTypeEncodeId)."""
    charset = ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
               "0123456789-_")
    value = 0
    for ch in name:
        value = (value << 6) | charset.index(ch)
    return (value << 10) | encver


def rdb_len(n):
    """RDB length encoding (rdbSaveLen)."""
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    if n < 1 << 32:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n)


def rdb_string(b):
    return rdb_len(len(b)) + b


def rdb_module_value(key, encver, envelope):
    """A key of the module's type: RDB_TYPE_MODULE_2, the key, the type id
    with its encoding version, one string (opcode 5), the EOF opcode."""
    return (b"\x07" + rdb_string(key) +
            rdb_len(module_type_id("shardfltr", encver)) +
            b"\x05" + rdb_string(envelope) + b"\x00")


def test_future_encoding_rdb():
    """A value whose RDB encoding version is from the future (in an RDB
    written here byte by byte) loads as unavailable: redis-server starts,
    the key is there and answers an error, other keys work."""
    src = server("encver_src", args=["--rdbcompression", "no"])
    cs = src.client()
    cs.execute_command("BF.ADD", "good", "g")
    payload = cs.dump("good")
    envelope = payload[envelope_at(payload):-10 - 1]  # less EOF, version, CRC
    assert envelope[:4] == b"SFRM" and len(envelope) == \
        16 + struct.unpack("<Q", envelope[8:16])[0] + 8
    future = bytearray(envelope)
    future[4] = 2  # a future envelope too: the value stays unavailable
    body = (b"REDIS0010" + b"\xfe\x00" +
            rdb_module_value(b"good", 1, envelope) +
            rdb_module_value(b"future", 2, bytes(future)) +
            b"\x00" + rdb_string(b"plain") + rdb_string(b"text") + b"\xff")
    s = Server("encver", args=["--dbfilename", "hand.rdb"])
    SERVERS.append(s)
    with open(os.path.join(s.dir, "hand.rdb"), "wb") as f:
        f.write(body + struct.pack("<Q", crc64(body)))
    s.start()
    c = s.client()
    assert c.get("plain") == b"text"
    assert c.execute_command("BF.EXISTS", "good", "g") == 1
    assert c.type("future") == b"shardfltr"
    expect_error(lambda: c.execute_command("BF.EXISTS", "future", "g"),
                 "unavailable", "encoding version 2")
    assert c.info("shardfilter")["shardfilter_unavailable_loaded"] == 1
    # Saved back (as encoding version 1: one string, its own envelope
    # version): still unavailable after a restart.
    c.save()
    s.restart()
    c = s.client()
    expect_error(lambda: c.execute_command("BF.ADD", "future", "g"),
                 "unavailable", "newer")
    assert c.execute_command("BF.EXISTS", "good", "g") == 1
    assert c.delete("future") == 1


TESTS = [test_commands, test_redis_cli, test_sf_commands, test_resp3, test_prefix,
         test_budget,
         test_bad_load_arguments,
         test_save_restart_and_debug_reload, test_aof_rewrite_restart,
         test_dump_restore_across_servers, test_scandump_loadchunk,
         test_corrupt_restore_refused,
         test_damaged_rdb_loads_unavailable, test_memory_usage, test_replica,
         test_replica_big, test_golden_aof, test_loadchunk_interleaved,
         test_loadchunk_staging_bounded,
         test_replica_obeys_master, test_internal_commands_refused,
         test_future_encoding_rdb, test_cluster,
         test_cluster_failover]


def main():
    global MODULE, WORK
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    MODULE = os.path.abspath(sys.argv[1])
    wanted = set(sys.argv[2:])
    WORK = tempfile.mkdtemp(prefix="sf-module-test-")
    failed = 0
    try:
        for t in TESTS:
            if wanted and t.__name__ not in wanted:
                continue
            start = time.time()
            try:
                t()
                print("PASS %s (%.1f s)" % (t.__name__, time.time() - start))
            except Exception:  # noqa: BLE001 - report and go on
                failed += 1
                print("FAIL %s" % t.__name__)
                traceback.print_exc()
                for s in SERVERS:
                    if s.proc is not None:
                        print("--- log of %s ---\n%s" % (s.dir, s.log()))
            finally:
                while SERVERS:
                    SERVERS.pop().stop()
    finally:
        while SERVERS:
            SERVERS.pop().stop()
        shutil.rmtree(WORK, ignore_errors=True)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
