#!/bin/bash
# Failures, restarts and torch's failure summary: restart of the whole
# group, the restart budget, signal deaths, error files, the root-cause
# copy, the summary's layout, the success path, and the state files left
# behind.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_failures.sh
. "$(dirname "$0")/lib.sh"
esv_setup 150

W=$WORKERS/worker.sh
URL="To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"

newcase()
{
	J=$T/$1
	D=$T/$1.dump
	mkdir -p "$J" "$D"
	export DUMP_DIR=$D
}

# checkpy ARGS... <<'EOF': a Python check; what it raises is the failure.
checkpy()
{
	"$PY" - "$@" >"$T/py.out" 2>&1 || fail "$(cat "$T/py.out")"
}

cat >"$T/summ.py" <<'EOF'
import json, re, socket
from envlib import check, kv

def summary(errfile, name, rank, local_rank, exitcode, pid, error_file,
            traceback, time=None):
    """Check torch's failure summary in errfile: layout, border width and
    the root cause's fields.  traceback is a list of lines."""
    lines = open(errfile).read().split("\n")
    tops = [i for i, l in enumerate(lines) if re.fullmatch(r"=+", l)]
    check(len(tops) == 2, "wanted one summary framed by two '=' lines in",
          errfile, ":", "\n".join(lines))
    block = lines[tops[0]:tops[1] + 1]
    text = "\n".join(block)
    width = len(block[0])
    content = [l for l in block if not re.fullmatch(r"[=-]+", l)]
    want_width = min(60, max(len(l) for l in content))
    check(width == want_width, f"border is {width} wide, wanted {want_width}:\n{text}")
    for l in block:
        if re.fullmatch(r"[=-]+", l):
            check(len(l) == width, f"border lines differ in width:\n{text}")
    want = (["=" * width, f"{name} FAILED", "-" * width, "Failures:",
             "  <NO_OTHER_FAILURES>", "-" * width,
             "Root Cause (first observed failure):", "[0]:"])
    check(block[:8] == want, f"summary head:\n{text}\nwanted:\n" + "\n".join(want))
    fields = block[8:-1]
    check(len(fields) >= 6, f"root cause too short:\n{text}")
    check(re.fullmatch(r"  time      : \d{4}-\d\d-\d\d_\d\d:\d\d:\d\d", fields[0]),
          f"time line {fields[0]!r}")
    if time is not None:
        check(fields[0] == f"  time      : {time}", f"time line {fields[0]!r}, wanted {time}")
    # torch prints socket.getfqdn() (a reverse lookup of gethostname());
    # getaddrinfo's canonical name (hostname -f) is accepted too: they only
    # differ with odd /etc/hosts files.
    hosts = {socket.getfqdn()}
    try:
        hosts.add(socket.getaddrinfo(socket.gethostname(), None,
                                     flags=socket.AI_CANONNAME)[0][3])
    except OSError:
        pass
    check(fields[1][len("  host      : "):] in hosts and
          fields[1].startswith("  host      : "), f"host line {fields[1]!r}, wanted one of {hosts}")
    want = [fields[1],
            f"  rank      : {rank} (local_rank: {local_rank})",
            f"  exitcode  : {exitcode} (pid: {pid})",
            f"  error_file: {error_file}",
            f"  traceback : {traceback[0]}"] + ["  " + l for l in traceback[1:]]
    check(fields[1:] == want, "root cause fields:\n" + "\n".join(fields[1:]) +
          "\nwanted:\n" + "\n".join(want))

def load(path):
    try:
        return json.load(open(path))
    except Exception as e:
        raise SystemExit(f"{path}: not JSON: {e}")
EOF
export PYTHONPATH=$T:$WORKERS

attempt_dirs()
{
	ls -d "$J"/logs/none_*/attempt_* 2>/dev/null | sed 's|.*/||' | sort | tr '\n' ' '
}

# §14 item 5: worker 2 fails at attempt 0 only; the whole group is stopped
# with SIGTERM and started again with new pids and RESTART_COUNT=1.
newcase restart
W_FAIL_RANK=2 W_FAIL_AT=0 W_SLEEP=30 W_SLEEP_AT=0 \
    run_sup -t 40 "$J" --no-python --nproc-per-node 4 --max-restarts 1 -- "$W"
assert_eq "$SUP_RC" 0 "exit status after one restart ($(cat "$SUP_ERR"))"
for k in 0 1 3; do
	[ -f "$D/term.$k.0" ] || fail "worker $k got no SIGTERM when worker 2 failed"
done
for k in 0 1 2 3; do
	[ -f "$D/pid.$k.1" ] || fail "worker $k was not started again"
	[ -f "$D/done.$k.1" ] || fail "worker $k did not succeed at attempt 1"
	old=$(cat "$D/pid.$k.0")
	new=$(cat "$D/pid.$k.1")
	assert_ne "$new" "$old" "pid of worker $k after the restart"
	esv_alive "$old" && fail "worker $k of attempt 0 (pid $old) still alive"
	tr '\0' '\n' <"$D/env.$k.1" | grep -qx TORCHELASTIC_RESTART_COUNT=1 ||
	    fail "worker $k at attempt 1: $(tr '\0' '\n' <"$D/env.$k.1" | grep RESTART_COUNT)"
done
assert_no_file "$D/pid.0.2"
assert_eq "$(attempt_dirs)" "attempt_0 attempt_1 " "attempt directories"
assert_eq "$(kv "$J/supervise/state" state)" succeeded "supervise/state state"
assert_eq "$(kv "$J/supervise/state" restart_count)" 1 "supervise/state restart_count"
assert_eq "$(kv "$J/supervise/state" exit_code)" 0 "supervise/state exit_code"
assert_no_grep_F "$SUP_ERR" "FAILED" "stderr of a job that recovered"

# §14 items 6 and 10: worker 2 always exits 3; max_restarts 2 gives three
# attempts, exit 1 and torch's summary.  The supervisor's own
# TORCHELASTIC_ERROR_FILE stays untouched: the root cause has no file.
newcase budget
W_FAIL_RANK=2 W_FAIL_CODE=3 W_SLEEP=30 TORCHELASTIC_ERROR_FILE=$T/budget.root \
    run_sup -t 60 "$J" --no-python --nproc-per-node 4 --max-restarts 2 -- "$W"
assert_eq "$SUP_RC" 1 "exit status with the budget spent"
assert_eq "$(attempt_dirs)" "attempt_0 attempt_1 attempt_2 " "attempt directories"
assert_no_file "$D/pid.0.3"
for c in 0 1 2; do
	for k in 0 1 3; do
		[ -f "$D/term.$k.$c" ] || fail "attempt $c: worker $k got no SIGTERM"
	done
done
assert_grep_F "$SUP_ERR" "  rank      : 2 (local_rank: 2)"
assert_grep_F "$SUP_ERR" "  exitcode  : 3 (pid: $(cat "$D/pid.2.2"))"
checkpy "$SUP_ERR" "$W" "$(cat "$D/pid.2.2")" "$URL" <<'EOF'
import sys
from summ import summary
err, name, pid, url = sys.argv[1:]
summary(err, name, 2, 2, 3, pid, "<N/A>", [url])
EOF
assert_no_file "$T/budget.root"
assert_json "$J/supervise/failure.json"
checkpy "$J" "$(cat "$D/pid.2.2")" <<'EOF'
import sys
from summ import load, kv, check
job, pid = sys.argv[1:]
f = load(job + "/supervise/failure.json")
rc = f.get("root_cause") or {}
check(rc.get("rank") == 2 and rc.get("local_rank") == 2 and rc.get("exitcode") == 3
      and str(rc.get("pid")) == pid, "failure.json root_cause", rc)
st = kv(job + "/supervise/state")
for k, v in {"state": "failed", "exit_code": "1", "restart_count": "2",
             "max_restarts": "2"}.items():
    check(st.get(k) == v, f"supervise/state {k}={st.get(k)!r}, wanted {v!r}")
for r in range(4):
    w = kv(f"{job}/workers/{r}/state")
    if r == 2:
        check(w.get("state") == "failed" and w.get("exit_code") == "3"
              and w.get("pid") == pid and w.get("restart_count") == "2",
              f"workers/{r}/state", w)
    else:
        check(w.get("state") == "stopped", f"workers/{r}/state", w)
EOF

# §14 item 7: a worker killed by SIGKILL.
newcase signal
W_FAIL_RANK=0 W_FAIL_SIGNAL=9 W_SLEEP=30 \
    run_sup -t 40 "$J" --no-python --nproc-per-node 2 -- "$W"
assert_eq "$SUP_RC" 1 "exit status after a SIGKILL death"
pid=$(cat "$D/pid.0.0")
assert_grep_F "$SUP_ERR" "  exitcode  : -9 (pid: $pid)"
assert_grep_F "$SUP_ERR" "  traceback : Signal 9 (SIGKILL) received by PID $pid"
assert_grep_F "$SUP_ERR" "  error_file: <N/A>"
checkpy "$SUP_ERR" "$W" "$pid" "$J" <<'EOF'
import sys
from summ import summary, load, kv, check
err, name, pid, job = sys.argv[1:]
summary(err, name, 0, 0, -9, pid, "<N/A>", [f"Signal 9 (SIGKILL) received by PID {pid}"])
rc = load(job + "/supervise/failure.json").get("root_cause") or {}
check(rc.get("exitcode") == -9 and rc.get("signal") == "SIGKILL",
      "failure.json root_cause", rc)
w = kv(job + "/workers/0/state")
check(w.get("state") == "failed" and w.get("signal") == "SIGKILL",
      "workers/0/state", w)
check(kv(job + "/workers/1/state").get("state") == "stopped",
      "workers/1/state", kv(job + "/workers/1/state"))
EOF

# §14 items 8 and 9: the worker writes torch's error file; the summary
# shows its py_callstack indented, its path and its timestamp (local time,
# here UTC); the root cause is copied to the supervisor's own
# TORCHELASTIC_ERROR_FILE with message.errorCode, replacing what was there.
newcase errfile
echo stale >"$T/root.json"
TZ=UTC TORCHELASTIC_ERROR_FILE=$T/root.json W_FAIL_RANK=1 W_FAIL_CODE=5 \
    W_ERROR_JSON=1 W_SLEEP=30 \
    run_sup -t 40 "$J" --no-python --nproc-per-node 2 -- "$W" --foo
assert_eq "$SUP_RC" 1 "exit status after a failure with an error file"
pid=$(cat "$D/pid.1.0")
ef=$(tr '\0' '\n' <"$D/env.1.0" | sed -n 's/^TORCHELASTIC_ERROR_FILE=//p')
[ -f "$ef" ] || fail "the worker's error file $ef is gone"
checkpy "$SUP_ERR" "$W" "$pid" "$ef" "$T/root.json" "$J" <<'EOF'
import sys
from summ import summary, load, kv, check
err, name, pid, ef, root, job = sys.argv[1:]
summary(err, name, 1, 1, 5, pid, ef,
        ["Traceback (most recent call last):",
         '  File "train.py", line 7, in <module>',
         "    main()",
         "ValueError: boom from rank 1"],
        time="2023-11-14_22:13:20")
want = load(ef)
want["message"]["errorCode"] = 5
got = load(root)
check(got == want, "root-cause copy", got, "wanted", want)
copy = load(job + "/workers/1/error.json")
check(copy == load(ef), "workers/1/error.json", copy)
w = kv(job + "/workers/1/state")
check(w.get("error_file") == ef and w.get("exit_code") == "5", "workers/1/state", w)
rc = load(job + "/supervise/failure.json").get("root_cause") or {}
check(rc.get("error_file") == ef and rc.get("exitcode") == 5, "failure.json root_cause", rc)
EOF

# §14 item 11: success.  Exit 0, no summary, no error files, no root copy.
newcase success
TORCHELASTIC_ERROR_FILE=$T/success.root W_SLEEP=0.2 \
    run_sup -t 30 "$J" --no-python --nproc-per-node 2 -- "$W"
assert_eq "$SUP_RC" 0 "exit status of a successful job ($(cat "$SUP_ERR"))"
assert_no_grep_F "$SUP_ERR" "FAILED"
assert_no_file "$T/success.root"
assert_no_file "$J/supervise/failure.json"
[ -z "$(find "$J" -name error.json)" ] ||
    fail "error.json after a success: $(find "$J" -name error.json)"
for k in 0 1; do
	assert_eq "$(kv "$J/workers/$k/state" state)" succeeded "workers/$k/state state"
	assert_eq "$(kv "$J/workers/$k/state" exit_code)" 0 "workers/$k/state exit_code"
done
assert_eq "$(kv "$J/supervise/state" state)" succeeded "supervise/state state"

# §14 item 12: worker 0 succeeds early, worker 1 fails later.  With a
# restart left both run again; without one, only worker 1 is reported.
newcase partial
W_FAIL_RANK=1 W_FAIL_AT=0 W_FAIL_DELAY=1 W_SLEEP_RANK=1 \
    run_sup -t 40 "$J" --no-python --nproc-per-node 2 --max-restarts 1 -- "$W"
assert_eq "$SUP_RC" 0 "exit status of partial success then failure, restart left"
[ -f "$D/done.0.0" ] || fail "worker 0 did not succeed at attempt 0"
for k in 0 1; do
	[ -f "$D/pid.$k.1" ] || fail "worker $k was not started again after worker 1 failed"
done

newcase partial_last
W_FAIL_RANK=1 W_FAIL_DELAY=1 W_SLEEP_RANK=1 \
    run_sup -t 40 "$J" --no-python --nproc-per-node 2 -- "$W"
assert_eq "$SUP_RC" 1 "exit status of partial success then failure"
checkpy "$SUP_ERR" "$W" "$(cat "$D/pid.1.0")" "$URL" "$J" <<'EOF'
import sys
from summ import summary, load, kv, check
err, name, pid, url, job = sys.argv[1:]
summary(err, name, 1, 1, 1, pid, "<N/A>", [url])
f = load(job + "/supervise/failure.json")
check([x.get("rank") for x in f.get("failures", [])] == [1], "failure.json failures", f.get("failures"))
check(kv(job + "/workers/0/state").get("state") == "succeeded", "workers/0/state", kv(job + "/workers/0/state"))
check(kv(job + "/workers/1/state").get("state") == "failed", "workers/1/state", kv(job + "/workers/1/state"))
EOF

# A worker's error file that jansson cannot parse, whose parser complaint
# ends inside a two-byte character: the record is still written, and
# valid UTF-8, and so is the summary on stderr.
newcase badutf8
cat >"$T/badutf8.py" <<'EOF'
import os, sys
open(os.environ["TORCHELASTIC_ERROR_FILE"], "wb").write(b'{"message": "x\\' + "\u00e9".encode() + b'"}')
sys.exit(1)
EOF
run_sup -t 30 "$J" --no-python --nproc-per-node 1 -- "$PY" "$T/badutf8.py"
assert_eq "$SUP_RC" 1 "exit status of a worker with a broken error file"
checkpy "$SUP_ERR" "$J" <<'EOF'
import sys
from summ import load, check
err, job = sys.argv[1:]
open(err, "rb").read().decode("utf-8")
f = load(job + "/supervise/failure.json")
m = f["root_cause"]["message"]
check(m.startswith("error file ") and "invalid" in m, "failure.json message", m)
check(len(f["failures"]) == 1, "failure.json failures", f["failures"])
EOF

echo "${0##*/}: ok"
