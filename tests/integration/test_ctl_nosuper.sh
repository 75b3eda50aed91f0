#!/bin/bash
# esv-ctl with no esv-supervise running: it must fail fast, never block,
# and keep its exit codes (esv-ctl(8)).  A "fake" below only holds
# supervise/ok and supervise/control open, as a live supervisor would.
. "$(dirname "$0")/lib.sh"
esv_setup 60

# expect_in out|err ERE: the last assert_rc's stdout or stderr matches.
expect_in()
{
	assert_grep "$T/$1" "$2" "$1 of the last command"
}

# A job directory that a supervisor once ran: the files, no reader.
J=$T/job
mkdir -p "$J/supervise" "$J/event" "$J/workers/0"
chmod 03730 "$J/event"
mkfifo "$J/supervise/control" "$J/supervise/ok"
cat >"$J/supervise/state" <<EOF
state=failed
want=up
paused=0
since=$(date +%s).25
supervisor_pid=999999
attempt=4
restart_count=3
max_restarts=3
run_id=007
pids=
exit_code=1
EOF
cat >"$J/workers/0/state" <<EOF
state=failed
local_rank=0
rank=0
exit_code=3
signal=
EOF

# Actions: "supervisor not running", exit 1, without blocking on the FIFO.
for cmd in up down once restart term kill pause cont exit; do
	assert_rc 1 "$CTL" "$cmd" "$J"
	expect_in err "esv-ctl: fail: $J: supervisor not running"
done
assert_rc 1 "$CTL" signal HUP "$J"
assert_rc 1 "$CTL" -w 5 up "$J"
expect_in err "supervisor not running"
assert_rc 1 "$CTL" down "$T/missing"
expect_in err "esv-ctl: fail: $T/missing: supervisor not running"
# Each JOBDIR is handled: one failure line per job.
assert_rc 1 "$CTL" up "$J" "$T/missing"
[ "$(grep -c 'supervisor not running' "$T/err")" -eq 2 ] ||
    fail "two jobs, wanted two failure lines: $(cat "$T/err")"

# Status of a job without supervisor: the last recorded state.
assert_rc 1 "$CTL" status "$J"
expect_in out "^$J: not running"
expect_in out "failed"
expect_in out "attempt 4"
expect_in out "restarts 3/3"
expect_in out "exit 1"
expect_in out "^  worker 0: failed, rank 0, exit 3"
assert_rc 1 "$CTL" status "$T/missing"
expect_in out "^$T/missing: not running$"
assert_rc 1 "$CTL" status --json "$J"
"$PY" - "$T/out" "$J" <<'EOF' || fail "status --json: wrong object: $(cat "$T/out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o["jobdir"] == sys.argv[2], o
assert o["supervisor"] == "not running", o
job = o["job"]
assert job["state"] == "failed" and job["attempt"] == 4, job
assert job["run_id"] == "007", job          # a name, not a number
assert job["pids"] == [] and job["exit_code"] == 1, job
assert isinstance(job["since"], float), job
assert o["workers"][0]["exit_code"] == 3, o
assert o["workers"][0]["signal"] is None, o
EOF
assert_rc 1 "$CTL" status --json "$T/missing"
"$PY" -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["job"] is None and o["workers"] == []' \
    "$T/out" || fail "status --json of a missing dir: $(cat "$T/out")"

# A state file with numbers beyond any range, then truncated: status still
# prints what it can and names the bad file (exit 1: not running).
B=$T/bignum
mkdir -p "$B/supervise"
big=$(printf '9%.0s' $(seq 400))
printf 'state=running\nsince=%s.5\nnext_start=-1%s.0\nattempt=2\n' \
    "$big" "$(printf "0%.0s" $(seq 300))" >"$B/supervise/state"
assert_rc 1 "$CTL" status "$B"
expect_in out "^$B: not running, last state: running, attempt 2, restart in 0s$"
assert_rc 1 "$CTL" status --json "$B"
"$PY" -c 'import json,sys; o=json.load(open(sys.argv[1])); assert isinstance(o["job"]["since"], str) and o["errors"] == [], o' \
    "$T/out" || fail "status --json of huge numbers: $(cat "$T/out")"
printf 'state=running\nattem' >"$B/supervise/state"
assert_rc 1 "$CTL" status "$B"
expect_in out "^  bad file: supervise/state: line 2: truncated: no newline at the end$"

# wait: a finished job needs no supervisor, and finished says how it
# ended: 1 for a failed one, 0 for one that succeeded; other targets fail
# with 1.
assert_rc 1 "$CTL" wait finished "$J"
expect_in err "fail: $J: the job failed"
sed 's/^state=failed/state=succeeded/; s/^exit_code=1/exit_code=0/' \
    "$J/supervise/state" >"$T/ok.state"
mkdir -p "$T/ok/supervise"
mv "$T/ok.state" "$T/ok/supervise/state"
assert_rc 0 "$CTL" wait finished "$T/ok"
assert_rc 1 "$CTL" wait finished "$T/ok" "$J"
assert_rc 1 "$CTL" wait up -t 5 "$J"
expect_in err "supervisor not running"

# Usage errors: 100, with the reason.
assert_rc 100 "$CTL"
assert_rc 100 "$CTL" up
assert_rc 100 "$CTL" frobnicate "$J"
expect_in err "unknown command: frobnicate"
assert_rc 100 "$CTL" signal NOSUCHSIG "$J"
expect_in err "NOSUCHSIG"
assert_rc 100 "$CTL" signal SIGSEGV "$J"
expect_in err "SIGSEGV"
assert_rc 100 "$CTL" -w 5 pause "$J"
assert_rc 100 "$CTL" -w soon up "$J"
assert_rc 100 "$CTL" wait sideways "$J"
assert_rc 100 "$CTL" wait up -t -1 "$J"
assert_rc 100 "$CTL" status -t 1 "$J"
assert_rc 100 "$CTL" up --json "$J"
assert_rc 0 "$CTL" --help
expect_in out "usage: esv-ctl"
assert_rc 0 "$CTL" --version
expect_in out "^esv-ctl "

# A fake supervisor that holds the FIFOs open but never acts: the letter
# is sent, and waits end at their timeout with 99, promptly.
bash -c 'exec 3<>"$1/supervise/ok" 4<>"$1/supervise/control"; exec sleep 60' \
    _ "$J" &
FAKE=$!
sed -i 's/^state=failed/state=down/' "$J/supervise/state"
# The fake's open may not have happened yet: wait for it.
wait_for -t 5 eval 'timeout 5 "$CTL" status "$J" >/dev/null 2>&1' ||
    fail "the fake supervisor did not open supervise/ok"
assert_rc 0 "$CTL" status "$J"
expect_in out "^$J: down"
assert_rc 0 "$CTL" pause "$J"
expect_in out "sent: $J: pause"
start=$(date +%s%N)
assert_rc 99 "$CTL" wait up -t 0.5 "$J"
elapsed=$((($(date +%s%N) - start) / 1000000))
[ "$elapsed" -ge 450 ] && [ "$elapsed" -lt 5000 ] ||
    fail "wait -t 0.5 took ${elapsed}ms"
assert_rc 99 "$CTL" up -w 0.3 "$J"
expect_in out "^timeout: $J: down"
assert_rc 99 "$CTL" restart -w 0.3 "$J"
# A waiter leaves no listener FIFO behind.
left=$(find "$J/event" -name '*ftrig1*' | wc -l)
[ "$left" -eq 0 ] || fail "$left listener FIFOs left in event/"

# The fake dies while waited on (the waiter asleep in poll): 102, not a
# timeout.
"$CTL" wait up -t 20 "$J" >"$T/out" 2>"$T/err" &
waiter=$!
wait_for -t 5 in_poll "$waiter" ||
    fail "wait up is not waiting: $(cat "$T/err")"
kill "$FAKE"
wait "$FAKE"
wait "$waiter"
assert_eq "$?" 102 "wait up whose supervisor died"
expect_in err "supervisor died"
note ok
