#!/bin/bash
# Issue 34, defect 4: before the first connection to the rendezvous has
# ever succeeded, no worker runs, and the node says what is true: it
# cannot reach the rendezvous, and retries; not that a connection was
# lost while "workers keep running".  Once the server is there, the node
# joins and says it is connected (not "again").
. "$(dirname "$0")/lib.sh"
esv_setup 60
. "$ESV_TEST_DIR/rdzv.sh"

make_token "$T/token"
port=$(free_port)
EP=127.0.0.1:$port
# The endpoint is local: without is_host=false the node would host it.
RZ_CONF="token_file=$T/token,last_call_timeout=1s,join_timeout=30s,is_host=false"
RZ_NNODES=1:1 RZ_STOP_FLAG=$T/stop node a
wait_for -t 10 grep -q 'cannot reach the rendezvous' "$T/a.err" ||
    fail "a said nothing of the unreachable rendezvous: $(cat "$T/a.err")"
assert_grep "$T/a.err" \
    "cannot reach the rendezvous at 127\.0\.0\.1:$port \(Connection refused\): retrying"
assert_no_grep "$T/a.err" 'workers keep running|lost'
assert_eq "$(recs a .)" 0 "worker starts"

note "esv-rdzv comes up on that port"
RDZV_PORT=$port start_rdzv
wait_recs a 'world=1 ' 1 || fail "a did not join: $(cat "$T/a.err")"
assert_grep "$T/a.err" "connected to 127\.0\.0\.1:$port\$"
assert_no_grep "$T/a.err" 'workers keep running|connected to .* again'
touch "$T/stop"
wait_sup -t 20 "$NODE_PID_a"
assert_eq $? 0 "a's exit status"
exit 0
