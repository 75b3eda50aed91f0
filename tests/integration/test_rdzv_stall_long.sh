#!/bin/bash
# A stall longer than the lease costs at most one membership restart
# (esv-supervise(8), Leases): the supervisor of the store host (group rank
# 0) is stopped for 3 s mid-run, its workers and its esv-stored run on.
# esv-rdzv drops it, the other node restarts for a new round, and the
# stopped node's workers, which hold TCP connections to the other node's
# as gloo's do (workers/peer_worker.py), fail while their agent is
# stopped.  Going on, that agent must find its round over first: a fence,
# its workers' exits no failure (--max-restarts 0 would end the job), no
# failure.json; it joins again and both nodes run the next round and
# exit 0.
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
host=$(sed -n 's/^start node=\([ab]\) .*group_rank=0 .*/\1/p' "$T/rec" | head -1)
other=$([ "$host" = a ] && echo b || echo a)
eval "hpid=\$NODE_PID_$host"
wait_state "$host" state running || fail "$host's state"

note "$host (the store host) stopped for 3 s"
kill -STOP "$hpid"
stopped=$EPOCHREALTIME
# The other node restarts (esv-rdzv dropped the stopped one), and the
# stopped node's workers lose their peers; then it goes on.
wait_for -t 20 grep -q '"event":"rdzv.membership"' "$T/$other/events.jsonl" ||
    fail "$other saw no membership change: $(cat "$T/$other.err")"
# The stall itself: the fault, not a wait for an event.
sleep_until "$(awk -v t="$stopped" 'BEGIN { printf "%.3f", t + 3 }')"
kill -CONT "$hpid"
# Both run the next round, with 4 workers again.
wait_for -t 30 eval '[ "$(starts world=4)" -ge 8 ]' ||
    fail "no second round of 4 workers: $(cat "$T/rec" "$T/a.err" "$T/b.err")"
touch "$T/stop"
for n in a b; do
	eval "p=\$NODE_PID_$n"
	wait_sup -t 30 "$p"
	assert_eq $? 0 "$n's exit status: $(cat "$T/$n.err")"
	assert_no_grep "$T/$n/events.jsonl" '"event":"(job\.failed|group\.restart)"' \
	    "$n's events"
	assert_eq "$(find "$T/$n" -name failure.json | wc -l)" 0 "$n's failure.json"
	# At most one membership restart: each of its ranks started twice.
	assert_eq "$(starts "node=$n")" 4 "$n's worker starts"
done
assert_grep "$T/$host/events.jsonl" '"event":"rdzv.fenced"'
assert_no_grep "$T/$host.err" 'job failed|worker group failed'
assert_eq "$(starts .)" 8 "worker starts"
exit 0
