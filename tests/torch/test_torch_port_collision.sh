#!/bin/bash
# With TORCHELASTIC_USE_AGENT_STORE=False (--agent-store=false) worker rank 0
# hosts torch's store on MASTER_PORT.  If another process already listens
# there, rank 0 fails at once (errno 98) while rank 1 is connected to the
# stranger and would wait for its store timeout.  The job must end as a
# worker failure (exit 1, summary naming rank 0), promptly, not hang.
#   A: @record worker with a 10 s torch timeout: the summary carries the
#      bind error.
#   B: the unchanged all_reduce program with torch's default 30 min
#      timeout: only esv stopping the group ends rank 1 in time.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_torch_port_collision.sh
TEST_NAME=test_torch_port_collision
. "$(dirname "$0")/common.sh"

# The stranger: a listener on all IPv4 addresses (as torch tries [::] and
# 0.0.0.0, both collide), on a port it picked itself, so no race.
"$TORCH_PY" -c 'import os, socket, sys, time
s = socket.socket()
s.bind(("0.0.0.0", 0))
s.listen(16)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(300)' "$T/port" &
LISTENER=$!
BG_PIDS+=("$LISTENER")
for _ in $(seq 200); do
	[ -s "$T/port" ] && break
	sleep 0.05
done
port=$(cat "$T/port" 2>/dev/null)
[ -n "$port" ] || { fail "the listener did not start"; finish; }

# collide NAME WORKER LIMIT_MS: run a 2-worker job on the taken port;
# it must exit 1 within LIMIT_MS with rank 0 as the root cause.
collide() {
	local name=$1 w=$2 limit=$3 start rc elapsed
	local j=$T/job_$name
	mkdir -p "$j"
	start=$(now_ms)
	timeout 80 "$SUP" --agent-store=false --nproc-per-node 2 --master-port "$port" \
	    --python "$TORCH_PY" --log-dir "$T/logs_$name" "$j" -- "$w" \
	    >"$T/out_$name" 2>"$T/err_$name"
	rc=$?
	elapsed=$(($(now_ms) - start))
	echo "$name: exit $rc after ${elapsed}ms"
	[ "$rc" -ne 124 ] || fail "$name: the job hung until timeout(1)"
	[ "$rc" -eq 1 ] ||
	    fail "$name: esv-supervise exited $rc, wanted 1$(show stderr "$T/err_$name")"
	[ "$elapsed" -lt "$limit" ] ||
	    fail "$name: the failure took ${elapsed}ms (limit ${limit}ms)"
	assert_workers_gone "$j" "$w"
	grep -q '^state=failed$' "$j/supervise/state" ||
	    fail "$name: supervise/state is not failed$(show state "$j/supervise/state")"
	grep -qx '  rank      : 0 (local_rank: 0)' "$T/err_$name" ||
	    fail "$name: the summary's root cause is not rank 0$(show stderr "$T/err_$name")"
	"$TORCH_PY" -c 'import json, sys
f = json.load(open(sys.argv[1]))
assert f["root_cause"]["rank"] == 0, f["root_cause"]
assert f["root_cause"]["exitcode"] == 1, f["root_cause"]' \
	    "$j/supervise/failure.json" ||
	    fail "$name: failure.json$(show failure.json "$j/supervise/failure.json")"
	grep -q '^esv-test:' "$T/out_$name" &&
	    fail "$name: a worker reported a result despite the collision"
}

collide record "$TORCH_DIR/collision_worker.py" 40000
# The bind error reaches the summary through torch's error file.
sed -n '/^Root Cause/,/^=====/p' "$T/err_record" |
    grep -q 'errno: 98 - Address already in use' ||
    fail "record: the summary lacks the bind error$(show stderr "$T/err_record")"
grep -qx '  error_file: .*/attempt_0/0/error.json' "$T/err_record" ||
    fail "record: the summary names no rank-0 error file"

# Without a short torch timeout rank 1 would wait 30 minutes.
collide plain "$TORCH_DIR/allreduce_worker.py" 30000
grep -q 'errno: 98' "$T/err_plain" ||
    fail "plain: rank 0's bind error is not on the console$(show stderr "$T/err_plain")"

kill -0 "$LISTENER" 2>/dev/null || fail "the foreign listener did not survive"

finish
