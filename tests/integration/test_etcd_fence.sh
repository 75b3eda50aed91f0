#!/bin/bash
# Fencing on etcd (issue 34, defect 1): a node cut off from etcd stops its
# workers before its lease can run out, so that the round the others form
# without it, once etcd has expired its lease, never runs a global rank
# that a worker of the cut-off node still holds.  Separate hosts (netbed):
# etcd on e, nodes a, b, c; the cable of the node holding rank 0 is pulled.
# Every worker appends its start to one file and, at start, looks for a
# live worker of its rank (workers/etcd_fence_worker.sh): "OVERLAP" there is
# two live workers with one global rank.  Before the fence the cut-off
# node's workers ran for the whole partition.  Its supervisor stops them
# by the lease's end that its esv-rdzv-etcd tells it.
# Then a round opened for another reason while a node is cut off (a new
# node waits, and there is room): with a lease longer than the round's
# own wait (5 s for the nodes expected back), the round must still wait
# for etcd to expire the cut-off node's lease; it once completed without
# it, giving its ranks away while its workers ran.
. "$(dirname "$0")/lib.sh"
esv_setup 170
. "$ESV_TEST_DIR/netbed.sh"
bed_init
bed_host e
for n in a b c d; do
	bed_host $n
done
ETCD_BED=e
. "$ESV_TEST_DIR/etcd.sh"
trap 'rc=$?; esv_kill_tagged; bed_cleanup; (exit $rc); etcd_cleanup' EXIT
start_etcd 1

LIVES=$T/lives
: >"$LIVES"
export LIVES
# The lease: etcd's 2 s (start_etcd's members would grant 1 s).
for n in a b c; do
	RZ_NODE=$n RZ_STOP_FLAG=$T/stop bed_sup $n "$T/$n" \
	    --rdzv-backend etcd --rdzv-endpoint "$ETCD_EP" --rdzv-id fence \
	    --nnodes 2:3 --nproc-per-node 2 \
	    --rdzv-conf last_call_timeout=1s,join_timeout=30s,lease=2s \
	    --shutdown-timeout 3s --no-python -- "$WORKERS/etcd_fence_worker.sh"
	eval "PID_$n=\$SUP_PID"
done
starts() { count_lines "$LIVES" "^start .* world=$1 "; }
wait_for -t 40 eval '[ "$(starts 6)" -ge 6 ]' ||
    fail "no round of three: $(cat "$LIVES"; tail -3 "$T"/[abc].err)"

cut=$(sed -n 's/^start node=\([abc]\) .* rank=0 world=6 .*/\1/p' "$LIVES")
[ -n "$cut" ] || fail "no rank 0: $(cat "$LIVES")"
stale=$(sed -n "s/^start node=$cut pid=\\([0-9]*\\) .* world=6 .*/\\1/p" \
    "$LIVES")
note "cutting $cut off (its workers: $stale)"
t_cut=$(date +%s.%N)
bed_link "$cut" down

# The survivors form world 4 (ranks 0..3: the cut node's 0 and 1 among
# them) once etcd has expired the cut node's lease.
wait_for -t 30 eval '[ "$(starts 4)" -ge 4 ]' ||
    fail "the survivors did not go on: $(cat "$LIVES"; tail -3 "$T"/[abc].err)"
assert_no_grep "$LIVES" '^OVERLAP' "two live workers with one global rank"
for p in $stale; do
	esv_alive "$p" && fail "$cut's worker $p of world 6 still runs"
done
# Its supervisor fences first, by the end its esv-rdzv-etcd told it, a
# grace before esv-rdzv-etcd would give the lease up itself.
assert_grep "$T/$cut.err" "esv-rdzv-etcd's lease in etcd is not renewed" \
    "the cut-off node's word"
t_new=$(sed -n 's/^start .* world=4 t=\(.*\)/\1/p' "$LIVES" | sort -n |
    head -1)
t_end=$(for p in $stale; do
	sed -n "s/^end pid=$p .* t=\\(.*\\)/\\1/p" "$LIVES"
done | sort -n | tail -1)
since_cut() { awk -v a="$t_cut" -v b="$1" 'BEGIN { printf "%.2f s", b - a }'; }
# A worker killed outright (SIGKILL) writes no end.
t_end=${t_end:+$(since_cut "$t_end")}
note "measured: after the cut, the cut-off workers' last end (SIGTERM):" \
    "${t_end:-none, killed}; the survivors' first worker: $(since_cut "$t_new")"
for n in a b c; do
	[ "$n" = "$cut" ] && continue
	wait_for -t 10 eval '[ "$(kv "$T/'$n'/supervise/state" state)" = running ]' ||
	    fail "$n's workers do not run: $(tail -3 "$T/$n.err")"
done

note "the cable back: $cut joins again, a round of three"
bed_link "$cut" up
wait_for -t 40 eval '[ "$(starts 6)" -ge 12 ]' ||
    fail "no round of three after the heal: $(cat "$LIVES"
	tail -5 "$T"/[abc].err)"
assert_no_grep "$LIVES" '^OVERLAP' "two live workers with one global rank"

touch "$T/stop"
for n in a b c; do
	eval "pid=\$PID_$n"
	wait_sup -t 30 "$pid"; assert_eq $? 0 "$n's exit status"
done
rm "$T/stop"

note "a lease of 10 s: a round opened for a newcomer waits for it to expire"
LIVES=$T/lives2
: >"$LIVES"
sup2()
{
	RZ_NODE=$1 RZ_STOP_FLAG=$T/stop bed_sup "$1" "$T/$1-2" \
	    --rdzv-backend etcd --rdzv-endpoint "$ETCD_EP" --rdzv-id held \
	    --nnodes 2:4 --nproc-per-node 2 \
	    --rdzv-conf last_call_timeout=1s,join_timeout=60s,lease=10s \
	    --shutdown-timeout 3s --no-python -- "$WORKERS/etcd_fence_worker.sh"
	eval "PID_$1=\$SUP_PID"
}
for n in a b c; do
	sup2 $n
done
wait_for -t 40 eval '[ "$(starts 6)" -ge 6 ]' ||
    fail "no round of three: $(cat "$LIVES"; tail -3 "$T"/[abc]-2.err)"
# The node with the highest ranks: the new round of a, b and d gives
# them to d, whatever the order of the ids.
cut=$(sed -n 's/^start node=\([abc]\) .* rank=5 world=6 .*/\1/p' "$LIVES")
[ -n "$cut" ] || fail "no rank 5: $(cat "$LIVES")"
bed_link "$cut" down
sup2 d
wait_for -t 40 eval '[ "$(starts 6)" -ge 12 ]' ||
    fail "no round without $cut: $(cat "$LIVES"; tail -3 "$T"/[abcd]-2.err)"
assert_no_grep "$LIVES" '^OVERLAP' "two live workers with one global rank"
bed_link "$cut" up
wait_for -t 40 eval '[ "$(starts 8)" -ge 8 ]' ||
    fail "$cut is not back: $(tail -3 "$T/$cut-2.err")"
assert_no_grep "$LIVES" '^OVERLAP' "two live workers with one global rank"

touch "$T/stop"
for n in a b c d; do
	eval "pid=\$PID_$n"
	wait_sup -t 40 "$pid"; assert_eq $? 0 "$n's exit status"
done
exit 0
