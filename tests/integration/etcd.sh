# Helpers of the tests that run their own etcd members (Debian's etcd 3.4,
# v3 API), on top of lib.sh: source it after esv_setup.  Skips (77) without
# /usr/bin/etcd or curl.  Members are numbered from 0.  On exit the members
# are killed, and their data directories removed even where $T is kept
# (unless ESV_KEEP is set): the logs stay.
#	ETCD		path of etcd ($ESV_ETCD, default /usr/bin/etcd)
#	start_etcd [N]	an N-member cluster (default 1) on 127.0.0.1, free
#			client and peer ports, data in $T/etcd<i>.data, log in
#			$T/etcd<i>.log; heartbeat 50 ms, election timeout
#			500 ms (so leases of 1 s are allowed).  Returns once
#			every member's /health says "true".  Sets ETCD_EP (the
#			client URLs, comma-separated), ETCD_PIDS, ETCD_PORTS
#			(client) and ETCD_PEER_PORTS (arrays).  The pids join
#			the cleanup's list: no member outlives the test.  Again
#			for a new cluster (the old one is stop_etcd'd first).
#			With ETCD_TLS=DIR (certificates of make_certs DIR):
#			https client URLs requiring a client certificate of
#			DIR/ca.pem; sets ETCD_TLS_CONF to the --rdzv-conf items
#			cacert=DIR/ca.pem,cert=DIR/client.pem,
#			key=DIR/client-key.pem (empty without TLS).
#			With ETCD_BED=NAME (netbed.sh's bed_host NAME, made
#			before): the members run on that host, clients reach
#			them at its address (peers on its loopback), and this
#			file's curl calls run there too.
#	stop_etcd	kill -9 every member of the cluster; returns once they are gone
#	etcd_kill I	kill -9 member I, return once it is gone
#	etcd_restart I	start member I again (same name, data and ports,
#			--initial-cluster-state existing); returns once its
#			/health says "true" (a quorum must be up for that)
#	etcd_healthy I	member I's /health says "true"
#	etcd_api I PATH [JSON]	POST JSON (default {}) to member I's v3 JSON
#			gateway, e.g. etcd_api 0 /v3/kv/range '{"key":"aw=="}';
#			prints the reply; its certificates with TLS; bounded by
#			$ETCD_CURL_MAX seconds (default 5)
#	etcd_leader	print the index of the leader (a live member whose
#			/v3/maintenance/status names itself leader); 1 if none
#	etcd_keys [I]	every key in the store, decoded, one a line (from
#			member I, default the first live one)
#	b64 STRING	STRING in base64, as the gateway wants keys and values
#	make_certs DIR	with the openssl CLI: a CA (ca.pem, ca-key.pem), a
#			server certificate for IP:127.0.0.1 and DNS:localhost
#			(server.pem, server-key.pem), a client certificate
#			(client.pem, client-key.pem), and an unrelated second
#			CA (wrong-ca.pem, wrong-ca-key.pem); all in DIR
ETCD=${ESV_ETCD:-/usr/bin/etcd}
[ -x "$ETCD" ] || skip "$ETCD is not installed (Debian: etcd-server)"
command -v curl >/dev/null || skip "curl is not installed"
ETCD_SH_LOADED=1

# A failed test keeps $T; of etcd's part the logs tell, while the data
# directories are 120 MiB each (preallocated WAL), so they go (ESV_KEEP
# keeps them).  The members are killed first, then lib.sh cleans up.
etcd_cleanup()
{
	local rc=$? pid
	for pid in "${ESV_SUP_PIDS[@]}"; do
		esv_alive "$pid" && kill -KILL "$pid" 2>/dev/null
	done
	if [ -z "${ESV_KEEP:-}" ]; then
		wait_for -t 5 etcd_all_gone
		rm -rf "$T"/etcd*.data
	fi
	(exit "$rc")
	esv_cleanup
}

etcd_all_gone()
{
	local pid
	for pid in "${ETCD_ALL_PIDS[@]}"; do
		esv_alive "$pid" && return 1
	done
	return 0
}
ETCD_ALL_PIDS=()
trap etcd_cleanup EXIT
ETCD_PIDS=()
ETCD_PORTS=()
ETCD_PEER_PORTS=()
ETCD_EP=
ETCD_TLS_CONF=
ETCD_TLS_DIR=
ETCD_SCHEME=http
ETCD_CLUSTER=
ETCD_GEN=0
ETCD_IP=127.0.0.1
ETCD_IN=()

b64()
{
	printf '%s' "$1" | base64 -w0
}

etcd_url()
{
	echo "$ETCD_SCHEME://$ETCD_IP:${ETCD_PORTS[$1]}"
}

# The curl options that reach a member: with TLS, its CA and the client's
# certificate (a member with --client-cert-auth refuses a client without).
etcd_curl_tls()
{
	[ -n "$ETCD_TLS_DIR" ] || return 0
	echo --cacert "$ETCD_TLS_DIR/ca.pem" --cert "$ETCD_TLS_DIR/client.pem" \
	    --key "$ETCD_TLS_DIR/client-key.pem"
}

etcd_api()
{
	local data=${3:-'{}'}
	# shellcheck disable=SC2046 # the TLS options are words without blanks
	"${ETCD_IN[@]}" curl -sS --max-time "${ETCD_CURL_MAX:-5}" $(etcd_curl_tls) -X POST "$(etcd_url "$1")$2" \
	    -d "$data"
}

etcd_healthy()
{
	# shellcheck disable=SC2046
	"${ETCD_IN[@]}" curl -s --max-time 2 $(etcd_curl_tls) "$(etcd_url "$1")/health" 2>/dev/null |
	    grep -qF '"health":"true"'
}

# etcd_run I STATE: start member I; the cluster's layout is in the globals
# start_etcd set, so a restart is the same command with STATE existing.
etcd_run()
{
	local i=$1 tls=()
	if [ -n "$ETCD_TLS_DIR" ]; then
		tls=(--cert-file "$ETCD_TLS_DIR/server.pem"
		    --key-file "$ETCD_TLS_DIR/server-key.pem"
		    --client-cert-auth --trusted-ca-file "$ETCD_TLS_DIR/ca.pem")
	fi
	"${ETCD_IN[@]}" "$ETCD" --name "m$i" --data-dir "$T/etcd$i.data" \
	    --listen-client-urls "$(etcd_url "$i")" \
	    --advertise-client-urls "$(etcd_url "$i")" \
	    --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORTS[$i]}" \
	    --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORTS[$i]}" \
	    --initial-cluster "$ETCD_CLUSTER" --initial-cluster-state "$2" \
	    --initial-cluster-token "esv-itest-$$-$ETCD_GEN" \
	    --heartbeat-interval 50 --election-timeout 500 \
	    --logger zap --log-outputs stderr "${tls[@]}" \
	    >>"$T/etcd$i.log" 2>&1 </dev/null &
	ETCD_PIDS[i]=$!
	ETCD_ALL_PIDS+=("$!")
	ESV_SUP_PIDS+=("$!")
	# No "Killed" job report from bash at each kill -9; bash still reaps it.
	disown "$!"
}

start_etcd()
{
	local n=${1:-1} i eps=()
	[ ${#ETCD_PIDS[@]} -eq 0 ] || stop_etcd
	ETCD_GEN=$((ETCD_GEN + 1))
	ETCD_SCHEME=http ETCD_TLS_DIR='' ETCD_TLS_CONF=''
	if [ -n "${ETCD_TLS:-}" ]; then
		ETCD_TLS_DIR=$(cd "$ETCD_TLS" && pwd) || fail "ETCD_TLS=$ETCD_TLS"
		ETCD_SCHEME=https
		ETCD_TLS_CONF="cacert=$ETCD_TLS_DIR/ca.pem,cert=$ETCD_TLS_DIR/client.pem,key=$ETCD_TLS_DIR/client-key.pem"
	fi
	ETCD_PIDS=() ETCD_PORTS=() ETCD_PEER_PORTS=() ETCD_CLUSTER=''
	ETCD_IP=127.0.0.1 ETCD_IN=()
	if [ -n "${ETCD_BED:-}" ]; then
		ETCD_IP=$(bed_addr "$ETCD_BED")
		ETCD_IN=(ip netns exec "$(bed_ns "$ETCD_BED")")
	fi
	for ((i = 0; i < n; i++)); do
		ETCD_PORTS[i]=$(free_port)
		ETCD_PEER_PORTS[i]=$(free_port)
		# free_port's ports are free when it looks: two looks in a row
		# can give the same one.
		while [ "${ETCD_PEER_PORTS[i]}" = "${ETCD_PORTS[i]}" ] ||
		    [[ " ${ETCD_PORTS[*]:0:i} ${ETCD_PEER_PORTS[*]:0:i} " == *" ${ETCD_PEER_PORTS[i]} "* ]]; do
			ETCD_PEER_PORTS[i]=$(free_port)
		done
		ETCD_CLUSTER+="${ETCD_CLUSTER:+,}m$i=http://127.0.0.1:${ETCD_PEER_PORTS[i]}"
		eps+=("$(etcd_url "$i")")
	done
	ETCD_EP=$(IFS=,; echo "${eps[*]}")
	for ((i = 0; i < n; i++)); do
		rm -rf "$T/etcd$i.data"
		etcd_run "$i" new
	done
	for ((i = 0; i < n; i++)); do
		wait_for -t 30 etcd_healthy "$i" ||
		    fail "etcd member $i is not healthy: $(tail -c 3000 "$T/etcd$i.log")"
	done
}

etcd_kill()
{
	local pid=${ETCD_PIDS[$1]}
	kill -KILL "$pid" 2>/dev/null
	wait_for -t 10 eval '! esv_alive '"$pid" ||
	    fail "etcd member $1 (pid $pid) survives kill -9"
}

stop_etcd()
{
	local i
	for i in "${!ETCD_PIDS[@]}"; do
		etcd_kill "$i"
	done
	ETCD_PIDS=()
}

etcd_restart()
{
	esv_alive "${ETCD_PIDS[$1]}" && fail "etcd_restart $1: it runs"
	etcd_run "$1" existing
	wait_for -t 30 etcd_healthy "$1" ||
	    fail "etcd member $1 is not healthy after a restart: $(tail -c 3000 "$T/etcd$1.log")"
}

etcd_leader()
{
	local i
	for i in "${!ETCD_PIDS[@]}"; do
		esv_alive "${ETCD_PIDS[$i]}" || continue
		# uint64s arrive as strings in the gateway's JSON.
		etcd_api "$i" /v3/maintenance/status 2>/dev/null | "$PY" -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(not (s.get("leader") and s["leader"] == s["header"]["member_id"]))' &&
		    { echo "$i"; return 0; }
	done
	return 1
}

etcd_keys()
{
	local i=${1:-}
	if [ -z "$i" ]; then
		for i in "${!ETCD_PIDS[@]}"; do
			esv_alive "${ETCD_PIDS[$i]}" && break
		done
	fi
	# From "\0" to "\0": the whole key space.
	etcd_api "$i" /v3/kv/range '{"key":"AA==","range_end":"AA==","keys_only":true}' |
	    "$PY" -c '
import base64, json, sys
for kv in json.load(sys.stdin).get("kvs", []):
    print(base64.b64decode(kv["key"]).decode(errors="replace"))'
}

make_certs()
{
	local d=$1 ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
	command -v openssl >/dev/null || skip "openssl is not installed"
	mkdir -p "$d" || return 1
	(
	set -e
	cd "$d"
	exec 2>openssl.log
	for ca in ca wrong-ca; do
		openssl req -x509 "${ec[@]}" -keyout "$ca-key.pem" -out "$ca.pem" \
		    -days 2 -subj "/CN=esv test $ca"
	done
	# Go wants the names in subjectAltName, not in the CN.  The server's
	# certificate is a client's too: etcd's gateway dials its own gRPC
	# port with it.
	printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost' \
	    'extendedKeyUsage=serverAuth,clientAuth' >server.ext
	printf '%s\n' 'extendedKeyUsage=clientAuth' >client.ext
	for c in server client; do
		openssl req "${ec[@]}" -keyout "$c-key.pem" -out "$c.csr" \
		    -subj "/CN=esv test $c"
		openssl x509 -req -in "$c.csr" -CA ca.pem -CAkey ca-key.pem \
		    -CAcreateserial -out "$c.pem" -days 2 -extfile "$c.ext"
	done
	chmod 600 ./*-key.pem
	) || fail "make_certs $d: $(cat "$d/openssl.log")"
}
