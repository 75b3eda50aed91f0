#!/bin/bash
# Readiness for init systems: READY=1 on $NOTIFY_SOCKET once the first
# group runs, STATUS= lines, RELOADING=1 then READY=1 on a reload,
# STOPPING=1 at the end, WATCHDOG=1 at half of WATCHDOG_USEC; nothing
# when NOTIFY_SOCKET is unset, and the workers never see it.  s6's
# notification fd gets its newline at the same moment and is closed.
. "$(dirname "$0")/lib.sh"
esv_setup 120

RECV=$ESV_TEST_DIR/notify_recv.py
# msgs LOG: the messages received, one per line ("\n" inside shown as |).
msgs()
{
	"$PY" -c 'import json,sys
for l in open(sys.argv[1]):
    print(json.loads(l)["msg"].replace("\n", "|"))' "$1"
}

start_recv()
{
	rm -f "$1" "$2"
	"$PY" "$RECV" "$1" "$2" &
	RECV_PID=$!
	wait_for -t 10 grep -q BOUND "$2" || fail "the receiver did not bind $1"
}

# The worker holds until WAITFILE.N appears, printing what it was given.
cat >"$T/w.sh" <<'W'
echo "NOTIFY_SOCKET=${NOTIFY_SOCKET-unset} WATCHDOG_USEC=${WATCHDOG_USEC-unset}"
while [ ! -e "$1.$LOCAL_RANK" ]; do sleep 0.05; done
W

note "systemd: READY, STATUS, RELOADING, STOPPING, WATCHDOG"
J=$T/job
start_recv "$T/sock" "$T/msgs"
mkdir -p "$J"
# Held back until the notification socket is known to be empty of READY.
NOTIFY_SOCKET=$T/sock WATCHDOG_USEC=1000000 \
    start_sup "$J" --no-python --nproc-per-node 2 -r 3 -- bash "$T/w.sh" "$T/go"
wait_for -t 20 eval 'msgs "$T/msgs" | grep -q "^READY=1"' ||
    fail "no READY=1: $(msgs "$T/msgs"); $(cat "$SUP_ERR")"
# Ready means running, with every worker's files written.
assert_eq "$(kv "$J/supervise/state" state)" running "state at READY=1"
msgs "$T/msgs" | grep -q '^STATUS=running: 2 workers' || fail "no STATUS line: $(msgs "$T/msgs")"
# WATCHDOG=1 every half of WATCHDOG_USEC: at least three, each within
# the deadline (1 s) of the one before and not in a burst.
wait_for -t 10 eval '[ "$(msgs "$T/msgs" | grep -c "^WATCHDOG=1$")" -ge 4 ]' ||
    fail "fewer than 4 WATCHDOG=1: $(msgs "$T/msgs")"
"$PY" - "$T/msgs" <<'P' || fail "WATCHDOG=1 intervals"
import json, sys
t = [json.loads(l)["t"] for l in open(sys.argv[1]) if json.loads(l)["msg"] == "WATCHDOG=1"]
gaps = [b - a for a, b in zip(t, t[1:])]
assert gaps and all(0.25 <= g <= 1.0 for g in gaps), gaps
P
kill -HUP "$SUP_PID"
wait_for -t 10 eval 'msgs "$T/msgs" | grep -q "^RELOADING=1|MONOTONIC_USEC=[0-9]*$"' ||
    fail "no RELOADING=1 after SIGHUP: $(msgs "$T/msgs")"
wait_for -t 10 eval '[ "$(msgs "$T/msgs" | grep -c "^READY=1$")" -ge 1 ]' ||
    fail "no READY=1 after the reload: $(msgs "$T/msgs")"
assert_grep "$SUP_ERR" 'reload \(SIGHUP\)' "the reload's line"
esv_alive "$SUP_PID" || fail "SIGHUP stopped the supervisor"
assert_eq "$(kv "$J/supervise/state" state)" running "state after SIGHUP"
# The workers got neither variable.
for r in 0 1; do
	assert_grep_F "$(kv "$J/supervise/state" attempt_dir)/$r/stdout.log" \
	    "NOTIFY_SOCKET=unset WATCHDOG_USEC=unset" "worker $r's environment"
done
touch "$T/go.0" "$T/go.1"
wait_sup -t 20
assert_eq "$?" 0 "exit status"
msgs "$T/msgs" | grep -q '^STOPPING=1$' || fail "no STOPPING=1: $(msgs "$T/msgs")"
# One READY=1 with the first STATUS, one after the reload: no more.
assert_eq "$(msgs "$T/msgs" | grep -c '^READY=1')" 2 "READY=1 count"
kill "$RECV_PID"; wait "$RECV_PID" 2>/dev/null

note "no NOTIFY_SOCKET: nothing is sent"
J=$T/quiet
rm -f "$T/go.0" "$T/go.1"
start_recv "$T/sock2" "$T/msgs2"
start_sup "$J" --no-python --nproc-per-node 1 -- bash "$T/w.sh" "$T/go"
wait_for -t 20 eval '[ "$(kv "$J/supervise/state" state)" = running ]' || fail "not running"
touch "$T/go.0"
wait_sup -t 20
assert_eq "$?" 0 "exit status"
assert_eq "$(msgs "$T/msgs2" | grep -vc '^BOUND$')" 0 "messages without NOTIFY_SOCKET"
kill "$RECV_PID"; wait "$RECV_PID" 2>/dev/null

note "s6: --notification-fd gets a newline once ready, then is closed"
J=$T/s6
rm -f "$T/go.0" "$T/go.1"
mkfifo "$T/nfifo"
# The reader holds the FIFO open; its EOF means the fd was closed.
"$PY" -c 'import sys,time,json
f = open(sys.argv[1], "rb")
out = open(sys.argv[2], "a")
while True:
    b = f.read(1)
    out.write(json.dumps({"t": time.monotonic(), "byte": b.decode() if b else "EOF"}) + "\n")
    out.flush()
    if not b: break' "$T/nfifo" "$T/nlog" &
RD=$!
mkdir -p "$J"
(exec 5>"$T/nfifo"; exec "$SUP" --notification-fd 5 --no-python --nproc-per-node 2 "$J" \
    bash "$T/w.sh" "$T/go" >"$J.out" 2>"$J.err" </dev/null) &
SUP_PID=$!
ESV_SUP_PIDS+=("$SUP_PID")
wait_for -t 20 grep -q EOF "$T/nlog" || fail "the notification fd was not closed: $(cat "$T/nlog" 2>/dev/null); $(cat "$J.err")"
assert_eq "$(grep -c '"byte": "\\n"' "$T/nlog")" 1 "newlines on the notification fd"
assert_eq "$(kv "$J/supervise/state" state)" running "state when the newline came"
# The workers do not hold it (close-on-exec): its EOF came while they run.
esv_alive "$SUP_PID" || fail "the supervisor is gone"
touch "$T/go.0" "$T/go.1"
wait_sup -t 20 "$SUP_PID"
assert_eq "$?" 0 "exit status"
wait "$RD"
assert_rc 100 "$SUP" --notification-fd 9 "$T/x" true
note ok
exit 0
