#!/bin/bash
# The esv rendezvous by host name: the supervisor has a child look the
# name up (rendezvous/client/lookup.c), off its loop, anew for every connection.  A job
# on localhost:PORT forms its round; a name that cannot resolve is
# retried, with the resolver's reason in the log, and when that node is
# stopped no resolver is left behind.
. "$(dirname "$0")/lib.sh"
esv_setup 60
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
EP=localhost:$RDZV_PORT
RZ_NNODES=2:2 RZ_RUN=1 node a
RZ_NNODES=2:2 RZ_RUN=1 node b
wait_sup -t 30 "$NODE_PID_a"; assert_eq $? 0 "a's exit status: $(cat "$T/a.err")"
wait_sup -t 30 "$NODE_PID_b"; assert_eq $? 0 "b's exit status: $(cat "$T/b.err")"
assert_eq "$(field "$(last_rec a)" world)" 2 "WORLD_SIZE of a round joined by name"

# .invalid never resolves (RFC 6761).
EP=no-such-host.invalid:$RDZV_PORT
RZ_NNODES=2:2 node c
wait_for -t 20 grep -q 'rendezvous: cannot reach the rendezvous at no-such-host.invalid:.* (no-such-host.invalid: ' "$T/c.err" ||
    fail "no lookup failure reported: $(cat "$T/c.err")"
# The loop still answers: a control command is acted on.
ctl down "$T/c" >/dev/null
assert_rc 0 "$CTL" wait down -t 10 "$T/c"
kill -TERM "$NODE_PID_c"
wait_sup -t 20 "$NODE_PID_c"
leftover=$(pgrep -P "$NODE_PID_c" 2>/dev/null || true)
assert_eq "$leftover" "" "children of the stopped supervisor"
exit 0
