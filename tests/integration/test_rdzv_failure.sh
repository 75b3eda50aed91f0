#!/bin/bash
# A worker failure on one node restarts the groups of all nodes: the failed
# node counts a restart, the others only a membership change.  At the end
# the exit barrier holds early finishers; then the job is closed and a late
# joiner is refused at once.
. "$(dirname "$0")/lib.sh"
esv_setup 150
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
touch "$T/fail.a"
RZ_FAIL_FLAG=$T/fail.a RZ_STOP_FLAG=$T/stop node a --max-restarts 2
RZ_STOP_FLAG=$T/stop node b --max-restarts 2
for n in a b; do
	wait_recs $n 'world=2 ' 2 || fail "$n: no second round: $(cat "$T/$n.err")"
done
assert_eq "$(field "$(last_rec a)" restart)" 1 "a: TORCHELASTIC_RESTART_COUNT"
assert_eq "$(field "$(last_rec b)" restart)" 0 "b: TORCHELASTIC_RESTART_COUNT"
wait_state a state running || fail "a's state"
wait_state b state running || fail "b's state"
assert_eq "$(kv "$T/a/supervise/state" restart_count)" 1 "a: restart_count"
assert_eq "$(kv "$T/b/supervise/state" restart_count)" 0 "b: restart_count"
assert_eq "$(kv "$T/b/supervise/state" membership_restarts)" 1 \
    "b: membership restarts"
assert_eq "$(kv "$T/a/supervise/state" rdzv_round)" \
    "$(kv "$T/b/supervise/state" rdzv_round)" "round of a and b"

note "the job ends: both succeed, the job is closed"
touch "$T/stop"
wait_sup -t 20 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
wait_sup -t 20 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
assert_grep "$T/a.err" 'exit barrier passed'

note "a late joiner of the closed job is refused"
t0=$(date +%s%3N)
node late
wait_sup -t 20 "$NODE_PID_late"
assert_eq $? 1 "late joiner's exit status"
dt=$(($(date +%s%3N) - t0))
[ "$dt" -lt 3000 ] || fail "late joiner refused only after $dt ms"
assert_grep "$T/late.err" 'closed'
assert_eq "$(recs late .)" 0 "late joiner's workers"
exit 0
