#!/bin/bash
# esv-watchdogd under esv-supervise, driven by workers that write torch's
# FileTimerClient requests: release, replace, signal 0, expiry (with the
# lateness), a foreign pid refused, an exited worker's timers dropped, bad
# lines skipped one by one, and a killed watchdog replaced.
. "$(dirname "$0")/lib.sh"
esv_setup 170
W=$WORKERS/wd_worker.py
WD=${ESV_WATCHDOGD:-$ESV_BIN_DIR/../watchdog/esv-watchdogd}
[ -x "$WD" ] || skip "$WD is not built"

# wd_job NAME PLAN [OPTIONS...]: run one job of one worker; SUP_RC set.
wd_job()
{
	local name=$1 plan=$2
	shift 2
	REC=$T/rec.$name W_PLAN=$plan run_sup -t 30 "$T/$name" --file-timer \
	    --python "$PY" "$@" -- "$W"
}
steps() { count_lines "$T/rec.$1" "$2"; }
expired_events() { count_lines "$T/$1/events.jsonl" '"timer.expired"'; }

note "release: a released timer never fires"
TORCHELASTIC_TIMER_FILE=$T/custom.fifo wd_job rel "arm:s:0.5:15;sleep:0.2;release:s;sleep:1"
assert_eq "$SUP_RC" 0 "release: exit status ($(cat "$T/rel.err"))"
assert_eq "$(steps rel '^end ')" 1 "release: the worker ran to its end"
assert_no_file "$T/custom.fifo"

note "replace: a later request for the same scope wins"
TORCHELASTIC_ENABLE_FILE_TIMER=1 REC=$T/rec.rep W_PLAN="arm:s:0.4:15;arm:s:3:15;sleep:1;release:s" \
    run_sup -t 30 "$T/rep" --python "$PY" -- "$W"
assert_eq "$SUP_RC" 0 "replace: exit status ($(cat "$T/rep.err"))"
assert_eq "$(expired_events rep)" 0 "replace: expiries"

note "signal 0: the timer is cleared, nothing is sent"
wd_job zero "arm:s:0.3:0;sleep:1"
assert_eq "$SUP_RC" 0 "signal 0: exit status ($(cat "$T/zero.err"))"
assert_eq "$(expired_events zero)" 1 "signal 0: expiries"
assert_grep "$T/zero/events.jsonl" '"sent": ?false'

# Never before the deadline, and before the worker's 5 s are up; how soon
# after the deadline is bench/timer.sh's to measure, not a test's.
note "expiry: SIGTERM after the deadline, before the worker ends"
wd_job kill "arm:s:0.5:15;sleep:5"
assert_eq "$SUP_RC" 1 "expiry: exit status"
assert_eq "$(steps kill '^end ')" 0 "expiry: the worker was not stopped"
assert_grep "$T/kill/events.jsonl" '"signal": ?"SIGTERM"'
late=$(grep -h '"timer.expired"' "$T/kill/events.jsonl" |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["lateness_ms"])')
note "expiry lateness ${late} ms"
"$PY" -c "import sys; sys.exit(0 if 0 <= $late < 4500 else 1)" ||
    fail "lateness $late ms"
assert_grep "$T/kill.err" 'timer expired: pid [0-9]+ scope s'

note "a foreign pid is refused, never signalled"
sleep 30 &
victim=$!
echo "$victim" >"$T/victim"
wd_job foreign "armpid:$T/victim:x:0.2:9;sleep:1"
assert_eq "$SUP_RC" 0 "foreign: exit status ($(cat "$T/foreign.err"))"
esv_alive "$victim" || fail "the foreign sleep was killed"
assert_grep "$T/foreign.err" "$victim"
kill "$victim"

note "an exited worker's timers are dropped"
W_RANK=1 W_OTHERS=1.5 wd_job gone "arm:s:0.5:9" --nproc-per-node 2
assert_eq "$SUP_RC" 0 "exited worker: exit status ($(cat "$T/gone.err"))"
assert_eq "$(expired_events gone)" 0 "exited worker: expiries"

note "bad lines are skipped one by one"
long=$(head -c 5000 /dev/zero | tr '\0' x)
plan='raw:{not json\n;raw:'$long'\n;raw:[1, 2]\n'
plan+=';raw:{"version": 1, "pid": 1, "scope_id": "a", "expiration_time": 1, "signal": 9, "extra": 1}\n'
plan+=';raw:{"version": 1, "pid": "one", "scope_id": "a", "expiration_time": 1, "signal": 9}\n'
plan+=';raw:{"version": 1, "pi;raw:\n;raw:\x00\n;arm:s:0.3:15;sleep:5'
wd_job bad "$plan"
assert_eq "$SUP_RC" 1 "bad lines: exit status (the valid request must still work)"
assert_grep "$T/bad/events.jsonl" '"signal": ?"SIGTERM"'
n=$(count_lines "$T/bad.err" 'esv-watchdogd: warning: .*line [0-9]+')
[ "$n" -ge 6 ] || fail "bad lines: $n warnings naming a line: $(cat "$T/bad.err")"
assert_grep "$T/bad.err" 'extra'
assert_grep "$T/bad.err" '4096'

note "a flood: warnings rate-limited, every bad line accounted, nothing blocks"
wd_job flood "flood:5000:bad;flood:20000:pairs;arm:s:0.3:15;sleep:5"
assert_eq "$SUP_RC" 1 "flood: exit status (the request after the flood must work)"
assert_grep "$T/flood/events.jsonl" '"signal": ?"SIGTERM"'
said=$(count_lines "$T/flood.err" 'esv-watchdogd: warning: FIFO: line [0-9]+: malformed')
[ "$said" -ge 1 ] && [ "$said" -le 50 ] ||
    fail "flood: $said warnings said, want 1..50 (10 a second)"
hidden=$(awk '/esv-watchdogd: warning: [0-9]+ more bad requests suppressed/ {
    for (i = 1; i < NF; i++) if ($(i + 1) == "more") n += $i } END { print n + 0 }' \
    "$T/flood.err")
assert_eq "$((said + hidden))" 5000 "flood: bad lines said + suppressed"

note "a killed watchdog is replaced and told the workers again"
# The worker arms its timer only once the replacement watchdog runs.
REC=$T/rec.wdk W_PLAN="waitfile:$T/wdk.go;arm:s:0.3:15;sleep:5" start_sup "$T/wdk" \
    --file-timer --python "$PY" -- "$W"
wait_for -t 10 pgrep -f "esv-watchdogd --fifo $T/wdk/" >/dev/null ||
    fail "no watchdog: $(cat "$T/wdk.err")"
wait_for -t 5 eval 'ctl status "$T/wdk" >"$T/st" && grep -q "last timer request" "$T/st"' ||
    fail "esv-ctl status lacks the watchdog's last progress: $(cat "$T/st")"
ctl status --json "$T/wdk" >"$T/st.json"
assert_grep "$T/st.json" '"last_progress"'
pkill -KILL -f "esv-watchdogd --fifo $T/wdk/"
wait_for -t 10 grep -q '"watchdog.restart"' "$T/wdk/events.jsonl" ||
    fail "the killed watchdog was not replaced: $(cat "$T/wdk.err")"
: >"$T/wdk.go"
wait_sup -t 20
assert_eq $? 1 "watchdog restart: exit status (the worker must be killed)"
assert_grep "$T/wdk/events.jsonl" '"watchdog.restart"'
assert_grep "$T/wdk/events.jsonl" '"timer.expired"'
exit 0
