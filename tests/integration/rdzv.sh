# Helpers of the rendezvous tests, on top of lib.sh (source that first).
#	RZ_BACKEND	(environment) the rendezvous the nodes use: esv
#			(default: esv-rdzv) or etcd (members of etcd.sh).  A
#			test written for both checks only what the nodes see;
#			a step about esv-rdzv itself (its log, killing it) is
#			under `if [ "$RZ_BACKEND" = esv ]`.
#	RZ_LOSS_MS	how long (ms) the rendezvous may take to notice a
#			node's kill -9: esv-rdzv's heartbeats of 200 ms make
#			it 2000; on etcd the lease TTL plus 1000 (etcd
#			expires leases in sweeps of 500 ms)
#	RDZV		path of esv-rdzv
#	RZ_CLIENT	tests/integration/rdzv_client.py (fake nodes, bad clients)
#	make_token FILE	a fresh token, mode 0600
#	start_rdzv [OPTIONS...]	esv-rdzv on 127.0.0.1, a free port, token
#			$T/token, heartbeat 200 ms unless OPTIONS say
#			otherwise; sets RDZV_PID, RDZV_PORT, EP (host:port),
#			RDZV_ERR (its stderr).  Again after a kill: the same
#			port if RDZV_PORT is set (--listen 127.0.0.1:$RDZV_PORT).
#			With RZ_BACKEND=etcd (no OPTIONS): sources etcd.sh,
#			start_etcd ${RZ_ETCD_MEMBERS:-1}, EP=$ETCD_EP, RDZV_ERR
#			the first member's log; then runs a one-node job on
#			it, so that a supervisor without the backend fails the
#			test at once, with the supervisor's words.
#	node NAME [OPTIONS...]	an esv-supervise in $T/NAME running
#			workers/rz_worker.sh recording to $T/rec.NAME, on
#			job $RZ_JOB (default job1), nodes $RZ_NNODES (2:3),
#			rdzv-conf $RZ_CONF (token, last call 1 s, join 30 s);
#			extra esv-supervise OPTIONS before the entrypoint.
#			Sets NODE_PID_<NAME>.  With RZ_BACKEND=etcd: backend
#			etcd, endpoint $EP, RZ_CONF without its token_file=
#			items, plus lease_ttl=${RZ_LEASE_TTL:-2s} and
#			$ETCD_TLS_CONF if set.
#	rz_conf [CONF]	the --rdzv-conf node passes for CONF (default RZ_CONF's)
#	recs NAME ERE	number of records of node NAME matching ERE
#	wait_recs [-t S] NAME ERE N	wait until recs NAME ERE >= N
#	last_rec NAME	its latest record line
#	field LINE KEY	the value of KEY=... in a record line
#	nodes_exit_0 SECS NAME...	touch $T/stop (the workers' signal to
#			end), then wait SECS at most for each node's
#			supervisor and fail unless it exits 0
#	wait_state NAME KEY VALUE	wait (10 s) until node NAME's state
#			file says KEY=VALUE: the supervisor writes it from its
#			loop, a moment after its workers have started; 1 and
#			a complaint naming the value it has, on the deadline
RDZV=${ESV_RDZV:-$ESV_BIN_DIR/../rendezvous/esv-rdzv}
RZ_CLIENT=$ESV_TEST_DIR/rdzv_client.py
RZ_BACKEND=${RZ_BACKEND:-esv}
case $RZ_BACKEND in
esv)
	[ -x "$RDZV" ] || skip "$RDZV is not built"
	RZ_LOSS_MS=2000
	;;
etcd)
	RZ_LOSS_MS=$(awk -v t="${RZ_LEASE_TTL:-2s}" 'BEGIN {
		ms = t + 0
		if (t ~ /ms$/) ; else if (t ~ /m$/) ms *= 60000; else ms *= 1000
		print int(ms) + 1000 }')
	;;
*) fail "RZ_BACKEND=$RZ_BACKEND: esv or etcd" ;;
esac

make_token()
{
	(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1")
}

start_rdzv()
{
	local listen=127.0.0.1:${RDZV_PORT:-0}
	if [ "$RZ_BACKEND" = etcd ]; then
		[ $# -eq 0 ] || fail "start_rdzv: esv-rdzv's options $* with RZ_BACKEND=etcd"
		[ -n "${ETCD_SH_LOADED:-}" ] || . "$ESV_TEST_DIR/etcd.sh"
		start_etcd "${RZ_ETCD_MEMBERS:-1}"
		EP=$ETCD_EP
		RDZV_ERR=$T/etcd0.log
		rz_probe
		return
	fi
	[ -e "$T/token" ] || make_token "$T/token"
	: >"$T/rdzv.out"
	RDZV_ERR=$T/rdzv.err
	"$RDZV" --listen "$listen" --token-file "$T/token" --heartbeat 200 \
	    "$@" >"$T/rdzv.out" 2>>"$RDZV_ERR" </dev/null &
	RDZV_PID=$!
	ESV_SUP_PIDS+=("$RDZV_PID")
	wait_for -t 10 grep -q '^listening ' "$T/rdzv.out" ||
	    fail "esv-rdzv did not start: $(cat "$RDZV_ERR")"
	RDZV_PORT=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$T/rdzv.out" |
	    head -1)
	EP=127.0.0.1:$RDZV_PORT
}

rz_conf()
{
	local conf=${1:-${RZ_CONF:-token_file=$T/token,last_call_timeout=1s,join_timeout=30s}}
	local item out=
	if [ "$RZ_BACKEND" = esv ]; then
		echo "$conf"
		return
	fi
	# A token is esv-rdzv's; etcd's credentials are the TLS items.
	for item in ${conf//,/ }; do
		case $item in token_file=*) ;; *) out+=${out:+,}$item ;; esac
	done
	out+=${out:+,}lease_ttl=${RZ_LEASE_TTL:-2s}
	[ -z "${ETCD_TLS_CONF:-}" ] || out+=,$ETCD_TLS_CONF
	echo "$out"
}

node()
{
	local name=$1
	shift
	REC=$T/rec.$name RZ_NODE=$name start_sup "$T/$name" \
	    --rdzv-backend "$RZ_BACKEND" --rdzv-endpoint "$EP" \
	    --rdzv-id "${RZ_JOB:-job1}" --nnodes "${RZ_NNODES:-2:3}" \
	    --rdzv-conf "$(rz_conf)" \
	    --shutdown-timeout 3s --no-python "$@" -- "$WORKERS/rz_worker.sh"
	eval "NODE_PID_$name=\$SUP_PID"
}

# A one-node job of its own that must simply succeed: what a supervisor
# without the backend, or one that cannot reach the members, says then is
# the test's failure, rather than a wait for a round that never comes.
rz_probe()
{
	start_sup "$T/rz-probe" --rdzv-backend "$RZ_BACKEND" \
	    --rdzv-endpoint "$EP" --rdzv-id rz-probe --nnodes 1:1 \
	    --rdzv-conf "$(rz_conf last_call_timeout=1s,join_timeout=10s)" \
	    --no-python -- /bin/true
	wait_sup -t 20 ||
	    fail "RZ_BACKEND=$RZ_BACKEND: esv-supervise cannot run a one-node job on $EP (exit $?): $(head -c 2000 "$SUP_ERR")"
}

recs()
{
	local n
	n=$(count_lines "$T/rec.$1" "$2")
	echo "${n:-0}"
}

wait_recs()
{
	local secs=20
	if [ "$1" = -t ]; then
		secs=$2
		shift 2
	fi
	wait_for -t "$secs" eval '[ "$(recs '"$1"' "'"$2"'")" -ge '"$3"' ]'
}

last_rec()
{
	tail -n 1 "$T/rec.$1" 2>/dev/null
}

wait_state()
{
	wait_for -t 10 eval '[ "$(kv "$T/'"$1"'/supervise/state" '"$2"')" = "'"$3"'" ]' &&
	    return 0
	echo "$1: $2=$(kv "$T/$1/supervise/state" "$2"), wanted $3" >&2
	return 1
}

field()
{
	local f
	for f in $1; do
		case $f in "$2"=*) echo "${f#*=}"; return ;; esac
	done
}

nodes_exit_0()
{
	local secs=$1 n p
	shift
	touch "$T/stop"
	for n in "$@"; do
		eval "p=\$NODE_PID_$n"
		wait_sup -t "$secs" "$p"
		assert_eq $? 0 "$n's exit status: $(cat "$T/$n.err")"
	done
}
