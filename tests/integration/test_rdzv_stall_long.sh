#!/bin/bash
# A stall longer than the lease costs at most one membership restart
# (esv-supervise(8), Leases, "Stalls"): the supervisor of the store host
# (group rank 0) is stopped mid-run for 1.4 s, then the next round's for
# 3 s; its workers and its esv-stored run on.  The workers hold TCP
# connections to each other, as gloo's do (workers/peer_worker.py), and
# fail when a peer vanishes.  Each time the stopped node's lease runs out
# (its guardian kills its workers), the other node's workers lose their
# peers, and esv-rdzv drops the stopped node.  The other node must take
# its failures for the round's end (rdzv.superseded), and the stopped one,
# going on, its round over before judging its workers' exits (a fence).
# --max-restarts 0: a failure counted anywhere would end the job.  Both
# nodes run a new round after each stall and exit 0, with no failure.json.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"
command -v python3 >/dev/null || skip "no python3"

start_rdzv --heartbeat 300	# the default: a fifth of the default lease
stall_node()
{
	local name=$1
	REC=$T/rec RZ_NODE=$name RZ_STOP_FLAG=$T/stop start_sup "$T/$name" \
	    --rdzv-backend esv --rdzv-endpoint "$EP" --rdzv-id stalljob \
	    --nnodes 2 --nproc-per-node 2 --max-restarts 0 \
	    --rdzv-conf "token_file=$T/token,last_call_timeout=1s,join_timeout=60s" \
	    --shutdown-timeout 3s --no-python -- "$WORKERS/peer_worker.py"
	eval "NODE_PID_$name=\$SUP_PID"
}
stall_node a
stall_node b
starts() { count_lines "$T/rec" "^start .*$1"; }
wait_for -t 30 eval '[ "$(starts world=4)" -ge 4 ]' ||
    fail "no first round: $(cat "$T/a.err" "$T/b.err")"
# Stop the store host of the latest round for $1 s; then both nodes must
# run a new round of 4 workers, the only cost of the stall.
stall()
{
	local host hpid stopped want=$(($(starts world=4) + 4))
	host=$(sed -n 's/^start node=\([ab]\) .*group_rank=0 .*/\1/p' "$T/rec" |
	    tail -1)
	eval "hpid=\$NODE_PID_$host"
	wait_state "$host" state running || fail "$host's state"
	note "$host (the store host) stopped for $1 s"
	kill -STOP "$hpid"
	stopped=$EPOCHREALTIME
	# The stall itself: the fault, not a wait for an event.
	sleep_until "$(awk -v t="$stopped" -v s="$1" 'BEGIN { printf "%.3f", t + s }')"
	kill -CONT "$hpid"
	wait_for -t 30 eval '[ "$(starts world=4)" -ge '"$want"' ]' ||
	    fail "no new round of 4 workers: $(cat "$T/rec" "$T/a.err" "$T/b.err")"
	assert_grep "$T/$host/events.jsonl" '"event":"rdzv.fenced"'
}
# Just past the lease less the grace (1.2 s): the stopped node fences
# when it goes on, the other's workers lose their peers before esv-rdzv
# tells it the round is over.
stall 1.4
# Past the lease and the server's drop: the other node restarts first.
stall 3
nodes_exit_0 30 a b
for n in a b; do
	assert_no_grep "$T/$n/events.jsonl" '"event":"(job\.failed|group\.restart)"' \
	    "$n's events"
	assert_eq "$(find "$T/$n" -name failure.json | wc -l)" 0 "$n's failure.json"
	# One membership restart a stall: each of its ranks started thrice.
	assert_eq "$(starts "node=$n")" 6 "$n's worker starts"
done
assert_eq "$(starts .)" 12 "worker starts"
# The guardian kills the stopped node's workers (L - G/4) before esv-rdzv
# drops it (L + G/2): the other's workers fail first, and their failures
# are the round's end.
cat "$T/a/events.jsonl" "$T/b/events.jsonl" | grep -q '"event":"rdzv.superseded"' ||
    fail "no rdzv.superseded event on either node"
exit 0
