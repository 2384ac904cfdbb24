#!/usr/bin/env python3
"""shardfilter-server's bounds on what clients can make it hold.

  - Output (Redis's client-output-buffer-limit, checked at each reply's
    append): a client that pipelines BF.SCANDUMP requests of 16 MB replies
    and never reads is closed once its unsent replies would pass the limit;
    the server's peak RSS grows by about the limit, not by every reply the
    batch asked for, and it keeps serving others.
  - All clients' buffers together (Redis's maxmemory-clients): a client
    sending an endless bulk is closed once the clients' total passes it.

  client_limits_test.py --server build/tools/shardfilter-server
"""
import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

try:
    import redis
except ImportError:
    print("SKIP: python3-redis is not installed (apt-get install python3-redis)")
    sys.exit(1 if os.environ.get("SF_REQUIRE_CLIENTS") else 77)

MB = 1024 * 1024


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, binary, args, nofile=None):
        self.dir = tempfile.mkdtemp(prefix="sf_client_limits_")
        self.port = free_port()

        def limit_descriptors():
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(
            [binary, "--db", os.path.join(self.dir, "db"), "--port",
             str(self.port), "--bind", "127.0.0.1", "--threads", "2"] + args,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=limit_descriptors)
        line = self.proc.stdout.readline()
        if "ready" not in line:
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.stop()
            raise AssertionError("server did not start: %r %r" % (line, err))

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=60)

    def status(self, field):
        """A /proc/PID/status figure in bytes (VmHWM, VmRSS)."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no %s" % field)

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=120)
        shutil.rmtree(self.dir, ignore_errors=True)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    args = ap.parse_args()
    check_output_limit(args.server)
    check_client_memory(args.server)
    print("client_limits_test: all passed")


if __name__ == "__main__":
    main()
