#!/bin/bash
# esv-rdzv-etcd exits when its supervisor lets go while etcd is out of
# reach: it asks for the lease's revocation, gives it 3 s (SHUTDOWN_MS),
# says that etcd will expire the lease, and exits 0 (esv-rdzv-etcd(8),
# EXIT STATUS).  It once waited for ever: a timer of its own that fell due
# first (here the lease's TTL of 2 s, before the 3 s) woke it, found it
# leaving and returned without arming the timer again, so the 3 s never
# came, the revocation was retried for ever, and SIGTERM did nothing (the
# link was closed already).
#
# The node is a helper driven as esv-supervise drives it (fd 3 a socket
# pair, the protocol of esv-rdzv(8) under the empty token), by python.
. "$(dirname "$0")/lib.sh"
esv_setup 60
. "$ESV_TEST_DIR/etcd.sh"
HELPER=$ESV_BIN_DIR/../rendezvous/esv-rdzv-etcd
[ -x "$HELPER" ] || skip "$HELPER is not built (-Detcd)"
start_etcd 1

# One node, min = max = 1: ROUND, then "etcd down" on stdout; the python
# waits for a line on stdin, hangs up, and prints the helper's exit status
# and the time it took, or "running" after 10 s.
cat >"$T/driver.py" <<'PY'
import hashlib
import hmac
import os
import socket
import sys
import time

helper, ep, log = sys.argv[1:4]
mine, theirs = socket.socketpair()
assert theirs.fileno() != 3
pid = os.posix_spawn(helper, [helper, "--endpoints", ep, "--run-id", "solo",
                              "--lease-ttl", "2s"], os.environ,
                     file_actions=[(os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
                                   (os.POSIX_SPAWN_OPEN, 2, log,
                                    os.O_WRONLY | os.O_CREAT, 0o644)])
theirs.close()
mine.settimeout(20)
f = mine.makefile("rb")
hello = f.readline().decode().split()
cnonce = os.urandom(16).hex()
key = hmac.new(b"", f"esv-rdzv 2 session {hello[2]} {cnonce}".encode(),
               hashlib.sha256).digest()
seq = {"c": 0, "s": 0}


def send(text):
    m = hmac.new(key, f"c {seq['c']} {text}".encode(), hashlib.sha256)
    mine.sendall(f"{text} {m.hexdigest()}\n".encode())
    seq["c"] += 1


send(f"JOIN 3 solo n1 {cnonce} 1 1 1 0 default 127.0.0.1 29500 new 0")
while True:
    text = f.readline().decode().rsplit(" ", 1)[0]
    seq["s"] += 1
    if text == "PING":
        send("PING")
    elif text.startswith("ROUND"):
        break
print("round", flush=True)
sys.stdin.readline()
# etcd is gone: let go at once, as a supervisor whose job ended does.
f.close()
mine.close()
t0 = time.monotonic()
while time.monotonic() - t0 < 10:
    p, status = os.waitpid(pid, os.WNOHANG)
    if p:
        print(f"exit {os.waitstatus_to_exitcode(status)} after "
              f"{time.monotonic() - t0:.1f} s")
        break
    time.sleep(0.05)
else:
    print("running", flush=True)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
PY
mkfifo "$T/go"
"$PY" "$T/driver.py" "$HELPER" "$ETCD_EP" "$T/helper.err" <"$T/go" \
    >"$T/driver.out" 2>"$T/driver.err" &
driver=$!
exec 9>"$T/go"
wait_for -t 20 grep -qx round "$T/driver.out" ||
    fail "no ROUND: $(cat "$T/driver.err") $(cat "$T/helper.err")"
stop_etcd
echo >&9
wait "$driver" || fail "the driver: $(cat "$T/driver.err")"
out=$(grep -v '^round$' "$T/driver.out")
note "helper after the hang-up, etcd down: $out"
[[ $out =~ ^exit\ 0\ after\ ([0-9.]+)\ s$ ]] ||
    fail "the helper did not exit 0 within 10 s of the hang-up: $out; its log: $(tail -3 "$T/helper.err")"
assert_grep "$T/helper.err" "no answer to the lease's revocation" "the helper's word on the lease"
