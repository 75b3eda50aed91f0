#!/bin/bash
# esv-rdzv over IPv6: a job on [::1] whose MASTER_ADDR is ::1.
. "$(dirname "$0")/lib.sh"
esv_setup 60
. "$ESV_TEST_DIR/rdzv.sh"

"$PY" -c 'import socket; socket.create_server(("::1", 0), family=socket.AF_INET6)' \
    2>/dev/null || skip "no IPv6 loopback (::1) on this machine"
make_token "$T/token"
"$RDZV" --listen '[::1]:0' --token-file "$T/token" >"$T/rdzv.out" \
    2>"$T/rdzv.err" &
ESV_SUP_PIDS+=("$!")
wait_for -t 10 grep -q '^listening ' "$T/rdzv.out" ||
    fail "esv-rdzv did not listen on ::1: $(cat "$T/rdzv.err")"
EP=$(sed -n 's/^listening //p' "$T/rdzv.out")
case $EP in "[::1]:"*) ;; *) fail "listening on $EP, not [::1]" ;; esac
RZ_NNODES=2:2 RZ_RUN=1 node a
RZ_NNODES=2:2 RZ_RUN=1 node b
wait_sup -t 20 "$NODE_PID_a"; assert_eq $? 0 "a's exit status: $(cat "$T/a.err")"
wait_sup -t 20 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
assert_eq "$(field "$(last_rec a)" master | sed 's/:[0-9]*$//')" ::1 "MASTER_ADDR"
assert_eq "$(field "$(last_rec a)" world)" 2 "WORLD_SIZE"
exit 0
