#!/bin/bash
# etcd over TLS with client certificates: nodes with the CA, a certificate
# and a key join over https; a node given the wrong CA starts no worker
# and says why in one line; a TLS file that cannot be read is a
# configuration error (100) before anything starts.  TLS files make
# HOST:PORT https; beside plaintext (http://, protocol=http) they are
# refused (100) with the reason.
. "$(dirname "$0")/lib.sh"
esv_setup 150
RZ_BACKEND=etcd
RZ_LEASE_TTL=2s
. "$ESV_TEST_DIR/rdzv.sh"
. "$ESV_TEST_DIR/etcd.sh"

make_certs "$T/pki"
ETCD_TLS=$T/pki start_rdzv
case $EP in https://*) ;; *) fail "not https: $EP" ;; esac

RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop node a
RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop node b
for n in a b; do
	wait_recs $n ' world=2 ' 1 || fail "$n: no round over TLS: $(cat "$T/$n.err")"
done
assert_grep "$T/a/supervise/state" "^rdzv_endpoint=https://" "a's endpoint"

note "the wrong CA: refused, clearly, no worker"
saved=$ETCD_TLS_CONF
ETCD_TLS_CONF=cacert=$T/pki/wrong-ca.pem,cert=$T/pki/client.pem,key=$T/pki/client-key.pem
RZ_JOB=other RZ_NNODES=1:1 RZ_CONF="last_call_timeout=1s,join_timeout=4s" node w
wait_sup -t 30 "$NODE_PID_w"; assert_eq $? 1 "exit status with the wrong CA"
assert_grep "$T/w.err" 'SSL certificate problem|certificate verify failed' \
    "w's warning names the certificate"
assert_grep "$T/w.err" 'join_timeout' "w gives up at the join timeout"
assert_eq "$(recs w .)" 0 "w's workers"
ETCD_TLS_CONF=$saved

note "HOST:PORT with TLS files: https (plaintext dropped TLS unsaid)"
hp=${EP%%,*}
hp=${hp#https://}
EP=$hp RZ_JOB=hp RZ_NNODES=1:1 RZ_STOP_FLAG=$T/stop \
    RZ_CONF="last_call_timeout=1s,join_timeout=10s" node h
wait_recs h ' world=1 ' 1 || fail "h: no round with $hp: $(cat "$T/h.err")"
assert_grep "$T/h/supervise/state" "^rdzv_endpoint=https://$hp" "h's endpoint"

note "an http:// endpoint beside TLS files, or protocol=http: 100, and why"
for how in "http://$hp|" "$hp|,protocol=http"; do
	rc=0
	"$SUP" --rdzv-backend etcd --rdzv-endpoint "${how%%|*}" --rdzv-id x \
	    --nnodes 1 --rdzv-conf "$ETCD_TLS_CONF${how#*|}" --no-python \
	    "$T/x" -- /bin/true 2>"$T/x.err" || rc=$?
	assert_eq "$rc" 100 "exit status with TLS files and ${how%%|*}${how#*|}"
	assert_grep "$T/x.err" "TLS is etcd's only authentication"
	assert_eq "$(wc -l <"$T/x.err")" 1 "lines said"
done

# esv-rdzv-etcd itself, given URLs and files by hand.
rc=0
"$ESV_BIN_DIR/../rendezvous/esv-rdzv-etcd" --endpoints "http://$hp" \
    --run-id x --cacert "$T/pki/ca.pem" 3</dev/null 2>"$T/x.err" || rc=$?
assert_eq "$rc" 100 "esv-rdzv-etcd's exit status with --cacert and http://"
assert_grep "$T/x.err" "http://$hp: plaintext, but --cacert, --cert or --key asks for TLS"

note "a TLS file that is not there: 100 at once"
rc=0
"$SUP" --rdzv-backend etcd --rdzv-endpoint "$EP" --rdzv-id x --nnodes 1 \
    --rdzv-conf "cacert=$T/pki/nope.pem" --no-python "$T/x" -- /bin/true \
    2>"$T/x.err" || rc=$?
assert_eq "$rc" 100 "exit status with a missing cacert"
assert_grep "$T/x.err" "cacert=$T/pki/nope.pem: No such file or directory"

touch "$T/stop"
for n in a b h; do
	eval "pid=\$NODE_PID_$n"
	wait_sup -t 30 "$pid"; assert_eq $? 0 "$n's exit status"
done
exit 0
