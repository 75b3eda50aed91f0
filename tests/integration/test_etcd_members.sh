#!/bin/bash
# The rendezvous on a 3-member etcd: the leader killed mid-job goes
# unnoticed; with quorum lost no keep-alive is answered, so the running
# workers are stopped before a lease could run out (esv-rdzv-etcd(8),
# Fencing: from a node, a lost quorum and a cut cable look the same) and
# no round forms; when quorum is back a waiting node is let in, and the
# ranks of the round that takes it are each held once.
. "$(dirname "$0")/lib.sh"
esv_setup 150
RZ_BACKEND=etcd
RZ_ETCD_MEMBERS=3
# An election (500 ms here) with the keep-alives' retries must fit in
# the lease less its grace and a quarter, or the nodes fence
# (esv-rdzv-etcd(8)): 2 s (fencing at 1.5 s) does not always.
RZ_LEASE_TTL=4s
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
RZ_NNODES=2:3 RZ_STOP_FLAG=$T/stop node a
RZ_NNODES=2:3 RZ_STOP_FLAG=$T/stop node b
for n in a b; do
	wait_recs $n 'world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
	wait_state $n state running || fail "$n's state"
done
# A node whose lease is lost is noticed within the TTL and etcd's 0.5 s
# sweep; whatever a kill would break shows within twice that.
window=9

note "the leader killed: nobody notices"
leader=$(etcd_leader) || fail "no etcd leader"
etcd_kill "$leader"
sleep_until $(($(date +%s) + window))
for n in a b; do
	assert_eq "$(recs $n .)" 1 "$n: worker starts after the leader died"
	assert_eq "$(kv "$T/$n/supervise/state" membership_restarts)" 0 \
	    "$n: membership restarts"
	assert_eq "$(kv "$T/$n/supervise/state" state)" running "$n: state"
done
etcd_restart "$leader"

note "quorum lost: the workers are fenced, no round forms"
lost=(0 1)
etcd_kill "${lost[0]}"
etcd_kill "${lost[1]}"
pids=$(sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$T/rec.a" "$T/rec.b")
RZ_NNODES=2:3 RZ_STOP_FLAG=$T/stop node c
for p in $pids; do
	wait_for -t 10 eval '! esv_alive '"$p" ||
	    fail "worker $p runs on with no keep-alive answered"
done
for n in a b; do
	assert_grep "$T/$n.err" "esv-rdzv-etcd's lease in etcd is not renewed"
done
sleep_until $(($(date +%s) + window))
for n in a b; do
	assert_eq "$(recs $n .)" 1 "$n: worker starts without quorum"
done
assert_eq "$(recs c .)" 0 "c's workers without quorum"

note "quorum back: c is let in, a and b restart with it"
etcd_run "${lost[0]}" existing
etcd_run "${lost[1]}" existing
wait_for -t 30 etcd_healthy "${lost[0]}" || fail "member ${lost[0]} unhealthy"
for n in a b c; do
	wait_recs -t 30 $n 'world=3 ' 1 ||
	    fail "$n: no round of 3: $(tail -5 "$T/$n.err")"
done
ranks=$(for n in a b c; do field "$(last_rec $n)" rank; done | sort | tr '\n' ' ')
assert_eq "$ranks" "0 1 2 " "ranks of the round of three"
assert_eq "$(kv "$T/a/supervise/state" rdzv_round)" \
    "$(kv "$T/c/supervise/state" rdzv_round)" "round of a and c"

touch "$T/stop"
for n in a b c; do
	eval "pid=\$NODE_PID_$n"
	wait_sup -t 30 "$pid"; assert_eq $? 0 "$n's exit status"
done
exit 0
