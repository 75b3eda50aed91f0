#!/bin/bash
# esv-ctl wait finished tells success from failure (esv-ctl(8)): 0 for a
# job that succeeded, 1 for one that failed (woken while it ran, or after
# its supervisor has exited), the highest code of several JOBDIRs; and
# esv-ctl status shows the attempt's log directory.
. "$(dirname "$0")/lib.sh"
esv_setup 90
EXITON=$WORKERS/b_exit_on.sh

# Job F fails (exit 3, no restart); job S succeeds.  Each worker exits
# when the test writes its file.
F=$T/f
S=$T/s
start_sup "$F" --no-python --max-restarts 0 -- bash "$EXITON" "$T/f.exit"
SUP_F=$SUP_PID
start_sup "$S" --no-python -- bash "$EXITON" "$T/s.exit"
SUP_S=$SUP_PID
wait_for -t 10 eval '"$CTL" status "$F" "$S" >/dev/null 2>&1' ||
    fail "supervisors f and s did not come up"
assert_rc 0 "$CTL" wait up -t 10 "$F" "$S"

note "esv-ctl status shows the attempt's log directory"
logs=$(kv "$F/supervise/state" attempt_dir)
[ -n "$logs" ] && [ -d "$logs" ] || fail "attempt_dir '$logs' of f is not a directory"
assert_rc 0 "$CTL" status "$F"
assert_grep_F "$T/out" ", logs $logs, want up" "esv-ctl status"

note "wait finished on a job that fails: 1, woken while it ran"
"$CTL" wait finished -t 20 "$F" >"$T/w.out" 2>"$T/w.err" &
waiter=$!
wait_for -t 5 in_poll "$waiter" || fail "wait finished returned while f ran: $(cat "$T/w.err")"
echo 3 >"$T/f.exit.0"
wait_for -t 10 eval '! esv_alive '"$waiter" || fail "wait finished not woken by f's failure"
wait "$waiter"
assert_eq "$?" 1 "wait finished on a failed job"
assert_grep_F "$T/w.err" "fail: $F: the job failed" "wait finished's stderr"
wait_sup -t 10 "$SUP_F"
assert_eq "$?" 1 "f's exit status"
assert_eq "$(kv "$F/supervise/state" state)" failed "f's state"

note "after its supervisor exited: 1; the log directory of the last attempt"
assert_rc 1 "$CTL" wait finished "$F"
assert_grep_F "$T/err" "fail: $F: the job failed"
assert_rc 1 "$CTL" status "$F"
assert_grep "$T/out" "^$F: not running, last state: failed .*, exit 1, logs $logs, want [a-z]+$" \
    "status of the failed job"

note "several JOBDIRs: the highest code; 0 only if all succeeded"
# s still runs: at the deadline, 99 beats f's 1.
assert_rc 99 "$CTL" wait finished -t 0.5 "$F" "$S"
assert_grep_F "$T/err" "fail: $F: the job failed"
assert_grep_F "$T/err" "timeout: $S"
: >"$T/s.exit.0"
wait_sup -t 10 "$SUP_S"
assert_eq "$?" 0 "s's exit status"
assert_rc 0 "$CTL" wait finished "$S"
assert_rc 1 "$CTL" wait finished "$S" "$F"
assert_no_grep_F "$T/err" "$S"
assert_rc 1 "$CTL" wait finished "$F" "$S"
note ok
