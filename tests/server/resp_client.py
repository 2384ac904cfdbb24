"""A minimal RESP2/RESP3 client for tests that compare exact reply shapes.

redis-py 4.3.4 (Debian 12) speaks RESP2 only and folds simple strings,
bulk strings and errors into Python values; the conformance test needs
each reply's RESP type. Replies are decoded as:

  +OK        -> Simple("OK")         $x / $-1  -> b"x" / None
  -ERR x     -> Err("ERR x")         :5        -> 5
  #t         -> True                 ,1.5      -> Double(1.5)
  *n / ~n    -> list / Set(list)     %n        -> Map([(k, v), ...])
  _          -> None                 |n        -> (attributes skipped)
"""

import socket


class Simple(str):
    def __repr__(self):
        return "Simple(%s)" % str.__repr__(self)


class Err(str):
    def __repr__(self):
        return "Err(%s)" % str.__repr__(self)


class Double(float):
    def __repr__(self):
        return "Double(%s)" % float.__repr__(self)


class Set(list):
    def __repr__(self):
        return "Set(%s)" % list.__repr__(self)


class Map(list):
    """A RESP3 map as its ordered (key, value) pairs."""

    def __repr__(self):
        return "Map(%s)" % list.__repr__(self)


def _encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a)
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Connection:
    def __init__(self, port, protocol=2, timeout=60):
        self.sock = socket.create_connection(("127.0.0.1", port),
                                             timeout=timeout)
        self.buf = b""
        self.protocol = 2
        if protocol == 3:
            reply = self.call("HELLO", "3")
            if isinstance(reply, Err):
                raise AssertionError("HELLO 3 refused: %s" % reply)
            self.protocol = 3

    def close(self):
        self.sock.close()

    def call(self, *args):
        self.sock.sendall(_encode(args))
        return self._read()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed by the server")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bytes(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed by the server")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Simple(rest.decode())
        if t == b"-":
            return Err(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._bytes(n)
        if t == b"_":
            return None
        if t == b"#":
            return rest == b"t"
        if t == b",":
            return Double(float(rest))
        if t in (b"*", b"~"):
            n = int(rest)
            if n < 0:
                return None
            items = [self._read() for _ in range(n)]
            return Set(items) if t == b"~" else items
        if t == b"%":
            return Map([(self._read(), self._read())
                        for _ in range(int(rest))])
        if t == b"|":
            for _ in range(2 * int(rest)):
                self._read()
            return self._read()
        raise AssertionError("unknown RESP type %r" % line)
