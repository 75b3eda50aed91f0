#!/bin/bash
# A RESTART read late must not make a node join twice and run a stale
# round.  Three nodes run round R; b is stopped with its workers killed,
# a worker of a fails, so a opens round R+1 and the server sends RESTART
# R+1 to b (queued: b is stopped) and c.  Once a and c have joined, a is
# stopped and b continued: b reaps its workers and joins R+1, then reads
# the queued RESTART R+1, which its JOIN already answered.  Round R+1
# completes with a, b and c; a is killed; b and c must end up in one
# round of world 4.  Before the fix b joined a second time on that
# RESTART, the server read it as b's workers failing and opened R+2, and
# b took the ROUND R+1 meant for its first JOIN: b ran ranks of world 6
# beside c's world 4 for as long as its workers lived.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"

# Long heartbeats and recovery: nothing but the events below moves.
start_rdzv --heartbeat 5000 --recovery-timeout 10000
RZ_NNODES=1:3
RZ_CONF="token_file=$T/token,last_call_timeout=0.3,join_timeout=30s"
for n in a b c; do
	node $n --nproc-per-node 2 --max-restarts 5
done
SAMPLER="$PY $ESV_TEST_DIR/rank_sampler.py"
sampled()
{
	$SAMPLER check "$T" "$@" >/dev/null
}
wait_for -t 30 sampled --nodes a,b,c --world 6 ||
    fail "no round of a, b and c: $($SAMPLER check "$T" --nodes a,b,c --world 6)"
wait_for -t 10 grep -q 'round [0-9]* complete: 3 nodes' "$RDZV_ERR" ||
    fail "no round of 3 nodes: $(cat "$RDZV_ERR")"
r=$(sed -n 's/.*round \([0-9]*\) complete: 3 nodes.*/\1/p' "$RDZV_ERR" | tail -1)
r1=$((r + 1))
note "round $r of a, b, c runs"

# live_pids NODE: pids of NODE's workers (the shells rz_worker.sh runs).
live_pids()
{
	local pid
	for pid in $(sed -n "s/^node=$1 pid=\([0-9]*\) .*/\1/p" "$T/rec.$1"); do
		esv_alive "$pid" && echo "$pid"
	done
}

joined()
{
	[ "$(count_lines "$RDZV_ERR" "joined round $r1\$")" -ge "$1" ]
}

kill -STOP "$NODE_PID_b"
kill -KILL $(live_pids b)
kill -KILL "$(live_pids a | head -1)"
wait_for -t 20 joined 2 ||
    fail "a and c did not join round $r1: $(cat "$RDZV_ERR")"
note "a and c joined round $r1; b has RESTART $r1 queued"
kill -STOP "$NODE_PID_a"
kill -CONT "$NODE_PID_b"
wait_for -t 20 grep -Eq "round $r1 complete|restart round $((r1 + 1))" \
    "$RDZV_ERR" || fail "b did nothing: $(cat "$RDZV_ERR")"
kill -KILL "$NODE_PID_a"
note "a killed: b and c must run one round of world 4"
wait_for -t 20 sampled --nodes b,c --world 4 ||
    fail "b and c: $($SAMPLER check "$T" --nodes b,c --world 4); server: $(grep -E 'round|joined' "$RDZV_ERR")"
assert_no_grep "$RDZV_ERR" "node [^ ]* joined round $r1 again" \
    "a second JOIN of b (the client no longer sends it)"
exit 0
