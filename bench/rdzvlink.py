"""One node of the etcd backend as esv-supervise drives it, in Python, for
bench/rdzv_etcd.sh's liveness timings: esv-rdzv-etcd started with its end
of a socket pair as fd 3, and the esv-rdzv protocol (esv-rdzv(8)) spoken
over it.  The helper greets with HELLO; every later line is sealed under
the session key HMAC-SHA256(key=token, "esv-rdzv 2 session SNONCE CNONCE"),
the token being the empty one of a private socket: a line is
"TEXT MAC" with MAC the hex HMAC-SHA256 of "DIR SEQ TEXT" under that key,
DIR 'c' to the helper and 's' from it, SEQ counting each direction's
sealed lines from 0.

Also a TCP proxy that stamps the keep-alives one helper sends to etcd, so
that a lease's expiry can be measured from the last renewal etcd saw."""
import hashlib
import hmac
import os
import selectors
import socket
import threading
import time


def _mac(key, d, seq, text):
    return hmac.new(key, f"{d} {seq} {text}".encode(),
                    hashlib.sha256).hexdigest()


class Node:
    """A helper and our end of its socket.  lines() gives the sealed lines
    read so far; PINGs are answered as they come."""

    def __init__(self, helper, endpoints, run_id, ttl, log):
        self.sock, theirs = socket.socketpair()
        # posix_spawn's dup2 onto itself would leave close-on-exec set.
        assert theirs.fileno() != 3
        self.pid = os.posix_spawn(helper, [
            helper, "--endpoints", endpoints, "--run-id", run_id,
            "--lease-ttl", ttl], os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, log,
             os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)])
        theirs.close()
        self.buf = b""
        self.seq_in = self.seq_out = 0
        self.key = None
        self.exited = None
        self.sock.settimeout(30)
        hello = self._raw_line().split()
        if len(hello) != 5 or hello[:2] != ["ESV-RDZV", "3"]:
            raise RuntimeError(f"greeting {hello}")
        self.cnonce = os.urandom(16).hex()
        self.key = hmac.new(b"", f"esv-rdzv 2 session {hello[2]} "
                            f"{self.cnonce}".encode(),
                            hashlib.sha256).digest()
        self.sock.setblocking(False)

    def _raw_line(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("EOF from the helper")
            self.buf += data
        raw, self.buf = self.buf.split(b"\n", 1)
        return raw.decode()

    def send(self, text):
        self.sock.sendall(f"{text} {_mac(self.key, 'c', self.seq_out, text)}"
                          "\n".encode())
        self.seq_out += 1

    def join(self, node_id, run_id, nmin, nmax, last_call_ms):
        self.send(f"JOIN 3 {run_id} {node_id} {self.cnonce} 1 {nmin} {nmax} "
                  f"{last_call_ms} default 127.0.0.1 29500 new 0")

    def readable(self):
        """Read what is there; the sealed lines it completes (PINGs
        answered, not returned).  EOFError when the helper hung up."""
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return []
        if not data:
            raise EOFError("EOF from the helper")
        self.buf += data
        out = []
        while b"\n" in self.buf:
            raw, self.buf = self.buf.split(b"\n", 1)
            text, m = raw.decode().rsplit(" ", 1)
            if not hmac.compare_digest(m, _mac(self.key, "s", self.seq_in,
                                               text)):
                raise RuntimeError(f"bad seal: {raw!r}")
            self.seq_in += 1
            if text == "PING":
                self.send("PING")
            else:
                out.append(text)
        return out

    def close(self):
        if self.sock.fileno() != -1:
            self.sock.close()

    def reap(self, timeout):
        """Wait up to timeout s; the exit status (or -signal), None if it
        still runs."""
        end = time.monotonic() + timeout
        while self.exited is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.exited = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() >= end:
                break
            time.sleep(0.005)
        return self.exited

    def kill(self):
        if self.exited is None:
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass
            self.reap(5)


def pump(nodes, until, timeout):
    """Read every node's lines, answering PINGs, until until(i, text, t)
    has returned True for every node whose lines it wants (it returns
    None to keep waiting); stamps are time.monotonic() right after the
    read.  Returns False on timeout."""
    sel = selectors.DefaultSelector()
    for i, n in enumerate(nodes):
        if n is not None:
            sel.register(n.sock, selectors.EVENT_READ, i)
    end = time.monotonic() + timeout
    done = set()
    want = {i for i, n in enumerate(nodes) if n is not None}
    try:
        while done != want:
            left = end - time.monotonic()
            if left <= 0:
                return False
            for key, _ in sel.select(left):
                i = key.data
                t = time.monotonic()
                try:
                    lines = nodes[i].readable()
                except EOFError:
                    sel.unregister(nodes[i].sock)
                    want.discard(i)
                    continue
                for text in lines:
                    if i not in done and until(i, text, t):
                        done.add(i)
        return True
    finally:
        sel.close()


class KeepaliveProxy(threading.Thread):
    """127.0.0.1:port -> target; the stamp (time.monotonic()) of every
    request for /v3/lease/keepalive or /v3/lease/grant that passes (a
    lease's renewals), in .stamps."""

    def __init__(self, target_port):
        super().__init__(daemon=True)
        self.target = ("127.0.0.1", target_port)
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.stamps = []
        self.sel = selectors.DefaultSelector()
        self.peer = {}
        self.tail = {}

    def run(self):
        self.sel.register(self.lsock, selectors.EVENT_READ, None)
        while True:
            for key, _ in self.sel.select():
                if key.data is None:
                    c, _ = self.lsock.accept()
                    u = socket.create_connection(self.target)
                    for s in (c, u):
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY,
                                     1)
                    self.peer[c], self.peer[u] = u, c
                    self.tail[c] = b""
                    self.sel.register(c, selectors.EVENT_READ, "c")
                    self.sel.register(u, selectors.EVENT_READ, "u")
                    continue
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self._drop(s)
                    continue
                if key.data == "c":
                    # A request line may straddle two reads.
                    t = time.monotonic()
                    buf = self.tail[s] + data
                    for pat in (b"POST /v3/lease/keepalive ",
                                b"POST /v3/lease/grant "):
                        self.stamps.extend([t] * (buf.count(pat) -
                                                  self.tail[s].count(pat)))
                    self.tail[s] = buf[-40:]
                try:
                    self.peer[s].sendall(data)
                except OSError:
                    self._drop(s)

    def _drop(self, s):
        o = self.peer.pop(s, None)
        self.tail.pop(s, None)
        for x in (s, o):
            if x is None:
                continue
            try:
                self.sel.unregister(x)
            except (KeyError, ValueError):
                pass
            self.peer.pop(x, None)
            self.tail.pop(x, None)
            x.close()
