#!/bin/bash
# The command lines of torchrun's documentation, typed to esv-run as they
# are, each running an unchanged torch program (a gloo all_reduce): one
# node, standalone, fault-tolerant fixed size (two nodes, c10d, no token),
# elastic min:max, -m module, --no-python with a shell script, and
# --start_method spawn --run_path.
TEST_NAME=test_torch_esv_run
. "$(dirname "$0")/common.sh"

RUN=$ESV_BIN_DIR/esv-run
W=$TORCH_DIR/allreduce_worker.py
export XDG_RUNTIME_DIR=$T/xdg PYTHON_EXEC=$TORCH_PY
mkdir -m 700 "$XDG_RUNTIME_DIR"

# run NAME ARGS...: esv-run in the foreground, console in $T/NAME.out.
run() {
	local name=$1
	shift
	timeout 120 "$RUN" "$@" >"$T/$name.out" 2>"$T/$name.err"
}

# sums NAME N SUM: N workers printed their all_reduce, each SUM.
sums() {
	local n
	n=$(grep -c "^esv-test: .* sum=$3\$" "$T/$1.out")
	[ "$n" = "$2" ] || fail "$1: $n workers with sum=$3, wanted $2$(show console "$T/$1.out")$(show stderr "$T/$1.err")"
}

run single --nproc_per_node 2 "$W" || fail "single node exited $?$(show stderr "$T/single.err")"
sums single 2 3

run standalone --standalone --nnodes 1 --nproc-per-node 2 "$W" ||
    fail "standalone exited $?$(show stderr "$T/standalone.err")"
sums standalone 2 3

P=$(free_port)
for n in a b; do
	run ft$n --nnodes 2 --nproc_per_node 1 --max_restarts 3 --rdzv_id ft \
	    --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$P" "$W" &
	BG_PIDS+=("$!")
	eval "PID_$n=\$!"
done
wait "$PID_a" || fail "fault tolerant node a exited $?$(show stderr "$T/fta.err")"
wait "$PID_b" || fail "fault tolerant node b exited $?$(show stderr "$T/ftb.err")"
sums fta 1 3
sums ftb 1 3
grep -q "not authenticated" "$T/fta.err" || fail "no warning about the missing token$(show stderr "$T/fta.err")"
# Two agents of one job on one host: two job directories.
da=$(sed -n 's/.*job directory \([^ ]*\).*/\1/p' "$T/fta.err" | tail -1)
db=$(sed -n 's/.*job directory \([^ ]*\).*/\1/p' "$T/ftb.err" | tail -1)
[ -n "$da" ] && [ "$da" != "$db" ] || fail "the two nodes' job directories: '$da' and '$db'"

P=$(free_port)
for n in a b; do
	run el$n --nnodes 1:2 --nproc_per_node 1 --max_restarts 3 --rdzv_id el \
	    --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$P" \
	    --rdzv_conf last_call_timeout=3 "$W" &
	BG_PIDS+=("$!")
	eval "PID_$n=\$!"
done
wait "$PID_a" || fail "elastic node a exited $?$(show stderr "$T/ela.err")"
wait "$PID_b" || fail "elastic node b exited $?$(show stderr "$T/elb.err")"
sums ela 1 3
sums elb 1 3

PYTHONPATH=$TORCH_DIR run module --nproc_per_node 2 -m allreduce_worker ||
    fail "-m exited $?$(show stderr "$T/module.err")"
sums module 2 3

printf '#!/bin/sh\nexec %s %s "$@"\n' "$TORCH_PY" "$W" >"$T/w.sh"
chmod +x "$T/w.sh"
run nopython --no_python --nproc_per_node 2 "$T/w.sh" ||
    fail "--no_python exited $?$(show stderr "$T/nopython.err")"
sums nopython 2 3

run spawn --start_method spawn --run_path --nproc_per_node 2 "$W" ||
    fail "--start_method spawn --run_path exited $?$(show stderr "$T/spawn.err")"
sums spawn 2 3
grep -q "start-method spawn: ignored" "$T/spawn.err" || fail "no note on --start_method$(show stderr "$T/spawn.err")"
# Newer torch's --log-line-prefix-template and its local rank macro.
run prefix --nproc_per_node 2 --tee 3 --log-line-prefix-template 'r${local_rank}>' "$W" ||
    fail "--log-line-prefix-template exited $?$(show stderr "$T/prefix.err")"
for k in 0 1; do
	grep -q "^r$k>esv-test: RANK=$k .* sum=3\$" "$T/prefix.out" ||
	    fail "no line prefixed r$k>$(show console "$T/prefix.out")"
done
finish
