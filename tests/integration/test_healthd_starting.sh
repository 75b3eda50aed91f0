#!/bin/bash
# /healthz before the job's first worker group runs (esv-healthd(8)):
# 503 "starting", never "ok", whether the supervisor has written no state
# yet, the state is a previous run's, or the node waits in a rendezvous
# that cannot complete (--nnodes 2, one node); /metrics' esv_healthy and
# esv_starting agree.  Once the group has run: 200, its start counting as
# progress though the watchdog began long before, then today's rules (no
# timer request within the timeout: unhealthy, not starting).
. "$(dirname "$0")/lib.sh"
esv_setup 120
HD=${ESV_HEALTHD:-$ESV_BIN_DIR/../healthd/esv-healthd}
[ -x "$HD" ] || skip "$HD is not built"
command -v curl >/dev/null || skip "no curl"

# get URL PATH: the body on stdout, "CODE" in $T/code.
get()
{
	curl -s -m 5 -o "$T/body" -w '%{http_code}' "$1$2" >"$T/code"
	cat "$T/body"
}
code() { cat "$T/code"; }
# healthz_is URL CODE ERE: /healthz answers CODE with a body matching ERE.
healthz_is()
{
	get "$1" /healthz >/dev/null
	[ "$(code)" = "$2" ] && grep -qE -- "$3" "$T/body"
}
# assert_healthz URL CODE ERE WHAT
assert_healthz()
{
	healthz_is "$1" "$2" "$3" ||
	    fail "$4: /healthz: HTTP $(code) '$(cat "$T/body")', wanted $2 /$3/"
}
# assert_gauges URL HEALTHY STARTING WHAT
assert_gauges()
{
	get "$1" /metrics >"$T/metrics"
	"$PY" "$ESV_TEST_DIR/promparse.py" "$T/metrics" "esv_healthy=$2" \
	    "esv_starting=$3" || fail "$4: /metrics: $(grep -E '^esv_(healthy|starting|supervisor_up) ' "$T/metrics")"
}
# put_state JOBDIR TEXT: supervise/state replaced at once, as esv does.
put_state()
{
	printf '%s' "$2" >"$1/supervise/state.tmp"
	mv -f "$1/supervise/state.tmp" "$1/supervise/state"
}
# status_attempt URL N: /status shows attempt N (the file was read again).
status_attempt()
{
	get "$1" /status | "$PY" -c 'import json, sys
o = json.load(sys.stdin)
sys.exit(0 if (o["job"] or {}).get("attempt") == int(sys.argv[1]) else 1)' "$2" 2>/dev/null
}

note "on its own, against a supervisor that holds supervise/ok: no state, a stale one, its own"
J=$T/fake
mkdir -p "$J/supervise"
mkfifo "$J/supervise/ok" "$J/supervise/control"
# The fake supervisor: reads supervise/ok while it lives, as esv does.
bash -c 'exec 3<>"$1/supervise/ok"; exec sleep 100' _ "$J" &
FAKE=$!
ESV_SUP_PIDS+=("$FAKE")
"$HD" --listen 127.0.0.1:0 "$J" 2>"$T/hd.err" &
HD_PID=$!
ESV_SUP_PIDS+=("$HD_PID")
wait_for -t 10 grep -q 'listening on ' "$T/hd.err" ||
    fail "esv-healthd did not start: $(cat "$T/hd.err")"
url=http://$(sed -n 's/.*listening on \([^ ]*\) for .*/\1/p' "$T/hd.err" | head -1)
# The fake's open of supervise/ok may come after the server's start.
wait_for -t 10 eval 'get "$url" /status | grep -q "\"supervisor\":\"running\""' ||
    fail "esv-healthd does not see the fake supervisor: $(cat "$T/body")"
assert_healthz "$url" 503 '^starting: the supervisor has written no state yet$' \
    "no state yet"
assert_gauges "$url" 0 1 "no state yet"

# A previous run's file: over, attempt 2, by a supervisor long gone.
dead=$(sh -c 'echo $$')
put_state "$J" "state=succeeded
attempt=2
supervisor_pid=$dead
exit_code=0
"
wait_for -t 5 status_attempt "$url" 2 || fail "/status: not the new file: $(cat "$T/body")"
assert_healthz "$url" 503 '^starting: the supervisor has written no state yet$' \
    "a previous run's state"

# The fake's own, before its first group: joining, attempt 0.
put_state "$J" "state=joining
attempt=0
supervisor_pid=$FAKE
"
wait_for -t 5 status_attempt "$url" 0 || fail "/status: not the new file: $(cat "$T/body")"
assert_healthz "$url" 503 '^starting: the worker group has not run yet \(state joining\)$' \
    "joining, attempt 0"
assert_gauges "$url" 0 1 "joining, attempt 0"

# Its group runs: today's rules (no watchdog: alive is progress).
put_state "$J" "state=running
attempt=1
supervisor_pid=$FAKE
"
wait_for -t 5 status_attempt "$url" 1 || fail "/status: not the new file: $(cat "$T/body")"
assert_healthz "$url" 200 '^ok: last progress' "running, attempt 1"
assert_gauges "$url" 1 0 "running, attempt 1"
kill "$FAKE"
wait "$FAKE" 2>/dev/null
wait_for -t 5 healthz_is "$url" 503 '^unhealthy: no supervisor is running$' ||
    fail "the fake gone: /healthz: HTTP $(code) '$(cat "$T/body")'"
kill "$HD_PID"
wait "$HD_PID"
assert_eq "$?" 0 "esv-healthd's exit status after SIGTERM"

note "a rendezvous that cannot complete: starting, past the timeout; then the group runs"
. "$ESV_TEST_DIR/rdzv.sh"
start_rdzv
TMO=5
RZ_NNODES=2 RZ_STOP_FLAG=$T/stop \
    RZ_CONF=token_file=$T/token,last_call_timeout=1s,join_timeout=90s \
    node a --file-timer --health-port 0 --health-address 127.0.0.1 \
    --health-timeout ${TMO}s
wait_for -t 10 eval '[ -n "$(kv "$T/a/supervise/state" health_listen)" ]' ||
    fail "no health server for a: $(cat "$T/a.err")"
url=http://$(kv "$T/a/supervise/state" health_listen)
wait_state a state joining || fail "a is not joining: $(cat "$T/a.err")"
assert_healthz "$url" 503 '^starting: ' "one node of two"
# Its view may be up to 100 ms older than the state file: then it had none.
wait_for -t 5 healthz_is "$url" 503 '^starting: the worker group has not run yet \(state joining\)$' ||
    fail "one node of two: /healthz: HTTP $(code) '$(cat "$T/body")'"
assert_gauges "$url" 0 1 "one node of two"
# A window in which nothing may change: a's watchdog started before its
# supervisor.start event, so past that + the timeout + 0.5 s its only
# progress is older than the timeout.  Still starting, not unhealthy.
sleep_until "$(awk -v t="$(event_time "$T/a" supervisor.start)" -v d=$TMO \
    'BEGIN { printf "%.3f", t + d + 0.5 }')"
assert_healthz "$url" 503 '^starting: ' "one node of two, past the timeout"
assert_eq "$(kv "$T/a/supervise/state" attempt)" 0 "a's attempts while alone"
RZ_NNODES=2 RZ_STOP_FLAG=$T/stop \
    RZ_CONF=token_file=$T/token,last_call_timeout=1s,join_timeout=90s node b
# The round completes, a's group starts: 200 within the timeout after it,
# though a's watchdog has had no request (its start counts).
wait_for -t 20 healthz_is "$url" 200 '^ok: last progress' ||
    fail "a never healthy once its group ran: HTTP $(code) '$(cat "$T/body")', state $(kv "$T/a/supervise/state" state): $(tail -5 "$T/a.err")"
assert_ne "$(kv "$T/a/supervise/state" attempt)" 0 "a's attempts once healthy"
# Then today's rules: no timer request within the timeout is unhealthy,
# never starting again.
wait_for -t $((TMO + 5)) healthz_is "$url" 503 '^unhealthy: no progress for' ||
    fail "a's workers make no progress, yet /healthz: HTTP $(code) '$(cat "$T/body")'"
assert_gauges "$url" 0 0 "group ran, no progress"
touch "$T/stop"
wait_sup -t 30 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
wait_sup -t 30 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
note ok
