#!/bin/bash
# The agent store lives until the job's last worker is done (esv-stored(8),
# "Lifetime"): the workers of the store host (group rank 0) exit 0 at
# once, those of the other node go on using the store 2 s more, then exit
# 0 (workers/b_mesh.py; a lost store is their failure): every node exits
# 0.  On esv-rdzv (the store goes after the exit barrier) and on the
# static backend (no barrier: node 0 keeps the store until no client is
# connected, exit_barrier_timeout at most).  AS_ONLY=esv or static runs
# only that part (to show one failing on a build).
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"

check_more()
{
	local n uses=0
	for n in "$@"; do
		assert_no_grep "$T/rec.$n" ' fail ' "$n's workers"
		uses=$((uses + $(count_lines "$T/rec.$n" ' done store_uses=[1-9]')))
	done
	# Every worker of group rank 1 used the store after rank 0's were gone.
	assert_eq "$uses" 2 \
	    "workers that used the store for 2 s more"
}

if [ "${AS_ONLY:-esv}" = esv ]; then
note "esv-rdzv: 2 nodes, the store host's workers done first"
start_rdzv
for n in a b; do
	REC=$T/rec.$n RZ_NODE=$n B_RUN=0.3 B_STORE_MORE_G1=2 \
	    start_sup "$T/$n" --rdzv-backend esv --rdzv-endpoint "$EP" \
	    --rdzv-id st1 --nnodes 2 --nproc-per-node 2 --max-restarts 0 \
	    --agent-store \
	    --rdzv-conf "token_file=$T/token,last_call_timeout=1s,join_timeout=30s,exit_barrier_timeout=30s" \
	    --no-python -- "$PY" "$WORKERS/b_mesh.py"
	eval "NODE_PID_$n=\$SUP_PID"
done
for n in a b; do
	eval "p=\$NODE_PID_$n"
	wait_sup -t 40 "$p"
	assert_eq $? 0 "$n's exit status: $(tail -n 5 "$T/$n.err")"
done
check_more a b
assert_eq "$(cat "$T/rec.a" "$T/rec.b" | grep -c ' start$')" 4 "worker starts"

fi

if [ "${AS_ONLY:-static}" = static ]; then
note "static: node 0 keeps the store for node 1's workers"
P=$(free_port)
for n in 0 1; do
	REC=$T/rec.s$n RZ_NODE=s$n B_RUN=0.3 B_STORE_MORE_G1=2 \
	    start_sup "$T/s$n" --nnodes 2 --node-rank "$n" --nproc-per-node 2 \
	    --master-addr 127.0.0.1 --master-port "$P" --max-restarts 0 \
	    --agent-store --rdzv-conf exit_barrier_timeout=30s \
	    --no-python -- "$PY" "$WORKERS/b_mesh.py"
	eval "NODE_PID_s$n=\$SUP_PID"
done
wait_sup -t 40 "$NODE_PID_s1"; assert_eq $? 0 "node 1's exit status: $(tail -n 5 "$T/s1.err")"
wait_sup -t 10 "$NODE_PID_s0"; assert_eq $? 0 "node 0's exit status: $(tail -n 5 "$T/s0.err")"
check_more s0 s1
assert_grep "$T/s0.err" 'agent store: kept for the other nodes'
assert_grep "$T/s0.err" 'agent store: no client left'
pgrep -f "esv-stored.*$T/s0" >/dev/null && fail "node 0's esv-stored outlived it"
fi
exit 0
