#!/bin/bash
# Four workers on one node run an unchanged torch program: env:// with
# torch's defaults, gloo all_reduce of rank+1.  esv gives
# TORCHELASTIC_USE_AGENT_STORE=True, and the workers use the esv-stored the
# supervisor runs on MASTER_PORT; with AGENT_STORE=0 (--agent-store=false)
# it gives False, so worker rank 0 hosts the store there, as torch 1.13.
# Each worker's reported sum must be 10.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_torch_allreduce.sh
TEST_NAME=test_torch_allreduce
. "$(dirname "$0")/common.sh"

J=$T/job
L=$T/logs
W=$TORCH_DIR/allreduce_worker.py
mkdir -p "$J"
agent=()
use=True
if [ "${AGENT_STORE:-1}" = 0 ]; then
	agent=(--agent-store=false)
	use=False
fi
timeout 80 "$SUP" "${agent[@]}" --nproc-per-node 4 --python "$TORCH_PY" -t 3 \
    --log-dir "$L" "$J" -- "$W" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] || fail "esv-supervise exited $rc, wanted 0$(show stderr "$T/err")"
assert_workers_gone "$J" "$W"

port=$(sed -n 's/^master_port=//p' "$J/supervise/state")
grep -q '^state=succeeded$' "$J/supervise/state" ||
    fail "supervise/state is not succeeded$(show state "$J/supervise/state")"

runs=("$L"/none_*)
[ "${#runs[@]}" -eq 1 ] && [ -d "${runs[0]}" ] ||
    fail "wanted one run directory in $L, got: ${runs[*]}"
attempts=$(find "$L" -mindepth 2 -maxdepth 2 -name 'attempt_*' | wc -l)
[ "$attempts" -eq 1 ] || fail "wanted only attempt_0, got $attempts attempts"

for k in 0 1 2 3; do
	want="esv-test: RANK=$k LOCAL_RANK=$k WORLD_SIZE=4 GROUP_RANK=0"
	want="$want MASTER_PORT=$port get_rank=$k get_world_size=4 sum=10"
	log=${runs[0]}/attempt_0/$k/stdout.log
	n=$(grep -c '^esv-test:' "$log" 2>/dev/null)
	[ "$n" = 1 ] || fail "rank $k: $n result lines in $log$(show log "$log")"
	grep -qxF -- "$want" "$log" ||
	    fail "rank $k: wanted '$want'$(show log "$log")$(show stderr "${log%stdout.log}stderr.log")"
	# -t 3 tees: the same line on the console with the torch prefix.
	grep -qxF -- "[default$k]:$want" "$T/out" ||
	    fail "rank $k: console lacks '[default$k]:$want'$(show console "$T/out")"
	grep -q '^state=succeeded$' "$J/workers/$k/state" &&
	    grep -q '^exit_code=0$' "$J/workers/$k/state" ||
	    fail "workers/$k/state is not a success$(show state "$J/workers/$k/state")"
	# USE_AGENT_STORE=False is what makes rank 0 host the store.
	[ "$(cat "$J/workers/$k/env/TORCHELASTIC_USE_AGENT_STORE")" = $use ] ||
	    fail "rank $k: TORCHELASTIC_USE_AGENT_STORE is not $use"
done
[ "$(grep -c '^\[default[0-3]\]:esv-test:' "$T/out")" -eq 4 ] ||
    fail "wanted 4 result lines on the console$(show console "$T/out")"
grep -q 'FAILED' "$T/err" && fail "a failure summary on success$(show stderr "$T/err")"
if [ "$use" = True ]; then
	grep -q "agent store: esv-stored (pid [0-9]*) serves the workers at 127.0.0.1:$port$" "$T/err" ||
	    fail "no esv-stored served port $port$(show stderr "$T/err")"
	pgrep -x esv-stored -P "$$" >/dev/null && fail "esv-stored outlived the job"
fi

finish
