#!/bin/bash
# Bad input: a missing or malformed job.ini, contradictory options and an
# entrypoint that cannot be executed.  Configuration errors exit 100 with
# one "esv-supervise: fatal: ..." line naming where the value came from,
# before any worker starts; an entrypoint that cannot be run is an
# ordinary, prompt worker failure (exit 1).
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_bad_input.sh
. "$(dirname "$0")/lib.sh"
esv_setup 120

W=$WORKERS/worker.sh
n=0

newcase()
{
	n=$((n + 1))
	J=$T/job$n
	D=$T/job$n.dump
	mkdir -p "$J" "$D"
	export DUMP_DIR=$D
}

# no_worker_started WHAT: nothing of a running job appeared.
no_worker_started()
{
	[ -z "$(ls -A "$D")" ] && [ -z "$(ls -A "$J/workers" 2>/dev/null)" ] &&
	    [ ! -e "$J/logs" ] && [ ! -s "$J/supervise/pid" ] &&
	    [ -z "$(kv "$J/supervise/state" pids 2>/dev/null)" ] ||
	    fail "$1: a worker was started: dump [$(ls "$D")]," \
		"workers/ [$(ls "$J/workers" 2>/dev/null)]," \
		"logs/ [$(ls "$J/logs" 2>/dev/null)]"
}

# config_error WHAT ERE [OPTIONS... [-- ENTRY...]]: esv-supervise on $J
# exits 100 within 10 s with exactly one stderr line matching
# "^esv-supervise: fatal: ERE", and starts nothing.
config_error()
{
	local what=$1 ere=$2
	shift 2
	run_sup -t 10 "$J" "$@"
	assert_eq "$SUP_RC" 100 "$what: exit status ($(cat "$SUP_ERR"))"
	assert_eq "$(wc -l <"$SUP_ERR")" 1 "$what: stderr lines ($(cat "$SUP_ERR"))"
	assert_grep "$SUP_ERR" "^esv-supervise: fatal: $ere" "$what: stderr"
	no_worker_started "$what"
}

# bad_ini WHAT LINE KEY [OPTIONS...] <<EOF: a job.ini whose line LINE has
# a bad KEY.
bad_ini()
{
	local what=$1 line=$2 key=$3
	shift 3
	newcase
	write_ini "$J"
	config_error "$what" "$(printf '%s' "$J/job.ini:$line: $key: " |
	    sed 's/[][\.*^$]/\\&/g')" "$@"
}

# No job.ini and no entrypoint.
newcase
config_error "no job.ini, no entrypoint" \
    "$J/job\\.ini: entrypoint: missing"
newcase
write_ini "$J" <<'EOF'
[job]
nproc_per_node = 2
EOF
config_error "job.ini without entrypoint" "$J/job\\.ini: entrypoint: missing"
assert_rc 100 "$SUP"
assert_grep "$T/err" "usage|JOBDIR" "esv-supervise without arguments"

# Malformed job.ini files: unknown key, bad numbers, unknown section,
# repeated key, bad [env] name.  Comments and blank lines count as lines.
bad_ini "unknown key" 5 bogus <<EOF
; a comment
[job]
entrypoint = $W
no_python = true
bogus = 1
EOF
bad_ini "bad number" 4 nproc_per_node <<EOF
[job]
entrypoint = $W
# a comment
nproc_per_node = abc
no_python = true
EOF
bad_ini "zero workers" 3 nproc_per_node <<EOF
[job]
entrypoint = $W
nproc_per_node = 0
EOF
bad_ini "port out of range" 3 master_port <<EOF
[job]
entrypoint = $W
master_port = 70000
EOF
bad_ini "negative restarts" 4 max_restarts <<EOF
[job]
entrypoint = $W

max_restarts = -1
EOF
bad_ini "bad duration" 3 shutdown_timeout <<EOF
[job]
entrypoint = $W
shutdown_timeout = 5x
EOF
bad_ini "bad boolean" 3 no_python <<EOF
[job]
entrypoint = $W
no_python = maybe
EOF
bad_ini "repeated key" 4 nproc_per_node <<EOF
[job]
entrypoint = $W
nproc_per_node = 2
nproc_per_node = 3
EOF
bad_ini "bad [env] name" 5 1BAD <<EOF
[job]
entrypoint = $W
no_python = true
[env]
1BAD = x
EOF
newcase
write_ini "$J" <<EOF
[job]
entrypoint = $W
no_python = true
module = true
EOF
config_error "no_python and module in job.ini" ".*(python|module)"
# An error in job.ini counts even when the command line overrides the key.
bad_ini "overridden bad value" 3 nproc_per_node --nproc-per-node 2 <<EOF
[job]
entrypoint = $W
nproc_per_node = many
EOF

# Contradictory or malformed options and variables.
newcase
config_error "--no-python with -m" ".*(python|module)" --no-python -m -- "$W"
newcase
config_error "--node-rank 2 --nnodes 2" "--node-rank" \
    --node-rank 2 --nnodes 2 --no-python -- "$W"
newcase
config_error "--nnodes 1:2 with the static rendezvous" "--nnodes" \
    --nnodes 1:2 --no-python -- "$W"
newcase
config_error "--nnodes 3:2" "--nnodes" --nnodes 3:2 --no-python -- "$W"
newcase
config_error "--standalone with --nnodes 2" ".*(standalone|nnodes)" \
    --standalone --nnodes 2 --no-python -- "$W"
newcase
config_error "--rdzv-backend zookeeper" ".*rdzv.backend.*zookeeper" \
    --rdzv-backend zookeeper --no-python -- "$W"
newcase
config_error "--rdzv-backend etcd without an endpoint" \
    "rdzv_endpoint: required by the etcd backend" \
    --rdzv-backend etcd --no-python -- "$W"
newcase
config_error "--rdzv-backend c10d without an endpoint" ".*rdzv_endpoint" \
    --rdzv-backend c10d --no-python -- "$W"
newcase
config_error "an unknown --rdzv-conf key" "rdzv_conf: jion_timeout: unknown key" \
    --rdzv-conf jion_timeout=5 --no-python -- "$W"
newcase
echo secret-secret-secret >"$T/loose.token"
chmod 644 "$T/loose.token"
config_error "a token file others can read" ".*loose.token.*" \
    --rdzv-backend esv --rdzv-endpoint 127.0.0.1:1 \
    --rdzv-conf token_file="$T/loose.token" --no-python -- "$W"
newcase
config_error "--restart-delay-max below --restart-delay" ".*restart" \
    --restart-delay 10s --restart-delay-max 1s --no-python -- "$W"
newcase
config_error "--max-restarts x" "--max-restarts: " \
    --max-restarts x --no-python -- "$W"
newcase
config_error "unknown option" "" --frobnicate --no-python -- "$W"
newcase
PET_NNODES=x config_error "PET_NNODES=x" "PET_NNODES: " --no-python -- "$W"
newcase
PET_NPROC_PER_NODE=0 config_error "PET_NPROC_PER_NODE=0" "PET_NPROC_PER_NODE: " \
    --no-python -- "$W"

# An entrypoint that cannot be executed: "unable to exec", exit 1, at once,
# and each attempt of the budget is made.
for how in nopython python; do
	newcase
	if [ "$how" = nopython ]; then
		args=(--no-python -- "$T/nonexistent/prog")
		bad=$T/nonexistent/prog
		title=$bad
	else
		args=(--python "$T/nonexistent/python" -- train.py)
		bad=$T/nonexistent/python
		title=train.py
	fi
	start=$(date +%s%3N)
	run_sup -t 10 "$J" --nproc-per-node 2 "${args[@]}"
	took=$(($(date +%s%3N) - start))
	assert_eq "$SUP_RC" 1 "$how: exit status for a missing program ($(cat "$SUP_ERR"))"
	[ "$took" -lt 5000 ] || fail "$how: a missing program took ${took}ms to fail"
	assert_grep_F "$SUP_ERR" "unable to exec $bad: No such file or directory"
	assert_grep_F "$SUP_ERR" "$title FAILED"
	assert_json "$J/supervise/failure.json"
done
newcase
start=$(date +%s%3N)
run_sup -t 10 "$J" --no-python --max-restarts 1 -- "$T/nonexistent/prog"
took=$(($(date +%s%3N) - start))
assert_eq "$SUP_RC" 1 "exit status for a missing program, one restart"
[ "$took" -lt 5000 ] || fail "a missing program with one restart took ${took}ms"
attempts=$(ls -d "$J"/logs/none_*/attempt_* | sed 's|.*/||' | sort | tr '\n' ' ')
assert_eq "$attempts" "attempt_0 attempt_1 " "attempt directories"
assert_eq "$(grep -c "warning: worker 0: unable to exec $T/nonexistent/prog" "$SUP_ERR")" 2 \
    "'unable to exec' lines with --max-restarts 1"
assert_eq "$(kv "$J/supervise/state" restart_count)" 1 "supervise/state restart_count"

# An entrypoint that exists but may not be executed.
newcase
printf '#!/bin/sh\nexit 0\n' >"$T/noexec"
chmod 644 "$T/noexec"
run_sup -t 10 "$J" --no-python -- "$T/noexec"
assert_eq "$SUP_RC" 1 "exit status for a program without x bit"
assert_grep_F "$SUP_ERR" "unable to exec $T/noexec: Permission denied"

# Unknown sections, named at their header line, even when empty.
bad_ini "unknown section" 4 '[jobs]' <<EOF
[job]
entrypoint = $W
no_python = true
[jobs]
nproc_per_node = 2
EOF
bad_ini "empty unknown section" 4 '[jobs]' <<EOF
[job]
entrypoint = $W
no_python = true
[jobs]
EOF

echo "${0##*/}: ok"
