#!/bin/bash
# Static ranks of a 2 x 4 job on loopback:
# two supervisors, --node-rank 0 and 1, four workers each.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_static_ranks.sh
. "$(dirname "$0")/lib.sh"
esv_setup 90

W=$WORKERS/worker.sh

# check_ranks PORT DUMP0 DUMP1 JOB0 JOB1: the eight workers' variables and
# the two supervise/state files.
check_ranks()
{
	PYTHONPATH=$WORKERS "$PY" - "$@" >"$T/py.out" 2>&1 <<'EOF' || fail "$(cat "$T/py.out")"
import os, sys
from envlib import environ, kv, check
port, dumps, jobs = sys.argv[1], sys.argv[2:4], sys.argv[4:6]

ranks = []
for node, d in enumerate(dumps):
    names = sorted(n for n in os.listdir(d) if n.startswith("env."))
    check(names == [f"env.{k}.0" for k in range(4)], f"node {node} workers:", names)
    for k in range(4):
        e = environ(f"{d}/env.{k}.0")
        want = {"LOCAL_RANK": k, "RANK": 4 * node + k, "ROLE_RANK": 4 * node + k,
                "GROUP_RANK": node, "GROUP_WORLD_SIZE": 2, "LOCAL_WORLD_SIZE": 4,
                "WORLD_SIZE": 8, "ROLE_WORLD_SIZE": 8, "ROLE_NAME": "default",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
                "TORCHELASTIC_RESTART_COUNT": 0}
        for key, v in want.items():
            check(e.get(key) == str(v),
                  f"node {node} local {k}: {key}={e.get(key)!r}, wanted {str(v)!r}")
        ranks.append(int(e["RANK"]))
    st = kv(jobs[node] + "/supervise/state")
    for key, v in {"group_rank": node, "group_world_size": 2, "local_world_size": 4,
                   "world_size": 8, "base_rank": 4 * node, "master_addr": "127.0.0.1",
                   "master_port": port, "state": "succeeded", "exit_code": 0}.items():
        check(st.get(key) == str(v),
              f"node {node} supervise/state {key}={st.get(key)!r}, wanted {str(v)!r}")
check(sorted(ranks) == list(range(8)), "global ranks", sorted(ranks))
EOF
}

# Both nodes from the command line, at the same time.  The workers stay a
# moment so that the two groups overlap, as in a real job.
P=$(free_port)
for n in 0 1; do
	mkdir -p "$T/d$n"
	DUMP_DIR=$T/d$n W_SLEEP=0.5 start_sup "$T/j$n" --no-python \
	    --nnodes 2 --node-rank "$n" --nproc-per-node 4 --master-port "$P" \
	    -- "$W"
	eval "PID$n=\$SUP_PID"
done
wait_sup -t 30 "$PID0"
rc0=$?
wait_sup -t 30 "$PID1"
rc1=$?
assert_eq "$rc0" 0 "node 0 exit status ($(cat "$T/j0.err"))"
assert_eq "$rc1" 0 "node 1 exit status ($(cat "$T/j1.err"))"
check_ranks "$P" "$T/d0" "$T/d1" "$T/j0" "$T/j1"
assert_grep_F "$T/j0.err" "ranks 0-3 of 8, master 127.0.0.1:$P" "node 0 stderr"
assert_grep_F "$T/j1.err" "ranks 4-7 of 8, master 127.0.0.1:$P" "node 1 stderr"
# The static backend does not know the other nodes: the agent store says
# it lets any host in (esv-stored(8), "Trust model").
assert_grep_F "$T/j0.err" "the static rendezvous did not name round 0's nodes: any host may connect" \
    "node 0's agent store"

# The same job with its settings from job.ini (node 0) and PET_ variables
# (node 1); without --master-port a multi-node job uses 29500.
rm -rf "$T/d0" "$T/d1"
mkdir -p "$T/d0" "$T/d1"
write_ini "$T/k0" <<EOF
[job]
entrypoint = $W
no_python = yes
nnodes = 2
node_rank = 0
nproc_per_node = 4
EOF
DUMP_DIR=$T/d0 start_sup "$T/k0"
PID0=$SUP_PID
DUMP_DIR=$T/d1 PET_NNODES=2 PET_NODE_RANK=1 PET_NPROC_PER_NODE=4 \
    PET_NO_PYTHON=1 start_sup "$T/k1" -- "$W"
PID1=$SUP_PID
wait_sup -t 30 "$PID0"
rc0=$?
wait_sup -t 30 "$PID1"
rc1=$?
assert_eq "$rc0" 0 "job.ini node 0 exit status ($(cat "$T/k0.err"))"
assert_eq "$rc1" 0 "PET_ node 1 exit status ($(cat "$T/k1.err"))"
check_ranks 29500 "$T/d0" "$T/d1" "$T/k0" "$T/k1"

# torchrun's static command line with only --rdzv-endpoint: both nodes
# meet where it says (MASTER_ADDR:MASTER_PORT), as torch 1.13 does.
rm -rf "$T/d0" "$T/d1"
P=$(free_port)
for n in 0 1; do
	mkdir -p "$T/d$n"
	DUMP_DIR=$T/d$n W_SLEEP=0.5 start_sup "$T/e$n" --no-python \
	    --rdzv_backend static --rdzv_endpoint "127.0.0.1:$P" \
	    --nnodes 2 --node_rank "$n" --nproc_per_node 4 -- "$W"
	eval "PID$n=\$SUP_PID"
done
wait_sup -t 30 "$PID0"
rc0=$?
wait_sup -t 30 "$PID1"
rc1=$?
assert_eq "$rc0" 0 "endpoint node 0 exit status ($(cat "$T/e0.err"))"
assert_eq "$rc1" 0 "endpoint node 1 exit status ($(cat "$T/e1.err"))"
check_ranks "$P" "$T/d0" "$T/d1" "$T/e0" "$T/e1"

echo "${0##*/}: ok"
