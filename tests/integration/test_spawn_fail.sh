#!/bin/bash
# A worker that cannot be started (here: out of file descriptors for its
# output pipes) is a failure of that worker: counted as a spawn failure,
# in failure.json, in the summary and in events.jsonl; the "started" line
# counts only the workers that run; the supervisor says at start that the
# group cannot fit in RLIMIT_NOFILE.  The soft limit is raised to the hard
# one for the supervisor only.
. "$(dirname "$0")/lib.sh"
esv_setup 60

command -v prlimit >/dev/null || skip "prlimit(1) is missing"

note "16 tee'd workers in 32 file descriptors"
SUP_PREFIX=(prlimit --nofile=32)
run_sup "$T/fds" --no-python --nproc-per-node 16 -t 3 -- sh -c 'sleep 30'
SUP_PREFIX=()
assert_eq "$SUP_RC" 1 "exit status"
J=$T/fds
assert_grep "$SUP_ERR" "warning: 16 workers with these redirects need about [0-9]+ open files, but RLIMIT_NOFILE is 32"
assert_grep "$SUP_ERR" "started [0-9]+ of 16 workers"
assert_grep_F "$SUP_ERR" "unable to start it (its output): Too many open files"
assert_grep_F "$SUP_ERR" "sh FAILED"
assert_eq "$(kv "$J/supervise/state" state)" failed state
[ "$(kv "$J/supervise/state" worker_failures_spawn)" -ge 1 ] ||
    fail "worker_failures_spawn: $(grep failures "$J/supervise/state")"
assert_eq "$(kv "$J/supervise/state" worker_failures_exec)" 0 worker_failures_exec
assert_file "$J/supervise/failure.json"
assert_json "$J/supervise/failure.json"
assert_grep_F "$J/supervise/failure.json" "unable to start it (its output): Too many open files"
started=$(sed -n 's/.*started \([0-9]*\) of 16 workers.*/\1/p' "$SUP_ERR")
failed=$(grep -l '^state=failed' "$J"/workers/*/state | wc -l)
assert_eq "$failed" 1 "workers in state failed"
rank=$(grep -l '^state=failed' "$J"/workers/*/state | sed 's|.*/workers/\([0-9]*\)/state|\1|')
assert_eq "$rank" "$started" "the failed worker is the first not started"
assert_eq "$(kv "$J/workers/$rank/state" exit_code)" 127 "exit_code of the failed worker"
"$PY" - "$J/events.jsonl" "$rank" <<'EOF' || fail "events.jsonl: no worker.exit with the error"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ok = [e for e in ev if e["event"] == "worker.exit" and e["local_rank"] == int(sys.argv[2])
      and e["state"] == "failed" and "Too many open files" in e.get("error", "")]
start = [e for e in ev if e["event"] == "group.start"]
sys.exit(not ok or not start or start[0]["workers"] != int(sys.argv[2]))
EOF

note "the restart budget: each attempt fails the same way, and is counted"
SUP_PREFIX=(prlimit --nofile=32)
run_sup "$T/fds3" --no-python --nproc-per-node 16 -t 3 --max-restarts 3 \
    -- sh -c 'sleep 30'
SUP_PREFIX=()
assert_eq "$SUP_RC" 1 "exit status with --max-restarts 3"
assert_eq "$(kv "$T/fds3/supervise/state" restart_count)" 3 restart_count
assert_eq "$(kv "$T/fds3/supervise/state" worker_failures_spawn)" 4 \
    "spawn failures over 4 attempts"

note "a soft limit below the hard one is raised for the supervisor, not the workers"
SUP_PREFIX=(prlimit --nofile=32:4096)
run_sup "$T/raised" --no-python --nproc-per-node 16 -t 3 \
    -- sh -c 'ulimit -n'
SUP_PREFIX=()
assert_eq "$SUP_RC" 0 "exit status with the soft limit raised"
assert_no_grep "$SUP_ERR" "RLIMIT_NOFILE|unable to" "stderr with the soft limit raised"
assert_grep "$SUP_ERR" "started 16 workers"
assert_eq "$(grep -c '\]:32$' "$SUP_OUT")" 16 "workers' soft limit"

note ok
exit 0
