#!/bin/bash
# The exit barrier: a node whose workers finish first waits for the others
# (and its leaving is not taken for a scale-down); with a short barrier
# timeout it leaves, exit 0, and still the others are not restarted; a
# round restarted while a node waits in its barrier is run again there.
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

# A round completes on every node or is restarted on every node
# (esv-supervise(8), Exit barrier): b's worker fails while a waits in the
# barrier; b's restart opens a round, which a joins too (its success was
# for a round that is gone), and both then finish.
note "a round restarted while a waits in its barrier: a runs again"
rm -rf "$T/a" "$T/b" "$T/rec.a" "$T/rec.b"
RZ_JOB=again RZ_NNODES=2:2 RZ_RUN=1 node a
RZ_JOB=again RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop.again node b --max-restarts 1
wait_recs a . 1 && wait_recs b . 1 || fail "no round: $(cat "$T/a.err" "$T/b.err")"
wait_state a state finishing || fail "a is not in the barrier"
kill -KILL "$(field "$(last_rec b)" pid)"
wait_recs a . 2 || fail "a's workers did not run again: $(tail -n 5 "$T/a.err")"
wait_recs b . 2 || fail "b did not restart: $(tail -n 5 "$T/b.err")"
touch "$T/stop.again"
wait_sup -t 30 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
wait_sup -t 10 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
assert_grep "$T/a/events.jsonl" '"event":"rdzv.superseded"' "a's events"
assert_eq "$(kv "$T/a/supervise/state" restart_count)" 0 "a's restarts"
exit 0
