#!/bin/bash
# esv-stored on the wire, from byte sequences built from torch's source
# (esv-stored(8)): the newer dialect (VALIDATE, PING, SET, GET, ADD, CHECK,
# WAIT, MULTI_GET, MULTI_SET, APPEND, CANCEL_WAIT, QUEUE_PUSH/POP/LEN,
# DELETE_KEY, GETNUMKEYS), torch 1.13's WATCH_KEY, and bad input: garbage
# first bytes, a huge length prefix, a wrong VALIDATE magic, a half-open
# client, a waiter that disconnects, more clients than --max-conns.  Each
# bad one is closed with one line naming the peer and why; the others are
# served throughout, and the store's keys are what they should be.
. "$(dirname "$0")/lib.sh"
esv_setup 120
STORED=$ESV_BIN_DIR/../store/esv-stored
[ -x "$STORED" ] || fail "$STORED is not built"

"$STORED" --listen 127.0.0.1:0 --max-conns 200 --max-value 4096 \
    >"$T/stored.out" 2>"$T/stored.err" &
ESV_SUP_PIDS+=("$!")
wait_for test -s "$T/stored.out" || fail "esv-stored printed no address"
port=$(sed -n 's/^listening 127.0.0.1:\([0-9]*\)$/\1/p' "$T/stored.out")

cat >"$T/wire.py" <<'PY'
import socket
import struct
import sys
import time

port = int(sys.argv[1])
# The newer dialect's numbers (torch's TCPStoreBackend.hpp).
VALIDATE, SET, CSET, GET, ADD, CHECK, WAIT, NUMKEYS, DELETE, APPEND, \
    MGET, MSET, CANCEL, PING, QPUSH, QPOP, QLEN = range(17)


def s(b):
    return struct.pack("<Q", len(b)) + b


def q(n):
    return struct.pack("<q", n)


class C:
    def __init__(self, hello=True):
        self.k = socket.create_connection(("127.0.0.1", port))
        self.k.settimeout(5)
        if hello:
            self.k.sendall(bytes([VALIDATE]) + struct.pack("<I", 0x3C85F7CE))
            self.k.sendall(bytes([PING]) + struct.pack("<I", 4242))
            assert self.u32() == 4242, "PING echoes its u32"

    def send(self, b):
        self.k.sendall(b)

    def read(self, n):
        out = b""
        while len(out) < n:
            d = self.k.recv(n - len(out))
            if not d:
                raise EOFError("closed after %r" % out)
            out += d
        return out

    def u8(self):
        return self.read(1)[0]

    def u32(self):
        return struct.unpack("<I", self.read(4))[0]

    def i64(self):
        return struct.unpack("<q", self.read(8))[0]

    def str(self):
        return self.read(struct.unpack("<Q", self.read(8))[0])

    def closed(self):
        self.k.settimeout(5)
        try:
            return self.k.recv(1) == b""
        except ConnectionResetError:
            return True


a = C()
a.send(bytes([SET]) + s(b"/a") + s(b"1"))
a.send(bytes([GET]) + s(b"/a"))
assert a.str() == b"1"
a.send(bytes([ADD]) + s(b"/a") + q(41))
assert a.i64() == 42
a.send(bytes([CSET]) + s(b"/a") + s(b"42") + s(b"x"))
assert a.str() == b"x"
a.send(bytes([CHECK]) + q(2) + s(b"/a") + s(b"/nope"))
assert a.u8() == 1, "CHECK: not ready"
a.send(bytes([MSET]) + q(2) + s(b"/m1") + s(b"one") + s(b"/m2") + s(b"two"))
a.send(bytes([MGET]) + q(3) + s(b"/m1") + s(b"/m2") + s(b"/none"))
assert (a.str(), a.str(), a.str()) == (b"one", b"two", b"")
a.send(bytes([APPEND]) + s(b"/m1") + s(b"+more"))
a.send(bytes([GET]) + s(b"/m1"))
assert a.str() == b"one+more"
a.send(bytes([NUMKEYS]))
assert a.i64() == 3
a.send(bytes([DELETE]) + s(b"/m2"))
assert a.i64() == 1
# WAIT parks, another client's SET wakes it.
b = C()
a.send(bytes([WAIT]) + q(2) + s(b"/w1") + s(b"/a"))
time.sleep(0.1)
b.send(bytes([SET]) + s(b"/w1") + s(b"go"))
assert a.u8() == 0, "STOP_WAITING"
# CANCEL_WAIT: a wait given up, then its key set: only WAIT_CANCELED.
a.send(bytes([WAIT]) + q(1) + s(b"/w2"))
time.sleep(0.1)
a.send(bytes([CANCEL]))
assert a.u8() == 1, "WAIT_CANCELED"
b.send(bytes([SET]) + s(b"/w2") + s(b"late"))
b.send(bytes([GET]) + s(b"/w2"))
assert b.str() == b"late"      # b's SET is in before a asks
a.send(bytes([GET]) + s(b"/w2"))
assert a.str() == b"late", "no stale STOP_WAITING before the reply"
# Queues: a pop waits by WAIT on the queue's key; a push wakes one waiter.
a.send(bytes([QLEN]) + s(b"/q"))
assert a.i64() == 0
a.send(bytes([WAIT]) + q(1) + s(b"/q"))
time.sleep(0.1)
b.send(bytes([QPUSH]) + s(b"/q") + s(b"first"))
b.send(bytes([QPUSH]) + s(b"/q") + s(b"second"))
b.send(bytes([QLEN]) + s(b"/q"))
assert b.i64() == 2
assert a.u8() == 0
a.send(bytes([QPOP]) + s(b"/q"))
assert a.i64() == 2 and a.str() == b"first"
a.send(bytes([QPOP]) + s(b"/q"))
assert a.i64() == 1 and a.str() == b"second"
a.send(bytes([QPOP]) + s(b"/q"))
assert a.i64() == 0
print("newer dialect ok", flush=True)

# torch 1.13's numbering on another connection: ADD is 3, WATCH_KEY 7.
old = C(hello=False)
old.send(bytes([3]) + s(b"/a13") + q(5))
assert old.i64() == 5
old.send(bytes([7]) + s(b"/a13"))
assert old.u8() == 3, "WATCH_KEY registered"
old.send(bytes([6]))
assert old.i64() == 5, "GETNUMKEYS counts every dialect's keys"
print("1.13 dialect ok", flush=True)

# Bad input, each on a connection of its own; a and b go on.
g = C(hello=False)
g.send(b"\xff\xfe garbage")
assert g.closed(), "a command byte that is no command"
h = C()
h.send(bytes([SET]) + struct.pack("<Q", 1 << 40))
assert h.closed(), "a key length of a terabyte"
v = C(hello=False)
v.send(b"\x00\xce\xf7\x85\x3c")
v.send(bytes([VALIDATE]) + struct.pack("<I", 0xdeadbeef))
assert v.closed(), "VALIDATE with a wrong magic"
big = C()
big.send(bytes([SET]) + s(b"/big") + s(b"x" * 5000))
assert big.closed(), "a value past --max-value"
half = C()
half.send(bytes([SET]) + s(b"/half") + struct.pack("<Q", 100) + b"only")
w = C()
w.send(bytes([WAIT]) + q(1) + s(b"/never"))
w.k.close()         # a waiter that goes away
a.send(bytes([GET]) + s(b"/w1"))
assert a.str() == b"go", "the store goes on serving"
# More clients than --max-conns: the extra ones are turned away.
extra = []
refused = 0
for i in range(260):
    try:
        c = socket.create_connection(("127.0.0.1", port))
        extra.append(c)
    except OSError:
        refused += 1
time.sleep(0.3)
shut = 0
for c in extra:
    c.settimeout(0.05)
    try:
        if c.recv(1) == b"":
            shut += 1
    except socket.timeout:
        pass
    except ConnectionResetError:
        shut += 1
assert shut + refused >= 60, (shut, refused)
for c in extra:
    c.close()
a.send(bytes([NUMKEYS]))
n = a.i64()
a.send(bytes([GET]) + s(b"/half"))
assert a.str() == b"", "a half-sent SET stored nothing"
print("bad input ok, keys", n, flush=True)
PY
"$PY" "$T/wire.py" "$port" >"$T/wire.out" 2>"$T/wire.err" ||
	fail "the wire: $(tail -3 "$T/wire.err")"
cat "$T/wire.out" >&2
assert_grep "$T/wire.out" "^bad input ok" "the bad clients"
assert_grep "$T/stored.err" "command byte 0xff: not one of torch's" "the garbage's line"
assert_grep "$T/stored.err" "a key of 1099511627776 bytes" "the huge length's line"
assert_grep "$T/stored.err" "VALIDATE with magic 0xdeadbeef" "the wrong magic's line"
assert_grep "$T/stored.err" "a value of 5000 bytes \\(at most 4096\\)" "the big value's line"
assert_grep "$T/stored.err" "refused: 200 connections already" "the extra clients' line"
n=$(grep -c . "$T/stored.err")
note "esv-stored's log: $n line(s)"
