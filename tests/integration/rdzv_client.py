#!/usr/bin/python3
"""A tiny esv-rdzv client (protocol v2, see esv-rdzv(8)), stdlib only.

As a library: fake nodes and bad clients for the integration tests.

    srv, addr = start_server("build/rendezvous/esv-rdzv", token_file)
    c = connect(addr)                   # reads the ESV-RDZV greeting
    c.join("job", "node-a", token, min_nodes=2, max_nodes=3)
    c.read_line(5)                      # "JOINED 0 1 0", PINGs answered

From its first JOIN on, a Client seals what it sends and checks the seal
of what it reads: read_line() gives a line without its seal, or, if the
seal does not hold, the line as it came with c.unsealed set (the server's
ERR before the session key, or a server that does not know the token).

As a command:

    rdzv_client.py ADDR hello
    rdzv_client.py ADDR join RUN NODE --token-file F [--min 2 --max 3 ...]
        [--until ROUND] [--interactive] [--instance HEX16]
    rdzv_client.py ADDR raw 'LINE' ...
    rdzv_client.py ADDR smoke --token-file F

Received lines go to stdout, one per line, PINGs left out.
"""

import argparse
import hashlib
import hmac
import os
import select
import socket
import subprocess
import sys
import time

__all__ = ["Client", "connect", "session_key", "seal", "unseal",
           "load_token", "start_server"]

VERSION = 3
TO_SERVER, TO_CLIENT = "c", "s"


def session_key(token, snonce, cnonce):
    """HMAC-SHA256, keyed with the token, of the two nonces."""
    msg = "esv-rdzv 2 session %s %s" % (snonce, cnonce)
    return hmac.new(token.encode(), msg.encode(), hashlib.sha256).digest()


def seal(key, direction, seq, line):
    """line + " " + hex HMAC-SHA256 under key of "<dir> <seq> <line>"."""
    msg = "%s %d %s" % (direction, seq, line)
    return line + " " + hmac.new(key, msg.encode(),
                                 hashlib.sha256).hexdigest()


def unseal(key, direction, seq, line):
    """The text of a sealed line, or None if its seal does not hold."""
    text, _, mac = line.rpartition(" ")
    if not text or len(mac) != 64:
        return None
    want = seal(key, direction, seq, text).rpartition(" ")[2]
    return text if hmac.compare_digest(want, mac) else None


def load_token(path):
    with open(path, encoding="ascii") as f:
        return f.readline().rstrip("\n")


def split_addr(addr):
    """"host:port" or "[v6]:port" -> (host, port)."""
    host, _, port = addr.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


class Client:
    def __init__(self, addr, timeout=5.0, greet=True):
        host, port = split_addr(addr)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setblocking(False)
        self.buf = b""
        self.eof = False
        self.nonce = None
        self.heartbeat_ms = None
        self.hello = None
        self.key = None
        self.cnonce = os.urandom(16).hex()
        self.seq_in = self.seq_out = 0
        self.unsealed = False
        if greet:
            self.hello = self.read_line(timeout)
            if self.hello is None or not self.hello.startswith("ESV-RDZV "):
                raise ConnectionError("no greeting: %r" % (self.hello,))
            f = self.hello.split()
            self.nonce, self.heartbeat_ms = f[2], int(f[3])

    def fileno(self):
        return self.sock.fileno()

    def send_raw(self, data):
        """Bytes as they are: garbage, half lines, NULs."""
        if isinstance(data, str):
            data = data.encode()
        self.sock.setblocking(True)
        try:
            self.sock.sendall(data)
        finally:
            self.sock.setblocking(False)

    def send_line(self, line, sealed=True):
        """line, sealed once there is a key unless sealed is False."""
        if self.key is not None and sealed:
            line = seal(self.key, TO_SERVER, self.seq_out, line)
            self.seq_out += 1
        self.send_raw(line + "\n")

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no line from the server")
        # poll, not select: a test may hold more than 1024 connections.
        p = select.poll()
        p.register(self.sock, select.POLLIN)
        if not p.poll(left * 1000):
            raise TimeoutError("no line from the server")
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
        self.buf += data

    def read_line(self, timeout=5.0, skip_ping=True, answer_ping=True):
        """The next line without '\\n'; None at EOF; TimeoutError.

        PINGs are skipped (and answered, as a live node does) unless
        skip_ping is False.
        """
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" not in self.buf:
                if self.eof:
                    return None
                self._fill(deadline)
            line, self.buf = self.buf.split(b"\n", 1)
            line = line.decode("ascii", "replace")
            self.unsealed = False
            if self.key is not None:
                text = unseal(self.key, TO_CLIENT, self.seq_in, line)
                if text is None:
                    self.unsealed = True
                else:
                    self.seq_in += 1
                    line = text
            # esv-rdzv's PINGs say how many of our lines it has.
            if line.split(" ")[0] == "PING" and skip_ping:
                if answer_ping:
                    self.send_line("PING")
                continue
            return line

    def read_until(self, prefix, timeout=5.0):
        """Lines up to and including the first starting with prefix."""
        lines = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.read_line(max(0.0, deadline - time.monotonic()))
            if line is None:
                raise ConnectionError("EOF waiting for %s: %r"
                                      % (prefix, lines))
            lines.append(line)
            if line.startswith(prefix):
                return lines

    def join(self, run_id, node_id, token, nproc=1, min_nodes=1,
             max_nodes=1, last_call_ms=0, role="default", addr="127.0.0.1",
             port=29500, state="new", round=0, group_rank=0,
             group_world_size=1, version=VERSION):
        """JOIN; round: for new, the first round it may join."""
        if self.key is None:
            self.key = session_key(token, self.nonce, self.cnonce)
        line = "JOIN %d %s %s %s %d %d %d %d %s %s %d %s %d" % (
            version, run_id, node_id, self.cnonce, nproc, min_nodes,
            max_nodes, last_call_ms, role, addr, port, state, round)
        if state != "new":
            line += " %d %d" % (group_rank, group_world_size)
        self.send_line(line)

    def ping(self):
        self.send_line("PING")

    def barrier(self, round):
        self.send_line("BARRIER %d" % round)

    def leave(self):
        self.send_line("LEAVE")

    def close_job(self):
        self.send_line("CLOSE")

    def close(self):
        self.sock.close()


def connect(addr, timeout=5.0, greet=True):
    return Client(addr, timeout, greet)


def start_server(binary, token_file, *args, timeout=10.0):
    """Start esv-rdzv on 127.0.0.1:0; (Popen, "127.0.0.1:PORT")."""
    argv = [binary, "--listen", "127.0.0.1:0", "--token-file", token_file]
    proc = subprocess.Popen(argv + list(args), stdout=subprocess.PIPE,
                            text=True)
    r, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if r else ""
    if not line.startswith("listening "):
        proc.kill()
        raise RuntimeError("esv-rdzv did not listen: %r" % line)
    return proc, line.split()[1]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def fields(line):
    return line.split()


def smoke(addr, token):
    """Two nodes, a third scales up, one dies, a bad client: as in the
    esv-rdzv(8) examples.  Raises AssertionError on a deviation."""
    kw = dict(min_nodes=2, max_nodes=3, last_call_ms=0, nproc=2)
    a, b = connect(addr), connect(addr)
    a.join("smoke", "a", token, **kw)
    check(a.read_line() == "JOINED 0 1 0", "a joined")
    b.join("smoke", "b", token, **kw)
    check(b.read_line() == "JOINED 0 2 0", "b joined")
    ra, rb = fields(a.read_line()), fields(b.read_line())
    check(ra[:7] == ["ROUND", "0", "0", "2", "0", "4", "0"], ra)
    check(rb[:7] == ["ROUND", "0", "1", "2", "2", "4", "2"], rb)
    print("round 0:", " ".join(ra), "/", " ".join(rb))

    c = connect(addr)
    c.join("smoke", "c", token, **kw)
    check(c.read_line() == "JOINED 1 1 0", "c joined round 1")
    check(a.read_line() == "RESTART 1", "a restarts")
    check(b.read_line() == "RESTART 1", "b restarts")
    a.join("smoke", "a", token, round=1, **kw)
    b.join("smoke", "b", token, round=1, **kw)
    check(a.read_line().startswith("JOINED 1 "), "a rejoined")
    check(b.read_line().startswith("JOINED 1 "), "b rejoined")
    rounds = [fields(x.read_line()) for x in (a, b, c)]
    for g, r in enumerate(rounds):
        check(r[:4] == ["ROUND", "1", str(g), "3"], r)
        check(r[5] == "6", r)
    print("round 1:", " / ".join(" ".join(r) for r in rounds))

    bad = connect(addr)
    bad.send_raw(b"\x00\xffgarbage\n")
    line = bad.read_line()
    check(line is not None and line.startswith("ERR proto"), line)
    check(bad.read_line() is None, "bad client hung up")
    print("garbage:", line)

    c.close()
    check(a.read_line() == "RESTART 2", "a restarts on c's loss")
    check(b.read_line() == "RESTART 2", "b restarts on c's loss")
    a.join("smoke", "a", token, round=2, **kw)
    b.join("smoke", "b", token, round=2, **kw)
    a.read_line(), b.read_line()
    ra, rb = fields(a.read_line()), fields(b.read_line())
    check(ra[:4] == ["ROUND", "2", "0", "2"], ra)
    check(rb[:4] == ["ROUND", "2", "1", "2"], rb)
    a.barrier(2)
    b.barrier(2)
    check(a.read_line() == "RELEASE 2", "a released")
    check(b.read_line() == "RELEASE 2", "b released")
    a.close_job()
    d = connect(addr)
    d.join("smoke", "d", token, **kw)
    check(d.read_line() == "ERR closed job smoke is closed", "closed")
    print("smoke: ok")


def interactive(c, until, timeout, use_stdin):
    """Print the server's lines and send stdin's, until a line starting
    with until, the server's EOF (0) or the timeout (99)."""
    deadline = time.monotonic() + timeout
    srcs = [c, sys.stdin] if use_stdin else [c]
    while True:
        if b"\n" in c.buf or c.eof:
            try:
                line = c.read_line(0)
            except TimeoutError:        # there were only PINGs
                continue
            if line is None:
                return 0
            print(line, flush=True)
            if until and line.startswith(until):
                return 0
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            return 99
        r, _, _ = select.select(srcs, [], [], left)
        if sys.stdin in r:
            line = sys.stdin.readline()
            if line:
                c.send_line(line.rstrip("\n"))
            else:
                # Our EOF to the server; print its answers until its own.
                c.sock.shutdown(socket.SHUT_WR)
                srcs = [c]
        if c in r:
            c._fill(time.monotonic() + 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("addr")
    p.add_argument("--token-file")
    p.add_argument("--timeout", type=float, default=10.0)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("hello")
    j = sub.add_parser("join")
    j.add_argument("run_id")
    j.add_argument("node_id")
    for opt, default in (("nproc", 1), ("min", 1), ("max", 1),
                         ("last-call", 0), ("port", 29500), ("round", 0),
                         ("group-rank", 0), ("world", 1),
                         ("version", VERSION)):
        j.add_argument("--" + opt, type=int, default=default)
    j.add_argument("--role", default="default")
    j.add_argument("--node-addr", default="127.0.0.1")
    j.add_argument("--instance", default=None,
                   help="16 hex digits: the start of the cnonce, as a "
                   "supervisor's instance tag (default: random)")
    j.add_argument("--state", default="new",
                   choices=("new", "running", "done"))
    j.add_argument("--until", default="ROUND",
                   help="stop after a line starting so ('' = never)")
    j.add_argument("--interactive", action="store_true",
                   help="also send the lines read from stdin")
    raw = sub.add_parser("raw")
    raw.add_argument("lines", nargs="*")
    sm = sub.add_parser("smoke")
    for sp in (j, raw, sm):     # before or after the command
        sp.add_argument("--token-file", default=argparse.SUPPRESS)
        sp.add_argument("--timeout", type=float, default=argparse.SUPPRESS)
    a = p.parse_args()

    if a.cmd == "smoke":
        smoke(a.addr, load_token(a.token_file))
        return 0
    c = connect(a.addr, a.timeout)
    if a.cmd == "hello":
        print(c.hello)
        return 0
    if a.cmd == "raw":
        for line in a.lines:
            c.send_line(line, sealed=False)
        a.until, a.interactive = "", False
    else:
        if a.instance is not None:
            c.cnonce = a.instance + c.cnonce[len(a.instance):]
        c.join(a.run_id, a.node_id, load_token(a.token_file), a.nproc,
               a.min, a.max, a.last_call, a.role, a.node_addr, a.port,
               a.state, a.round, a.group_rank, a.world, a.version)
    return interactive(c, a.until, a.timeout, a.interactive)


if __name__ == "__main__":
    sys.exit(main())
