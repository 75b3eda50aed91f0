#!/usr/bin/env bash
# Fencing, measured (issue 34, defect 1): ITERATIONS (50) of a cable
# pulled, never a kill -9.  Three nodes on hosts of their own
# (tests/integration/netbed.sh), esv-rdzv on a fourth, --nnodes 2:3, 2
# workers each, the default lease (1.5 s); one job for the whole loop.
# Each iteration takes down the link of a random node, waits for the
# survivors' round of world 4 and for the cut-off node's workers to be
# reaped, heals the link and waits for the round of world 6 that takes
# the node back.  On odd iterations the cut-off node's workers ignore
# SIGTERM, so that only the fence's SIGKILL at the lease's end stops them.
#
# After every iteration tests/integration/fence_check.py checks every
# worker's RANK and lifetime (its own start record; its supervisor's
# worker.exit event): never two live workers with one global rank.
# Printed: per iteration, the fence time (cut -> the node's last worker
# reaped) and the detection time (cut -> a survivor's rdzv.membership
# event), and how long after the SIGKILL was due (rdzv.fenced's kill_at)
# the last worker was reaped (negative: gone on SIGTERM before); at the
# end their median and maximum, for SIGTERM and SIGKILL.
# Needs root (network namespaces).  Usage: bench/fence.sh [ITERATIONS [SEED]]
set -u
bench=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$bench")
build=$root/${ESV_BUILD:-build}
export ESV_BIN_DIR=${ESV_BIN_DIR:-$build/supervisor}
export ESV_TEST_DIR=$root/tests/integration
export FENCE_N=${FENCE_N:-${1:-50}} FENCE_SEED=${FENCE_SEED:-${2:-$$}}
. "$ESV_TEST_DIR/lib.sh"
esv_setup $((FENCE_N * 60 + 120))
. "$ESV_TEST_DIR/rdzv.sh"
. "$ESV_TEST_DIR/netbed.sh"
. "$ESV_TEST_DIR/fencebed.sh"
RANDOM=$FENCE_SEED
echo "bench/fence.sh: $FENCE_N iterations, seed $FENCE_SEED, $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

nodes=(a b c)
fence_bed fencebench 600s

# ms between t0 and the first (first) or last (last) time of event ev in
# events.jsonl files, after t0.
since()
{
	local t0=$1 ev=$2 which=$3
	shift 3
	cat "$@" | "$PY" -c 'import json, sys
t0, ev, which = float(sys.argv[1]), sys.argv[2], sys.argv[3]
ts = sorted(e["time"] for e in map(json.loads, sys.stdin)
    if e["event"] == ev and e["time"] > t0)
print(round(((ts[0] if which == "first" else ts[-1]) - t0) * 1000))' \
	    "$t0" "$ev" "$which"
}

: >"$T/results"
for ((i = 1; i <= FENCE_N; i++)); do
	cut=${nodes[RANDOM % 3]}
	others=()
	for n in "${nodes[@]}"; do
		[ "$n" = "$cut" ] || others+=("$T/$n/events.jsonl")
	done
	kind=term
	if [ $((i % 2)) = 1 ]; then
		kind=kill
		touch "$T/stubborn.$cut"
	fi
	n4=$(count_lines "$T/rec" " world=4 ")
	n6=$(count_lines "$T/rec" " world=6 ")
	nx=$(count_lines "$T/$cut/events.jsonl" '"worker.exit"')
	t_cut=$EPOCHREALTIME
	bed_link "$cut" down
	wait_for -t 30 eval '[ "$(count_lines "$T/rec" " world=4 ")" -ge $((n4 + 4)) ]' ||
	    fail "iteration $i: no world 4 without $cut: $(tail -3 "${others[0]%/events.jsonl}.err")"
	wait_for -t 10 eval '[ "$(count_lines "$T/$cut/events.jsonl" "\"worker.exit\"")" -ge $((nx + 2)) ]' ||
	    fail "iteration $i: $cut's workers were not reaped: $(tail -3 "$T/$cut.err")"
	"$PY" "$ESV_TEST_DIR/fence_check.py" "$T/rec" "$T/a" "$T/b" "$T/c" \
	    >"$T/check" || fail "iteration $i: $(cat "$T/check")"
	fence=$(since "$t_cut" worker.exit last "$T/$cut/events.jsonl")
	detect=$(since "$t_cut" rdzv.membership first "${others[@]}")
	# How late the last worker was reaped after the SIGKILL was due.
	late=$(grep -h '"rdzv.fenced"' "$T/$cut/events.jsonl" | tail -1 |
	    "$PY" -c 'import json, sys
print(round((float(sys.argv[1]) - json.load(sys.stdin)["kill_at"]) * 1000))' \
	    "$(awk -v a="$t_cut" -v f="$fence" 'BEGIN { printf "%.6f", a + f / 1000 }')")
	rm -f "$T/stubborn.$cut"
	bed_link "$cut" up
	wait_for -t 60 eval '[ "$(count_lines "$T/rec" " world=6 ")" -ge $((n6 + 6)) ]' ||
	    fail "iteration $i: $cut did not join again: $(tail -3 "$T/$cut.err")"
	echo "$kind $fence $detect $late" >>"$T/results"
	printf 'iteration %2d: cut %s (%s): fence %5d ms, detection %5d ms, reaped %4d ms after the SIGKILL was due\n' \
	    "$i" "$cut" "$kind" "$fence" "$detect" "$late"
done
"$PY" "$ESV_TEST_DIR/fence_check.py" "$T/rec" "$T/a" "$T/b" "$T/c" \
    >"$T/check" || fail "$(cat "$T/check")"
echo "workers checked: $(cat "$T/check"), never two live with one rank"
for n in "${nodes[@]}"; do
	echo "node $n: restart_count $(kv "$T/$n/supervise/state" restart_count)," \
	    "membership restarts $(kv "$T/$n/supervise/state" membership_restarts)"
done
"$PY" - "$T/results" <<'PYEOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("| cut-off node's workers | n | fence median | fence max | detection median | detection max | reaped after SIGKILL due, max |")
print("|---|---|---|---|---|---|---|")
for kind, what in (("term", "stop on SIGTERM"), ("kill", "ignore SIGTERM"),
                   (None, "all")):
    r = [x for x in rows if kind is None or x[0] == kind]
    if not r:
        continue
    f = [int(x[1]) for x in r]
    d = [int(x[2]) for x in r]
    k = [int(x[3]) for x in r]
    print("| %s | %d | %d ms | %d ms | %d ms | %d ms | %d ms |" % (
        what, len(r), statistics.median(f), max(f),
        statistics.median(d), max(d), max(k)))
PYEOF
touch "$T/stop"
for n in "${nodes[@]}"; do
	eval "p=\$pid_$n"
	wait_sup -t 30 "$p" || fail "node $n: exit $?"
done
exit 0
