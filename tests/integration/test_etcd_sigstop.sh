#!/bin/bash
# A supervisor stopped (SIGSTOP) past its lease's TTL: the other node goes
# on without it; on SIGCONT it stops its stale workers before anything
# else and joins again.  Its esv-rdzv-etcd killed -9: the same, at once.
. "$(dirname "$0")/lib.sh"
esv_setup 150
RZ_BACKEND=etcd
RZ_LEASE_TTL=2s
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
RZ_NNODES=1:2 RZ_STOP_FLAG=$T/stop node a
RZ_NNODES=1:2 RZ_STOP_FLAG=$T/stop node b
for n in a b; do
	wait_recs $n ' world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
	wait_state $n state running || fail "$n's state"
done
stale=$(field "$(last_rec a)" pid)
esv_alive "$stale" || fail "a's worker $stale is not running"

note "a stopped: b goes on alone"
kill -STOP "$NODE_PID_a"
wait_recs -t 20 b ' world=1 ' 1 ||
    fail "b did not go on without a: $(tail -5 "$T/b.err")"
assert_eq "$(recs a .)" 1 "a's worker starts while stopped"

note "a continued: its stale worker stops first, then it joins again"
kill -CONT "$NODE_PID_a"
wait_for -t 10 eval '! esv_alive '"$stale" ||
    fail "a's stale worker $stale still runs after SIGCONT"
for n in a b; do
	wait_recs -t 30 $n ' world=2 ' 2 ||
	    fail "$n: no round of two after a came back: $(tail -5 "$T/$n.err")"
done
assert_grep "$T/a.err" 'stopping the workers'
ranks=$(for n in a b; do field "$(last_rec $n)" rank; done | sort | tr '\n' ' ')
assert_eq "$ranks" "0 1 " "ranks after a came back"

note "a's esv-rdzv-etcd killed: a restarts its workers, b with it"
helper=$(pgrep -f "esv-rdzv-etcd .*" -P "$NODE_PID_a")
[ -n "$helper" ] || fail "no esv-rdzv-etcd under a"
stale=$(field "$(last_rec a)" pid)
kill -9 "$helper"
wait_for -t 10 eval '! esv_alive '"$stale" ||
    fail "a's worker $stale runs on without its rendezvous"
for n in a b; do
	wait_recs -t 30 $n ' world=2 ' 3 ||
	    fail "$n: no round after the helper died: $(tail -5 "$T/$n.err")"
done

touch "$T/stop"
for n in a b; do
	eval "pid=\$NODE_PID_$n"
	wait_sup -t 30 "$pid"; assert_eq $? 0 "$n's exit status"
done
exit 0
