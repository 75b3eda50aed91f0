#!/bin/bash
# The exit barrier: a node whose workers finish first waits for the others
# (and its leaving is not taken for a scale-down); with a short barrier
# timeout it leaves, exit 0, and still the others are not restarted.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
note "barrier released when the last node finishes"
RZ_JOB=held RZ_RUN=1 node a
RZ_JOB=held RZ_RUN=4 node b
wait_recs a . 1 || fail "a did not start: $(cat "$T/a.err")"
wait_for -t 10 eval '[ "$(kv "$T/a/supervise/state" state)" = finishing ]' ||
    fail "a's state: $(kv "$T/a/supervise/state" state), wanted finishing"
wait_sup -t 30 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
wait_sup -t 5 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
# a, done 3 s before b, was held until then: it left the barrier (released)
# after b's worker had exited.
assert_grep "$T/a/events.jsonl" '"event":"rdzv.barrier","released":true' "a's events"
ta=$(event_time "$T/a" rdzv.barrier) tb=$(event_time "$T/b" worker.exit)
awk -v a="$ta" -v b="$tb" 'BEGIN { exit !(a != "" && b != "" && a >= b) }' ||
    fail "a left the barrier at $ta, before b's worker exited at $tb"
assert_eq "$(recs a .)" 1 "a's worker starts"
assert_eq "$(recs b .)" 1 "b's worker starts"
assert_grep "$T/a.err" 'exit barrier passed'
assert_eq "$(kv "$T/b/supervise/state" membership_restarts)" 0 \
    "b's membership restarts"

note "barrier timeout: a leaves after 1 s, b goes on alone"
rm -rf "$T/a" "$T/b" "$T/rec.a" "$T/rec.b"
RZ_JOB=timeout RZ_RUN=1 RZ_CONF="token_file=$T/token,last_call_timeout=1s,exit_barrier_timeout=1s" node a
RZ_JOB=timeout RZ_RUN=6 RZ_CONF="token_file=$T/token,last_call_timeout=1s,exit_barrier_timeout=1s" node b
wait_recs a . 1 || fail "a did not start: $(cat "$T/a.err")"
wait_sup -t 15 "$NODE_PID_a"; assert_eq $? 0 "a's exit status after the timeout"
esv_alive "$NODE_PID_b" || fail "b ended with a"
assert_grep "$T/a.err" 'exit barrier timed out'
wait_sup -t 30 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
assert_eq "$(recs b .)" 1 "b's worker starts (a restart would add one)"
exit 0
