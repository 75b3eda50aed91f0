#!/bin/bash
# torchrun's c10d command line with no token: the rendezvous works, as
# torch's, unauthenticated, and every node says so once.  esv-rdzv serves
# such jobs only when told to (--allow-no-token); a server with a token
# refuses a node without one; a tokenless node that hosts the server
# starts it without one.
. "$(dirname "$0")/lib.sh"
esv_setup 90
. "$ESV_TEST_DIR/rdzv.sh"

note "esv-rdzv: a token file or --allow-no-token, exactly one"
make_token "$T/token"
assert_rc 100 "$RDZV" --listen 127.0.0.1:0
assert_rc 100 "$RDZV" --listen 127.0.0.1:0 --token-file "$T/token" --allow-no-token

note "two tokenless nodes meet at a server that allows it"
"$RDZV" --listen 127.0.0.1:0 --allow-no-token --heartbeat 200ms \
    >"$T/open.out" 2>"$T/open.err" </dev/null &
ESV_SUP_PIDS+=("$!")
wait_for -t 10 grep -q '^listening ' "$T/open.out" || fail "esv-rdzv: $(cat "$T/open.err")"
assert_grep "$T/open.err" "joins are not authenticated"
EP=$(sed -n 's/^listening //p' "$T/open.out")
RZ_CONF="last_call_timeout=1s,join_timeout=30s" RZ_NNODES=2:2 RZ_RUN=1 node a --rdzv-backend c10d
RZ_CONF="last_call_timeout=1s,join_timeout=30s" RZ_NNODES=2:2 RZ_RUN=1 node b --rdzv-backend c10d
wait_sup -t 30 "$NODE_PID_a"; assert_eq $? 0 "a: $(cat "$T/a.err")"
wait_sup -t 30 "$NODE_PID_b"; assert_eq $? 0 "b: $(cat "$T/b.err")"
assert_eq "$(field "$(last_rec a)" world)" 2 "WORLD_SIZE without a token"
for n in a b; do
	assert_eq "$(count_lines "$T/$n.err" 'no token_file: joins to .* are not authenticated')" 1 \
	    "$n: the warning, once"
done

note "a server with a token refuses a node without one"
start_rdzv
RZ_CONF="join_timeout=3s" node c
wait_sup -t 20 "$NODE_PID_c"
assert_eq $? 1 "a tokenless node at a tokened server"
assert_grep "$T/c.err" 'refused us without proving it knows the token \(ERR auth bad token\)'
assert_eq "$(recs c .)" 0 "c: worker starts"

note "a tokenless node hosts a server without a token"
P=$(free_port)
EP=127.0.0.1:$P
RZ_CONF="last_call_timeout=1s,join_timeout=30s" RZ_NNODES=2:2 RZ_RUN=1 node d
wait_for -t 10 grep -q "hosting esv-rdzv on 127.0.0.1:$P" "$T/d.err" ||
    fail "d does not host: $(cat "$T/d.err")"
pgrep -f -- "--listen-fd 3 --allow-no-token" >/dev/null || fail "the hosted esv-rdzv has no --allow-no-token"
RZ_CONF="last_call_timeout=1s,join_timeout=30s" RZ_NNODES=2:2 RZ_RUN=1 node e
wait_sup -t 30 "$NODE_PID_d"; assert_eq $? 0 "d: $(cat "$T/d.err")"
wait_sup -t 30 "$NODE_PID_e"; assert_eq $? 0 "e: $(cat "$T/e.err")"
exit 0
