#!/bin/bash
# The guardian is the lease's backstop (esv-supervise(8), Leases), on esv
# and, with RZ_BACKEND=etcd (suite rdzv-etcd), on etcd: a supervisor
# stopped (SIGSTOP) past its lease fences nothing itself, yet its workers
# must be dead before the other node is given their ranks.  On etcd only
# the supervisor is stopped, not its esv-rdzv-etcd, which runs on and
# revokes the etcd lease when it has heard nothing for the TTL.  Node b
# (--nnodes 1:2) forms a round of its own once the rendezvous has dropped
# a; when b's new workers have started, a's old ones must be dead (a
# zombie is dead: its parent, stopped, cannot reap it).  After SIGCONT, a
# finds its lease over, takes the exits for a fence, joins again (no
# restart counted), and every node exits 0.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"

if [ "$RZ_BACKEND" = etcd ]; then
	start_rdzv
	stall=4			# twice the lease
else
	start_rdzv --heartbeat 300	# the default: a fifth of the default lease
	stall=3			# twice the lease
fi
RZ_NNODES=1:2 RZ_STOP_FLAG=$T/stop node a --nproc-per-node 2 --max-restarts 0
RZ_NNODES=1:2 RZ_STOP_FLAG=$T/stop node b --nproc-per-node 2 --max-restarts 0
for n in a b; do
	wait_recs $n ' world=4 ' 2 || fail "$n: no round: $(cat "$T/$n.err")"
	wait_state $n state running || fail "$n's state"
done
apids=$(sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$T/rec.a")
if [ "$RZ_BACKEND" = etcd ]; then
	pgrep -f "esv-rdzv-etcd .*" -P "$NODE_PID_a" >/dev/null ||
	    fail "no esv-rdzv-etcd under a"
fi

note "a's supervisor stopped for $stall s"
kill -STOP "$NODE_PID_a"
stopped=$EPOCHREALTIME
wait_recs -t 20 b ' world=2 ' 2 ||
    fail "b formed no round of its own: $(cat "$T/b.err")"
for p in $apids; do
	esv_alive "$p" && fail "a's worker $p still alive when b's round started"
done
sleep_until "$(awk -v t="$stopped" -v s="$stall" 'BEGIN { printf "%.3f", t + s }')"
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
