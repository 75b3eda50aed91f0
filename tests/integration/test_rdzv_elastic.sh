#!/bin/bash
# Elastic membership through the rendezvous: nodes 2:3 on loopback form a
# round, a third node scales the job up, a kill -9 scales it down; restarts
# caused by membership cost nothing (TORCHELASTIC_RESTART_COUNT stays 0).
. "$(dirname "$0")/lib.sh"
esv_setup 170
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
# a's output goes to files too (-t 3): a membership restart keeps them.
node a -t 3
node b
wait_recs a 'world=2 ' 1 || fail "a: no round of 2: $(cat "$T/a.err")"
wait_recs b 'world=2 ' 1 || fail "b: no round of 2: $(cat "$T/b.err")"
ra=$(last_rec a) rb=$(last_rec b)
assert_eq "$(field "$ra" group_world)" 2 "a: GROUP_WORLD_SIZE"
assert_eq "$(( $(field "$ra" group_rank) + $(field "$rb" group_rank) ))" 1 \
    "group ranks of a and b"
assert_eq "$(field "$ra" master)" "$(field "$rb" master)" "MASTER_ADDR:PORT"
assert_eq "$(field "$ra" master | cut -d: -f1)" 127.0.0.1 "MASTER_ADDR"
assert_eq "$(field "$ra" agent_store)" True "TORCHELASTIC_USE_AGENT_STORE (the default)"
wait_state a rdzv_round 0 || fail "round"
assert_eq "$(kv "$T/a/supervise/state" rdzv_endpoint)" "$EP" "rdzv_endpoint"
ctl status "$T/a" >"$T/status" || fail "esv-ctl status"
assert_grep "$T/status" 'round'

note "scale up: a third node"
node c
for n in a b c; do
	wait_recs $n 'world=3 ' 1 || fail "$n: no round of 3: $(cat "$T/$n.err")"
done
for n in a b c; do
	assert_eq "$(field "$(last_rec $n)" restart)" 0 "$n: restart count"
done
wait_state a rdzv_round 1 || fail "round after scale up"
assert_eq "$(kv "$T/a/supervise/state" membership_restarts)" 1 \
    "a: membership restarts"
ranks=$(for n in a b c; do field "$(last_rec $n)" rank; done | sort | tr '\n' ' ')
assert_eq "$ranks" "0 1 2 " "ranks of the three nodes"
# The round of 2's output is still there beside the round of 3's.
R=$(dirname "$(kv "$T/a/supervise/state" attempt_dir)")
assert_eq "$(kv "$T/a/supervise/state" attempt_dir)" "$R/attempt_0.1" "a: attempt_dir after the scale up"
assert_grep "$R/attempt_0/0/stdout.log" '^rz_worker pid=[0-9]+ world=2 ' "a: the first round's log"
wait_for -t 10 grep -q '^rz_worker pid=[0-9]* world=3 ' "$R/attempt_0.1/0/stdout.log" ||
    fail "a: the second round's log: $(ls -R "$R")"

note "scale down: kill -9 of c's supervisor"
t0=$(date +%s%3N)
kill -KILL "$NODE_PID_c"
for n in a b; do
	wait_recs -t 15 $n 'world=2 ' 2 ||
	    fail "$n: no new round of 2 after c died: $(cat "$T/$n.err")"
done
t1=$(grep -h '"rdzv.membership"' "$T/a/events.jsonl" | tail -1 |
    "$PY" -c 'import json,sys; print(int(json.load(sys.stdin)["time"]*1000))')
note "node loss noticed by a after $((t1 - t0)) ms"
[ $((t1 - t0)) -le "$RZ_LOSS_MS" ] ||
    fail "node loss noticed after $((t1 - t0)) ms (bound $RZ_LOSS_MS ms)"
for n in a b; do
	assert_eq "$(field "$(last_rec $n)" restart)" 0 "$n: restart count"
done
# Where the job lives: esv-rdzv logs it; etcd holds keys named after it.
if [ "$RZ_BACKEND" = esv ]; then
	assert_grep "$RDZV_ERR" 'job job1'
else
	etcd_keys >"$T/keys"
	assert_grep "$T/keys" 'job1' "etcd's keys"
fi
kill -0 "$NODE_PID_a" && kill -0 "$NODE_PID_b" || fail "a survivor died"

note "below min nodes: the survivor waits for a join"
kill -KILL "$NODE_PID_b"
wait_for -t 10 eval '[ "$(kv "$T/a/supervise/state" state)" = joining ]' ||
    fail "a is not waiting for a join: $(kv "$T/a/supervise/state" state)"
# A round of one, below the 2 nodes the job needs, would close at the
# latest last_call_timeout (1 s) after a joined: wait 0.5 s past that.
sleep_until "$(awk -v t="$(kv "$T/a/supervise/state" since)" 'BEGIN { printf "%.3f", t + 1.5 }')"
assert_eq "$(kv "$T/a/supervise/state" state)" joining "a's state, alone"
ctl status "$T/a" >"$T/status"
assert_grep "$T/status" 'joining'
node d
wait_recs a 'world=2 ' 3 || fail "a: no round with d: $(cat "$T/a.err")"
wait_recs d 'world=2 ' 1 || fail "d: no round with a: $(cat "$T/d.err")"
# Nor did one start and end before the look above.
assert_eq "$(recs a ' world=1 ')" 0 "a's worker starts alone"
assert_no_grep "$T/a/events.jsonl" '"group_world_size":1,' "a's rounds"
exit 0
