#!/usr/bin/python3
"""RedisBloom conformance: every BF.*/CF.* command's replies, exactly.

Each check is a script of commands and the replies RedisBloom 2.8.20 gives
(its src/rebloom.c, and observed: run this file with --redisbloom against
a RedisBloom build to confirm every expectation is RedisBloom's own). A
check runs under RESP2 and again under RESP3, on an empty database.

A few replies differ on purpose; each is a documented difference
(docs/server.md, "Differences from RedisBloom"), written as
Diff(ours, redisbloom) so the same check states both.

The second half runs the bf_/cf_ tests of redis-py 4.3.4's own
tests/test_bloom.py (github.com/redis/redis-py, tag v4.3.4), transcribed
here with redis-py's client API as they are written there.

Usage: conformance_test.py (--server BIN | --module SO | --redisbloom SO)
Exit 0 = pass, 77 = a client tool is missing (1 with SF_REQUIRE_CLIENTS).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import redis
except ImportError:
    print("SKIP: python3-redis is not installed (apt-get install python3-redis)")
    sys.exit(1 if os.environ.get("SF_REQUIRE_CLIENTS") else 77)

from resp_client import Connection, Err, Map, Simple  # noqa: E402
import sf_server  # noqa: E402

OK = Simple("OK")
TARGET = None  # "server", "module" or "redisbloom"


class Diff:
    """A documented difference: what shardfilter answers, and RedisBloom."""

    def __init__(self, ours, redisbloom):
        self.ours = ours
        self.redisbloom = redisbloom

    def __repr__(self):
        return repr(self.redisbloom if TARGET == "redisbloom" else self.ours)


class R:
    """A reply that depends on the protocol: RESP2's, RESP3's."""

    def __init__(self, resp2, resp3):
        self.resp2 = resp2
        self.resp3 = resp3


class Like:
    """A bulk or simple string matching a regular expression."""

    def __init__(self, pattern):
        self.pattern = re.compile(pattern)

    def __repr__(self):
        return "Like(%r)" % self.pattern.pattern


class AnyInt:
    def __repr__(self):
        return "AnyInt"


class AnyValue:
    def __repr__(self):
        return "Any"


ANY = AnyValue()
INT = AnyInt()


def b(flag, protocol):
    """RedisBloom's boolean: an integer under RESP2, a boolean under RESP3."""
    return bool(flag) if protocol == 3 else int(flag)


def info_reply(pairs, protocol):
    """A map under RESP3; RESP2 flattens it into [name, value, ...], or
    answers [value] for one field."""
    if protocol == 3:
        return Map([(Simple(k), v) for k, v in pairs])
    if len(pairs) == 1:  # BF.INFO key FIELD: the value alone
        return [pairs[0][1]]
    flat = []
    for k, v in pairs:
        flat += [Simple(k), v]
    return flat


def resolve(expected, protocol):
    if isinstance(expected, Diff):
        expected = (expected.redisbloom if TARGET == "redisbloom"
                    else expected.ours)
    if isinstance(expected, R):
        expected = expected.resp3 if protocol == 3 else expected.resp2
    return expected


def matches(expected, got, protocol):
    expected = resolve(expected, protocol)
    if expected is ANY:
        return True
    if isinstance(expected, AnyInt):
        return type(got) is int
    if isinstance(expected, Like):
        if isinstance(got, bytes):
            got = got.decode("latin-1")
        return isinstance(got, str) and bool(expected.pattern.fullmatch(got))
    if isinstance(expected, Map):
        return (isinstance(got, Map) and len(got) == len(expected) and
                all(matches(ek, gk, protocol) and matches(ev, gv, protocol)
                    for (ek, ev), (gk, gv) in zip(expected, got)))
    if isinstance(expected, list):
        return (type(got) is list and len(got) == len(expected) and
                all(matches(e, g, protocol) for e, g in zip(expected, got)))
    if isinstance(expected, str) and not isinstance(expected, (Simple, Err)):
        expected = expected.encode()  # a plain str stands for a bulk string
    if type(expected) is not type(got):
        return False
    return expected == got


class Checker:
    """Runs one check's commands; a wrong reply is noted and the check goes
    on (the check fails at its end, naming every wrong reply)."""

    def __init__(self, port, protocol):
        self.c = Connection(port, protocol)
        self.p = protocol
        self.wrong = []

    def __call__(self, expected, *cmd):
        got = self.c.call(*cmd)
        if not matches(expected, got, self.p):
            self.wrong.append("%s\n      expected %r\n      got      %r" %
                              (" ".join(str(a) for a in cmd),
                               resolve(expected, self.p), got))
        return got

    def call(self, *cmd):
        return self.c.call(*cmd)


CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def arity(name):
    return Err("ERR wrong number of arguments for '%s' command" % name)


NOT_FOUND = Err("ERR not found")
EXISTS = Err("ERR item exists")
WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind "
                "of value")


# --- Arity: Redis 7 and RedisBloom name the command in lowercase.
@check
def arity_errors(t):
    for cmd, name in [
            (["Bf.Reserve", "k", "0.01"], "bf.reserve"),
            (["BF.RESERVE", "k", "0.01", "10", "a", "b", "c", "d"],
             "bf.reserve"),
            (["BF.ADD", "k"], "bf.add"), (["bf.Add", "k", "a", "b"], "bf.add"),
            (["BF.MADD", "k"], "bf.madd"), (["BF.INSERT", "k", "ITEMS"],
                                            "bf.insert"),
            (["BF.INSERT", "k", "CAPACITY"], "bf.insert"),
            (["BF.INSERT", "k", "CAPACITY", "10"], "bf.insert"),
            (["BF.EXISTS", "k"], "bf.exists"), (["BF.MEXISTS", "k"],
                                                "bf.mexists"),
            (["BF.INFO"], "bf.info"), (["BF.INFO", "k", "a", "b"], "bf.info"),
            (["BF.CARD"], "bf.card"), (["BF.SCANDUMP", "k"], "bf.scandump"),
            (["BF.LOADCHUNK", "k", "1"], "bf.loadchunk"),
            (["BF.DEBUG"], "bf.debug"),
            (["Cf.Reserve", "k"], "cf.reserve"),
            (["CF.RESERVE", "k", "10", "BUCKETSIZE"], "cf.reserve"),
            (["CF.ADD", "k"], "cf.add"), (["CF.ADDNX", "k"], "cf.addnx"),
            (["CF.INSERT", "k", "ITEMS"], "cf.insert"),
            (["CF.INSERTNX", "k", "x"], "cf.insertnx"),
            (["CF.EXISTS", "k"], "cf.exists"), (["CF.MEXISTS", "k"],
                                                "cf.mexists"),
            (["CF.COUNT", "k"], "cf.count"), (["CF.DEL", "k"], "cf.del"),
            (["CF.COMPACT"], "cf.compact"), (["CF.INFO"], "cf.info"),
            (["CF.SCANDUMP", "k"], "cf.scandump"),
            (["CF.LOADCHUNK", "k", "1"], "cf.loadchunk"),
            (["CF.DEBUG"], "cf.debug")]:
        t(arity(name), *cmd)


# --- BF.RESERVE
@check
def bf_reserve(t):
    t(OK, "BF.RESERVE", "b", "0.01", "100")
    t(EXISTS, "BF.RESERVE", "b", "0.01", "100")
    t(Err("ERR bad error rate"), "BF.RESERVE", "x", "abc", "100")
    t(Err("ERR (0 < error rate range < 1) "), "BF.RESERVE", "x", "0", "100")
    t(Err("ERR (0 < error rate range < 1) "), "BF.RESERVE", "x", "1", "100")
    t(Err("ERR bad capacity"), "BF.RESERVE", "x", "0.01", "abc")
    t(Err("ERR (capacity should be larger than 0)"), "BF.RESERVE", "x",
      "0.01", "0")
    t(Err("ERR no expansion"), "BF.RESERVE", "x", "0.01", "100", "EXPANSION")
    t(Err("ERR bad expansion"), "BF.RESERVE", "x", "0.01", "100", "EXPANSION",
      "abc")
    t(Err("ERR expansion should be greater or equal to 1"), "BF.RESERVE", "x",
      "0.01", "100", "EXPANSION", "0")
    t(Err("Nonscaling filters cannot expand"), "BF.RESERVE", "x", "0.01",
      "100", "EXPANSION", "2", "NONSCALING")
    t(OK, "BF.RESERVE", "e4", "0.01", "100", "EXPANSION", "4")
    t(OK, "BF.RESERVE", "ns", "0.01", "100", "NONSCALING")
    t(0, "EXISTS", "x")
    t(OK, "CF.RESERVE", "c", "100")
    t(WRONGTYPE, "BF.RESERVE", "c", "0.01", "100")


@check
def bf_add_exists(t):
    p = t.p
    t(b(1, p), "BF.ADD", "b", "foo")  # auto-created
    t(b(0, p), "BF.ADD", "b", "foo")
    t([b(0, p), b(1, p)], "BF.MADD", "b", "foo", "bar")
    t(b(1, p), "BF.EXISTS", "b", "foo")
    t(b(0, p), "BF.EXISTS", "b", "nope")
    t([b(1, p), b(0, p), b(1, p)], "BF.MEXISTS", "b", "foo", "nope", "bar")
    t(b(0, p), "BF.EXISTS", "missing", "foo")
    t([b(0, p), b(0, p)], "BF.MEXISTS", "missing", "foo", "bar")
    t(b(1, p), "BF.ADD", "b", "")  # the empty item
    t(b(1, p), "BF.EXISTS", "b", "")
    t(2 + 1, "BF.CARD", "b")
    t(0, "BF.CARD", "missing")
    t(b(1, p), "CF.ADD", "c", "foo")
    t(WRONGTYPE, "BF.ADD", "c", "foo")
    t(WRONGTYPE, "BF.MADD", "c", "foo")
    # RedisBloom reads a key of another type as empty for the checks.
    t(b(0, p), "BF.EXISTS", "c", "foo")
    t([b(0, p)], "BF.MEXISTS", "c", "foo")
    t(WRONGTYPE, "BF.CARD", "c")
    t(WRONGTYPE, "BF.INFO", "c")


@check
def bf_insert(t):
    p = t.p
    t([b(1, p), b(1, p)], "BF.INSERT", "i", "ITEMS", "a", "b")
    t([b(0, p)], "BF.INSERT", "i", "items", "a")
    t([b(1, p)], "BF.INSERT", "i2", "CAPACITY", "10", "ERROR", "0.001",
      "EXPANSION", "4", "ITEMS", "a")
    t(info_reply([("Capacity", 10), ("Size", INT), ("Number of filters", 1),
                  ("Number of items inserted", 1), ("Expansion rate", 4)], p),
      "BF.INFO", "i2")
    t([b(1, p)], "BF.INSERT", "i3", "NONSCALING", "ITEMS", "a")
    t(info_reply([("Expansion rate", None)], p), "BF.INFO", "i3", "EXPANSION")
    t(NOT_FOUND, "BF.INSERT", "x", "NOCREATE", "ITEMS", "a")
    t([b(1, p)], "BF.INSERT", "i", "NOCREATE", "ITEMS", "c")
    t(Err("Bad capacity"), "BF.INSERT", "x", "CAPACITY", "abc", "ITEMS", "a")
    t(Err("Bad error rate"), "BF.INSERT", "x", "ERROR", "abc", "ITEMS", "a")
    t(Err("Bad expansion"), "BF.INSERT", "x", "EXPANSION", "abc", "ITEMS", "a")
    t(Err("Unknown argument received"), "BF.INSERT", "x", "FOO", "ITEMS", "a")
    t(Err("Bad argument received"), "BF.INSERT", "x", "CAPACITY", "0",
      "ITEMS", "a")
    t(Err("Bad argument received"), "BF.INSERT", "x", "ERROR", "1", "ITEMS",
      "a")
    t(0, "EXISTS", "x")
    t(OK, "CF.RESERVE", "c", "100")
    t(WRONGTYPE, "BF.INSERT", "c", "ITEMS", "a")


@check
def bf_nonscaling_full(t):
    p = t.p
    t(OK, "BF.RESERVE", "n", "0.01", "5", "NONSCALING")
    got = t.call("BF.MADD", "n", *["k%d" % i for i in range(20)])
    # RedisBloom stops at the first item the full filter refuses, with the
    # error as the array's last element.
    assert isinstance(got, list) and isinstance(got[-1], Err), got
    assert got[-1] == "ERR non scaling filter is full", got
    assert all(v == b(1, p) or v == b(0, p) for v in got[:-1]), got
    t(Err("ERR non scaling filter is full"), "BF.ADD", "n", "another")
    t(5, "BF.CARD", "n")


@check
def bf_info(t):
    p = t.p
    t(OK, "BF.RESERVE", "b", "0.01", "1000")
    t(b(1, p), "BF.ADD", "b", "x")
    t(info_reply([("Capacity", 1000), ("Size", INT), ("Number of filters", 1),
                  ("Number of items inserted", 1), ("Expansion rate", 2)], p),
      "BF.INFO", "b")
    t(info_reply([("Capacity", 1000)], p), "BF.INFO", "b", "capacity")
    t(info_reply([("Size", INT)], p), "BF.INFO", "b", "SIZE")
    t(info_reply([("Number of filters", 1)], p), "BF.INFO", "b", "FILTERS")
    t(info_reply([("Number of items inserted", 1)], p), "BF.INFO", "b",
      "ITEMS")
    t(info_reply([("Expansion rate", 2)], p), "BF.INFO", "b", "EXPANSION")
    t(Err("Invalid information value"), "BF.INFO", "b", "nope")
    t(NOT_FOUND, "BF.INFO", "missing")


@check
def bf_debug(t):
    t(OK, "BF.RESERVE", "b", "0.01", "100")
    t(NOT_FOUND, "BF.DEBUG", "missing")
    t(["size:0",
       Like(r"bytes:\d+ bits:\d+ hashes:\d+ hashwidth:64 capacity:100 "
            r"size:0 ratio:0\.005")], "BF.DEBUG", "b")
    t(b(1, t.p), "BF.ADD", "b", "x")
    got = t(["size:1", Like(r"bytes:\d+ bits:\d+ hashes:\d+ "
                                    r"hashwidth:64 capacity:100 size:1 "
                                    r"ratio:0\.005")], "BF.DEBUG", "b")
    if isinstance(got, list) and len(got) == 2 and isinstance(got[1], bytes):
        fields = dict(kv.split(":") for kv in got[1].decode().split())
        assert int(fields["bits"]) >= int(fields["bytes"]) * 8 - 64, got
    t(OK, "CF.RESERVE", "c", "100")
    t(WRONGTYPE, "BF.DEBUG", "c")


def scan_dump(t, cmd, key):
    chunks = []
    it = 0
    while True:
        got = t.call(cmd, key, it)
        assert isinstance(got, list) and len(got) == 2, got
        it = got[0]
        if it == 0:
            return chunks, got[1]
        chunks.append((it, got[1]))


@check
def bf_scandump_loadchunk(t):
    p = t.p
    t(OK, "BF.RESERVE", "b", "0.001", "1000")
    t([b(1, p)] * 3, "BF.MADD", "b", "x", "y", "z")
    chunks, last = scan_dump(t, "BF.SCANDUMP", "b")
    assert last == b"", last
    t(1, "DEL", "b")
    for it, data in chunks:
        t(OK, "BF.LOADCHUNK", "b", it, data)
    t([b(1, p)] * 3, "BF.MEXISTS", "b", "x", "y", "z")
    t(3, "BF.CARD", "b")
    t(NOT_FOUND, "BF.SCANDUMP", "missing", "0")
    t(Err("Second argument must be numeric"), "BF.SCANDUMP", "b", "abc")
    t(Err("ERR Second argument must be numeric"), "BF.LOADCHUNK", "b", "abc",
      "x")
    t(NOT_FOUND, "BF.LOADCHUNK", "missing", "100", "x")
    t(Err("ERR received bad data"), "BF.LOADCHUNK", "missing", "1", "x")
    t(OK, "CF.RESERVE", "c", "100")
    t(WRONGTYPE, "BF.SCANDUMP", "c", "0")


@check
def edge_values(t):
    p = t.p
    # Items are binary-safe, of any length.
    t(b(1, p), "BF.ADD", "b", b"\x00\xff\r\n")
    t(b(1, p), "BF.EXISTS", "b", b"\x00\xff\r\n")
    t(b(0, p), "BF.EXISTS", "b", b"\x00\xff\r")
    big = b"x" * 100000
    t(b(1, p), "CF.ADD", "c", big)
    t(1, "CF.COUNT", "c", big)
    # Options are case-insensitive; BF.INSERT's by their first letters.
    t(OK, "BF.RESERVE", "r", "0.5", "10", "nonscaling")
    t(info_reply([("Expansion rate", None)], p), "BF.INFO", "r", "expansion")
    t(OK, "CF.RESERVE", "cr", "100", "bucketsize", "4", "maxiterations",
      "5", "expansion", "2")
    t(cf_info(p, cf_size(128), 32, bucket_size=4, expansion=2,
              max_iterations=5), "CF.INFO", "cr")
    t([b(1, p)], "BF.INSERT", "i", "cap", "50", "err", "0.1", "exp", "4",
      "items", "a")
    t(info_reply([("Capacity", 50)], p), "BF.INFO", "i", "CAPACITY")
    t([b(1, p)], "CF.INSERT", "ci", "capacity", "64", "items", "a")
    t(cf_info(p, cf_size(64), 32, items=1), "CF.INFO", "ci")
    # Integers are strict: no exponent, no blanks.
    t(Err("ERR bad capacity"), "BF.RESERVE", "x", "0.01", "1e3")
    t(Err("Bad capacity"), "CF.RESERVE", "x", " 100")
    t(NOT_FOUND, "BF.INFO", "missing", "CAPACITY")
    t(0, "EXISTS", "x")


# --- CF.RESERVE
@check
def cf_reserve(t):
    t(OK, "CF.RESERVE", "c", "1000")
    t(EXISTS, "CF.RESERVE", "c", "1000")
    t(Err("Bad capacity"), "CF.RESERVE", "x", "abc")
    t(Err("Capacity must be at least (BucketSize * 2)"), "CF.RESERVE", "x",
      "3")
    t(Err("Capacity must be at least (BucketSize * 2)"), "CF.RESERVE", "x",
      "7", "BUCKETSIZE", "4")
    t(Err("Couldn't parse MAXITERATIONS"), "CF.RESERVE", "x", "100",
      "MAXITERATIONS", "abc")
    t(Err("MAXITERATIONS: value must be an integer between 1 and 65535, "
          "inclusive."), "CF.RESERVE", "x", "100", "MAXITERATIONS", "0")
    t(Err("Couldn't parse BUCKETSIZE"), "CF.RESERVE", "x", "100",
      "BUCKETSIZE", "abc")
    t(Err("BUCKETSIZE: value must be an integer between 1 and 255, "
          "inclusive."), "CF.RESERVE", "x", "100", "BUCKETSIZE", "256")
    t(Err("Couldn't parse EXPANSION"), "CF.RESERVE", "x", "100", "EXPANSION",
      "abc")
    t(Err("EXPANSION: value must be an integer between 0 and 32768, "
          "inclusive."), "CF.RESERVE", "x", "100", "EXPANSION", "-1")
    t(0, "EXISTS", "x")
    # Documented limits: the tables hold 2, 4 or 8 slots per bucket, and a
    # growing cuckoo filter expands by at most 16.
    t(Diff(Err("ERR BUCKETSIZE must be 2, 4 or 8 (shardfilter)"), OK),
      "CF.RESERVE", "b3", "100", "BUCKETSIZE", "3")
    t(Diff(Err("ERR EXPANSION must be in the range [0, 16] (shardfilter)"),
           OK), "CF.RESERVE", "e32", "100", "EXPANSION", "32")
    t(OK, "BF.RESERVE", "bf", "0.01", "100")
    t(WRONGTYPE, "CF.RESERVE", "bf", "100")


def cf_info(p, size, buckets, filters=1, items=0, deleted=0, bucket_size=2,
            expansion=1, max_iterations=20):
    return info_reply([("Size", size), ("Number of buckets", buckets),
                       ("Number of filters", filters),
                       ("Number of items inserted", items),
                       ("Number of items deleted", deleted),
                       ("Bucket size", bucket_size),
                       ("Expansion rate", expansion),
                       ("Max iterations", max_iterations)], p)


# RedisBloom's CF.INFO Size adds its own structures to the tables' bytes:
# 40 bytes of header and 16 per sub-filter (its struct sizes).
def cf_size(table_bytes, filters=1):
    return Diff(table_bytes, table_bytes + 40 + 16 * filters)


@check
def cf_geometry(t):
    p = t.p
    # nextpow2(capacity / bucketsize) buckets of bucketsize 8-bit slots.
    t(OK, "CF.RESERVE", "c1024", "1024")
    t(cf_info(p, cf_size(1024), 512), "CF.INFO", "c1024")
    t(OK, "CF.RESERVE", "c500", "500")
    t(cf_info(p, cf_size(512), 256), "CF.INFO", "c500")
    t(OK, "CF.RESERVE", "c1000b4", "1000", "BUCKETSIZE", "4",
      "MAXITERATIONS", "50", "EXPANSION", "3")
    t(cf_info(p, cf_size(1024), 256, bucket_size=4, expansion=4,
              max_iterations=50), "CF.INFO", "c1000b4")
    t(OK, "CF.RESERVE", "c100b8", "100", "BUCKETSIZE", "8", "EXPANSION", "0")
    t(cf_info(p, cf_size(128), 16, bucket_size=8, expansion=0),
      "CF.INFO", "c100b8")
    t(b(1, p), "CF.ADD", "auto", "x")  # auto-created: capacity 1024
    t(cf_info(p, cf_size(1024), 512, items=1), "CF.INFO", "auto")
    t([b(1, p)], "CF.INSERT", "auto2", "CAPACITY", "100", "ITEMS", "x")
    t(cf_info(p, cf_size(128), 64, items=1), "CF.INFO", "auto2")
    t(NOT_FOUND, "CF.INFO", "missing")
    t(OK, "BF.RESERVE", "bf", "0.01", "100")
    t(WRONGTYPE, "CF.INFO", "bf")


@check
def cf_add_insert(t):
    p = t.p
    t(b(1, p), "CF.ADD", "c", "foo")
    t(b(1, p), "CF.ADD", "c", "foo")  # a multiset: a second copy
    t(2, "CF.COUNT", "c", "foo")
    t(b(0, p), "CF.ADDNX", "c", "foo")
    t(b(1, p), "CF.ADDNX", "c", "bar")
    t([b(1, p), b(1, p)], "CF.INSERT", "c", "ITEMS", "foo", "baz")
    t([0, 1, 0], "CF.INSERTNX", "c", "ITEMS", "foo", "new", "new")
    t([b(1, p)], "CF.INSERT", "i", "CAPACITY", "1000", "ITEMS", "a")
    t(NOT_FOUND, "CF.INSERT", "x", "NOCREATE", "ITEMS", "a")
    t(NOT_FOUND, "CF.INSERTNX", "x", "NOCREATE", "ITEMS", "a")
    t([b(1, p)], "CF.INSERT", "i", "NOCREATE", "ITEMS", "b")
    t(Err("Bad capacity"), "CF.INSERT", "x", "CAPACITY", "abc", "ITEMS", "a")
    t(Err("Capacity must be at least (BucketSize * 2)"), "CF.INSERT", "x",
      "CAPACITY", "3", "ITEMS", "a")
    t(Err("Unknown argument received"), "CF.INSERT", "x", "FOO", "ITEMS",
      "a")
    t(0, "EXISTS", "x")
    t(cf_info(p, cf_size(1024), 512, items=6), "CF.INFO", "c")
    t(OK, "BF.RESERVE", "bf", "0.01", "100")
    t(WRONGTYPE, "CF.ADD", "bf", "x")
    t(WRONGTYPE, "CF.ADDNX", "bf", "x")
    t(WRONGTYPE, "CF.INSERT", "bf", "ITEMS", "x")
    t(WRONGTYPE, "CF.INSERTNX", "bf", "ITEMS", "x")


@check
def cf_exists_count_del(t):
    p = t.p
    t(b(1, p), "CF.ADD", "c", "foo")
    t(b(1, p), "CF.EXISTS", "c", "foo")
    t(b(0, p), "CF.EXISTS", "c", "nope")
    t([b(1, p), b(0, p)], "CF.MEXISTS", "c", "foo", "nope")
    t(1, "CF.COUNT", "c", "foo")
    t(0, "CF.COUNT", "c", "nope")
    t(b(0, p), "CF.EXISTS", "missing", "foo")
    t([b(0, p), b(0, p)], "CF.MEXISTS", "missing", "a", "b")
    t(0, "CF.COUNT", "missing", "foo")
    t(b(0, p), "CF.DEL", "c", "nope")
    t(b(1, p), "CF.DEL", "c", "foo")
    t(b(0, p), "CF.DEL", "c", "foo")
    t(0, "CF.COUNT", "c", "foo")
    t(cf_info(p, cf_size(1024), 512, items=0, deleted=1), "CF.INFO", "c")
    t(Err("Not found"), "CF.DEL", "missing", "foo")
    # A multiset: copies of one item, counted and removed one by one. The
    # (2b - 1)th copy is the last a shardfilter table keeps (invariant 8);
    # RedisBloom grows a sub-filter for more.
    for _ in range(3):
        t(b(1, p), "CF.ADD", "c", "dup")
    t(3, "CF.COUNT", "c", "dup")
    t(Diff(Err("Filter is full"), b(1, p)), "CF.ADD", "c", "dup")
    t(b(1, p), "CF.DEL", "c", "dup")
    t(Diff(2, 3), "CF.COUNT", "c", "dup")
    t(OK, "BF.RESERVE", "bf", "0.01", "100")
    # RedisBloom reads a key of another type as empty for the checks.
    t(b(0, p), "CF.EXISTS", "bf", "x")
    t(0, "CF.COUNT", "bf", "x")
    t(Err("Not found"), "CF.DEL", "bf", "x")


@check
def cf_compact(t):
    p = t.p
    t(Err("Cuckoo filter was not found"), "CF.COMPACT", "missing")
    t(OK, "CF.RESERVE", "c", "4", "EXPANSION", "1")
    items = ["i%d" % k for k in range(12)]
    for it in items:
        t(b(1, p), "CF.ADD", "c", it)
    before = t.call("CF.INFO", "c")
    for it in items[:10]:
        t(b(1, p), "CF.DEL", "c", it)
    t(OK, "CF.COMPACT", "c")
    t([b(1, p), b(1, p)], "CF.MEXISTS", "c", *items[10:])
    after = t.call("CF.INFO", "c")
    filters = lambda info: (info[5] if p == 2 else info[2][1])  # noqa: E731
    # RedisBloom moves the two items left into its first sub-filter and
    # frees the others; a shardfilter chain keeps its links (a documented
    # difference: CF.COMPACT changes nothing).
    if TARGET == "redisbloom":
        assert filters(after) < filters(before), (before, after)
    else:
        assert filters(after) == filters(before), (before, after)
    t(OK, "BF.RESERVE", "bf", "0.01", "100")
    t(Err("Cuckoo filter was not found"), "CF.COMPACT", "bf")


@check
def cf_max_expansions(t):
    p = t.p
    # 2 buckets of 2 per sub-filter; at 32 sub-filters every add is refused.
    t(OK, "CF.RESERVE", "c", "4", "EXPANSION", "1")
    refused = None
    for k in range(1000):
        got = t.call("CF.ADD", "c", "item%d" % k)
        if got != b(1, p):
            refused = got
            break
    assert refused == Err("Maximum expansions reached"), refused
    t(Err("Maximum expansions reached"), "CF.ADD", "c", "x")
    t(Err("Maximum expansions reached"), "CF.ADDNX", "c", "x")
    t(Err("Maximum expansions reached"), "CF.INSERT", "c", "ITEMS", "x", "y")
    t(Err("Maximum expansions reached"), "CF.INSERTNX", "c", "ITEMS", "x")
    # Number of buckets is the first sub-filter's; Size every table's.
    t(cf_info(p, cf_size(32 * 4, 32), 2, filters=32, items=INT),
      "CF.INFO", "c")
    # A non-scaling filter answers "Filter is full" (one item) or -1.
    t(OK, "CF.RESERVE", "n", "4", "EXPANSION", "0")
    for k in range(1000):
        got = t.call("CF.ADD", "n", "item%d" % k)
        if got != b(1, p):
            break
    t(Err("Filter is full"), "CF.ADD", "n", "more")
    t([R(-1, False)], "CF.INSERT", "n", "ITEMS", "more")
    t([-1], "CF.INSERTNX", "n", "ITEMS", "more")


@check
def cf_debug(t):
    t(OK, "CF.RESERVE", "c", "1000", "BUCKETSIZE", "4", "EXPANSION", "2")
    t(b(1, t.p), "CF.ADD", "c", "x")
    t(b(1, t.p), "CF.DEL", "c", "x")
    t(b(1, t.p), "CF.ADD", "c", "y")
    t(("bktsize:4 buckets:256 items:1 deletes:1 filters:1 "
             "max_iterations:20 expansion:2"), "CF.DEBUG", "c")
    t(NOT_FOUND, "CF.DEBUG", "missing")
    t(OK, "BF.RESERVE", "bf", "0.01", "100")
    t(WRONGTYPE, "CF.DEBUG", "bf")


@check
def cf_scandump_loadchunk(t):
    p = t.p
    t(OK, "CF.RESERVE", "c", "1000")
    t([0, None], "CF.SCANDUMP", "c", "0")  # empty: nothing to dump
    t([b(1, p)] * 3, "CF.INSERT", "c", "ITEMS", "x", "y", "z")
    chunks, last = scan_dump(t, "CF.SCANDUMP", "c")
    assert last is None, last
    t(1, "DEL", "c")
    for it, data in chunks:
        t(OK, "CF.LOADCHUNK", "c", it, data)
    t([b(1, p)] * 3, "CF.MEXISTS", "c", "x", "y", "z")
    t(NOT_FOUND, "CF.SCANDUMP", "missing", "0")
    t(Err("Invalid position"), "CF.SCANDUMP", "c", "abc")
    t(Err("Invalid position"), "CF.SCANDUMP", "c", "-1")
    t(Err("Invalid position"), "CF.LOADCHUNK", "c", "abc", "x")
    t(Err("Invalid position"), "CF.LOADCHUNK", "c", "0", "x")
    t(NOT_FOUND, "CF.LOADCHUNK", "missing", "100", "x")
    t(Err("Invalid header"), "CF.LOADCHUNK", "missing", "1", "x")
    t(EXISTS, "CF.LOADCHUNK", "c", "1", "x")
    t(OK, "BF.RESERVE", "bf", "0.01", "100")
    t(WRONGTYPE, "CF.SCANDUMP", "bf", "0")
    t(WRONGTYPE, "CF.LOADCHUNK", "bf", "100", "x")


@check
def memory_usage(t):
    # A 500-item cuckoo key: 256 buckets of two 8-bit slots, 512 bytes of
    # table, as RedisBloom (whose MEMORY USAGE is 600 bytes: its 56 bytes
    # of structures and the key's own).
    if TARGET == "server":
        return
    t(OK, "CF.RESERVE", "c", "500")
    got = t.call("MEMORY", "USAGE", "c")
    assert isinstance(got, int) and 512 <= got <= 1024, got


# --- redis-py 4.3.4, tests/test_bloom.py: the bf_/cf_ tests and the BF/CF
# part of test_create, in its own words.
def intlist(obj):
    return [int(v) for v in obj]


def redispy_test_create(client):
    assert client.bf().create("bloom", 0.01, 1000)
    assert client.bf().create("bloom_e", 0.01, 1000, expansion=1)
    assert client.bf().create("bloom_ns", 0.01, 1000, noScale=True)
    assert client.cf().create("cuckoo", 1000)
    assert client.cf().create("cuckoo_e", 1000, expansion=1)
    assert client.cf().create("cuckoo_bs", 1000, bucket_size=4)
    assert client.cf().create("cuckoo_mi", 1000, max_iterations=10)


def redispy_test_bf_add(client):
    assert client.bf().create("bloom", 0.01, 1000)
    assert 1 == client.bf().add("bloom", "foo")
    assert 0 == client.bf().add("bloom", "foo")
    assert [0] == intlist(client.bf().madd("bloom", "foo"))
    assert [0, 1] == client.bf().madd("bloom", "foo", "bar")
    assert [0, 0, 1] == client.bf().madd("bloom", "foo", "bar", "baz")
    assert 1 == client.bf().exists("bloom", "foo")
    assert 0 == client.bf().exists("bloom", "noexist")
    assert [1, 0] == intlist(client.bf().mexists("bloom", "foo", "noexist"))


def redispy_test_bf_insert(client):
    assert client.bf().create("bloom", 0.01, 1000)
    assert [1] == intlist(client.bf().insert("bloom", ["foo"]))
    assert [0, 1] == intlist(client.bf().insert("bloom", ["foo", "bar"]))
    assert [1] == intlist(client.bf().insert("captest", ["foo"], capacity=10))
    assert [1] == intlist(client.bf().insert("errtest", ["foo"], error=0.01))
    assert 1 == client.bf().exists("bloom", "foo")
    assert 0 == client.bf().exists("bloom", "noexist")
    assert [1, 0] == intlist(client.bf().mexists("bloom", "foo", "noexist"))
    info = client.bf().info("bloom")
    assert 2 == info.insertedNum
    assert 1000 == info.capacity
    assert 1 == info.filterNum


def redispy_test_bf_scandump_and_loadchunk(client):
    client.bf().create("myBloom", "0.0001", "1000")

    def do_verify():
        res = 0
        for x in range(1000):
            client.bf().add("myBloom", x)
            rv = client.bf().exists("myBloom", x)
            assert rv
            rv = client.bf().exists("myBloom", f"nonexist_{x}")
            res += rv == x
        assert res < 5

    do_verify()
    cmds = []
    cur = client.bf().scandump("myBloom", 0)
    first = cur[0]
    cmds.append(cur)
    while True:
        cur = client.bf().scandump("myBloom", first)
        first = cur[0]
        if first == 0:
            break
        else:
            cmds.append(cur)
    prev_info = client.bf().execute_command("bf.debug", "myBloom")
    client.bf().client.delete("myBloom")
    for cmd in cmds:
        client.bf().loadchunk("myBloom", *cmd)
    cur_info = client.bf().execute_command("bf.debug", "myBloom")
    assert prev_info == cur_info
    do_verify()
    client.bf().client.delete("myBloom")
    client.bf().create("myBloom", "0.0001", "10000000")


def redispy_test_bf_info(client):
    expansion = 4
    client.bf().create("nonscaling", "0.0001", "1000", noScale=True)
    info = client.bf().info("nonscaling")
    assert info.expansionRate is None
    client.bf().create("expanding", "0.0001", "1000", expansion=expansion)
    info = client.bf().info("expanding")
    assert info.expansionRate == 4
    try:
        client.bf().create(
            "myBloom", "0.0001", "1000", expansion=expansion, noScale=True
        )
        assert False
    except redis.RedisError:
        assert True


def redispy_test_cf_add_and_insert(client):
    assert client.cf().create("cuckoo", 1000)
    assert client.cf().add("cuckoo", "filter")
    assert not client.cf().addnx("cuckoo", "filter")
    assert 1 == client.cf().addnx("cuckoo", "newItem")
    assert [1] == client.cf().insert("captest", ["foo"])
    assert [1] == client.cf().insert("captest", ["foo"], capacity=1000)
    assert [1] == client.cf().insertnx("captest", ["bar"])
    assert [1] == client.cf().insertnx("captest", ["food"], nocreate="1")
    assert [0, 0, 1] == client.cf().insertnx("captest", ["foo", "bar", "baz"])
    assert [0] == client.cf().insertnx("captest", ["bar"], capacity=1000)
    assert [1] == client.cf().insert("empty1", ["foo"], capacity=1000)
    assert [1] == client.cf().insertnx("empty2", ["bar"], capacity=1000)
    info = client.cf().info("captest")
    assert 5 == info.insertedNum
    assert 0 == info.deletedNum
    assert 1 == info.filterNum


def redispy_test_cf_exists_and_del(client):
    assert client.cf().create("cuckoo", 1000)
    assert client.cf().add("cuckoo", "filter")
    assert client.cf().exists("cuckoo", "filter")
    assert not client.cf().exists("cuckoo", "notexist")
    assert [1, 0] == client.cf().mexists("cuckoo", "filter", "notexist")
    assert 1 == client.cf().count("cuckoo", "filter")
    assert 0 == client.cf().count("cuckoo", "notexist")
    assert client.cf().delete("cuckoo", "filter")
    assert 0 == client.cf().count("cuckoo", "filter")


REDISPY_TESTS = [redispy_test_create, redispy_test_bf_add,
                 redispy_test_bf_insert,
                 redispy_test_bf_scandump_and_loadchunk, redispy_test_bf_info,
                 redispy_test_cf_add_and_insert,
                 redispy_test_cf_exists_and_del]


class RedisServer:
    """Debian's redis-server with a module loaded, in a temporary dir."""

    def __init__(self, module):
        self.dir = tempfile.mkdtemp(prefix="sf_conformance_")
        self.port = sf_server.free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", self.dir, "--save", "", "--appendonly", "no",
             "--logfile", os.path.join(self.dir, "redis.log"),
             "--loadmodule", module],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                if redis.Redis(port=self.port).ping():
                    return
            except redis.ConnectionError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                with open(os.path.join(self.dir, "redis.log")) as f:
                    log = f.read()
                self.stop()
                raise AssertionError("redis-server did not start:\n" + log)
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    global TARGET
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--server", help="shardfilter-server binary")
    g.add_argument("--module", help="shardfilter.so, loaded in redis-server")
    g.add_argument("--redisbloom", help="RedisBloom's redisbloom.so")
    ap.add_argument("names", nargs="*", help="run only these checks")
    a = ap.parse_args()
    if (a.module or a.redisbloom) and shutil.which("redis-server") is None:
        print("SKIP: redis-server is not installed")
        sys.exit(1 if os.environ.get("SF_REQUIRE_CLIENTS") else 77)
    if a.server:
        TARGET = "server"
        host = sf_server.Server(a.server, [], prefix="sf_conformance_")
    else:
        TARGET = "module" if a.module else "redisbloom"
        host = RedisServer(a.module or a.redisbloom)
    failed = []
    passed = 0
    try:
        admin = redis.Redis(port=host.port)
        for fn in CHECKS:
            if a.names and fn.__name__ not in a.names:
                continue
            for protocol in (2, 3):
                admin.flushall()
                name = "%s/RESP%d" % (fn.__name__, protocol)
                try:
                    checker = Checker(host.port, protocol)
                    fn(checker)
                    if checker.wrong:
                        raise AssertionError("\n    ".join(checker.wrong))
                    passed += 1
                except Exception as e:  # noqa: BLE001: a check's failure
                    failed.append(name)
                    print("FAIL %s: %s" % (name, e))
        for fn in REDISPY_TESTS:
            if a.names and fn.__name__ not in a.names:
                continue
            admin.flushall()
            try:
                fn(redis.Redis(port=host.port, decode_responses=True))
                passed += 1
            except Exception:  # noqa: BLE001
                failed.append(fn.__name__)
                print("FAIL %s:\n%s" % (fn.__name__, traceback.format_exc()))
    finally:
        host.stop()
    print("%s: %d passed, %d failed" % (TARGET, passed, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
