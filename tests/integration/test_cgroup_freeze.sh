#!/bin/bash
# Pause freezes the workers' cgroup: a spinning worker's CPU time stops
# growing, and it is not stopped by a signal it could see; continue thaws
# it and its time grows again.  CPU accounting: a spinning worker's
# usage appears and grows in esv-ctl status --json and in /metrics, and
# its total is in workers/N/state after it exits.  Each start counts
# its own time: a restarted worker's cgroup does not carry the last
# attempt's time over, live or at its exit.
. "$(dirname "$0")/lib.sh"
esv_setup 120

J=$T/job
PORT=$(free_port)
start_sup "$J" --no-python --nproc-per-node 1 --health-port "$PORT" \
    -- sh -c 'trap "exit 0" TERM; while :; do :; done'
wait_for -t 20 eval '[ "$(kv "$J/supervise/state" state)" = running ] && [ -n "$(kv "$J/supervise/state" pids)" ]' ||
    fail "not running: $(cat "$SUP_ERR")"
[ "$(kv "$J/supervise/state" containment)" = cgroup2 ] ||
    skip "no cgroup containment here: $(kv "$J/supervise/state" containment_why)"
# The workers' files are written a loop pass after the group's state.
wait_for -t 10 eval '[ -n "$(kv "$J/workers/0/state" cgroup)" ]' ||
    fail "workers/0/state has no cgroup: $(cat "$J/workers/0/state")"
CG=$(kv "$J/workers/0/state" cgroup)
W=$(kv "$J/supervise/state" pids)
usage() { awk '$1 == "usage_usec" { print $2 }' "$CG/cpu.stat"; }
# grows_from N: usage is above N (it runs).
grows_from() { [ "$(usage)" -gt "$1" ]; }

note "CPU time appears and grows in esv-ctl status and /metrics"
cpu_json() { ctl status --json "$J" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["workers"][0]["cpu_usec"])'; }
c1=$(cpu_json) || fail "esv-ctl status --json: no cpu_usec"
wait_for -t 10 eval '[ "$(cpu_json)" -gt "$c1" ]' || fail "cpu_usec in esv-ctl status did not grow from $c1"
ctl status "$J" | grep -q 'cpu [0-9.]* s' || fail "esv-ctl status shows no CPU time: $(ctl status "$J")"
metric() { curl -fsS "http://127.0.0.1:$PORT/metrics" | awk '/^esv_worker_cpu_seconds_total\{/ { print $2 }'; }
wait_for -t 10 eval '[ -n "$(metric)" ]' || fail "no esv_worker_cpu_seconds_total in /metrics"
m1=$(metric)
wait_for -t 10 eval '"$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$(metric)" "$m1"' ||
    fail "esv_worker_cpu_seconds_total did not grow from $m1"

note "pause: frozen, its CPU time stands still"
assert_rc 0 "$CTL" pause "$J"
wait_for -t 5 grep -qx 'frozen 1' "$CG/cgroup.events" || fail "not frozen: $(cat "$CG/cgroup.events")"
u1=$(usage)
# A spinning task that could run would add 200 ms in 200 ms on one CPU;
# frozen, not one microsecond.
sleep 0.2
u2=$(usage)
assert_eq "$u2" "$u1" "usage_usec while frozen"
st=$(awk '{ print $3 }' "/proc/$W/stat")
[ "$st" != T ] || fail "the worker was stopped by a signal (state T), not frozen"
assert_eq "$(kv "$J/supervise/state" paused)" 1 "paused"

note "continue: it runs again"
assert_rc 0 "$CTL" cont "$J"
wait_for -t 5 grep -qx 'frozen 0' "$CG/cgroup.events" || fail "still frozen"
wait_for -t 5 grows_from "$u2" || fail "usage_usec did not grow after cont"
# The state is written after the thaw, which a spinning worker can beat.
wait_for -t 5 eval '[ "$(kv "$J/supervise/state" paused)" = 0 ]' ||
    fail "paused after cont: $(kv "$J/supervise/state" paused)"

note "a stop while paused: thawed, then stopped"
assert_rc 0 "$CTL" pause "$J"
wait_for -t 5 grep -qx 'frozen 1' "$CG/cgroup.events" || fail "not frozen again"
stop_sup
total=$(kv "$J/workers/0/state" cpu_usec)
[ -n "$total" ] && [ "$total" -ge "$u2" ] || fail "workers/0/state cpu_usec: '$total', wanted at least $u2"
assert_eq "$(kv "$J/workers/0/state" cgroup)" "" "cgroup of an exited worker"

note "a restart: each attempt counts its own CPU time"
# Attempt 0 spends 0.4 s of CPU and fails; attempt 1 spends 0.1 s and
# waits.  Carried over, attempt 1 would show at least 0.5 s.
J=$T/restart
start_sup "$J" --no-python --nproc-per-node 1 --max-restarts 1 -- "$PY" -c '
import os, signal, sys, time
first = os.environ["TORCHELASTIC_RESTART_COUNT"] == "0"
while time.process_time() < (0.4 if first else 0.1):
    pass
if first:
    sys.exit(1)
open(sys.argv[1], "w").close()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    signal.pause()
' "$T/spun"
wait_for -t 30 test -e "$T/spun" || fail "attempt 1 did not spin: $(cat "$SUP_ERR")"
live=$(cpu_json) || fail "esv-ctl status --json: no cpu_usec after the restart"
[ "$live" -ge 100000 ] && [ "$live" -lt 400000 ] ||
    fail "attempt 1's live cpu_usec is $live, wanted its own 0.1 s (at least 100000, below attempt 0's 400000)"
stop_sup
exits=$(grep '"event":"worker.exit"' "$J/events.jsonl" | "$PY" -c '
import json, sys
print(" ".join(str(json.loads(l)["cpu_usec"]) for l in sys.stdin))')
set -- $exits
[ $# -eq 2 ] || fail "worker.exit events with cpu_usec: '$exits', wanted 2"
[ "$1" -ge 400000 ] || fail "attempt 0's cpu_usec is $1, wanted at least 400000"
[ "$2" -ge 100000 ] && [ "$2" -lt 400000 ] ||
    fail "attempt 1's cpu_usec is $2, wanted its own 0.1 s (at least 100000, below 400000)"
assert_eq "$(kv "$J/workers/0/state" cpu_usec)" "$2" "workers/0/state cpu_usec"
note ok
exit 0
