#!/bin/bash
# Every node of the round that runs loses its lease at once: etcd, which
# keeps its quorum, is out of their reach past the TTL (here a proxy in
# front of it is stopped).  Their joins are gone, so the round has nobody
# left in it.  Each node stopped its workers before its lease could run
# out (it fenced); when etcd answers again each asks for a new round, and
# the leader must open one for a round with no member left, as it does
# when one member is lost.  It once did only while a member still ran, so
# the nodes waited for each other until join_timeout and the job failed.
. "$(dirname "$0")/lib.sh"
esv_setup 120
RZ_BACKEND=etcd
RZ_LEASE_TTL=2s
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
"$PY" "$ESV_TEST_DIR/etcd_proxy.py" "${EP%%,*}" "$T/proxy.port" "" \
    >"$T/proxy.out" 2>&1 &
proxy_pid=$!
ESV_SUP_PIDS+=("$proxy_pid")
wait_for test -s "$T/proxy.port" || fail "the proxy did not start"
proxy=http://127.0.0.1:$(cat "$T/proxy.port")

RZ_NNODES=2:3 RZ_STOP_FLAG=$T/stop EP=$proxy node a
RZ_NNODES=2:3 RZ_STOP_FLAG=$T/stop EP=$proxy node b
for n in a b; do
	wait_recs $n ' world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
	wait_state $n state running || fail "$n's state"
done

note "etcd out of reach past the TTL: every lease expires"
kill -STOP "$proxy_pid"
wait_for -t 30 eval '! etcd_keys | grep /join/ >/dev/null' ||
    fail "the joins outlived their leases: $(etcd_keys)"
kill -CONT "$proxy_pid"

note "etcd back: a new round takes both nodes"
for n in a b; do
	wait_recs -t 30 $n ' world=2 ' 2 ||
	    fail "$n: no round after the leases expired: $(tail -5 "$T/$n.err")"
	# Its workers stopped before the lease could run out (Fencing): its
	# supervisor stopped them, by the end esv-rdzv-etcd told it.
	assert_grep "$T/$n.err" "esv-rdzv-etcd's lease in etcd is not renewed"
done
ranks=$(for n in a b; do field "$(last_rec $n)" rank; done | sort | tr '\n' ' ')
assert_eq "$ranks" "0 1 " "ranks of the new round"

touch "$T/stop"
for n in a b; do
	eval "pid=\$NODE_PID_$n"
	wait_sup -t 30 "$pid"; assert_eq $? 0 "$n's exit status"
done
exit 0
