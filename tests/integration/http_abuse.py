"""Bad HTTP clients for test_healthd_bad.sh: `http_abuse.py PORT CASE [ARGS]`.

Each case prints one "ok ..." line per check and exits 0, or raises (exit
1) saying what the server did instead.  A bad client must get a bounded
answer: a 4xx status or the connection closed, never a hang.

	garbage		non-HTTP input, each on its own connection
	huge		one 100 KiB header; 2,000 small headers
	methods		405 with Allow, 404, HEAD without a body
	slow BOUND	a request trickled a byte a second: dropped within BOUND s
	slowbody BOUND	whole headers, then a body trickled: the same
	slownext BOUND	a good request, then the next one trickled on the
			same keep-alive connection: the same
	unterminated BOUND	random bytes without an end of line: the same
	idle N BOUND READY	N silent connections; READY is created once they
			are all open; all must be closed by the server within
			BOUND s of their opening
	keepidle BOUND	a good request, then silence, as a scraper between
			scrapes: closed within BOUND s; prints "port P" (its
			own), which the server must not log as dropped
"""
import os
import select
import socket
import sys
import time

HOST = "127.0.0.1"
# A request that gets no verdict within this is a hang.
ANSWER_S = 5.0
# The server's own request deadline is 15 s (its idle timeout 10 s): a drop much sooner than that
# is not the deadline at work, and the checks "meanwhile" would prove
# nothing.
EARLIEST_DROP_S = 5.0


def connect(port):
    return socket.create_connection((HOST, port), timeout=ANSWER_S)


def complete(buf):
    """buf holds a whole response: keep-alive may leave the socket open."""
    hdr, sep, body = buf.partition(b"\r\n\r\n")
    if not sep:
        return False
    for ln in hdr.split(b"\r\n")[1:]:
        k, _, v = ln.partition(b":")
        if k.strip().lower() == b"content-length":
            return len(body) >= int(v)
    return False


def exchange(port, data, wait=ANSWER_S):
    """Send data; return (one response, or b"" on a close; seconds taken).
    A reset counts as a close: the server may close before reading all
    we sent."""
    s = connect(port)
    t0 = time.monotonic()
    buf = b""
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        s.settimeout(None)
        deadline = t0 + wait
        while not complete(buf):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no answer nor close within %.0f s "
                                     "(got %r so far)" % (wait, buf[:120]))
            r, _, _ = select.select([s], [], [], left)
            if not r:
                continue
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            buf += b
    finally:
        s.close()
    return buf, time.monotonic() - t0


def parse(buf):
    """(status, {lowercased header: value}, body) of one response."""
    head, sep, body = buf.partition(b"\r\n\r\n")
    assert sep, "not an HTTP response: %r" % buf[:200]
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    assert len(parts) >= 2 and parts[0].startswith("HTTP/1."), \
        "bad status line %r" % lines[0]
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return int(parts[1]), hdrs, body


def bounded(port, what, data, allowed):
    """A status in allowed, or a close without an answer."""
    buf, dt = exchange(port, data)
    if not buf:
        print("ok %s: closed without an answer (%.2f s)" % (what, dt))
        return
    code = parse(buf)[0]
    want = "4xx" if allowed == set(range(400, 500)) else sorted(allowed)
    assert code in allowed, "%s: status %d, wanted %s or a close" \
        % (what, code, want)
    print("ok %s: %d (%.2f s)" % (what, code, dt))


def req(method, path, extra=b""):
    return (b"%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n%s\r\n"
            % (method.encode(), path.encode(), extra))


def case_garbage(port):
    bad = set(range(400, 500))
    # The end of headers forces a verdict; without it the request is
    # merely unfinished (see "unterminated").
    bounded(port, "random bytes", os.urandom(512) + b"\r\n\r\n", bad)
    bounded(port, "GARBAGE", b"GARBAGE\r\n\r\n", bad)
    bounded(port, "a request line without a version",
            b"GET /healthz\r\n\r\n", bad)
    bounded(port, "an SSH greeting", b"SSH-2.0-OpenSSH_9.2p1\r\n\r\n", bad)
    bounded(port, "a TLS client hello",
            bytes.fromhex("16030100a5010000a10303") + os.urandom(32) +
            b"\r\n\r\n", bad)
    bounded(port, "NUL bytes in the request line",
            b"GET /heal\x00thz HTTP/1.1\r\nHost: x\r\n\r\n", bad)


def case_huge(port):
    big = {400, 413, 431}
    bounded(port, "one 100 KiB header",
            req("GET", "/healthz", b"X-Big: " + b"a" * (100 << 10) +
                b"\r\n"), big)
    bounded(port, "2,000 small headers",
            req("GET", "/healthz", b"".join(b"X-H%d: v\r\n" % i
                                             for i in range(2000))), big)
    bounded(port, "a 100 KiB URL", req("GET", "/" + "u" * (100 << 10)),
            big | {414})


def case_methods(port):
    for method, path in (("POST", "/healthz"), ("DELETE", "/metrics"),
                         ("PUT", "/status")):
        extra = b"Content-Length: 0\r\n" if method != "DELETE" else b""
        buf, _ = exchange(port, req(method, path, extra))
        code, hdrs, _ = parse(buf)
        assert code == 405, "%s %s: status %d, wanted 405" % (method, path,
                                                              code)
        allow = hdrs.get("allow")
        assert allow == "GET, HEAD", \
            "%s %s: Allow %r, wanted 'GET, HEAD'" % (method, path, allow)
        print("ok %s %s: 405, Allow: %s" % (method, path, allow))
    buf, _ = exchange(port, req("GET", "/nope"))
    code = parse(buf)[0]
    assert code == 404, "GET /nope: status %d, wanted 404" % code
    print("ok GET /nope: 404")
    # Connection: close, so a stray body would be read before the EOF.
    buf, _ = exchange(port, req("HEAD", "/healthz"))
    code, hdrs, body = parse(buf)
    assert code == 200, "HEAD /healthz: status %d, wanted 200" % code
    assert body == b"", "HEAD /healthz: a body %r" % body[:100]
    print("ok HEAD /healthz: 200 without a body (Content-Length %s)"
          % hdrs.get("content-length"))


def trickle(s, data, bound, what):
    """Send data a byte a second on s until the server drops us."""
    s.settimeout(None)
    t0 = time.monotonic()
    i = 0
    dropped = None
    while time.monotonic() - t0 < bound:
        r, _, _ = select.select([s], [], [], 1.0)
        if r:
            try:
                b = s.recv(4096)
            except ConnectionResetError:
                b = b""
            if not b:
                dropped = time.monotonic() - t0
                break
            # Whatever it says, it must be a refusal, then a close.
            assert b.startswith(b"HTTP/1.1 4"), "%s: got %r" % (what, b[:120])
            continue
        try:
            s.send(data[i % len(data):i % len(data) + 1])
        except (BrokenPipeError, ConnectionResetError):
            dropped = time.monotonic() - t0
            break
        i += 1
    s.close()
    assert dropped is not None, "%s: still connected after %.0f s (%d bytes)" \
        % (what, bound, i)
    assert dropped >= EARLIEST_DROP_S, \
        "%s: dropped after only %.2f s" % (what, dropped)
    print("ok %s: dropped after %.2f s (%d bytes sent)" % (what, dropped, i))


SLOW_HEADERS = b"".join(b"X-Slow-%d: z\r\n" % n for n in range(1000))


def case_slow(port, bound):
    trickle(connect(port), b"GET /healthz HTTP/1.1\r\nHost: test\r\n" +
            SLOW_HEADERS, float(bound), "a byte a second (slowloris)")


def case_slowbody(port, bound):
    """Whole headers at once, then the body a byte a second."""
    s = connect(port)
    s.sendall(b"POST /healthz HTTP/1.1\r\nHost: test\r\n"
              b"Content-Length: 100000\r\n\r\n")
    trickle(s, b"b" * 100000, float(bound), "a body a byte a second")


def case_slownext(port, bound):
    """One good request on a keep-alive connection, then the next one a
    byte a second: its deadline runs from the first answer."""
    s = connect(port)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
    buf = b""
    while not complete(buf):
        b = s.recv(65536)
        if not b:
            break
        buf += b
    code = parse(buf)[0]
    assert code == 200, "keep-alive: first answer %d, wanted 200" % code
    r, _, _ = select.select([s], [], [], 0.2)
    assert not r or s.recv(1), \
        "keep-alive: closed right after the first answer"
    trickle(s, b"GET /healthz HTTP/1.1\r\nHost: test\r\n" + SLOW_HEADERS,
            float(bound), "a second request a byte a second")


def case_keepidle(port, bound):
    s = connect(port)
    print("port %d" % s.getsockname()[1], flush=True)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
    buf = b""
    while not complete(buf):
        b = s.recv(65536)
        assert b, "keepidle: closed before the answer"
        buf += b
    t0 = time.monotonic()
    s.settimeout(float(bound))
    try:
        assert s.recv(1) == b"", "keepidle: unexpected bytes"
    except socket.timeout:
        raise AssertionError("keepidle: still open after %s s" % bound)
    took = time.monotonic() - t0
    assert took >= EARLIEST_DROP_S, "keepidle: closed after %.1f s" % took
    print("ok keepidle: closed quietly after %.1f s idle" % took)


def case_unterminated(port, bound):
    junk = bytes(b for b in os.urandom(4096) if b not in b"\r\n")
    s = connect(port)
    s.sendall(junk[:300])
    s.settimeout(None)
    t0 = time.monotonic()
    r, _, _ = select.select([s], [], [], float(bound))
    dt = time.monotonic() - t0
    assert r, "random bytes without an end of line: still connected " \
        "after %s s" % bound
    try:
        b = s.recv(4096)
    except ConnectionResetError:
        b = b""
    assert b == b"" or b.startswith(b"HTTP/1.1 4"), \
        "random bytes without an end of line: got %r" % b[:120]
    assert dt >= EARLIEST_DROP_S, \
        "random bytes without an end of line: dropped after only %.2f s" % dt
    print("ok random bytes without an end of line: %s after %.2f s"
          % ("closed" if not b else b[:12].decode(), dt))


def case_idle(port, n, bound, ready):
    n, bound = int(n), float(bound)
    t0 = time.monotonic()
    socks = [connect(port) for _ in range(n)]
    r, _, _ = select.select(socks, [], [], 0.5)
    assert not r, "%d of %d idle connections closed at once" % (len(r), n)
    open(ready, "w").close()
    print("ok %d idle connections open after %.2f s"
          % (n, time.monotonic() - t0))
    alive = set(socks)
    closed = []
    while alive:
        left = t0 + bound - time.monotonic()
        if left <= 0:
            raise AssertionError("%d of %d idle connections still open "
                                 "after %.0f s" % (len(alive), n, bound))
        r, _, _ = select.select(list(alive), [], [], left)
        for s in r:
            try:
                b = s.recv(4096)
            except ConnectionResetError:
                b = b""
            assert not b, "an idle connection got %r" % b[:120]
            alive.discard(s)
            s.close()
            closed.append(time.monotonic() - t0)
    assert min(closed) >= EARLIEST_DROP_S, \
        "an idle connection was closed after only %.2f s" % min(closed)
    print("ok %d idle connections closed by the server after %.2f..%.2f s"
          % (n, min(closed), max(closed)))


def main():
    port, case, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    globals()["case_" + case](port, *args)


if __name__ == "__main__":
    main()
