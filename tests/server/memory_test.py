#!/usr/bin/env python3
"""shardfilter-server's --maxmemory: one memory limit for the process.

A server with --maxmemory 64mb:
  - reports Redis's INFO memory fields (maxmemory, maxmemory_human,
    maxmemory_policy:noeviction, used_memory, used_memory_human,
    used_memory_rss, used_memory_peak, total_system_memory) and CONFIG GET
    maxmemory;
  - refuses a BF.RESERVE / CF.RESERVE / SF.CREATE larger than the limit with
    Redis's "-OOM command not allowed when used memory > 'maxmemory'.",
    creating nothing;
  - refuses growth past the limit with -OOM and keeps answering every
    acknowledged item of that filter;
  - keeps many filters whose total exceeds the limit readable: clean ones
    are unloaded to make room and loaded again on their next use.

  memory_test.py --server build/tools/shardfilter-server
"""
import argparse
import os
import sys
import time

import sf_server

try:
    import redis
except ImportError:
    print("SKIP: python3-redis is not installed (apt-get install python3-redis)")
    sys.exit(1 if os.environ.get("SF_REQUIRE_CLIENTS") else 77)

OOM = "OOM command not allowed when used memory > 'maxmemory'."
LIMIT = 64 * 1024 * 1024


class Server(sf_server.Server):
    def __init__(self, binary, args, **kw):
        super().__init__(binary, args, prefix="sf_memory_test_", **kw)

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=120)


def expect_oom(fn, what):
    try:
        fn()
    except redis.ResponseError as e:
        assert str(e) == OOM, "%s: %r" % (what, str(e))
        return
    raise AssertionError("%s was not refused" % what)


def check_info(r):
    info = r.info("memory")
    for field in ("used_memory", "used_memory_human", "used_memory_rss",
                  "used_memory_peak", "total_system_memory", "maxmemory",
                  "maxmemory_human", "maxmemory_policy"):
        assert field in info, "INFO memory has no %s: %r" % (field, info)
    assert info["maxmemory"] == LIMIT, info
    assert info["maxmemory_human"] == "64.00M", info
    assert info["maxmemory_policy"] == "noeviction", info
    assert 0 < info["used_memory"] <= LIMIT, info
    assert info["used_memory_peak"] >= info["used_memory"], info
    assert info["used_memory_rss"] > 0, info
    assert info["total_system_memory"] > LIMIT, info
    assert r.config_get("maxmemory") == {"maxmemory": str(LIMIT)}
    print("ok: INFO memory and CONFIG GET maxmemory")


def check_too_large(r):
    expect_oom(lambda: r.execute_command("BF.RESERVE", "big", 0.01, 100000000),
               "BF.RESERVE of ~120 MB")
    expect_oom(lambda: r.execute_command("CF.RESERVE", "bigc", 100000000),
               "CF.RESERVE of ~100 MB")
    expect_oom(lambda: r.execute_command("SF.CREATE", "bigs", "bloom",
                                         100000000),
               "SF.CREATE of ~120 MB")
    assert r.exists("big", "bigc", "bigs") == 0
    print("ok: creates past the limit are -OOM and create nothing")


def check_filter_limit_message(r):
    # Over --max-filter-bytes (1 GiB by default), not --maxmemory: the
    # reply states the filter's capacity and that limit, not a shard's.
    try:
        r.execute_command("SF.CREATE", "huge", "bloom", 1 << 40)
    except redis.ResponseError as e:
        text = str(e)
    else:
        raise AssertionError("SF.CREATE of 2^40 items was not refused")
    assert text.startswith("Insufficient memory: capacity 1099511627776 at "
                           "rate 0.01 needs "), text
    assert "in 256 shards, over the filter's memory limit of 1073741824 " \
           "bytes" in text, text
    assert r.exists("huge") == 0
    print("ok: " + text[:100] + "...")


def check_growth(r):
    # Links of 1000, 16000 and 256000 items (~17 B each at these rates: a
    # counting filter's 4-bit counters); the fourth (4,096,000) would take
    # ~70 MB, more than the whole limit, whatever is unloaded.
    r.execute_command("SF.CREATE", "g", "counting", 1000, "ERROR", 0.000001,
                      "SHARDS", 1, "EXPANSION", 16)
    acked = 0
    refused = None
    while refused is None:
        assert acked < 2000000, "growth was never refused"
        batch = ["g%d" % i for i in range(acked, acked + 10000)]
        for i, reply in enumerate(r.execute_command("SF.MADD", "g", *batch)):
            if isinstance(reply, Exception):
                assert str(reply) == OOM, repr(reply)
                refused = acked + i
                break
        if refused is None:
            acked += len(batch)
    assert refused >= 273000, refused  # the three links were filled first
    expect_oom(lambda: r.execute_command("SF.ADD", "g", "one more"),
               "SF.ADD past the limit")
    for start in range(0, refused, 10000):
        batch = ["g%d" % i for i in range(start, min(start + 10000, refused))]
        answers = r.execute_command("SF.MEXISTS", "g", *batch)
        assert all(a == 1 for a in answers), "an acknowledged item is absent"
    assert r.info("memory")["used_memory"] <= LIMIT
    r.delete("g")
    print("ok: growth past the limit is -OOM after %d items; every "
          "acknowledged item answers 1" % refused)


def check_many_filters(r):
    # 12 filters of ~9 MB each: 108 MB of tables under a 64 MB limit.
    names = ["m%d" % i for i in range(12)]
    for n in names:
        assert r.execute_command("BF.RESERVE", n, 0.01, 6000000) == b"OK"
        items = ["%s-%d" % (n, j) for j in range(1000)]
        assert r.execute_command("BF.MADD", n, *items) == [1] * 1000
    for _ in range(2):  # each round loads every filter again
        for n in names:
            items = ["%s-%d" % (n, j) for j in range(1000)]
            answers = r.execute_command("BF.MEXISTS", n, *items)
            assert answers == [1] * 1000, "%s lost items" % n
    info = r.info("memory")
    assert info["unloaded_filters"] > 0, info
    # Measured memory (the loaded filters' journal pages) grows after their
    # tables were reserved; the server unloads filters until it is under
    # the limit again, within a few of its 100 ms samples.
    deadline = time.time() + 60
    while info["used_memory"] > LIMIT and time.time() < deadline:
        time.sleep(0.1)
        info = r.info("memory")
    assert info["used_memory"] <= LIMIT, info
    assert sorted(k.decode() for k in r.keys("m*")) == sorted(names)
    print("ok: 12 filters of ~9 MB under 64 MB stay readable (%d unloads)" %
          info["unloaded_filters"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    args = ap.parse_args()
    s = Server(args.server, ["--maxmemory", "64mb"])
    try:
        r = s.client()
        check_info(r)
        check_too_large(r)
        check_filter_limit_message(r)
        check_growth(r)
        check_many_filters(r)
        check_info(r)
    finally:
        s.stop()
    print("memory_test: all passed")


if __name__ == "__main__":
    main()
