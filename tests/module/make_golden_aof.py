#!/usr/bin/env python3
"""Writes the module's golden AOF (tests/data/golden/module-aof/).

Usage: make_golden_aof.py <shardfilter.so> <output directory>

Run once, with the build whose AOF format the files pin; never regenerate
them for a format change (tests/data/golden/README.md). module_test.py's
test_golden_aof loads them with every later build.

The AOF (Redis 7.0's multi-part layout, aof-use-rdb-preamble no) holds:
- a base file written by BGREWRITEAOF: SFM.CHUNK sequences, one of two
  parts ("big", a Bloom filter of more than 8 MiB) and single parts;
- an incremental file: SFM.CREATE + BF.ADD (an auto-created filter),
  BF.MADD on "big", and BF.LOADCHUNK sequences replicated verbatim: one
  restore ("seq") sent alone, and two ("il1", "il2") from two clients whose
  chunks interleave.
expected.txt lists what each key must answer once loaded.
"""
import gzip
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


def scandump(c, family, key):
    """[(iter, data)] of key's SCANDUMP: the header, then the dump split in
    three chunks (LOADCHUNK takes any split whose iterators are the end
    offsets + 1)."""
    it, chunks = 0, []
    while True:
        it, data = c.execute_command(family + ".SCANDUMP", key, it)
        if it == 0:
            break
        chunks.append((it, data))
    header, body = chunks[0], b"".join(d for _, d in chunks[1:])
    cuts = [0, len(body) // 3, 2 * len(body) // 3, len(body)]
    out = [header]
    for a, b in zip(cuts, cuts[1:]):
        out.append((b + 1, body[a:b]))
    return out


def main():
    module, out_dir = os.path.abspath(sys.argv[1]), sys.argv[2]
    work = tempfile.mkdtemp(prefix="sf-golden-aof-")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
         "--dir", work, "--save", "", "--appendonly", "yes",
         "--aof-use-rdb-preamble", "no", "--loadmodule", module],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=60)
        wait_for(lambda: _pings(c), "redis-server")
        c.execute_command("BF.RESERVE", "big", 0.0001, 4000000)
        c.execute_command("BF.MADD", "big", *["g%d" % i for i in range(1000)])
        c.execute_command("CF.INSERT", "cf", "ITEMS", "a", "b", "a")
        c.execute_command("BF.ADD", "small", "x")
        c.execute_command("BF.RESERVE", "srcb", 0.01, 5000)
        c.execute_command("BF.MADD", "srcb", *["s%d" % i for i in range(300)])
        c.execute_command("CF.RESERVE", "srcc", 2000)
        c.execute_command("CF.INSERT", "srcc", "ITEMS",
                          *["c%d" % i for i in range(200)])
        c.bgrewriteaof()
        wait_for(lambda: c.info("persistence")["aof_rewrite_in_progress"] == 0
                 and c.info("persistence")["aof_rewrite_scheduled"] == 0,
                 "the AOF rewrite")
        # The incremental file.
        c.execute_command("BF.MADD", "big", *["t%d" % i for i in range(100)])
        c.execute_command("BF.ADD", "auto", "late")
        bloom = scandump(c, "BF", "srcb")
        cuckoo = scandump(c, "CF", "srcc")
        for it, data in bloom:
            c.execute_command("BF.LOADCHUNK", "seq", it, data)
        c2 = redis.Redis(host="127.0.0.1", port=port, socket_timeout=60)
        for (i1, d1), (i2, d2) in zip(bloom, cuckoo):
            assert c.execute_command("BF.LOADCHUNK", "il1", i1, d1) == b"OK"
            assert c2.execute_command("CF.LOADCHUNK", "il2", i2, d2) == b"OK"
        assert c.execute_command("BF.EXISTS", "il1", "s7") == 1
        assert c.execute_command("CF.EXISTS", "il2", "c7") == 1
        c.shutdown()
    except redis.ConnectionError:
        pass  # SHUTDOWN closes the connection
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(30)
    src = os.path.join(work, "appendonlydir")
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name), "rb") as f:
            data = f.read()
        if name.endswith(".base.aof"):
            with gzip.open(os.path.join(out_dir, name + ".gz"), "wb",
                           compresslevel=9) as f:
                f.write(data)
        else:
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(data)
    with open(os.path.join(out_dir, "expected.txt"), "w") as f:
        f.write("# key command item... : every item answers 1 (present)\n")
        f.write("big BF.MEXISTS g0 g500 g999 t0 t99\n")
        f.write("cf CF.MEXISTS a b\n")
        f.write("small BF.MEXISTS x\n")
        f.write("auto BF.MEXISTS late\n")
        f.write("seq BF.MEXISTS s0 s150 s299\n")
        f.write("il1 BF.MEXISTS s0 s150 s299\n")
        f.write("il2 CF.MEXISTS c0 c100 c199\n")
    shutil.rmtree(work, ignore_errors=True)
    return 0


def _pings(c):
    try:
        return c.ping() and c.info("persistence").get("loading", 0) == 0
    except (redis.ConnectionError, redis.BusyLoadingError):
        return False


if __name__ == "__main__":
    sys.exit(main())
