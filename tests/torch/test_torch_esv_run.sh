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

# ranks WORLD NAME...: the workers of these runs are ranks 0..WORLD-1,
# once each, every one told WORLD_SIZE=WORLD and seeing it in torch.
ranks() {
	local world=$1 got want
	shift
	got=$(for n in "$@"; do
		sed -n "s/^esv-test: RANK=\([0-9]*\) .*WORLD_SIZE=$world .*get_rank=\1 get_world_size=$world .*/\1/p" "$T/$n.out"
	done | sort -n | tr '\n' ' ')
	want=$(seq 0 $((world - 1)) | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "$*: ranks '$got', wanted '$want' of $world"
}

run single --nproc_per_node 2 "$W" || fail "single node exited $?$(show stderr "$T/single.err")"
sums single 2 3
ranks 2 single

run standalone --standalone --nnodes 1 --nproc-per-node 2 "$W" ||
    fail "standalone exited $?$(show stderr "$T/standalone.err")"
sums standalone 2 3
ranks 2 standalone

# two_nodes NAME ARGS...: nodes NAMEa and NAMEb of one c10d job at a free
# port, at once, each with one worker; both must succeed.
two_nodes() {
	local name=$1 n pa pb
	shift
	P=$(free_port)
	for n in a b; do
		run "$name$n" --nproc_per_node 1 --max_restarts 3 \
		    --rdzv_id "$name" --rdzv_backend c10d \
		    --rdzv_endpoint "127.0.0.1:$P" "$@" "$W" &
		BG_PIDS+=("$!")
		[ $n = a ] && pa=$! || pb=$!
	done
	wait "$pa" || fail "$name node a exited $?$(show stderr "$T/${name}a.err")"
	wait "$pb" || fail "$name node b exited $?$(show stderr "$T/${name}b.err")"
}

two_nodes ft --nnodes 2
sums fta 1 3
sums ftb 1 3
ranks 2 fta ftb
grep -q "not authenticated" "$T/fta.err" || fail "no warning about the missing token$(show stderr "$T/fta.err")"
# Two agents of one job on one host: two job directories.
da=$(sed -n 's/.*job directory \([^ ]*\).*/\1/p' "$T/fta.err" | tail -1)
db=$(sed -n 's/.*job directory \([^ ]*\).*/\1/p' "$T/ftb.err" | tail -1)
[ -n "$da" ] && [ "$da" != "$db" ] || fail "the two nodes' job directories: '$da' and '$db'"

two_nodes el --nnodes 1:2 --rdzv_conf last_call_timeout=3
sums ela 1 3
sums elb 1 3
ranks 2 ela elb

PYTHONPATH=$TORCH_DIR run module --nproc_per_node 2 -m allreduce_worker ||
    fail "-m exited $?$(show stderr "$T/module.err")"
sums module 2 3
ranks 2 module

printf '#!/bin/sh\nexec %s %s "$@"\n' "$TORCH_PY" "$W" >"$T/w.sh"
chmod +x "$T/w.sh"
run nopython --no_python --nproc_per_node 2 "$T/w.sh" ||
    fail "--no_python exited $?$(show stderr "$T/nopython.err")"
sums nopython 2 3
ranks 2 nopython

run spawn --start_method spawn --run_path --nproc_per_node 2 "$W" ||
    fail "--start_method spawn --run_path exited $?$(show stderr "$T/spawn.err")"
sums spawn 2 3
grep -q "start-method spawn: ignored" "$T/spawn.err" || fail "no note on --start_method$(show stderr "$T/spawn.err")"
# torch's local rank macro: ${local_rank} in the script's arguments
# becomes each worker's LOCAL_RANK.
printf '#!/bin/sh\n[ "$1" = "--local-rank=$LOCAL_RANK" ] || { echo "macro: $1" >&2; exit 3; }\nshift\nexec %s %s "$@"\n' "$TORCH_PY" "$W" >"$T/m.sh"
chmod +x "$T/m.sh"
run macro --no-python --nproc_per_node 2 "$T/m.sh" '--local-rank=${local_rank}' ||
    fail "the local rank macro exited $?$(show stderr "$T/macro.err")"
sums macro 2 3
ranks 2 macro

# Newer torch's --log-line-prefix-template and its local rank macro.
run prefix --nproc_per_node 2 --tee 3 --log-line-prefix-template 'r${local_rank}>' "$W" ||
    fail "--log-line-prefix-template exited $?$(show stderr "$T/prefix.err")"
for k in 0 1; do
	grep -q "^r$k>esv-test: RANK=$k .* sum=3\$" "$T/prefix.out" ||
	    fail "no line prefixed r$k>$(show console "$T/prefix.out")"
done
finish
