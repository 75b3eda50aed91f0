#!/bin/bash
# The exit barrier on etcd (esv-supervise(8) and esv-rdzv-etcd(8), "Exit
# barrier"): a node's finish outlives its lease, and a node lost before it
# said it had finished is waited for, as on esv-rdzv.  Two nodes
# (--nnodes 2, --max-restarts 0) of workers/rz_worker.sh, whose workers
# end when the node's own flag $T/stop.NAME appears; leases of 2 s.  A
# node is "stopped" with SIGSTOP to its esv-supervise and its
# esv-rdzv-etcd (its workers run on).
#  a. b has finished; a, still running, is stopped and never continued
#     in time: b says what it waits for and exits 1 at its
#     exit_barrier_timeout (4 s), closing the job; a, continued then,
#     exits 1 at once.  It once passed the barrier without a (exit 0).
#  b. a has finished and is stopped past its lease while b's workers run;
#     continued, then b's workers finish: both exit 0 and no worker runs
#     twice.  a's finish once went with its lease: b's round was
#     restarted.
#  c. a has finished, then its esv-supervise and esv-rdzv-etcd are killed
#     (-9) while b's workers run: once etcd has expired a's lease, b's
#     workers finish and b exits 0, its workers started once.
#  d. b has finished; a's esv-supervise exits (SIGTERM) with its workers
#     unfinished: round 0 is restarted at once, b is not held in the
#     barrier; with a new node a, round 1 runs and both exit 0.  It once
#     passed the barrier without a.
#  e. b has finished; a's esv-supervise alone is stopped while its workers
#     finish: a's esv-rdzv-etcd lets go of it after three heartbeats, b is
#     told it waits for a; continued, a says it finished: both exit 0.
#  f. b has finished; a's esv-supervise alone is stopped past its lease
#     while its workers run: b is told it waits for a; continued, a stops
#     its workers (fenced), and round 0 is restarted on every node, b's
#     too; round 1 runs and both exit 0, no restart counted.
#  g. as e, a continued only once b has exited 1 at its barrier timeout
#     (4 s), closing the job: a's finish comes too late, it exits 1 at
#     once.
# BL_ONLY="a ..." runs only those cases (to show one failing on a build).
. "$(dirname "$0")/lib.sh"
esv_setup 170
RZ_BACKEND=etcd
RZ_LEASE_TTL=2s
. "$ESV_TEST_DIR/rdzv.sh"

# bnode NAME: a node of job $RZ_JOB, exit barrier timeout ${BT:-30s}.
bnode()
{
	RZ_NNODES=2 RZ_STOP_FLAG=$T/stop.$1 \
	    RZ_CONF="last_call_timeout=1s,join_timeout=30s,exit_barrier_timeout=${BT:-30s}" \
	    node "$1" --max-restarts 0
}

want()
{
	[ -z "${BL_ONLY:-}" ] || [[ " $BL_ONLY " == *" $1 "* ]]
}

# helper NAME: the pid of node NAME's esv-rdzv-etcd
helper()
{
	local p
	eval "p=\$NODE_PID_$1"
	pgrep -f "esv-rdzv-etcd " -P "$p"
}

# joins JOB: how many nodes etcd holds in round 0 of JOB (their leases live)
joins()
{
	etcd_keys | grep -c "/$1/r/0/join/"
}

# both_up JOB: a round of two runs, its workers started
both_up()
{
	local n
	for n in a b; do
		wait_recs $n " world=" 1 && wait_state $n state running ||
		    fail "$1: no round: $(tail -5 "$T/a.err" "$T/b.err")"
	done
}

fresh()
{
	rm -rf "$T/a" "$T/b" "$T/rec.a" "$T/rec.b" "$T/stop.a" "$T/stop.b"
}

start_rdzv

if want a; then
note "a: a lost, never back in time, while b waits in the barrier"
fresh
RZ_JOB=bla BT=4s bnode a
RZ_JOB=bla BT=4s bnode b
both_up bla
touch "$T/stop.b"
wait_state b state finishing || fail "b is not in the barrier"
pa=$(helper a)
[ -n "$pa" ] || fail "no esv-rdzv-etcd under a"
kill -STOP "$NODE_PID_a" "$pa"
# The bound: the barrier timeout, plus the lease and etcd's sweep.
wait_sup -t 15 "$NODE_PID_b"; rc=$?
kill -CONT "$NODE_PID_a" "$pa"
assert_eq "$rc" 1 "b's exit status: $(tail -5 "$T/b.err")"
assert_grep "$T/b.err" 'a node of round 0 was lost before it said it had finished: the exit barrier waits for it, [0-9]* ms more at most'
assert_grep "$T/b.err" 'exit barrier timed out after 4000 ms, waiting for a node'
assert_grep "$T/b/events.jsonl" '"event":"rdzv.failed"' "b's events"
# a's workers are fenced; it finds the job closed and stops at once.
wait_sup -t 15 "$NODE_PID_a"; assert_eq $? 1 "a's exit status"
assert_grep "$T/a.err" 'closed'
fi

if want b; then
note "b: a finished, stopped past its lease while b runs, then continued"
fresh
RZ_JOB=blb bnode a
RZ_JOB=blb bnode b
both_up blb
sa=$(recs a .) sb=$(recs b .)
touch "$T/stop.a"
wait_state a state finishing || fail "a is not in the barrier"
pa=$(helper a)
[ -n "$pa" ] || fail "no esv-rdzv-etcd under a"
kill -STOP "$NODE_PID_a" "$pa"
wait_for -t 15 eval '[ "$(joins blb)" -eq 1 ]' ||
    fail "etcd kept a's lease: $(etcd_keys)"
kill -CONT "$NODE_PID_a" "$pa"
wait_for -t 15 grep -q 'back in round 0 as group rank' "$T/a.err" ||
    fail "a did not come back to its barrier: $(tail -5 "$T/a.err")"
touch "$T/stop.b"
for n in a b; do
	eval "p=\$NODE_PID_$n"
	wait_sup -t 20 "$p"; assert_eq $? 0 "$n's exit status: $(tail -5 "$T/$n.err")"
	assert_grep "$T/$n.err" 'exit barrier passed'
done
assert_eq "$(recs a .) $(recs b .)" "$sa $sb" "the worker starts of a and b"
assert_no_grep "$T/a.err" 'opening round 1' "a's log"
assert_no_grep "$T/b.err" 'opening round 1' "b's log"
fi

if want c; then
note "c: a finished, then killed (-9) while b runs"
fresh
RZ_JOB=blc bnode a
RZ_JOB=blc bnode b
both_up blc
touch "$T/stop.a"
wait_state a state finishing || fail "a is not in the barrier"
pa=$(helper a)
[ -n "$pa" ] || fail "no esv-rdzv-etcd under a"
kill -9 "$pa" "$NODE_PID_a"
wait_for -t 15 eval '[ "$(joins blc)" -eq 1 ]' ||
    fail "etcd kept a's lease: $(etcd_keys)"
starts=$(recs b .)
touch "$T/stop.b"
wait_sup -t 20 "$NODE_PID_b"; assert_eq $? 0 "b's exit status: $(tail -5 "$T/b.err")"
assert_grep "$T/b.err" 'exit barrier passed'
assert_eq "$(recs b .)" "$starts" "b's worker starts"
assert_no_grep "$T/b.err" 'opening round 1' "b's log"
assert_no_grep "$T/a.err" 'opening round 1' "a's log"
fi

if want d; then
note "d: a's supervisor exits (SIGTERM) unfinished while b waits in the barrier"
fresh
RZ_JOB=bld bnode a
RZ_JOB=bld bnode b
both_up bld
touch "$T/stop.b"
wait_state b state finishing || fail "b is not in the barrier"
kill -TERM "$NODE_PID_a"
wait_sup -t 15 "$NODE_PID_a"
# Round 0 is restarted at once: b does not wait for a, and joins round 1.
wait_for -t 10 grep -q 'round 0, which this node finished, was superseded by round 1' "$T/b.err" ||
    fail "b's round was not restarted: $(tail -5 "$T/b.err")"
assert_no_grep "$T/b.err" 'lost before it said it had finished' "b's log"
# A new node a completes round 1; every worker finds its flag and ends.
touch "$T/stop.a"
RZ_JOB=bld bnode a
nodes_exit_0 20 a b
fi

if want e; then
note "e: b has finished; a's supervisor alone stopped while its workers finish"
fresh
RZ_JOB=ble bnode a
RZ_JOB=ble bnode b
both_up ble
touch "$T/stop.b"
wait_state b state finishing || fail "b is not in the barrier"
kill -STOP "$NODE_PID_a"
touch "$T/stop.a"
# a's esv-rdzv-etcd lets go of the silent supervisor: its lease goes.
wait_for -t 15 grep -q 'lost before it said it had finished' "$T/b.err" ||
    fail "b was not told of a's loss: $(tail -5 "$T/b.err")"
esv_alive "$NODE_PID_b" || fail "b left the barrier while a was lost"
kill -CONT "$NODE_PID_a"
nodes_exit_0 10 a b
assert_grep "$T/a.err" 'exit barrier passed'
fi

if want f; then
note "f: b has finished; a's supervisor alone stopped past its lease, its workers running"
fresh
RZ_JOB=blf bnode a
RZ_JOB=blf bnode b
both_up blf
touch "$T/stop.b"
wait_state b state finishing || fail "b is not in the barrier"
kill -STOP "$NODE_PID_a"
wait_for -t 15 grep -q 'lost before it said it had finished' "$T/b.err" ||
    fail "b was not told of a's loss: $(tail -5 "$T/b.err")"
kill -CONT "$NODE_PID_a"
# a's workers outlived its lease: stopped, they cannot finish round 0,
# which is restarted on every node; round 1 then runs to its end.
wait_for -t 15 grep -q 'round 0, which this node finished, was superseded by round 1' "$T/b.err" ||
    fail "b's round was not restarted: $(tail -5 "$T/b.err")"
touch "$T/stop.a"
nodes_exit_0 20 a b
for n in a b; do
	assert_eq "$(kv "$T/$n/supervise/state" restart_count)" 0 "$n's restart count"
done
fi

if want g; then
note "g: as e, but a is continued only after b's barrier timed out"
fresh
RZ_JOB=blg BT=4s bnode a
RZ_JOB=blg BT=4s bnode b
both_up blg
touch "$T/stop.b"
wait_state b state finishing || fail "b is not in the barrier"
kill -STOP "$NODE_PID_a"
touch "$T/stop.a"
wait_sup -t 15 "$NODE_PID_b"; rc=$?
kill -CONT "$NODE_PID_a"
assert_eq "$rc" 1 "b's exit status: $(tail -5 "$T/b.err")"
# a's workers finished, but the job was closed without its barrier
# passing: a exits 1 at once, refused once at most.
wait_sup -t 10 "$NODE_PID_a"; assert_eq $? 1 "a's exit status: $(tail -5 "$T/a.err")"
assert_grep "$T/a.err" 'closed before its exit barrier passed for round 0'
fi
exit 0
