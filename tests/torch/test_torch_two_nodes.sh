#!/bin/bash
# A 2 x 2 static job: two esv-supervise processes on this host, node
# ranks 0 and 1, separate JOBDIRs, one --master-addr:--master-port.
# Worker rank 0 (on node 0) hosts torch's store there; the four ranks
# all_reduce rank+1 and must get 10, each with WORLD_SIZE 4 and its
# static RANK = node_rank * 2 + local_rank.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_torch_two_nodes.sh
TEST_NAME=test_torch_two_nodes
. "$(dirname "$0")/common.sh"

W=$TORCH_DIR/allreduce_worker.py
port=$(free_port)
# Node 0's supervisor serves the store on the port (esv-stored on a socket
# it bound), and every worker is told so; AGENT_STORE=0: worker rank 0
# hosts it (--agent-store=false).
agent=()
use=True
if [ "${AGENT_STORE:-1}" = 0 ]; then
	agent=(--agent-store=false)
	use=False
fi
for node in 0 1; do
	mkdir -p "$T/job$node"
	timeout 80 "$SUP" "${agent[@]}" --nnodes 2 --node-rank "$node" --nproc-per-node 2 \
	    --master-addr 127.0.0.1 --master-port "$port" \
	    --python "$TORCH_PY" -t 3 --log-dir "$T/logs$node" \
	    "$T/job$node" -- "$W" >"$T/out$node" 2>"$T/err$node" &
	pid[$node]=$!
	BG_PIDS+=("$!")
done
for node in 0 1; do
	wait "${pid[$node]}"
	rc=$?
	[ "$rc" -eq 0 ] ||
	    fail "node $node: esv-supervise exited $rc, wanted 0$(show stderr "$T/err$node")"
done
BG_PIDS=()

for node in 0 1; do
	J=$T/job$node
	assert_workers_gone "$J" "$W"
	grep -q '^state=succeeded$' "$J/supervise/state" ||
	    fail "node $node: not succeeded$(show state "$J/supervise/state")"
	for lr in 0 1; do
		r=$((node * 2 + lr))
		want="esv-test: RANK=$r LOCAL_RANK=$lr WORLD_SIZE=4"
		want="$want GROUP_RANK=$node MASTER_PORT=$port get_rank=$r"
		want="$want get_world_size=4 sum=10"
		log=$(echo "$T/logs$node"/none_*/attempt_0/"$lr"/stdout.log)
		grep -qxF -- "$want" "$log" ||
		    fail "node $node rank $r: wanted '$want'$(show log "$log")$(show stderr "${log%stdout.log}stderr.log")"
		grep -qxF -- "[default$lr]:$want" "$T/out$node" ||
		    fail "node $node rank $r: console lacks the tee'd line$(show console "$T/out$node")"
		envd=$J/workers/$lr/env
		for kv in RANK=$r WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=$node \
		    GROUP_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
		    TORCHELASTIC_USE_AGENT_STORE=$use; do
			[ "$(cat "$envd/${kv%%=*}" 2>/dev/null)" = "${kv#*=}" ] ||
			    fail "node $node rank $r: env/${kv%%=*} is not ${kv#*=}"
		done
	done
	[ "$(grep -c '^\[default[01]\]:esv-test:' "$T/out$node")" -eq 2 ] ||
	    fail "node $node: wanted 2 result lines$(show console "$T/out$node")"
done

finish
