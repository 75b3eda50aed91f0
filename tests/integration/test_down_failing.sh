#!/bin/bash
# `esv-ctl down` while the group is stopping after a failure: the group
# ends down and the supervisor stays, the restart budget is not spent, the
# failure stays recorded, and `esv-ctl up` starts a new attempt.  (Before
# the fix the job ended as failed: summary, exit 1.)  Each letter against
# each state is tests/unit/test_fsm.c; this is the pair that went wrong.
. "$(dirname "$0")/lib.sh"
esv_setup 60

J=$T/job
cat >"$T/w.sh" <<'W'
#!/bin/sh
if [ "$LOCAL_RANK" = 0 ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] &&
    [ ! -e "$DOWN_DONE" ]; then
	sleep 1
	exit 1
fi
trap '' TERM
while :; do sleep 1; done
W
chmod +x "$T/w.sh"
export DOWN_DONE=$T/down.done
start_sup "$J" --no-python --nproc-per-node 2 --max-restarts 5 \
    --shutdown-timeout 4s -- "$T/w.sh"
ev=$J/events.jsonl
stopping() { grep -q '"event":"group.stop".*"reason":"failure"' "$ev" 2>/dev/null; }
wait_for -t 20 stopping || fail "the group did not stop for the failure"
# The event comes first, then the state file: wait for both.
wait_for -t 5 eval '[ "$(kv "$J/supervise/state" state)" = stopping ]' ||
    fail "state when down is sent: $(kv "$J/supervise/state" state)"
assert_rc 0 "$CTL" down "$J"
# The worker that ignores SIGTERM is killed after the 4 s shutdown timeout.
assert_rc 0 "$CTL" wait down -t 15 "$J"
esv_alive "$SUP_PID" || fail "the supervisor exited: $(tail -5 "$SUP_ERR")"
assert_eq "$(kv "$J/supervise/state" state)" down "state after down"
assert_eq "$(kv "$J/supervise/state" want)" down "want after down"
assert_eq "$(kv "$J/supervise/state" restart_count)" 0 "restarts spent"
assert_file "$J/supervise/failure.json"
assert_json "$J/supervise/failure.json"
assert_grep "$ev" '"event":"worker.exit".*"state":"failed"' "the failure event"
assert_no_grep "$SUP_ERR" 'FAILED' "a final failure summary"
assert_no_grep "$ev" '"event":"job.failed"' "job.failed event"

# up: a new attempt, and it runs.
touch "$DOWN_DONE"
assert_rc 0 "$CTL" -w 15 up "$J"
assert_eq "$(count_lines "$ev" '"event":"group.start"')" 2 "group starts"
assert_eq "$(kv "$J/supervise/state" restart_count)" 0 "restarts after up"
stop_sup
echo "${0##*/}: ok"
