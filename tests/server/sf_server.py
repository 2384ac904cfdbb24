"""A shardfilter-server on a loopback port it picks, for the Python tests.

Server(binary, args) starts it in a temporary directory (store in db/, its
log in server.log: a file, so a chatty server never blocks on a pipe no one
reads), waits for its "ready" line and raises with the log if it never
comes; stop() terminates it and removes the directory.
"""

import os
import re
import resource
import shutil
import socket
import subprocess
import tempfile


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ready_port(line):
    """The port of shardfilter-server's ready line ("... ready: port N, ...").

    Servers are started with --port 0 and report the port they bound: a port
    picked by the test and bound later could be taken meanwhile by another
    test's server."""
    m = re.search(r"ready: port (\d+)", line)
    if m is None:
        raise AssertionError("no port in the ready line %r" % line)
    return int(m.group(1))


class Server:
    def __init__(self, binary, args, nofile=None, prefix="sf_server_"):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.port = None  # the server picks a free one (--port 0)
        self.log_path = os.path.join(self.dir, "server.log")

        def limit_descriptors():
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [binary, "--db", os.path.join(self.dir, "db"), "--port",
                 "0", "--bind", "127.0.0.1", "--threads", "2"] +
                args,
                stdout=subprocess.PIPE, stderr=log, text=True,
                preexec_fn=limit_descriptors)
        line = self.proc.stdout.readline()
        if "ready" not in line:
            self.stop(keep_dir=True)
            with open(self.log_path) as f:
                err = f.read()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise AssertionError("server did not start: %r %r" % (line, err))
        self.port = ready_port(line)

    def status(self, field):
        """A /proc/PID/status figure in bytes (VmHWM, VmRSS)."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no %s" % field)

    def cpu_seconds(self):
        """The server's CPU time so far (utime + stime)."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def stop(self, keep_dir=False):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=120)
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
