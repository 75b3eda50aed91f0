#!/bin/bash
# Whole hosts frozen (issue 41 on the bed of issue 36): every process of a
# node's host stops at once, supervisor, guardian, hosted helpers and
# workers, as a paused VM or a host that lost its CPU (netbed.sh's
# bed_freeze: the host's cgroup v2, cgroup.freeze).  A freeze longer than
# the lease costs at most one membership restart and no failure count; a
# freeze shorter than the stall tolerance costs nothing.
#
# The bed: the rendezvous on a host of its own (rz: esv-rdzv, or with
# RZ_BACKEND=etcd one etcd member), nodes a, b, c on theirs, --nnodes 3
# (ESV_FREEZE_NNODES=2:3: elastic, below), 2 workers each
# (workers/peer_worker.py: TCP connections to each other, as gloo's, so
# that a worker fails when a peer vanishes), --max-restarts 0: a failure
# counted anywhere ends the job.  First one freeze of 0.6 s, shorter than
# the stall tolerance (under 1 s costs nothing, esv-supervise(8),
# Stalls): no event of a restart, a fence or a membership change, no
# worker starts, on any node, within two leases.  Then ESV_FREEZE_ITERS
# times (default 4; more by hand; ESV_FREEZE_SEED replays a run): at a
# random moment while the workers run, a random node host is frozen for a
# random time between 1.2 and 3 leases, then thawed; the next round of
# 3 nodes must run, and then:
#	- no node counted a failure (restart_count 0, no group.restart,
#	  job.failed or failure.json);
#	- the freeze cost each node at most one new round (rdzv.round),
#	  and the frozen node logged rdzv.fenced;
#	- never two live workers with one global rank (fence_check.py);
# and at the end every node exits 0 and no process is left in a host.
#
# What "live" means for a frozen host: a frozen worker cannot act, but it
# still holds its rank and acts again the moment it is thawed, before the
# fence can kill it (the kernel thaws the guardian, the supervisor and the
# workers at once: the guardian's backstop cannot act during a freeze of
# its own host).  With --nnodes 3 a frozen worker counts as live until
# its supervisor reaped it (worker.exit), frozen or not: the strict
# definition holds, because no round forms without the frozen node, and
# that node joins again only once its supervisor, thawed, found its lease
# over and its old workers gone.
# With --nnodes 2:3 the other two run a round of world 4 with the frozen
# node's ranks while it is frozen (the freeze is longer than the lease:
# that is what the lease allows), so the strict definition cannot hold.
# There a worker of the frozen host holds its rank until the freeze
# began, provided it is dead (reaped) within the lease's grace G (a fifth
# of the lease: 300 ms with esv's defaults) of the thaw: the fence on
# waking kills at once, and G is the lateness the lease design allows a
# fence (esv-supervise(8), Leases).  A worker that outlives the thaw by
# more is a failure of the test (fence_check.py --frozen, --thaw-bound).
# So that only the fence's SIGKILL can end them, the workers of this
# variant are workers/fence_worker.sh, and the frozen node's ignore
# SIGTERM (peer_worker.py would end by itself on the thaw, its peers
# gone).  The others lose the node and have it back: two new rounds for
# them, one for the frozen node.
# On etcd too (suite rdzv-etcd): there a survivor's workers may fail
# (peers gone) before its esv-rdzv-etcd reports the new round, which its
# verdict's wait of one lease covers (esv-supervise(8), Leases); before
# that wait applied to etcd, about one freeze in 25 failed the job.
. "$(dirname "$0")/lib.sh"
ITERS=${ESV_FREEZE_ITERS:-4}
NNODES=${ESV_FREEZE_NNODES:-3}
esv_setup $((80 + 25 * ITERS))
. "$ESV_TEST_DIR/rdzv.sh"
. "$ESV_TEST_DIR/netbed.sh"
command -v python3 >/dev/null || skip "no python3"
SEED=${ESV_FREEZE_SEED:-$$}
RANDOM=$SEED
note "seed $SEED (ESV_FREEZE_SEED), $ITERS freezes (ESV_FREEZE_ITERS)," \
    "backend $RZ_BACKEND, --nnodes $NNODES (ESV_FREEZE_NNODES)"
case $NNODES in
3) ELASTIC= WORKER=peer_worker.py ;;
2:3) ELASTIC=1 WORKER=fence_worker.sh ;;
*) fail "ESV_FREEZE_NNODES=$NNODES: 3 or 2:3" ;;
esac

bed_init -f
bed_host rz
for n in a b c; do
	bed_host $n
done
if [ "$RZ_BACKEND" = etcd ]; then
	ETCD_BED=rz
	. "$ESV_TEST_DIR/etcd.sh"
	trap 'rc=$?; bed_thaw_all; esv_kill_tagged; bed_cleanup; (exit $rc); etcd_cleanup' EXIT
	start_etcd 1
	EP=$ETCD_EP
	# rz_conf's etcd lease (lease_ttl, RZ_LEASE_TTL: 2 s).
	LEASE_MS=$((RZ_LOSS_MS - 1000))
else
	bed_rdzv rz
	LEASE_MS=1500	# esv's default lease
fi
# The lease's grace: a fifth of it, 100 ms to 2 s (esv-supervise(8)).
G_MS=$((LEASE_MS / 5 < 100 ? 100 : LEASE_MS / 5 > 2000 ? 2000 : LEASE_MS / 5))
CONF=$(rz_conf "token_file=$T/token,last_call_timeout=1s,join_timeout=60s")
for n in a b c; do
	REC=$T/rec RZ_NODE=$n RZ_STOP_FLAG=$T/stop \
	    FENCE_STUBBORN=$T/stubborn.$n bed_sup $n "$T/$n" \
	    --rdzv-backend "$RZ_BACKEND" --rdzv-endpoint "$EP" \
	    --rdzv-id freezejob --nnodes "$NNODES" --nproc-per-node 2 --max-restarts 0 \
	    --rdzv-conf "$CONF" --shutdown-timeout 3s --no-python -- \
	    "$WORKERS/$WORKER"
	eval "NODE_PID_$n=\$SUP_PID"
done
starts() { count_lines "$T/rec" "^start .*$1"; }
evs() { count_lines "$T/$1/events.jsonl" "\"event\":\"($2)\""; }
wait_for -t 40 eval '[ "$(starts world=6)" -ge 6 ]' ||
    fail "no round of 3 nodes: $(cat "$T/a.err" "$T/rdzv.err" 2>/dev/null)"
for n in a b c; do
	# The bed's cgroup reached esv-supervise: its job's cgroups nest in
	# the host's and freeze with it.
	assert_eq "$(kv "$T/$n/supervise/state" containment)" cgroup2 \
	    "$n's containment ($(kv "$T/$n/supervise/state" containment_why))"
done

# Unix time, $1 ms after $2.
after() { awk -v t="$2" -v ms="$1" 'BEGIN { printf "%.3f", t + ms / 1000 }'; }
# Freeze host $1 for $2 ms: the fault itself, so a sleep, not a wait.
freeze()
{
	local t0
	bed_freeze "$1"
	t0=$EPOCHREALTIME
	sleep_until "$(after "$2" "$t0")"
	THAWED_AT=$EPOCHREALTIME
	bed_thaw "$1"
	FROZE_AT=$t0
}
no_failure()
{
	local n
	for n in a b c; do
		assert_eq "$(kv "$T/$n/supervise/state" restart_count)" 0 \
		    "$n's restart count $1"
		assert_no_grep "$T/$n/events.jsonl" '"event":"(group\.restart|job\.failed)"' \
		    "$n's events $1"
		assert_eq "$(find "$T/$n" -name failure.json | wc -l)" 0 \
		    "$n's failure.json files $1"
	done
}
failed_any()
{
	grep -qE '"event":"(job\.failed|supervisor\.exit)"' "$T"/[abc]/events.jsonl
}
# With an elastic --nnodes, the long freezes and the thaw's bound (the
# grace): see the head comment.
FROZEN=()
check_ranks()
{
	"$PY" "$ESV_TEST_DIR/fence_check.py" "${FROZEN[@]}" "$T/rec" \
	    "$T/a" "$T/b" "$T/c" >"$T/check" ||
	    fail "two live workers held one rank $1: $(cat "$T/check")"
}
pick() { local h=(a b c); echo "${h[RANDOM % 3]}"; }
# While the workers run: a random moment (up to a second) after they
# all started.  The fault's timing, not a wait.
random_moment() { sleep "$(awk -v r=$((RANDOM % 1000)) 'BEGIN { print r / 1000 }')"; }

# A freeze shorter than the stall tolerance costs nothing.  Had it cost
# anything, the node's drop (L + G/2 after its last word, 1.65 s with
# esv's defaults; the lease's expiry in etcd's 500 ms sweeps) and the
# events of a fence or a membership change would come within two leases
# of the freeze: the window that must stay quiet.
COSTLY='rdzv\.(round|fenced|membership|superseded)|group\.(stop|restart)|worker\.exit'
h=$(pick)
random_moment
for n in a b c; do
	eval "before_$n=\$(evs $n '$COSTLY')"
done
s0=$(starts .)
note "$h frozen for 600 ms (under the stall tolerance)"
freeze "$h" 600
sleep_until "$(after $((2 * LEASE_MS)) "$FROZE_AT")"
for n in a b c; do
	eval "b=\$before_$n"
	assert_eq "$(evs $n "$COSTLY")" "$b" \
	    "$n's events of a restart after a 600 ms freeze of $h: $(tail -5 "$T/$n/events.jsonl")"
done
assert_eq "$(starts .)" "$s0" "worker starts after a 600 ms freeze of $h"
no_failure "after a 600 ms freeze of $h"

for i in $(seq 1 "$ITERS"); do
	h=$(pick)
	ms=$((LEASE_MS * 12 / 10 + RANDOM % (LEASE_MS * 18 / 10)))
	want=$(($(starts world=6) + 6))
	w4=$(starts world=4)
	for n in a b c; do
		eval "rounds_$n=\$(evs $n rdzv.round)"
	done
	random_moment
	note "freeze $i of $ITERS: $h for $ms ms"
	[ -z "$ELASTIC" ] || touch "$T/stubborn.$h"
	freeze "$h" "$ms"
	# The next round, or a node's end (a failure counted) sooner.
	wait_for -t 60 eval '[ "$(starts world=6)" -ge '"$want"' ] || failed_any'
	no_failure "after freeze $i ($h, $ms ms)"
	[ "$(starts world=6)" -ge "$want" ] ||
	    fail "no new round after freeze $i ($h, $ms ms): $(tail -n 3 "$T/rec" "$T"/[abc].err)"
	rm -f "$T/stubborn.$h"
	t_new=$(sed -n 's/^start .* world=6 .* t=//p' "$T/rec" | sort -n |
	    tail -6 | head -1)
	t_dead=$(grep -h '"worker.exit"' "$T/$h/events.jsonl" | tail -1 |
	    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["time"])')
	note "  after the thaw: $h's old workers reaped in" \
	    "$(awk -v a="$THAWED_AT" -v b="$t_dead" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms," \
	    "the new round's first worker at" \
	    "$(awk -v a="$THAWED_AT" -v b="$t_new" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms" \
	    "${ELASTIC:+(world 4 while frozen: $(($(starts world=4) - w4)) workers)}"
	# Elastic, the others lose the node, then have it back: two rounds.
	for n in a b c; do
		eval "r=\$rounds_$n"
		[ -n "$ELASTIC" ] && [ "$n" != "$h" ] && r=$((r + 1))
		[ "$(evs $n rdzv.round)" -le $((r + 1)) ] ||
		    fail "$n had $(($(evs $n rdzv.round) - r)) rounds for freeze $i of $h: $(tail -8 "$T/$n/events.jsonl")"
	done
	assert_grep "$T/$h/events.jsonl" '"event":"rdzv.fenced"' \
	    "$h's events after freeze $i"
	[ -z "$ELASTIC" ] || FROZEN+=(--frozen "$h:$FROZE_AT:$THAWED_AT"
	    --thaw-bound "$(awk -v g=$G_MS 'BEGIN { print g / 1000 }')")
	check_ranks "after freeze $i ($h, $ms ms)"
done

nodes_exit_0 60 a b c
no_failure "at the end"
check_ranks "at the end"
assert_eq "$(starts world=6)" $((6 * (ITERS + 1))) \
    "worker starts of world 6: one round a freeze"
for n in a b c; do
	[ -n "$ELASTIC" ] ||
	    assert_eq "$(evs $n rdzv.round)" $((ITERS + 1)) "$n's rounds"
	wait_for -t 10 grep -qx 'populated 0' "$BED_CG/$n/cgroup.events" ||
	    fail "processes left on $n: $(cat "$BED_CG/$n/cgroup.procs")"
done
exit 0
