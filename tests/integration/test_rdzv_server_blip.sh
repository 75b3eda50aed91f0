#!/bin/bash
# A restart of esv-rdzv shorter than the lease less its grace (esv-rdzv(8),
# LEASES) costs nothing, with the default lease (1.5 s, grace 0.3 s): the
# server killed -9 and started again at once, the nodes reconnect within
# a grace, the new server takes the running round back, and the lease is
# renewed before it ends: no fence, no restart.
. "$(dirname "$0")/lib.sh"
esv_setup 90
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv --heartbeat 300	# the default: a fifth of the lease
RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop node a
RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop node b
for n in a b; do
	wait_recs $n 'world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
	wait_state $n state running || fail "$n's state"
done

note "kill -9 of esv-rdzv, and again at once"
kill -KILL "$RDZV_PID"
wait "$RDZV_PID" 2>/dev/null
start_rdzv --heartbeat 300
back=$EPOCHREALTIME
wait_for -t 10 grep -qE 'recovered round [0-9]+: 2 nodes back' "$RDZV_ERR" ||
    fail "esv-rdzv did not recover the round: $(tail -5 "$RDZV_ERR")"
# Had a lease run out, its fence would have come within a lease of the
# server being back (1.5 s), and 0.5 s to spare.
sleep_until "$(awk -v t="$back" 'BEGIN { printf "%.3f", t + 2 }')"
for n in a b; do
	assert_no_grep "$T/$n/events.jsonl" \
	    '"event":"(rdzv\.fenced|rdzv\.membership|group\.stop)"' "$n's events"
	assert_eq "$(recs $n .)" 1 "$n: worker starts"
	assert_grep "$T/$n.err" 'the workers run until their lease ends at'
done
nodes_exit_0 20 a b
exit 0
