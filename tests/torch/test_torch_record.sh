#!/bin/bash
# torch's @record in a worker: rank 1 raises ValueError, torch writes
# TORCHELASTIC_ERROR_FILE, and esv reports it as torch does: exit 1, the
# failure summary with the Python traceback, the error file named and
# copied to JOBDIR/workers/1/error.json, supervise/failure.json.
# Rank 0 sleeps and must be stopped, not listed as a failure.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_torch_record.sh
TEST_NAME=test_torch_record
. "$(dirname "$0")/common.sh"

J=$T/job
L=$T/logs
W=$TORCH_DIR/record_worker.py
mkdir -p "$J"
start=$(now_ms)
timeout 80 "$SUP" --nproc-per-node 2 --python "$TORCH_PY" --log-dir "$L" \
    "$J" -- "$W" >"$T/out" 2>"$T/err"
rc=$?
elapsed=$(($(now_ms) - start))
[ "$rc" -eq 1 ] || fail "esv-supervise exited $rc, wanted 1$(show stderr "$T/err")"
# Rank 0 sleeps 120 s: only the supervisor's stop ends it this early.
[ "$elapsed" -lt 60000 ] || fail "the failed job took ${elapsed}ms"
assert_workers_gone "$J" "$W"

efile=$(echo "$L"/none_*/attempt_0/1/error.json)
[ -f "$efile" ] || fail "no error file $efile"
pid1=$(sed -n 's/^pid=//p' "$J/workers/1/state")
cmp -s "$efile" "$J/workers/1/error.json" ||
    fail "workers/1/error.json differs from $efile$(show copy "$J/workers/1/error.json")"
[ ! -e "$J/workers/0/error.json" ] && [ ! -e "$L"/none_*/attempt_0/0/error.json ] ||
    fail "rank 0 was stopped by a signal yet has an error file"
grep -q '^state=failed$' "$J/supervise/state" ||
    fail "supervise/state is not failed$(show state "$J/supervise/state")"

"$TORCH_PY" - "$T/err" "$efile" "$pid1" "$W" "$J/supervise/failure.json" \
    <<'PY' || fail "summary or failure.json$(show stderr "$T/err")$(show failure.json "$J/supervise/failure.json")"
import json, re, sys

err, efile, pid1, script, fjson = sys.argv[1:]
lines = open(err).read().splitlines()
bar = "=" * 60
# The summary: the block between the last two 60-'=' bars.
ends = [i for i, l in enumerate(lines) if l == bar]
assert len(ends) >= 2, "no summary block between '=' bars"
s = lines[ends[-2] + 1:ends[-1]]
assert s[0] == f"{script} FAILED", s[0]
assert s[1] == "-" * 60, s[1]
assert s[2:4] == ["Failures:", "  <NO_OTHER_FAILURES>"], s[2:4]
i = s.index("Root Cause (first observed failure):")
rc = s[i + 1:]
assert rc[0] == "[0]:", rc[0]
assert re.fullmatch(r"  time      : \d{4}-\d\d-\d\d_\d\d:\d\d:\d\d", rc[1]), rc[1]
assert rc[2].startswith("  host      : "), rc[2]
assert rc[3] == "  rank      : 1 (local_rank: 1)", rc[3]
assert rc[4] == f"  exitcode  : 1 (pid: {pid1})", rc[4]
assert rc[5] == f"  error_file: {efile}", rc[5]
assert rc[6] == "  traceback : Traceback (most recent call last):", rc[6]
tb = rc[7:]
# py_callstack with each newline followed by two spaces of indent.
assert all(l.startswith("  ") or l == "" for l in tb), tb
assert "  ValueError: boom from rank 1" in tb, tb
assert any(l.startswith("    File ") and "record_worker.py" in l for l in tb), tb

data = json.load(open(efile))
msg = data["message"]
assert msg["message"] == "ValueError: boom from rank 1", msg
assert isinstance(msg["extraInfo"]["timestamp"], str), msg
assert "ValueError: boom from rank 1" in msg["extraInfo"]["py_callstack"], msg

f = json.load(open(fjson))
root = f["root_cause"]
assert root["rank"] == 1 and root["local_rank"] == 1, root
assert root["exitcode"] == 1 and root["pid"] == int(pid1), root
assert root["error_file"] == efile, root
assert [x["rank"] for x in f["failures"]] == [1], f["failures"]
PY

finish
