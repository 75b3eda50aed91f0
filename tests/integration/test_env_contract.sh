#!/bin/bash
# The environment and command line esv-supervise gives its workers
# (torchrun's variables, argv and TORCHELASTIC_* keys), and the
# workers/N/env/ envdirs that record it.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_env_contract.sh
. "$(dirname "$0")/lib.sh"
esv_setup 120

W=$WORKERS/worker.sh
FP=$WORKERS/fakepython
OWN="GROUP_RANK GROUP_WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR
MASTER_PORT NCCL_ASYNC_ERROR_HANDLING RANK ROLE_NAME ROLE_RANK ROLE_WORLD_SIZE
TORCHELASTIC_ERROR_FILE TORCHELASTIC_MAX_RESTARTS TORCHELASTIC_RESTART_COUNT
TORCHELASTIC_RUN_ID TORCHELASTIC_USE_AGENT_STORE TORCH_NCCL_ASYNC_ERROR_HANDLING
WORLD_SIZE"

# newcase NAME: a fresh JOBDIR J and dump directory D (exported DUMP_DIR)
# and the small, known environment the supervisor runs in.
newcase()
{
	J=$T/$1
	D=$T/$1.dump
	mkdir -p "$J" "$D"
	export DUMP_DIR=$D
	BASE=(PATH=/usr/bin:/bin HOME="$T" LANG=C ESV_ITEST_TAG="$T"
	    T="$T" DUMP_DIR="$D" FOO='bar  baz=1')
	SUP_PREFIX=(env -i "${BASE[@]}")
}

# checkpy ARGS... <<'EOF' ... EOF: run a Python check; its exception
# message is the failure.
checkpy()
{
	"$PY" - "$@" >"$T/py.out" 2>&1 || fail "$(cat "$T/py.out")"
}

# Python helpers shared by the checks below.
export PYTHONPATH=$WORKERS

# envdir_check JOBDIR DUMPDIR NPROC EXPECTED_KEYS...: workers/N/env/ holds
# exactly EXPECTED_KEYS, and chpst -e of it gives what worker N saw.
envdir_check()
{
	local job=$1 dump=$2 n=$3 k
	shift 3
	for ((k = 0; k < n; k++)); do
		[ -d "$job/workers/$k/env" ] || fail "$job/workers/$k/env missing"
		env -i chpst -e "$job/workers/$k/env" /usr/bin/env -0 \
		    >"$T/chpst.$k" || fail "chpst -e $job/workers/$k/env failed"
		checkpy "$job/workers/$k/env" "$T/chpst.$k" \
		    "$dump/env.$k.0" "$@" <<'EOF'
import os, sys
from envlib import environ, check
envdir, chpst, dump, want = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
files = sorted(os.listdir(envdir))
check(files == sorted(want), envdir, "holds", files, "wanted", sorted(want))
got = environ(chpst)
seen = environ(dump)
for k in files:
    check(got.get(k) == seen.get(k), envdir, k, "=", repr(got.get(k)),
          "but the worker saw", repr(seen.get(k)))
EOF
	done
}

command -v chpst >/dev/null || skip "runit's chpst is not installed"

# §14 item 1: the exact key set on one node with two workers, values, and
# the inherited environment.
newcase contract
run_sup -t 20 "$J" --no-python --nproc-per-node 2 -- "$W"
assert_eq "$SUP_RC" 0 "exit status of the contract run ($(cat "$SUP_ERR"))"
env -i "${BASE[@]}" /usr/bin/env -0 >"$T/base.env"
checkpy "$D" "$J" "$T/base.env" $OWN OMP_NUM_THREADS <<'EOF'
import re, sys
from envlib import environ, kv, dumps, check
d, job, base_path, want = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4:])
base = environ(base_path)
state = kv(job + "/supervise/state")
envs = dumps(d, "env")
check(sorted(envs) == [0, 1], "worker dumps", sorted(envs))
ports = set()
for r, path in envs.items():
    e = environ(path)
    for k, v in base.items():
        check(e.get(k) == v, f"rank {r}: inherited {k}={v!r} arrived as {e.get(k)!r}")
    own = {k: v for k, v in e.items() if base.get(k) != v}
    check(set(own) == want, f"rank {r}: esv set", sorted(own),
          "; missing", sorted(want - set(own)), "; extra", sorted(set(own) - want))
    fixed = {"LOCAL_RANK": str(r), "RANK": str(r), "ROLE_RANK": str(r),
             "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_NAME": "default",
             "LOCAL_WORLD_SIZE": "2", "WORLD_SIZE": "2", "ROLE_WORLD_SIZE": "2",
             "MASTER_ADDR": "127.0.0.1", "TORCHELASTIC_RESTART_COUNT": "0",
             "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_RUN_ID": "none",
             "NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
             "OMP_NUM_THREADS": "1"}
    for k, v in fixed.items():
        check(own[k] == v, f"rank {r}: {k}={own[k]!r}, wanted {v!r}")
    check(own["TORCHELASTIC_USE_AGENT_STORE"] in ("True", "False"),
          f"rank {r}: USE_AGENT_STORE={own['TORCHELASTIC_USE_AGENT_STORE']!r}")
    port = own["MASTER_PORT"]
    check(re.fullmatch(r"[1-9][0-9]*", port) and int(port) < 65536,
          f"rank {r}: MASTER_PORT={port!r}")
    ports.add(port)
    adir = state.get("attempt_dir", "")
    check(re.fullmatch(re.escape(job) + r"/logs/none_[^/]{8}/attempt_0", adir),
          "supervise/state attempt_dir", repr(adir))
    check(own["TORCHELASTIC_ERROR_FILE"] == f"{adir}/{r}/error.json",
          f"rank {r}: TORCHELASTIC_ERROR_FILE={own['TORCHELASTIC_ERROR_FILE']!r}")
check(len(ports) == 1, "MASTER_PORT differs between workers", ports)
check(state.get("master_port") in ports, "supervise/state master_port",
      state.get("master_port"), "workers", ports)
EOF
envdir_check "$J" "$D" 2 $OWN OMP_NUM_THREADS
# The workers succeeded: no error file anywhere.
[ -z "$(find "$J" -name error.json)" ] ||
    fail "error.json after a success: $(find "$J" -name error.json)"

# §14 item 39: an explicit OMP_NUM_THREADS passes through and is not
# esv's; the inherited NCCL values are the agent's; nproc 1 sets no OMP.
newcase omp
BASE+=(OMP_NUM_THREADS=7 NCCL_ASYNC_ERROR_HANDLING=0)
SUP_PREFIX=(env -i "${BASE[@]}")
run_sup -t 20 "$J" --no-python --nproc-per-node 2 -- "$W"
assert_eq "$SUP_RC" 0 "exit status with OMP_NUM_THREADS=7"
checkpy "$D" <<'EOF'
import sys
from envlib import environ, dumps, check
envs = dumps(sys.argv[1], "env")
check(sorted(envs) == [0, 1], "worker dumps", sorted(envs))
for r, p in envs.items():
    e = environ(p)
    check(e.get("OMP_NUM_THREADS") == "7", f"rank {r}: OMP_NUM_THREADS={e.get('OMP_NUM_THREADS')!r}, wanted '7'")
    check(e.get("NCCL_ASYNC_ERROR_HANDLING") == "0", f"rank {r}: NCCL_ASYNC_ERROR_HANDLING={e.get('NCCL_ASYNC_ERROR_HANDLING')!r}, wanted the agent's '0'")
    check(e.get("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "1", f"rank {r}: TORCH_NCCL_ASYNC_ERROR_HANDLING={e.get('TORCH_NCCL_ASYNC_ERROR_HANDLING')!r}")
EOF
envdir_check "$J" "$D" 2 $OWN

newcase single
run_sup -t 20 "$J" --no-python -- "$W"
assert_eq "$SUP_RC" 0 "exit status with one worker"
checkpy "$D" <<'EOF'
import sys
from envlib import environ, dumps, check
envs = dumps(sys.argv[1], "env")
check(sorted(envs) == [0], "worker dumps", sorted(envs))
e = environ(envs[0])
check("OMP_NUM_THREADS" not in e, "nproc 1: OMP_NUM_THREADS set to", repr(e.get("OMP_NUM_THREADS")))
check(e["WORLD_SIZE"] == "1" and e["LOCAL_WORLD_SIZE"] == "1", "nproc 1: sizes", e["WORLD_SIZE"], e["LOCAL_WORLD_SIZE"])
EOF
envdir_check "$J" "$D" 1 $OWN

# [env] of job.ini: set for the workers (over esv's own OMP default) and
# recorded in the envdir.
newcase inienv
write_ini "$J" <<'EOF'
[job]
nproc_per_node = 2
no_python = true

[env]
MYVAR = hello world
OMP_NUM_THREADS = 4
FOO = from job.ini
EOF
run_sup -t 20 "$J" -- "$W"
assert_eq "$SUP_RC" 0 "exit status with [env] ($(cat "$SUP_ERR"))"
checkpy "$D" <<'EOF'
import sys
from envlib import environ, dumps, check
envs = dumps(sys.argv[1], "env")
check(sorted(envs) == [0, 1], "worker dumps", sorted(envs))
for r, p in envs.items():
    e = environ(p)
    for k, v in (("MYVAR", "hello world"), ("OMP_NUM_THREADS", "4"), ("FOO", "from job.ini")):
        check(e.get(k) == v, f"rank {r}: [env] {k}={e.get(k)!r}, wanted {v!r}")
EOF
envdir_check "$J" "$D" 2 $OWN OMP_NUM_THREADS MYVAR FOO

# §14 item 37: PET_NPROC_PER_NODE with no flag; it beats job.ini; the
# flag beats it; PET_ variables reach the workers.
count_workers()
{
	ls "$D" | grep -c '^pid\..*\.0$'
}
newcase pet
write_ini "$J" <<'EOF'
[job]
nproc_per_node = 4
EOF
SUP_PREFIX=(env -i "${BASE[@]}" PET_NPROC_PER_NODE=3)
run_sup -t 20 "$J" --no-python -- "$W"
assert_eq "$SUP_RC" 0 "exit status with PET_NPROC_PER_NODE=3"
assert_eq "$(count_workers)" 3 "workers with PET_NPROC_PER_NODE=3 over job.ini's 4"
for k in 0 1 2; do
	tr '\0' '\n' <"$D/env.$k.0" >"$T/env.txt"
	assert_grep "$T/env.txt" '^LOCAL_WORLD_SIZE=3$' "rank $k env"
	assert_grep "$T/env.txt" '^PET_NPROC_PER_NODE=3$' "rank $k env"
done
newcase petflag
SUP_PREFIX=(env -i "${BASE[@]}" PET_NPROC_PER_NODE=3)
run_sup -t 20 "$J" --no-python --nproc-per-node 2 -- "$W"
assert_eq "$SUP_RC" 0 "exit status with PET_NPROC_PER_NODE=3 --nproc-per-node 2"
assert_eq "$(count_workers)" 2 "workers with PET_NPROC_PER_NODE=3 and --nproc-per-node 2"

# argv_is DUMPDIR RANK WORDS...: the worker's $0 and arguments.
argv_is()
{
	local f=$1/argv.$2.0
	shift 2
	[ -f "$f" ] || fail "no $f: the worker did not run ($(cat "$SUP_ERR"))"
	checkpy "$f" "$@" <<'EOF'
import sys
from envlib import argv, check
got, want = argv(sys.argv[1]), sys.argv[2:]
check(got == want, "argv", got, "wanted", want)
EOF
}

# §14 item 38: <python> -u script.py args, -m, PYTHON_EXEC, --python,
# python3 from PATH, --no-python.
newcase py_flag
run_sup -t 20 "$J" --python "$FP" -- script.py a 'b c' --lr
assert_eq "$SUP_RC" 0 "exit status with --python"
argv_is "$D" 0 "$FP" -u script.py a 'b c' --lr

newcase py_module
SUP_PREFIX=(env -i "${BASE[@]}" PYTHON_EXEC="$FP")
run_sup -t 20 "$J" -m -- pkg.mod x --y
assert_eq "$SUP_RC" 0 "exit status with -m"
argv_is "$D" 0 "$FP" -u -m pkg.mod x --y

newcase py_exec
SUP_PREFIX=(env -i "${BASE[@]}" PYTHON_EXEC="$FP")
run_sup -t 20 "$J" -- script.py 1
assert_eq "$SUP_RC" 0 "exit status with PYTHON_EXEC"
argv_is "$D" 0 "$FP" -u script.py 1

newcase py_flag_wins
SUP_PREFIX=(env -i "${BASE[@]}" PYTHON_EXEC=/nonexistent/python)
run_sup -t 20 "$J" --python "$FP" -- script.py
assert_eq "$SUP_RC" 0 "exit status with PYTHON_EXEC and --python"
argv_is "$D" 0 "$FP" -u script.py

newcase py_path
mkdir -p "$T/bin"
ln -sf "$FP" "$T/bin/python3"
SUP_PREFIX=(env -i "${BASE[@]}" PATH="$T/bin:/usr/bin:/bin")
run_sup -t 20 "$J" -- script.py 2
assert_eq "$SUP_RC" 0 "exit status with python3 from PATH"
argv_is "$D" 0 "$T/bin/python3" -u script.py 2

newcase nopython
run_sup -t 20 "$J" --no-python -- "$W" -u --flag
assert_eq "$SUP_RC" 0 "exit status with --no-python"
argv_is "$D" 0 "$W" -u --flag

newcase py_ini
write_ini "$J" <<EOF
[job]
entrypoint = train.py
args = --lr 0.1 "two words" '\${local_rank}' x\\ y
nproc_per_node = 2
python = $FP
EOF
run_sup -t 20 "$J"
assert_eq "$SUP_RC" 0 "exit status of the job.ini entrypoint ($(cat "$SUP_ERR"))"
argv_is "$D" 0 "$FP" -u train.py --lr 0.1 'two words' 0 'x y'
argv_is "$D" 1 "$FP" -u train.py --lr 0.1 'two words' 1 'x y'

# §14 item 4: ${local_rank} anywhere in an argument; anything else that
# looks like a template is left alone.  torch's string.Template also
# takes $local_rank and turns $$ into $.
newcase macro
run_sup -t 20 "$J" --no-python --nproc-per-node 2 -- "$W" \
    '--x=${local_rank}' '$other' 'a${local_rank}b${local_rank}' '${rank}' \
    '${local_rank' '$local_rank' '$$' '$$local_rank'
assert_eq "$SUP_RC" 0 "exit status of the macro run"
for k in 0 1; do
	argv_is "$D" "$k" "$W" "--x=$k" '$other' "a${k}b${k}" '${rank}' \
	    '${local_rank' "$k" '$' '$local_rank'
done

echo "${0##*/}: ok"
