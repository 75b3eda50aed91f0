#!/usr/bin/env bash
# The example job, end to end: an elastic job on loopback.  esv-rdzv runs
# the rendezvous; two esv-supervise processes (nodes 2:3, 2 workers each)
# form the first round; the worker of global rank 3 fails once, so every
# node restarts its group; then a third node arrives and the job scales up
# to 6 workers.  Every node waits for the others at the end (exit barrier).
# Node 0 serves /healthz, /status and /metrics (esv-healthd, a free port of
# 127.0.0.1), asked once the job has scaled up.  Prints the job's status and
# the supervisors' exit codes; exits 0 if all succeeded.  Installs what is missing and builds first (tools/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

bash tools/setup.sh build
bin=build/supervisor
rdzv=build/rendezvous/esv-rdzv

top=$(mktemp -d "${TMPDIR:-/tmp}/esv-example.XXXXXX")
echo "run.sh: job directories under $top"
# The rendezvous' shared secret: only its owner may read it.
(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$top/token")

pids=()
# A script's background commands, and so the workers, start with SIGINT
# ignored: pass a Ctrl-C on as SIGTERM, which the supervisors forward.
trap 'kill -TERM "${pids[@]}" "${rdzv_pid:-}" 2>/dev/null || :' INT TERM

"$rdzv" --listen 127.0.0.1:0 --token-file "$top/token" >"$top/rdzv.out" &
rdzv_pid=$!
for _ in $(seq 100); do
	grep -q '^listening ' "$top/rdzv.out" 2>/dev/null && break
	sleep 0.1
done
endpoint=$(sed -n 's/^listening //p' "$top/rdzv.out" | head -1)
[ -n "$endpoint" ] || { echo "run.sh: esv-rdzv did not start" >&2; exit 111; }
echo "run.sh: esv-rdzv (pid $rdzv_pid) listens on $endpoint"

start_node() {
	local n=$1
	shift
	mkdir "$top/node$n"
	cp etc/example/job.ini "$top/node$n/job.ini"
	cmd=("$bin/esv-supervise" --rdzv-backend esv --rdzv-endpoint "$endpoint"
	    --rdzv-id example --nnodes 2:3 --nproc-per-node 2 --max-restarts 1
	    --rdzv-conf "token_file=$top/token,last_call_timeout=1s"
	    --no-python -t 3 "$@" "$top/node$n" -- "$PWD/etc/example/worker.sh")
	echo "run.sh: ${cmd[*]}"
	"${cmd[@]}" &
	pids+=($!)
}
start_node 0 --health-port 0 --health-address 127.0.0.1
start_node 1
sleep 4
echo "run.sh: a third node joins"
start_node 2
sleep 2
health=$(sed -n 's/^health_listen=//p' "$top/node0/supervise/state")
if [ -n "$health" ]; then
	echo "run.sh: curl http://$health/healthz: $(curl -s -m 2 "http://$health/healthz")"
	curl -s -m 2 "http://$health/metrics" | grep -E \
	    '^esv_(restarts_total|membership_restarts_total|world_size|workers\{state="running"\}) ' |
	    sed 's/^/run.sh: metrics: /' || :
fi

rc=()
for p in "${pids[@]}"; do
	# A trapped signal ends wait early (status > 128): wait again.
	while :; do
		wait "$p" && s=0 || s=$?
		kill -0 "$p" 2>/dev/null || break
	done
	rc+=("$s")
done
kill -TERM "$rdzv_pid" 2>/dev/null || :
wait "$rdzv_pid" 2>/dev/null || :
trap - INT TERM

echo "run.sh: status"
"$bin/esv-ctl" status "$top/node0" "$top/node1" "$top/node2" || :
echo "run.sh: nodes exited ${rc[*]}"
echo "run.sh: logs in $top/node*/logs"
[ "${rc[*]}" = "0 0 0" ]
