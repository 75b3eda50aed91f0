#!/bin/bash
# esv-rdzv-etcd's PINGs (esv-rdzv-etcd(8), Fencing): each acknowledges the
# supervisor's lines, and a supervisor's PING is answered; to a supervisor
# whose PINGs carry a count, they also tell when the helper gives its etcd
# lease up, a time of the monotonic clock the two share, within the TTL
# less a quarter grace of now, and told again, later, as keep-alives are
# answered.  A supervisor whose PINGs carry no count (an older one, whose
# parser would refuse the field) is never sent it.
. "$(dirname "$0")/lib.sh"
esv_setup 60
. "$ESV_TEST_DIR/etcd.sh"
HELPER=$ESV_BIN_DIR/../rendezvous/esv-rdzv-etcd
[ -x "$HELPER" ] || skip "$HELPER is not built (-Detcd)"
start_etcd 1

cat >"$T/driver.py" <<'PY'
import os
import socket
import sys
import time

sys.path.insert(0, os.environ["ESV_TEST_DIR"])
from rdzv_client import TO_CLIENT, TO_SERVER, seal, session_key, unseal

helper, ep, log, ttl = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
mine, theirs = socket.socketpair()
pid = os.posix_spawn(helper, [helper, "--endpoints", ep, "--run-id", "ends",
                              "--lease-ttl", f"{ttl}ms"], os.environ,
                     file_actions=[(os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
                                   (os.POSIX_SPAWN_OPEN, 2, log,
                                    os.O_WRONLY | os.O_CREAT, 0o644)])
theirs.close()
mine.settimeout(ttl / 1000)
f = mine.makefile("rb")
hello = f.readline().decode().split()
if not hello or hello[0] != "ESV-RDZV":
    sys.exit("no greeting")
cnonce = os.urandom(16).hex()
key = session_key("", hello[2], cnonce)
seq = {"out": 0, "in": 0}
seen = set()


def say(line):
    mine.sendall((seal(key, TO_SERVER, seq["out"], line) + "\n").encode())
    seq["out"] += 1


def hear():
    line = f.readline().decode().rstrip("\n")
    if not line:
        sys.exit("the helper hung up")
    text = unseal(key, TO_CLIENT, seq["in"], line)
    if text is None:
        sys.exit(f"bad seal: {line}")
    seq["in"] += 1
    seen.add(text.split()[0])
    return text.split()


def now_ms():
    return int(time.monotonic() * 1000)


def ping_answer(ask):
    """Our PING, then the helper's first PING that acknowledges it."""
    say(ask)
    while True:
        w = hear()
        if w[0] != "PING":
            continue
        if len(w) == 1 or int(w[1]) > seq["out"]:
            sys.exit(f"PING {w[1:]}: not a count of our {seq['out']} lines")
        if int(w[1]) == seq["out"]:
            return w
        if len(w) > 2:
            sys.exit(f"a lease end to a supervisor that counts nothing: {w}")


say(f"JOIN 3 ends n1 {cnonce} 1 1 1 0 default 127.0.0.1 29500 new 0")
w = ping_answer("PING")
if len(w) != 2:
    sys.exit(f"a lease end to a supervisor that counts nothing: {w}")
while "ROUND" not in seen:
    w = hear()
    if w[0] == "PING" and len(w) > 2:
        sys.exit(f"a lease end to a supervisor that counts nothing: {w}")
g = max(100, min(2000, ttl // 5))
w = ping_answer(f"PING {seq['in']}")
if len(w) != 3:
    sys.exit(f"no lease end to a supervisor that counts: {w}")
end, t = int(w[2]), now_ms()
if not t < end <= t + ttl - g // 4:
    sys.exit(f"lease end {end}: {end - t} ms from now, not in 1..{ttl - g // 4}")
print(f"lease end told {end - t} ms ahead")
# Keep-alives go every quarter of the TTL while workers run: each answered
# moves the end, told at once (we send nothing meanwhile: no answer).
deadline = t + ttl
while True:
    w = hear()
    if w[0] == "PING" and len(w) == 3 and int(w[2]) > end:
        print(f"told again {int(w[2]) - end} ms later")
        break
    if now_ms() > deadline:
        sys.exit("the lease end was not told again within a TTL")
mine.close()
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
PY
ESV_TEST_DIR=$ESV_TEST_DIR "$PY" "$T/driver.py" "$HELPER" "$ETCD_EP" \
    "$T/helper.err" 2000 >"$T/driver.out" 2>"$T/driver.err" ||
    fail "the driver: $(cat "$T/driver.err"); the helper: $(tail -3 "$T/helper.err")"
note "$(tr '\n' ' ' <"$T/driver.out")"
exit 0
