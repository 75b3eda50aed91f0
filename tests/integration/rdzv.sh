# Helpers of the rendezvous tests, on top of lib.sh (source that first).
#	RDZV		path of esv-rdzv
#	RZ_CLIENT	tests/integration/rdzv_client.py (fake nodes, bad clients)
#	make_token FILE	a fresh token, mode 0600
#	start_rdzv [OPTIONS...]	esv-rdzv on 127.0.0.1, a free port, token
#			$T/token, heartbeat 200 ms unless OPTIONS say
#			otherwise; sets RDZV_PID, RDZV_PORT, EP (host:port),
#			RDZV_ERR (its stderr).  Again after a kill: the same
#			port if RDZV_PORT is set (--listen 127.0.0.1:$RDZV_PORT).
#	node NAME [OPTIONS...]	an esv-supervise in $T/NAME running
#			workers/rz_worker.sh recording to $T/rec.NAME, on
#			job $RZ_JOB (default job1), nodes $RZ_NNODES (2:3),
#			rdzv-conf $RZ_CONF (token, last call 1 s, join 30 s);
#			extra esv-supervise OPTIONS before the entrypoint.
#			Sets NODE_PID_<NAME>.
#	recs NAME ERE	number of records of node NAME matching ERE
#	wait_recs [-t S] NAME ERE N	wait until recs NAME ERE >= N
#	last_rec NAME	its latest record line
#	field LINE KEY	the value of KEY=... in a record line
#	wait_state NAME KEY VALUE	wait (10 s) until node NAME's state
#			file says KEY=VALUE: the supervisor writes it from its
#			loop, a moment after its workers have started; 1 and
#			a complaint naming the value it has, on the deadline
RDZV=${ESV_RDZV:-$ESV_BIN_DIR/../rendezvous/esv-rdzv}
RZ_CLIENT=$ESV_TEST_DIR/rdzv_client.py
[ -x "$RDZV" ] || skip "$RDZV is not built"

make_token()
{
	(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1")
}

start_rdzv()
{
	local listen=127.0.0.1:${RDZV_PORT:-0}
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

node()
{
	local name=$1
	shift
	REC=$T/rec.$name RZ_NODE=$name start_sup "$T/$name" \
	    --rdzv-backend esv --rdzv-endpoint "$EP" \
	    --rdzv-id "${RZ_JOB:-job1}" --nnodes "${RZ_NNODES:-2:3}" \
	    --rdzv-conf "${RZ_CONF:-token_file=$T/token,last_call_timeout=1s,join_timeout=30s}" \
	    --shutdown-timeout 3s --no-python "$@" -- "$WORKERS/rz_worker.sh"
	eval "NODE_PID_$name=\$SUP_PID"
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
