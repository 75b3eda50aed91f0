#!/bin/bash
# Killing esv-rdzv mid-job does not touch the workers; the supervisors
# reconnect with backoff, the restarted server rebuilds the round from
# what they tell it, and the job goes on (a third node can still join).
# That holds for an outage shorter than the lease less its grace (L - G,
# esv-supervise(8) "Leases"): the server stays away 1 s here, so the
# lease is 5 s (G 1 s); with the default of 1.5 s the workers would be
# fenced (test_rdzv_fence.sh).
. "$(dirname "$0")/lib.sh"
esv_setup 150
. "$ESV_TEST_DIR/rdzv.sh"

RZ_CONF="token_file=$T/token,last_call_timeout=1s,join_timeout=30s,lease=5s"
start_rdzv --lease 5s
RZ_STOP_FLAG=$T/stop node a
RZ_STOP_FLAG=$T/stop node b
for n in a b; do
	wait_recs $n 'world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
done
wpid=$(field "$(last_rec a)" pid)

note "kill -9 of esv-rdzv"
kill -KILL "$RDZV_PID"
killed=$EPOCHREALTIME
wait "$RDZV_PID" 2>/dev/null
for n in a b; do
	wait_for -t 5 eval '[ "$(kv "$T/$n/supervise/state" rdzv_connected)" = 0 ]' ||
	    fail "$n: still connected to a dead server"
done
ctl status "$T/a" >"$T/status"
assert_grep "$T/status" 'disconnected'
# The server stays away for each supervisor's first three attempts to
# reconnect (100, 200 and 400 ms apart, each + up to 25%: 0.875 s), and a
# little more.
sleep_until "$(awk -v t="$killed" 'BEGIN { printf "%.3f", t + 1 }')"
esv_alive "$wpid" || fail "a's worker died with the server"
assert_eq "$(kv "$T/a/supervise/state" state)" running "a's state"
# What is true: the workers run on, until their lease ends.
assert_grep "$T/a.err" 'lost .*: the workers run until their lease ends at'

note "esv-rdzv back on the same port"
start_rdzv --lease 5s
for n in a b; do
	wait_for -t 10 eval '[ "$(kv "$T/$n/supervise/state" rdzv_connected)" = 1 ]' ||
	    fail "$n did not reconnect: $(cat "$T/$n.err")"
done
# The new server takes the running round back once both nodes are: else,
# after its --recovery-timeout, a new round (a restart).
wait_for -t 10 grep -qE 'recovered round [0-9]+: 2 nodes back' "$RDZV_ERR" ||
    fail "esv-rdzv did not recover the round: $(tail -5 "$RDZV_ERR")"
for n in a b; do
	assert_no_grep "$T/$n/events.jsonl" '"event":"(group\.stop|rdzv\.membership)"' "$n's events"
	assert_eq "$(recs $n .)" 1 "$n: worker starts (a restart would add one)"
	assert_eq "$(kv "$T/$n/supervise/state" attempt)" 1 "$n: attempt"
done
esv_alive "$wpid" || fail "a's worker did not survive the reconnection"
# Said on the first line the new server seals for a (its first PING at
# the latest), which may come after the server's own log line.
wait_for -t 5 grep -qE 'connected to .* again' "$T/a.err" ||
    fail "a never said it was connected again: $(cat "$T/a.err")"

note "the rebuilt round admits a third node"
RZ_STOP_FLAG=$T/stop node c
for n in a b c; do
	wait_recs $n 'world=3 ' 1 || fail "$n: no round of 3: $(cat "$T/$n.err")"
done
touch "$T/stop"
for n in a b c; do
	eval "p=\$NODE_PID_$n"
	wait_sup -t 20 "$p"
	assert_eq $? 0 "$n's exit status"
done
exit 0
