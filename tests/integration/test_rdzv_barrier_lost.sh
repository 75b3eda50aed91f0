#!/bin/bash
# A round completes on every node or is restarted on every node; a node
# lost while the others wait in the exit barrier is waited for
# (esv-supervise(8), "Exit barrier").  Two nodes (--nnodes 2,
# --max-restarts 0, 2 workers each) of workers/b_mesh.py, which meet
# through the agent store and fail when a peer vanishes, as gloo's do.
# Only node a's esv-supervise is stopped (SIGSTOP): its workers and its
# esv-stored run on.
#  1. a stopped 3 s while its workers finish, b's still running: b is
#     restarted, a joins the new round on SIGCONT (its success was for a
#     round that is gone): both exit 0, each rank started at most twice;
#  2. both nodes' workers finish during the stall, which outlasts a's
#     lease: the barrier waits for a, which on SIGCONT says it finished:
#     a exits 0 at once, without a reconnect storm, and so does b;
#  3. a never comes back while b waits in the barrier: b exits 1 at its
#     exit_barrier_timeout, for the job's work is not known to be done;
#     a, continued then, finds the job closed and exits 1 at once;
#  4. a, in the barrier, stopped past its lease while b's workers run:
#     the barrier takes it back when it goes on, and passes when b's
#     workers finish; nothing runs twice;
#  5. the same, a continued only once b has passed the barrier and left:
#     the job is closed, but its barrier passed for a's round: a is
#     released and exits 0 at once, refused nothing.
# BL_ONLY="N ..." runs only those cases (to show one failing on a build).
. "$(dirname "$0")/lib.sh"
esv_setup 170
. "$ESV_TEST_DIR/rdzv.sh"

# mnode NAME: a node of job $RZ_JOB, exit barrier timeout ${BT:-30s}.
mnode()
{
	local name=$1
	REC=$T/rec.$name RZ_NODE=$name start_sup "$T/$name" \
	    --rdzv-backend "$RZ_BACKEND" --rdzv-endpoint "$EP" \
	    --rdzv-id "$RZ_JOB" --nnodes 2 --nproc-per-node 2 \
	    --max-restarts 0 --agent-store --shutdown-timeout 3s \
	    --rdzv-conf "$(rz_conf "token_file=$T/token,last_call_timeout=1s,join_timeout=30s,exit_barrier_timeout=${BT:-30s}")" \
	    --no-python -- "$PY" "$WORKERS/b_mesh.py"
	eval "NODE_PID_$name=\$SUP_PID"
}

fresh()
{
	rm -rf "$T/a" "$T/b" "$T/rec.a" "$T/rec.b"
	: >"$RDZV_ERR"
}

want()
{
	[ -z "${BL_ONLY:-}" ] || [[ " $BL_ONLY " == *" $1 "* ]]
}

start_rdzv	# the default lease (1.5 s), heartbeats of 0.2 s

if want 1; then
note "1: a stopped 3 s while its workers finish, b's running"
RZ_JOB=j1 B_RUN=0.3 mnode a
RZ_JOB=j1 B_RUN=4 mnode b
wait_recs a ' met$' 2 && wait_recs b ' met$' 2 ||
    fail "no round: $(cat "$T/a.err" "$T/b.err")"
kill -STOP "$NODE_PID_a"
# a's workers finish within the stall (they run 0.3 s once all four have
# met), before a's lease of 1.5 s is over.
wait_recs a ' done ' 2 || fail "a's workers did not finish: $(cat "$T/rec.a")"
wait_for -t 10 grep -q "heartbeat lost" "$RDZV_ERR" ||
    fail "esv-rdzv did not drop a: $(cat "$RDZV_ERR")"
sleep 1.5	# the rest of the 3 s stall: the fault, not a wait for an event
kill -CONT "$NODE_PID_a"
wait_sup -t 25 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
wait_sup -t 10 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
for n in a b; do
	for r in 0 1 2 3; do
		c=$(recs $n "rank=$r .* start$")
		[ "$c" -le 2 ] || fail "$n: rank $r started $c times"
	done
	# A worker whose peer was stopped first may say "fail": it was
	# being stopped too, which is no failure of the group.
	assert_no_grep "$T/$n/events.jsonl" '"event":"job.failed"' "$n's events"
	assert_eq "$(kv "$T/$n/supervise/state" restart_count)" 0 "$n's restart count"
done
assert_eq "$(recs a ' start$')" 4 "a's worker starts (the new round runs them again)"
# a's success was taken for what it is, and counted for round 0, which was
# gone: not fenced as if its workers still ran.
assert_grep "$T/a/events.jsonl" '"event":"rdzv.superseded".*"round":0' "a's events"
assert_no_grep "$T/a/events.jsonl" '"event":"rdzv.fenced"' "a's events"

fi

if want 2; then
note "2: both nodes' workers finish during a's stall"
fresh
RZ_JOB=j2 B_RUN=0.3 mnode a
RZ_JOB=j2 B_RUN=0.3 mnode b
# Stopped once the workers have met: they finish 0.3 s later, well inside
# a's lease, so that a finds their exits before its lease's end when it
# goes on.
wait_recs a ' met$' 2 && wait_recs b ' met$' 2 ||
    fail "no round: $(cat "$T/a.err" "$T/b.err")"
kill -STOP "$NODE_PID_a"
wait_recs a ' done ' 2 && wait_recs b ' done ' 2 ||
    fail "the workers did not finish: $(cat "$T/rec.a" "$T/rec.b")"
wait_for -t 10 grep -q "heartbeat lost" "$RDZV_ERR" ||
    fail "esv-rdzv did not drop a: $(cat "$RDZV_ERR")"
wait_for -t 10 grep -q "lost before it said it had finished" "$T/b.err" ||
    fail "b was not told of a's loss: $(cat "$T/b.err")"
esv_alive "$NODE_PID_b" || fail "b left the barrier while a was lost"
lines=$(wc -l <"$T/a.err")
kill -CONT "$NODE_PID_a"
# At once: the barrier timeout is 30 s; a reconnection and a round trip.
wait_sup -t 5 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
wait_sup -t 5 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
after=$(($(wc -l <"$T/a.err") - lines))
[ "$after" -le 15 ] || fail "a wrote $after lines after SIGCONT: $(tail -n 40 "$T/a.err")"
assert_no_grep "$T/a.err" 'is closed' "a's refusals"
assert_eq "$(recs a ' start$')" 2 "a's worker starts"
assert_eq "$(recs b ' start$')" 2 "b's worker starts"
assert_grep "$T/a.err" 'exit barrier passed'
assert_grep "$T/b.err" 'exit barrier passed'

fi

if want 3; then
note "3: a never comes back while b waits in the barrier"
fresh
RZ_JOB=j3 B_RUN=60 BT=4s mnode a
RZ_JOB=j3 B_RUN=0.5 BT=4s mnode b
wait_recs a ' start$' 2 && wait_recs b ' start$' 2 ||
    fail "no round: $(cat "$T/a.err" "$T/b.err")"
wait_recs b ' done ' 2 || fail "b's workers did not finish: $(cat "$T/rec.b")"
wait_state b state finishing || fail "b is not in the barrier"
kill -STOP "$NODE_PID_a"
wait_sup -t 15 "$NODE_PID_b"; assert_eq $? 1 "b's exit status"
assert_grep "$T/b.err" 'exit barrier timed out after 4000 ms, waiting for a node'
assert_grep "$T/b/events.jsonl" '"event":"rdzv.failed"' "b's events"
kill -CONT "$NODE_PID_a"
wait_sup -t 10 "$NODE_PID_a"; assert_eq $? 1 "a's exit status"
assert_grep "$T/a.err" 'closed'
[ "$(count_lines "$T/a.err" 'is closed')" -le 1 ] ||
    fail "a was refused again and again: $(grep -c 'is closed' "$T/a.err")"
fi

if want 4; then
note "4: a stopped in the barrier past its lease, b's workers running"
fresh
RZ_JOB=j4 B_RUN=0.3 mnode a
RZ_JOB=j4 B_RUN=5 mnode b
wait_recs a ' done ' 2 || fail "a's workers did not finish: $(cat "$T/rec.a")"
wait_state a state finishing || fail "a is not in the barrier"
kill -STOP "$NODE_PID_a"
wait_for -t 10 grep -q "heartbeat lost" "$RDZV_ERR" ||
    fail "esv-rdzv did not drop a: $(cat "$RDZV_ERR")"
kill -CONT "$NODE_PID_a"
wait_sup -t 20 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
# Released with b: the barrier timeout (30 s) is not what ends its wait.
wait_sup -t 5 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
assert_grep "$T/a.err" 'exit barrier passed'
assert_eq "$(recs a ' start$')" 2 "a's worker starts"
assert_eq "$(recs b ' start$')" 2 "b's worker starts"
fi

if want 5; then
note "5: a stopped in the barrier until b has passed it and left"
fresh
RZ_JOB=j5 B_RUN=0.3 mnode a
RZ_JOB=j5 B_RUN=3 mnode b
wait_recs a ' done ' 2 || fail "a's workers did not finish: $(cat "$T/rec.a")"
wait_state a state finishing || fail "a is not in the barrier"
kill -STOP "$NODE_PID_a"
wait_sup -t 20 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
assert_grep "$RDZV_ERR" 'job j5: closed'
kill -CONT "$NODE_PID_a"
wait_sup -t 5 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
assert_grep "$T/a.err" 'exit barrier passed'
assert_no_grep "$T/a.err" 'is closed' "a's refusals"
fi
exit 0
