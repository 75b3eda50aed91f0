#!/bin/bash
# esv-supervise runs esv-rdzv itself: privately with --standalone, and for
# the whole job when the endpoint is a free address of its own host.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"

note "--standalone: a private esv-rdzv with a fresh token"
REC=$T/rec.s RZ_RUN=1 run_sup "$T/s" --standalone --nproc-per-node 2 \
    --no-python -- "$WORKERS/rz_worker.sh"
assert_eq "$SUP_RC" 0 "standalone exit status: $(cat "$T/s.err")"
assert_eq "$(count_lines "$T/rec.s" 'world=2 .*group_world=1 ')" 2 \
    "records of the two workers"
assert_eq "$(stat -c %a "$T/s/supervise/rdzv.token")" 600 "token file mode"
assert_grep_F "$T/s/supervise/state" "rdzv_backend=esv"
assert_grep "$T/s/supervise/state" '^rdzv_endpoint=127\.0\.0\.1:[0-9]+$'
wait_for -t 5 eval '! pgrep -f "esv-rdzv --listen-fd 3 --token-file $T/s/" >/dev/null' ||
    fail "the private esv-rdzv outlived its supervisor"

note "is_host: the first node on a free local endpoint serves the job"
make_token "$T/token"
EP=127.0.0.1:$(free_port)
RZ_NNODES=1:2 RZ_STOP_FLAG=$T/stop node a
wait_for -t 10 grep -q 'hosting esv-rdzv' "$T/a.err" ||
    fail "a does not host: $(cat "$T/a.err")"
RZ_NNODES=1:2 RZ_STOP_FLAG=$T/stop node b
wait_recs a 'world=2 ' 1 || fail "a: no round of 2: $(cat "$T/a.err")"
wait_recs b 'world=2 ' 1 || fail "b: no round of 2: $(cat "$T/b.err")"
assert_no_grep "$T/b.err" 'hosting esv-rdzv'

note "the host's supervisor dies: its esv-rdzv goes with it (test_rdzv_hosted)"
kill -KILL "$NODE_PID_a"
wait_for -t 5 eval '! pgrep -f -- "esv-rdzv .*--token-file $T/token" >/dev/null' ||
    fail "the hosted esv-rdzv outlived its supervisor"
wait_state b rdzv_connected 0 || fail "b's connection"
stop_sup "$NODE_PID_b"
exit 0
