#!/usr/bin/env python3
"""shardfilter-server's bounds on what clients can make it hold.

  - Output (Redis's client-output-buffer-limit, checked at each reply's
    append): a client that pipelines BF.SCANDUMP requests of 16 MB replies
    and never reads is closed once its unsent replies would pass the limit;
    the server's peak RSS grows by about the limit, not by every reply the
    batch asked for, and it keeps serving others.
  - All clients' buffers together (Redis's maxmemory-clients): a client
    sending an endless bulk is closed once the clients' total passes it.
  - Descriptors: with `ulimit -n` below what --maxclients needs, the server
    lowers maxclients at start (keeping descriptors for the store), answers
    the clients past it "-ERR max number of clients reached" and closes
    them (none hangs), and stays idle while they wait: its CPU time over a
    second (/proc/PID/stat utime + stime) stays near zero. The same when the
    descriptors run out later (accept() fails with EMFILE).

  client_limits_test.py --server build/tools/shardfilter-server
"""
import argparse
import os
import resource
import socket
import sys
import time

import sf_server

try:
    import redis
except ImportError:
    print("SKIP: python3-redis is not installed (apt-get install python3-redis)")
    sys.exit(1 if os.environ.get("SF_REQUIRE_CLIENTS") else 77)

MB = 1024 * 1024


class Server(sf_server.Server):
    def __init__(self, binary, args, **kw):
        super().__init__(binary, args, prefix="sf_client_limits_", **kw)

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=60)


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_until_closed(sock, timeout):
    """Bytes received until the server closes the connection."""
    sock.settimeout(timeout)
    got = 0
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return got
            got += len(chunk)
    except ConnectionResetError:
        return got


def check_output_limit(binary):
    limit = 64 * MB
    s = Server(binary, ["--client-output-buffer-limit", "64mb"])
    try:
        r = s.client()
        # ~17 MB of tables: SCANDUMP k 1 answers its first 16 MB chunk.
        r.execute_command("BF.RESERVE", "k", 0.01, 11000000)
        hwm_before = s.status("VmHWM")
        sock = socket.create_connection(("127.0.0.1", s.port))
        # 64 requests, ~1.5 KB in, asking for 64 x 16 MB = 1 GiB of replies.
        sock.sendall(resp("BF.SCANDUMP", "k", 1) * 64)
        received = read_until_closed(sock, 120)
        sock.close()
        grown = s.status("VmHWM") - hwm_before
        # The limit, the connection's dump copy (~17 MB) and slack.
        assert grown < limit + 48 * MB, (
            "the server's peak RSS grew %d MB for a 64 MB output limit" %
            (grown // MB))
        assert received < limit + 17 * MB, received
        assert r.ping()
        assert r.info("stats")["client_output_buffer_limit_disconnections"] >= 1
        print("ok: pipelined SCANDUMP closed at the output limit "
              "(peak RSS +%d MB, %d MB received)" % (grown // MB,
                                                     received // MB))
    finally:
        s.stop()


def check_client_memory(binary):
    s = Server(binary, ["--maxmemory-clients", "32mb"])
    try:
        r = s.client()
        sock = socket.create_connection(("127.0.0.1", s.port))
        sock.sendall(b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$200000000\r\n")
        chunk = b"x" * MB
        closed = False
        for _ in range(100):  # at most 100 MB
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
        if not closed:
            closed = read_until_closed(sock, 60) >= 0
        sock.close()
        assert closed
        assert r.ping()
        stats = r.info("stats")
        assert stats["evicted_clients"] >= 1, stats
        assert r.info("memory")["mem_clients_normal"] < 32 * MB
        assert r.exists("k") == 0
        print("ok: a client past --maxmemory-clients was closed; others "
              "are served")
    finally:
        s.stop()


def check_descriptors(binary):
    s = Server(binary, [], nofile=64)
    try:
        r = s.client()
        maxclients = r.info("clients")["maxclients"]
        assert 1 <= maxclients < 64, maxclients
        assert r.config_get("maxclients") == {"maxclients": str(maxclients)}
        served, refused, socks = 0, 0, []
        for _ in range(maxclients + 40):
            sock = socket.create_connection(("127.0.0.1", s.port))
            sock.settimeout(30)
            sock.sendall(resp("PING"))
            reply = sock.recv(100)
            if reply == b"+PONG\r\n":
                served += 1
                socks.append(sock)
            else:
                assert reply == b"-ERR max number of clients reached\r\n", reply
                assert read_until_closed(sock, 30) == 0
                refused += 1
                sock.close()
        # r holds one of the maxclients places.
        assert served == maxclients - 1, (served, maxclients)
        assert refused == 41, refused
        # Idle with every place taken and more clients knocking: the loops
        # must not spin on accept.
        waiting = [socket.create_connection(("127.0.0.1", s.port))
                   for _ in range(5)]
        before = s.cpu_seconds()
        time.sleep(1.0)
        used = s.cpu_seconds() - before
        assert used < 0.2, "the idle server used %.2f s of CPU in 1 s" % used
        for w in waiting:
            w.settimeout(30)
            assert w.recv(100) == b"-ERR max number of clients reached\r\n"
            w.close()
        for sock in socks:
            sock.close()
        assert r.ping()
        print("ok: ulimit -n 64: maxclients %d, %d refused with the error, "
              "%.2f s of CPU while idle" % (maxclients, refused, used))
    finally:
        s.stop()


def check_emfile(binary):
    """Descriptors running out after the start (the store's journals, say):
    accept() fails with EMFILE. The waiting client is answered and closed
    through a spare descriptor, and the loops do not spin."""
    s = Server(binary, ["--maxclients", "1000"])
    try:
        r = s.client()
        assert r.ping()
        fd_dir = "/proc/%d/fd" % s.proc.pid
        open_now = len(os.listdir(fd_dir))
        soft, hard = resource.prlimit(s.proc.pid, resource.RLIMIT_NOFILE)
        resource.prlimit(s.proc.pid, resource.RLIMIT_NOFILE, (open_now, hard))
        refused = []
        for _ in range(10):
            sock = socket.create_connection(("127.0.0.1", s.port))
            sock.settimeout(30)
            sock.sendall(resp("PING"))
            reply = sock.recv(100)
            assert reply == b"-ERR max number of clients reached\r\n", reply
            assert read_until_closed(sock, 30) == 0
            refused.append(sock)
        before = s.cpu_seconds()
        time.sleep(1.0)
        used = s.cpu_seconds() - before
        assert used < 0.2, "the server used %.2f s of CPU in 1 s" % used
        for sock in refused:
            sock.close()
        resource.prlimit(s.proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
        assert r.ping()
        assert s.client().ping()  # new clients are accepted again
        print("ok: EMFILE: 10 clients refused with the error, %.2f s of CPU "
              "in 1 s" % used)
    finally:
        s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    args = ap.parse_args()
    check_output_limit(args.server)
    check_client_memory(args.server)
    check_descriptors(args.server)
    check_emfile(args.server)
    print("client_limits_test: all passed")


if __name__ == "__main__":
    main()
