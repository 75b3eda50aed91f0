#!/bin/bash
# When a round completes: at once at max nodes; after the last call once
# min nodes are in; never, past the join timeout, with fewer than min.
# Nodes with different nproc get contiguous ranks (reference §3).
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
ms() { date +%s%3N; }

note "max nodes: complete at once despite a 30 s last call"
t0=$(ms)
RZ_JOB=max RZ_NNODES=1:2 RZ_CONF="token_file=$T/token,last_call_timeout=30s" node a \
    --nproc-per-node 1
RZ_JOB=max RZ_NNODES=1:2 RZ_CONF="token_file=$T/token,last_call_timeout=30s" node b \
    --nproc-per-node 3
wait_recs -t 10 a 'world=4 ' 1 || fail "max: no round: $(cat "$T/a.err")"
wait_recs -t 10 b 'world=4 ' 3 || fail "max: b: $(cat "$T/b.err")"
[ $(($(ms) - t0)) -lt 10000 ] || fail "round at max took $(($(ms) - t0)) ms"
ranks=$(cat "$T/rec.a" "$T/rec.b" | while read -r l; do field "$l" rank; done |
    sort | tr '\n' ' ')
assert_eq "$ranks" "0 1 2 3 " "ranks over nproc 1 + 3"
assert_eq "$(recs b 'local_world=3 ')" 3 "b: LOCAL_WORLD_SIZE"
a_rank=$(field "$(last_rec a)" rank)
a_grank=$(field "$(last_rec a)" group_rank)
# Group rank 0 holds ranks 0..lws-1 (a: one rank, b: three).
if [ "$a_grank" = 0 ]; then assert_eq "$a_rank" 0 "a's rank"
else assert_eq "$a_rank" 3 "a's rank"; fi
touch "$T/stop"

note "last call: min 1 max 3, one node waits the last call out"
t0=$(ms)
RZ_JOB=lastcall RZ_NNODES=1:3 \
    RZ_CONF="token_file=$T/token,last_call_timeout=1500ms" node c
wait_recs -t 10 c 'world=1 ' 1 || fail "last call: no round: $(cat "$T/c.err")"
dt=$(($(ms) - t0))
note "a round of 1 after ${dt} ms (last call 1500 ms)"
[ "$dt" -ge 1400 ] || fail "round completed after $dt ms, before the last call"
[ "$dt" -lt 6000 ] || fail "round completed only after $dt ms"

note "--local-addr: what group rank 0 publishes as MASTER_ADDR"
RZ_JOB=local RZ_NNODES=2:2 node e --local-addr 127.0.0.2
RZ_JOB=local RZ_NNODES=2:2 node f --local-addr 127.0.0.2
wait_recs e 'world=2 ' 1 || fail "local_addr: no round: $(cat "$T/e.err")"
assert_eq "$(field "$(last_rec e)" master | cut -d: -f1)" 127.0.0.2 \
    "MASTER_ADDR with --local-addr"

note "at max nodes a newcomer waits; closing the job turns it away"
RZ_JOB=full RZ_NNODES=1:1 RZ_STOP_FLAG=$T/stop.full node g
wait_recs g 'world=1 ' 1 || fail "full: no round: $(cat "$T/g.err")"
RZ_JOB=full RZ_NNODES=1:1 node h
wait_for -t 10 eval '[ "$(kv "$T/g/supervise/state" nodes_waiting)" = 1 ]' ||
    fail "g does not see h waiting: $(cat "$T/g/supervise/state")"
ctl status "$T/g" >"$T/status"
assert_grep "$T/status" 'nodes waiting 1'
assert_eq "$(recs h .)" 0 "h's workers while waiting"
touch "$T/stop.full"
wait_sup -t 20 "$NODE_PID_g"; assert_eq $? 0 "g's exit status"
wait_sup -t 10 "$NODE_PID_h"; assert_eq $? 1 "h's exit status"
assert_grep "$T/h.err" 'closed'

note "join timeout: min 2, one node, 2 s"
t0=$(ms)
RZ_JOB=lonely RZ_CONF="token_file=$T/token,join_timeout=2s" node d
wait_sup -t 20 "$NODE_PID_d"
rc=$?
dt=$(($(ms) - t0))
assert_eq "$rc" 1 "exit status after the join timeout"
[ "$dt" -ge 1900 ] && [ "$dt" -lt 8000 ] || fail "gave up after $dt ms"
assert_grep "$T/d.err" 'join_timeout'
assert_eq "$(recs d .)" 0 "workers started without a round"
assert_eq "$(kv "$T/d/supervise/state" state)" failed "d's state"
exit 0
