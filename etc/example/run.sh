#!/usr/bin/env bash
# The example job, end to end: 2 nodes x 2 workers on loopback with static
# ranks.  Two esv-supervise processes stand for the two nodes; the worker of
# global rank 3 (node 1) fails once, so node 1 restarts its group.  Prints
# the job's status and both supervisors' exit codes; exits 0 if both
# succeeded.  Installs what is missing and builds first (tools/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

bash tools/setup.sh build
bin=build/supervisor

# A port nothing listens on; the static rendezvous needs one that every node
# agrees on, so it is chosen here rather than by each supervisor.
free_port() {
	local p n=0
	while [ $((n += 1)) -le 50 ]; do
		p=$((20000 + RANDOM % 40000))
		ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
	done
	echo "run.sh: no free port found" >&2
	exit 111
}
port=$(free_port)

top=$(mktemp -d "${TMPDIR:-/tmp}/esv-example.XXXXXX")
echo "run.sh: job directories under $top"
for n in 0 1; do
	mkdir "$top/node$n"
	cp etc/example/job.ini "$top/node$n/job.ini"
done

pids=()
# A script's background commands, and so the workers, start with SIGINT
# ignored: pass a Ctrl-C on as SIGTERM, which the supervisors forward.
trap 'kill -TERM "${pids[@]}" 2>/dev/null || :' INT TERM

for n in 0 1; do
	cmd=("$bin/esv-supervise" --nnodes 2 --node-rank "$n"
	    --nproc-per-node 2 --master-port "$port" --max-restarts 1
	    --no-python -t 3 "$top/node$n" -- "$PWD/etc/example/worker.sh")
	echo "run.sh: ${cmd[*]}"
	"${cmd[@]}" &
	pids+=($!)
done

rc=()
for p in "${pids[@]}"; do
	# A trapped signal ends wait early (status > 128): wait again.
	while :; do
		wait "$p" && s=0 || s=$?
		kill -0 "$p" 2>/dev/null || break
	done
	rc+=("$s")
done
trap - INT TERM

echo "run.sh: status"
"$bin/esv-ctl" status "$top/node0" "$top/node1" || :
echo "run.sh: node 0 exited ${rc[0]}, node 1 exited ${rc[1]}"
echo "run.sh: logs in $top/node0/logs and $top/node1/logs"
[ "${rc[0]}" = 0 ] && [ "${rc[1]}" = 0 ]
