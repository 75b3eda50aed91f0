#!/bin/bash
# The etcd harness of the rendezvous tests (etcd.sh) does what it says: a
# three-member cluster that keeps answering when its leader is killed, a
# member restarted into it, and a member serving TLS that wants a client
# certificate of its CA and refuses a client trusting another CA.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/etcd.sh"

# put I KEY VALUE: through member I; the reply carries a header only.
put()
{
	etcd_api "$1" /v3/kv/put "{\"key\":\"$(b64 "$2")\",\"value\":\"$(b64 "$3")\"}" |
	    grep -qF '"revision"'
}

# get I KEY: the value, decoded (a linearizable read: through the leader).
get()
{
	etcd_api "$1" /v3/kv/range "{\"key\":\"$(b64 "$2")\"}" | "$PY" -c '
import base64, json, sys
for kv in json.load(sys.stdin).get("kvs", []):
    print(base64.b64decode(kv["value"]).decode())'
}

note "three members"
start_etcd 3
assert_eq "${#ETCD_PIDS[@]}" 3 "members"
assert_eq "$ETCD_EP" "http://127.0.0.1:${ETCD_PORTS[0]},http://127.0.0.1:${ETCD_PORTS[1]},http://127.0.0.1:${ETCD_PORTS[2]}" ETCD_EP
put 0 k v || fail "put through member 0: $(etcd_api 0 /v3/kv/put '{}')"
assert_eq "$(get 1 k)" v "k read through member 1"
assert_eq "$(get 2 k)" v "k read through member 2"
assert_eq "$(etcd_keys)" k "the keys"

note "the leader killed"
wait_for -t 10 etcd_leader >/dev/null || fail "no leader"
old=$(etcd_leader)
t0=$(date +%s%3N)
etcd_kill "$old"
survivor=$(( (old + 1) % 3 ))
# A follower calls an election once it has heard nothing for an election
# timeout (500 ms, randomized up to twice that); a vote and the put take
# round trips of milliseconds.  10 election timeouts leave room for a
# loaded machine.
ETCD_CURL_MAX=1 wait_for -t 5 put "$survivor" k2 v2 2>/dev/null ||
    fail "no put through member $survivor within 5 s of the leader's death"
note "a put went through $(($(date +%s%3N) - t0)) ms after the leader died"
new=$(etcd_leader) || fail "no leader after the put"
assert_ne "$new" "$old" "the leader"
assert_eq "$(get "$survivor" k2)" v2 "k2"

note "the old leader restarted"
etcd_restart "$old"
esv_alive "${ETCD_PIDS[$old]}" || fail "member $old does not run"
# Linearizable, through it: it has caught up with what it missed.
assert_eq "$(get "$old" k2)" v2 "k2 read through the restarted member"
put "$old" k3 v3 || fail "put through the restarted member"
assert_eq "$(get "$survivor" k3)" v3 "k3"
plain=("${ETCD_PIDS[@]}")
stop_etcd
for pid in "${plain[@]}"; do
	esv_alive "$pid" && fail "etcd (pid $pid) survives stop_etcd"
done

note "TLS with client certificates"
make_certs "$T/pki"
for f in ca.pem server.pem server-key.pem client.pem client-key.pem wrong-ca.pem; do
	assert_file "$T/pki/$f"
done
openssl verify -CAfile "$T/pki/ca.pem" "$T/pki/server.pem" "$T/pki/client.pem" \
    >/dev/null || fail "certificates not of the CA"
ETCD_TLS=$T/pki start_etcd 1
assert_eq "$ETCD_EP" "https://127.0.0.1:${ETCD_PORTS[0]}" "ETCD_EP with TLS"
assert_eq "$ETCD_TLS_CONF" "cacert=$T/pki/ca.pem,cert=$T/pki/client.pem,key=$T/pki/client-key.pem" ETCD_TLS_CONF
put 0 tk tv || fail "put over TLS: $(etcd_api 0 /v3/kv/put '{}' 2>&1)"
assert_eq "$(get 0 tk)" tv "tk over TLS"
# Each of these changes one thing from the put above.
url=$ETCD_EP/v3/kv/put
body="{\"key\":\"$(b64 tk)\",\"value\":\"$(b64 bad)\"}"
assert_rc 60 curl -sS --max-time 5 --cacert "$T/pki/wrong-ca.pem" \
    --cert "$T/pki/client.pem" --key "$T/pki/client-key.pem" -X POST "$url" -d "$body"
assert_grep "$T/err" 'certificate' "curl's complaint with the wrong CA"
rc=0
curl -sS --max-time 5 --cacert "$T/pki/ca.pem" -X POST "$url" -d "$body" \
    >"$T/out" 2>"$T/err" || rc=$?
assert_ne "$rc" 0 "curl's status without a client certificate"
assert_eq "$(get 0 tk)" tv "tk after the refused puts"
exit 0
