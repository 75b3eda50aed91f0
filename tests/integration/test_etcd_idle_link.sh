#!/bin/bash
# esv-rdzv-etcd sleeps while its supervisor has not joined yet.  Until the
# first line (the sealed JOIN) the link has no session key, so no PING can
# be sent; the helper once armed its timer for the PING due a heartbeat
# (TTL/3) after its start anyway, found it could not send it, and armed it
# again at once: 100 % of a CPU from the first heartbeat until the JOIN or
# the hang-up three heartbeats in.  512 helpers waiting for their
# supervisors starved each other and etcd so that no round formed.
#
# The helper is started as esv-supervise starts it (fd 3 a socket pair),
# its greeting read, and nothing sent.  It hangs up after three heartbeats
# (esv-rdzv-etcd(8)) and exits; its CPU time over that life (wait4's
# rusage) must stay well under the two heartbeats a spin would burn.
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

helper, ep, log, ttl = sys.argv[1:5]
mine, theirs = socket.socketpair()
assert theirs.fileno() != 3
pid = os.posix_spawn(helper, [helper, "--endpoints", ep, "--run-id", "idle",
                              "--lease-ttl", f"{ttl}ms"], os.environ,
                     file_actions=[(os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
                                   (os.POSIX_SPAWN_OPEN, 2, log,
                                    os.O_WRONLY | os.O_CREAT, 0o644)])
theirs.close()
mine.settimeout(20)
f = mine.makefile("rb")
if not f.readline().startswith(b"ESV-RDZV "):
    sys.exit("no greeting")
t0 = time.monotonic()
# Three heartbeats of silence, then the hang-up and the lease's revocation.
_, status, ru = os.wait4(pid, 0)
print(f"exit {os.waitstatus_to_exitcode(status)} after "
      f"{time.monotonic() - t0:.2f} s, cpu {ru.ru_utime + ru.ru_stime:.3f} s")
PY
ttl=3000
out=$("$PY" "$T/driver.py" "$HELPER" "$ETCD_EP" "$T/helper.err" "$ttl" \
    2>"$T/driver.err") || fail "the driver: $(cat "$T/driver.err")"
note "helper left alone: $out"
assert_grep "$T/helper.err" "no word from the supervisor for three heartbeats" \
    "the helper's reason to leave"
[[ $out =~ ^exit\ 0\ after\ ([0-9.]+)\ s,\ cpu\ ([0-9.]+)\ s$ ]] ||
    fail "the helper did not exit 0: $out; its log: $(tail -3 "$T/helper.err")"
# A spin from the first heartbeat to the third burns up to 2 s of CPU of
# the 3 s; a helper that sleeps uses a few ms (its start, the lease, the
# read and the watch), tens under the sanitizers.
cpu_ms=$(awk -v c="${BASH_REMATCH[2]}" 'BEGIN { printf "%d", c * 1000 }')
budget=$((ttl / 6))
[ "$cpu_ms" -lt "$budget" ] ||
    fail "the helper used $cpu_ms ms of CPU in ${BASH_REMATCH[1]} s of waiting for its JOIN (budget $budget ms): a busy loop"
