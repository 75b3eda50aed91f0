#!/bin/bash
# Real PyTorch under the esv rendezvous (and on etcd, RZ_BACKEND=etcd): 2 nodes x 2 workers (nnodes 2:3)
# all_reduce with gloo; a third node joins and the job goes on with world
# size 6; the third node is killed (kill -9 of its supervisor) and the job
# goes on with world size 4.  Every round's sum is checked by the workers.
# The node of group rank 0 serves each attempt's store (torch 1.13's
# workers prefix its keys with the restart count), and the kill may take
# the store with it: the others restart.  AGENT_STORE=0
# (--agent-store=false): worker rank 0 hosts it.
ESV_TEST_DIR=$(cd "$(dirname "$0")/../integration" && pwd)
TORCH_DIR=$(cd "$(dirname "$0")" && pwd)
. "$ESV_TEST_DIR/lib.sh"
esv_setup 280
. "$ESV_TEST_DIR/rdzv.sh"
TORCH_PY=/usr/bin/python3
"$TORCH_PY" -c 'import torch.distributed' 2>/dev/null ||
    skip "$TORCH_PY cannot import torch (install python3-torch)"
export GLOO_SOCKET_IFNAME=lo

start_rdzv
tnode()
{
	local name=$1
	local backend=c10d
	# torchrun's name for either: c10d is esv-rdzv, etcd is etcd v3.
	[ "$RZ_BACKEND" = etcd ] && backend=etcd
	local agent=()
	[ "${AGENT_STORE:-1}" = 0 ] && agent=(--agent-store=false)
	REC=$T/rec RZ_NODE=$name RZ_STOP_FLAG=$T/stop start_sup "$T/$name" \
	    "${agent[@]}" --rdzv-backend $backend --rdzv-endpoint "$EP" --rdzv-id torchjob \
	    --nnodes 2:3 --nproc-per-node 2 --max-restarts 3 \
	    --rdzv-conf "$(rz_conf "token_file=$T/token,last_call_timeout=2s")" \
	    --shutdown-timeout 5s --python "$TORCH_PY" -- \
	    "$TORCH_DIR/elastic_worker.py"
	eval "pid_$name=\$SUP_PID"
}
good() { local n; n=$(count_lines "$T/rec" "world=$1 .* ok=1 "); echo "${n:-0}"; }

tnode a
tnode b
wait_for -t 60 eval '[ "$(good 4)" -ge 4 ]' ||
    fail "no round of 4 ranks: $(cat "$T/rec" "$T/a.err" "$T/b.err" 2>&1)"
assert_eq "$(count_lines "$T/rec" 'ok=0')" 0 "bad sums"
note "2 nodes x 2 workers: sum 10 on every rank"

tnode c
wait_for -t 90 eval '[ "$(good 6)" -ge 6 ]' ||
    fail "no round of 6 ranks: $(cat "$T/rec" "$T/c.err" 2>&1)"
assert_eq "$(count_lines "$T/rec" 'ok=0')" 0 "bad sums"
ranks=$(grep 'world=6 ' "$T/rec" | sed 's/.* rank=\([0-9]*\) .*/\1/' | sort -n |
    tr '\n' ' ')
assert_eq "$ranks" "0 1 2 3 4 5 " "ranks of the round of 6"
note "third node joined: sum 21 on 6 ranks"

before=$(good 4)
kill -KILL "$pid_c"
wait_for -t 90 eval '[ "$(good 4)" -ge $((before + 4)) ]' ||
    fail "no new round of 4 after the kill: $(cat "$T/rec" "$T/a.err" "$T/b.err" 2>&1)"
note "third node killed: sum 10 on 4 ranks again"

touch "$T/stop"
wait_sup -t 60 "$pid_a"; assert_eq $? 0 "a's exit status"
wait_sup -t 60 "$pid_b"; assert_eq $? 0 "b's exit status"
assert_eq "$(count_lines "$T/rec" 'ok=0')" 0 "bad sums"
if [ "${AGENT_STORE:-1}" = 1 ]; then
	served=$(cat "$T/a.err" "$T/b.err" "$T/c.err" 2>/dev/null |
	    grep -c 'agent store: esv-stored (pid [0-9]*) serves the workers')
	note "esv-stored served $served attempt(s)"
	[ "$served" -ge 3 ] || fail "esv-stored served $served attempts, not one a round"
	assert_eq "$(cat "$T/a/workers/0/env/TORCHELASTIC_USE_AGENT_STORE")" True \
	    "a's workers told of the agent's store"
fi
exit 0
