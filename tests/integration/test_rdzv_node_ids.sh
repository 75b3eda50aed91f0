#!/bin/bash
# Node ids (issue 34, defect 2).  Two hosts with one host name, each
# supervisor in a pid namespace of its own with the same pid there, as in
# containers: their node ids were one, each JOIN pushed the other out,
# both reconnected ~9 times a second and the round never formed.  Now a
# node id has a random part, and a JOIN that would push out a live node
# of another supervisor is refused (ERR duplicate) while a node's own
# reconnection still replaces its stale connection: its cnonces start
# with its instance tag.  A refused supervisor backs off.
. "$(dirname "$0")/lib.sh"
esv_setup 150
. "$ESV_TEST_DIR/rdzv.sh"
. "$ESV_TEST_DIR/netbed.sh"
bed_init
bed_host srv
bed_host a
bed_host b
bed_host c
make_token "$T/token"
EP=$(bed_addr srv):29400
bed_run srv "$RDZV" --listen "$EP" --token-file "$T/token" --heartbeat 200 \
    >"$T/rdzv.out" 2>"$T/rdzv.err" </dev/null &
ESV_SUP_PIDS+=("$!")
wait_for grep -q '^listening ' "$T/rdzv.out" ||
    fail "esv-rdzv did not start: $(cat "$T/rdzv.err")"
CONF="token_file=$T/token,last_call_timeout=1s,join_timeout=30s"

# twin NAME: a supervisor on bed host NAME, host name "twin", pid 3 in a
# pid namespace of its own (sh is its 1, hostname its 2), as a container's.
twin()
{
	local name=$1
	shift
	SUP_PREFIX=(ip netns exec "$(bed_ns "$name")" unshare --uts --pid
	    --fork sh -c 'hostname twin && "$@"; exit $?' sh)
	REC=$T/rec.$name RZ_NODE=$name RZ_STOP_FLAG=$T/stop start_sup \
	    "$T/$name" --rdzv-backend esv --rdzv-endpoint "$EP" \
	    --rdzv-id job1 --nnodes 2:3 --rdzv-conf "$CONF" \
	    --shutdown-timeout 3s --no-python "$@" -- "$WORKERS/rz_worker.sh"
	SUP_PREFIX=()
	eval "NODE_PID_$name=\$SUP_PID"
}
client()
{
	bed_run srv "$PY" "$RZ_CLIENT" "$EP" join --token-file "$T/token" "$@"
}

note "two twins: one host name, one pid"
twin a
twin b
wait_recs a 'world=2 ' 1 || fail "a: no round of 2 nodes: $(cat "$T/a.err") server: $(cat "$T/rdzv.err")"
wait_recs b 'world=2 ' 1 || fail "b: no round of 2 nodes: $(cat "$T/b.err")"
ids=$(sed -n 's/.*job job1: node \([^ ]*\) joined round.*/\1/p' "$T/rdzv.err" | sort -u)
assert_eq "$(echo "$ids" | wc -l)" 2 "node ids in the server's log: $ids"
# host_pid_RANDOM: the same host name and pid, told apart by the rest.
assert_eq "$(echo "$ids" | sed 's/_[0-9a-f]*$//' | sort -u)" twin_3 "node ids $ids"
assert_no_grep "$T/rdzv.err" 'duplicate|in use|reconnected|lost'
assert_no_grep "$T/a.err" 'lost|refused'
assert_no_grep "$T/b.err" 'lost|refused'
id_a=$(echo "$ids" | head -1)

note "a JOIN with a live node's id, from another instance: refused"
client job1 "$id_a" --min 2 --max 3 --last-call 1000 --until ERR \
    >"$T/fake.out" 2>"$T/fake.err"
assert_grep "$T/fake.out" "^ERR duplicate job job1: node id $id_a is in use by 198\.18\.0\.[23]:[0-9]+"
assert_eq "$(count_lines "$T/rdzv.err" "node id $id_a is in use")" 1 "server lines on the refusal"
assert_grep "$T/rdzv.err" "warning: 198\.18\.0\.1:[0-9]+: .*node id $id_a is in use by 198\.18\.0\.[23]:[0-9]+"
assert_no_grep "$T/rdzv.err" 'job job1: .*(reconnected|lost)'
assert_eq "$(recs a 'world=2 ')$(recs b 'world=2 ')" 11 "workers: untouched"

note "the same instance again: a reconnection, which replaces its stale connection"
client job2 fake1 --instance 0123456789abcdef --until '' --timeout 30 \
    >"$T/f1.out" 2>"$T/f1.err" &
f1=$!
wait_for grep -q '^ROUND ' "$T/f1.out" || fail "fake1: $(cat "$T/f1.out" "$T/f1.err")"
client job2 fake1 --instance 0123456789abcdef >"$T/f2.out" 2>"$T/f2.err" ||
    fail "fake1's reconnection: $(cat "$T/f2.out" "$T/f2.err")"
assert_grep "$T/f2.out" '^ROUND 0 '
wait_for eval '! kill -0 '"$f1"' 2>/dev/null' ||
    fail "the stale connection of fake1 was not closed"
assert_grep "$T/rdzv.err" 'node fake1 joined round 0 again'
# Both connections of fake1 are gone: its id is free for anyone.
client job2 fake1 --instance fedcba9876543210 >"$T/f3.out" 2>&1 ||
    fail "fake1 anew: $(cat "$T/f3.out")"
assert_grep "$T/f3.out" '^ROUND '

note "a supervisor presenting a live node's id is refused, and backs off"
ESV_RDZV_NODE_ID=$id_a REC=$T/rec.c RZ_NODE=c RZ_STOP_FLAG=$T/stop \
    bed_sup c "$T/c" --rdzv-backend esv --rdzv-endpoint "$EP" \
    --rdzv-id job1 --nnodes 2:3 --shutdown-timeout 3s --no-python \
    --rdzv-conf "token_file=$T/token,last_call_timeout=1s,join_timeout=9s" \
    -- "$WORKERS/rz_worker.sh"
pid_c=$SUP_PID
wait_for grep -q "refused node id $id_a" "$T/c.err" || fail "c: $(cat "$T/c.err")"
n0=$(count_lines "$T/rdzv.err" "node id $id_a is in use")
# Three times the backoff's cap (2 s): at most 10 tries, where the
# supervisors of issue 34 made 9 a second.
sleep_until "$(awk -v now="$EPOCHREALTIME" 'BEGIN { printf "%.3f", now + 6 }')"
n1=$(count_lines "$T/rdzv.err" "node id $id_a is in use")
note "c refused $((n1 - n0)) times in 6 s"
[ $((n1 - n0)) -ge 1 ] || fail "c did not retry"
[ $((n1 - n0)) -le 10 ] || fail "c retried $((n1 - n0)) times in 6 s"
assert_eq "$(count_lines "$T/c.err" 'refused node id')" 1 "c's lines on its refusals"
assert_no_grep "$T/rdzv.err" 'job job1: .*(reconnected|lost)'
assert_eq "$(recs a 'world=2 ')$(recs b 'world=2 ')" 11 "workers: untouched by c"
# Refused for as long as a lives: c gives up at its join_timeout.
wait_sup -t 20 "$pid_c"
assert_eq $? 1 "c's exit status"
assert_grep "$T/c.err" 'no round within join_timeout'

touch "$T/stop"
wait_sup -t 20 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
wait_sup -t 20 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
exit 0
