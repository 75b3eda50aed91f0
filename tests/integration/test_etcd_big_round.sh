#!/bin/bash
# A round of 16 nodes whose node ids, roles and addresses are of the
# protocol's longest completes on etcd: each gets a ROUND, their group
# ranks are a permutation, the leader wrote one place (a/0/<node>) for
# each, and each helper exits 0 when its supervisor hangs up.  Written when
# the round's result was one value of some 6 KiB, which esv-rdzv-etcd once
# decoded into 4 KiB and ignored: no node saw it, the round was opened and
# completed again for ever and no ROUND was said.  Each node now reads its
# own place, a value of some 200 bytes, and no value is that large.
#
# The nodes are esv-rdzv-etcd helpers driven as esv-supervise drives them
# (fd 3 a socket pair, the protocol of esv-rdzv(8) under the empty token),
# by the python below: 16 supervisors would cost more than the test.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/etcd.sh"
HELPER=$ESV_BIN_DIR/../rendezvous/esv-rdzv-etcd
[ -x "$HELPER" ] || skip "$HELPER is not built (-Detcd)"
start_etcd 1

# 16 nodes in one job, min = max = 16; prints "ranks ...".  Each helper's stderr goes to $T/helper<i>.err.
"$PY" - "$HELPER" "$ETCD_EP" "$T" 16 >"$T/driver.out" 2>"$T/driver.err" <<'PY' ||
import hashlib
import hmac
import os
import select
import socket
import sys
import time

helper, ep, tdir, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
# Within the helpers' 30 s without a word (the nodes are read in turn).
DEADLINE = time.monotonic() + 25


def mac(key, d, seq, text):
    return hmac.new(key, f"{d} {seq} {text}".encode(), hashlib.sha256).hexdigest()


class Node:
    def __init__(self, i):
        self.sock, theirs = socket.socketpair()
        assert theirs.fileno() != 3
        self.pid = os.posix_spawn(helper, [
            helper, "--endpoints", ep, "--run-id", "big", "--lease-ttl",
            "30s"], os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
            (os.POSIX_SPAWN_OPEN, 2, f"{tdir}/helper{i}.err",
             os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)])
        theirs.close()
        self.buf, self.seq_in, self.seq_out = b"", 0, 0
        hello = self.line(False).split()
        assert hello[0] == "ESV-RDZV" and hello[1] == "3", hello
        self.cnonce = os.urandom(16).hex()
        self.key = hmac.new(b"", f"esv-rdzv 2 session {hello[2]} "
                            f"{self.cnonce}".encode(),
                            hashlib.sha256).digest()
        # The protocol's longest names (128) and address (64).
        self.id = f"node{i:03d}-" + "n" * 120
        self.role = "r" * 128
        self.addr = "h" * 60 + f"{i:04d}"

    def line(self, sealed=True):
        while b"\n" not in self.buf:
            left = DEADLINE - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                sys.exit("no line from a helper within 25 s")
            data = self.sock.recv(65536)
            if not data:
                sys.exit("EOF from a helper")
            self.buf += data
        raw, self.buf = self.buf.split(b"\n", 1)
        raw = raw.decode()
        if not sealed:
            return raw
        text, m = raw.rsplit(" ", 1)
        if not hmac.compare_digest(m, mac(self.key, "s", self.seq_in, text)):
            sys.exit(f"bad seal: {raw}")
        self.seq_in += 1
        return text

    def send(self, text):
        self.sock.sendall(f"{text} {mac(self.key, 'c', self.seq_out, text)}"
                          "\n".encode())
        self.seq_out += 1


nodes = [Node(i) for i in range(k)]
for n in nodes:
    n.send(f"JOIN 3 big {n.id} {n.cnonce} 1 {k} {k} 0 {n.role} {n.addr} "
           "29500 new 0")
ranks = []
for n in nodes:
    while True:
        f = n.line().split()
        if f[0] == "PING":
            n.send("PING")
        elif f[0] == "ROUND":
            ranks.append(int(f[2]))
            if f[3] != str(k) or f[5] != str(k):
                sys.exit(f"bad ROUND: {f}")
            break
        elif f[0] not in ("JOINED", "WAITING"):
            sys.exit(f"before ROUND: {f}")
print("ranks", *sorted(ranks))
for n in nodes:
    n.sock.close()
for n in nodes:
    _, status = os.waitpid(n.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"helper {n.pid}: status {status}")
PY
    fail "the driver: $(cat "$T/driver.err"); first helper's log: $(head -c 600 "$T/helper0.err")"
assert_eq "$(cat "$T/driver.out")" "ranks $(seq -s ' ' 0 15)" "group ranks"
places=$(etcd_api 0 /v3/kv/range "{\"key\":\"$(b64 /esv/big/a/0/)\",\"range_end\":\"$(b64 /esv/big/a/00)\",\"count_only\":true}" |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin).get("count", 0))')
assert_eq "$places" 16 "places the leader wrote"
note "round of 16 completed"
assert_no_grep "$T/helper0.err" 'warning' "helper 0's warnings"
