#!/bin/bash
# Connections that never authenticate cannot keep a node out.  With
# --max-clients 50 and a 5 s heartbeat (an idle connection used to live
# 15 s), 200 idle connections are opened and held; then a 2-node job must
# form its round at once.  Before the fix they shared the one pool of 50
# with the nodes, whose connections were refused (ERR limit) until the
# flood timed out.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv --max-clients 50 --heartbeat 5000
"$PY" - "$EP" "$T/flood.ready" >"$T/flood.out" 2>&1 <<'PYEOF' &
import socket, sys, time
host, _, port = sys.argv[1].rpartition(":")
held = []
for i in range(200):
    try:
        held.append(socket.create_connection((host, int(port)), timeout=5))
    except OSError as e:
        print("connect %d: %s" % (i, e))
open(sys.argv[2], "w").write("%d\n" % len(held))
time.sleep(300)
PYEOF
ESV_SUP_PIDS+=("$!")
wait_for -t 20 test -s "$T/flood.ready" || fail "the flood did not start"
note "$(cat "$T/flood.ready") idle connections open"

t0=$(date +%s%3N)
RZ_NNODES=2:2
RZ_CONF="token_file=$T/token,last_call_timeout=0,join_timeout=30s"
node a
node b
for n in a b; do
	wait_recs -t 20 $n 'world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
done
dt=$(($(date +%s%3N) - t0))
note "round formed in $dt ms"
# A node retries a refusal after 0.1 s, doubling up to 2 s: 5 s is ample
# for a few retries and far below the 15 s the flood used to hold.
[ "$dt" -lt 5000 ] || fail "the round took $dt ms under the flood"
assert_no_grep "$T/a.err" "ERR limit|refused" "a's log"
assert_grep "$RDZV_ERR" "dropped: [0-9]+ connections yet to authenticate"
exit 0
