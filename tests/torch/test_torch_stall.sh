#!/bin/bash
# Real PyTorch through a stall (esv-supervise(8), Stalls): 2 nodes x 2
# gloo workers, --nnodes 2 --max-restarts 0; the supervisor of the store
# host (group rank 0) is stopped mid-run for 1.4 s, then the next round's
# for 3 s, while its workers and its esv-stored run on.  Its lease runs out (its guardian kills its
# workers), the other node's all_reduce fails on the lost peers, and
# esv-rdzv ends the round: a membership change on both nodes, no failure
# counted.  The job must go on with a new round of 4 ranks, good sums,
# and both nodes exit 0.
ESV_TEST_DIR=$(cd "$(dirname "$0")/../integration" && pwd)
TORCH_DIR=$(cd "$(dirname "$0")" && pwd)
. "$ESV_TEST_DIR/lib.sh"
esv_setup 280
. "$ESV_TEST_DIR/rdzv.sh"
TORCH_PY=/usr/bin/python3
"$TORCH_PY" -c 'import torch.distributed' 2>/dev/null ||
    skip "$TORCH_PY cannot import torch (install python3-torch)"
export GLOO_SOCKET_IFNAME=lo

start_rdzv --heartbeat 300	# the default: a fifth of the default lease
tnode()
{
	local name=$1
	REC=$T/rec RZ_NODE=$name RZ_STOP_FLAG=$T/stop start_sup "$T/$name" \
	    --rdzv-backend c10d --rdzv-endpoint "$EP" --rdzv-id torchstall \
	    --nnodes 2 --nproc-per-node 2 --max-restarts 0 \
	    --rdzv-conf "token_file=$T/token,last_call_timeout=2s" \
	    --shutdown-timeout 5s --python "$TORCH_PY" -- \
	    "$TORCH_DIR/elastic_worker.py"
	eval "pid_$name=\$SUP_PID"
}
good() { local n; n=$(count_lines "$T/rec" " world=$1 .* ok=1 "); echo "${n:-0}"; }

tnode a
tnode b
wait_for -t 90 eval '[ "$(good 4)" -ge 4 ]' ||
    fail "no round of 4 ranks: $(cat "$T/rec" "$T/a.err" "$T/b.err" 2>&1)"
# Stop the store host of the latest round for $1 s; then a new round of 4
# ranks must run, with good sums.
stall()
{
	local host hpid stopped want=$(($(good 4) + 4))
	host=$(sed -n 's/^node=\([ab]\) .*group_rank=0 .*/\1/p' "$T/rec" | tail -1)
	eval "hpid=\$pid_$host"
	note "$host (the store host) stopped for $1 s"
	kill -STOP "$hpid"
	stopped=$EPOCHREALTIME
	# The stall itself: the fault, not a wait for an event.
	sleep_until "$(awk -v t="$stopped" -v s="$1" 'BEGIN { printf "%.3f", t + s }')"
	kill -CONT "$hpid"
	wait_for -t 120 eval '[ "$(good 4)" -ge '"$want"' ]' ||
	    fail "no new round of 4 after the stall: $(cat "$T/rec" "$T/a.err" "$T/b.err" 2>&1)"
}
# Just past the lease less the grace: the stopped node fences on waking,
# and the other's all_reduce fails before esv-rdzv ends the round.
stall 1.4
# Past the server's drop.
stall 3
touch "$T/stop"
for n in a b; do
	eval "p=\$pid_$n"
	wait_sup -t 60 "$p"
	assert_eq $? 0 "$n's exit status: $(cat "$T/$n.err")"
	assert_no_grep "$T/$n/events.jsonl" '"event":"(job\.failed|group\.restart)"' \
	    "$n's events"
done
assert_eq "$(count_lines "$T/rec" 'ok=0')" 0 "bad sums"
assert_eq "$(count_lines "$T/rec" ' world=4 ')" 12 "rank starts: three rounds of 4"
exit 0
