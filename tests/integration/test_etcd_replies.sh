#!/bin/bash
# Bad replies between a node and etcd (a proxy's HTML page, truncated JSON,
# a 5xx, a body that is not JSON, a watch cancelled by compaction, a place
# read at a revision the member has not reached): each a clear one-line
# warning and a retry (the place read again, linearizably); the round
# forms, nothing is lost.
. "$(dirname "$0")/lib.sh"
esv_setup 150
RZ_BACKEND=etcd
RZ_LEASE_TTL=2s
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv
"$PY" "$ESV_TEST_DIR/etcd_proxy.py" "${EP%%,*}" "$T/proxy.port" \
    html502,truncated,status500,notjson,compacted,future >"$T/proxy.out" 2>&1 &
ESV_SUP_PIDS+=("$!")
wait_for test -s "$T/proxy.port" || fail "the proxy did not start"
proxy=http://127.0.0.1:$(cat "$T/proxy.port")

RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop EP=$proxy node a
RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop node b
for n in a b; do
	wait_recs $n ' world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
done
for f in html502 truncated status500 notjson compacted future; do
	assert_grep "$T/proxy.out" "^spoiled $f " "the proxy spoiled a reply ($f)"
done
assert_grep "$T/a.err" 'HTTP 502 <html><body><h1>502 Bad Gateway</h1>; retrying$' \
    "a's warning of the proxy's page"
assert_grep "$T/a.err" 'is not JSON: .*column' "a's warning of truncated JSON"
assert_grep "$T/a.err" 'HTTP 500 .*request timed out' "a's warning of the 500"
assert_grep "$T/a.err" 'watch of /esv/job1/ canceled \(compacted\): reading it again' \
    "a's warning of the compaction"
assert_grep "$T/a.err" 'reading our place in round 0: .*future revision' \
    "a's warning of the refused serializable read"
assert_no_grep "$T/a.err" '^(nginx|</?html|<body)' "a proxy's page on a line of its own"
assert_eq "$(kv "$T/a/supervise/state" rdzv_round)" \
    "$(kv "$T/b/supervise/state" rdzv_round)" "round of a and b"

note "the job goes on and ends in order"
touch "$T/stop"
for n in a b; do
	eval "pid=\$NODE_PID_$n"
	wait_sup -t 30 "$pid"; assert_eq $? 0 "$n's exit status"
done
exit 0
