#!/bin/bash
# Two nodes in two network namespaces joined by a veth pair, so that
# MASTER_ADDR is a real address and not loopback.  Node a hosts esv-rdzv
# itself (the endpoint is its own address: torch's is_host).  Workers of
# both nodes meet at MASTER_ADDR:MASTER_PORT, which worker rank 0 binds
# (--agent-store=false).  Then b's link goes down
# without a FIN: the heartbeat must notice within 2 s and a carries on
# alone (nodes 1:2).
. "$(dirname "$0")/lib.sh"
esv_setup 150
. "$ESV_TEST_DIR/rdzv.sh"

[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "ip(8) (iproute2) is not installed"
NSA=esv-a-$$ NSB=esv-b-$$
ip netns add "$NSA" 2>"$T/ns.err" || skip "ip netns add refused: $(cat "$T/ns.err")"
cleanup_ns() { ip netns del "$NSA" 2>/dev/null; ip netns del "$NSB" 2>/dev/null; }
trap 'rc=$?; esv_kill_tagged; cleanup_ns; (exit $rc); esv_cleanup' EXIT
ip netns add "$NSB" || fail "ip netns add $NSB"
ip link add "va$$" type veth peer name "vb$$" 2>"$T/ns.err" ||
    skip "veth refused: $(cat "$T/ns.err")"
ip link set "va$$" netns "$NSA" && ip link set "vb$$" netns "$NSB" ||
    fail "moving the veth ends"
ip -n "$NSA" addr add 10.77.0.1/24 dev "va$$" &&
ip -n "$NSB" addr add 10.77.0.2/24 dev "vb$$" &&
ip -n "$NSA" link set lo up && ip -n "$NSB" link set lo up &&
ip -n "$NSA" link set "va$$" up && ip -n "$NSB" link set "vb$$" up ||
    fail "configuring the veth pair"

make_token "$T/token"
EP=10.77.0.1:29400
conf="token_file=$T/token,last_call_timeout=1s,join_timeout=30s"
netnode()
{
	local ns=$1 name=$2
	SUP_PREFIX=(ip netns exec "$ns")
	REC=$T/rec RZ_NODE=$name RZ_STOP_FLAG=$T/stop start_sup "$T/$name" \
	    --rdzv-backend esv --rdzv-endpoint "$EP" --rdzv-id netjob \
	    --nnodes 1:2 --rdzv-conf "$conf" --shutdown-timeout 3s \
	    --agent-store=false --python "$PY" -- "$WORKERS/rz_net.py"
	SUP_PREFIX=()
}
netnode "$NSA" a
pid_a=$SUP_PID
wait_for -t 10 grep -q 'hosting esv-rdzv' "$T/a.err" ||
    fail "a does not host esv-rdzv: $(cat "$T/a.err")"
netnode "$NSB" b
pid_b=$SUP_PID
wait_for -t 30 eval '[ "$(count_lines "$T/rec" "world=2 ")" -ge 2 ]' ||
    fail "no round of 2: a: $(cat "$T/a.err") b: $(cat "$T/b.err")"
master=$(grep 'world=2 ' "$T/rec" | head -1 | sed 's/.*master=\([^ ]*\).*/\1/')
case $master in
10.77.0.[12]:*) ;;
*) fail "MASTER_ADDR:PORT is $master, not an address of the veth pair" ;;
esac
assert_eq "$(grep 'world=2 ' "$T/rec" | grep -c 'result=ok')" 1 \
    "rank 0 got every rank's message"
assert_eq "$(grep 'world=2 ' "$T/rec" | grep -c 'result=sent')" 1 \
    "rank 1 reached MASTER_ADDR"
note "MASTER_ADDR:PORT $master reached across the namespaces"

note "b's link goes down: no FIN, only silence"
t0=$(date +%s%3N)
ip -n "$NSB" link set "vb$$" down
wait_for -t 10 grep -q '"rdzv.membership"' "$T/a/events.jsonl" ||
    fail "a never noticed b's loss: $(cat "$T/a.err")"
t1=$(grep -h '"rdzv.membership"' "$T/a/events.jsonl" | head -1 |
    "$PY" -c 'import json,sys; print(int(json.load(sys.stdin)["time"]*1000))')
note "b's loss noticed by a after $((t1 - t0)) ms"
[ $((t1 - t0)) -le 2000 ] || fail "b's loss noticed after $((t1 - t0)) ms"
wait_for -t 20 eval '[ "$(count_lines "$T/rec" "node=a rank=0 world=1 ")" -ge 1 ]' ||
    fail "a did not go on alone: $(cat "$T/a.err")"
esv_alive "$pid_b" || fail "b's supervisor died with its link"
exit 0
