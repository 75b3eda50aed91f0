#!/bin/bash
# The guardian is the lease's backstop on etcd too (esv-supervise(8),
# Leases): a supervisor stopped (SIGSTOP) past its lease fences nothing
# itself, and its esv-rdzv-etcd, which runs on, revokes its etcd lease
# when it has heard nothing for the TTL.  Node b (--nnodes 1:2) then forms
# a round of its own; when b's new workers have started, a's old ones must
# be dead (a zombie is dead: its parent, stopped, cannot reap it).  Only
# the supervisor is stopped, not its esv-rdzv-etcd or its guardian.  After
# SIGCONT, a finds its lease over, takes the exits for a fence, joins again
# (no restart counted), and every node exits 0.
. "$(dirname "$0")/lib.sh"
esv_setup 120
RZ_BACKEND=etcd
RZ_LEASE_TTL=2s		# the default
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
RZ_NNODES=1:2 RZ_STOP_FLAG=$T/stop node a --nproc-per-node 2 --max-restarts 0
RZ_NNODES=1:2 RZ_STOP_FLAG=$T/stop node b --nproc-per-node 2 --max-restarts 0
for n in a b; do
	wait_recs $n ' world=4 ' 2 || fail "$n: no round: $(cat "$T/$n.err")"
	wait_state $n state running || fail "$n's state"
done
apids=$(sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$T/rec.a")
helper=$(pgrep -f "esv-rdzv-etcd .*" -P "$NODE_PID_a")
[ -n "$helper" ] || fail "no esv-rdzv-etcd under a"

note "a's supervisor stopped for 4 s (twice the lease)"
kill -STOP "$NODE_PID_a"
stopped=$EPOCHREALTIME
wait_recs -t 20 b ' world=2 ' 2 ||
    fail "b formed no round of its own: $(cat "$T/b.err")"
for p in $apids; do
	esv_alive "$p" && fail "a's worker $p still alive when b's round started"
done
sleep_until "$(awk -v t="$stopped" 'BEGIN { printf "%.3f", t + 4 }')"
kill -CONT "$NODE_PID_a"
# a joins again, and both run a round of 4 workers.
wait_recs -t 30 a ' world=4 ' 4 || fail "a did not join again: $(cat "$T/a.err")"
wait_recs -t 30 b ' world=4 ' 4 || fail "b: no round with a: $(cat "$T/b.err")"
assert_grep "$T/a.err" 'guardian: the workers.* lease ran out'
assert_grep "$T/a/events.jsonl" '"event":"rdzv.fenced"'
nodes_exit_0 30 a b
for n in a b; do
	assert_no_grep "$T/$n/events.jsonl" '"event":"(job\.failed|group\.restart)"' \
	    "$n's events"
done
exit 0
