#!/bin/bash
# The service files of etc/, run by the real init systems: runsvdir runs
# etc/runit's service (sv -w up waits for ./check, sv restart and down
# work, the job's lines reach svlogd); s6-svscan runs etc/s6's (s6-svc
# -wU -u returns once the workers run, s6-svwait -U returns, s6-svc -r
# restarts the supervisor, s6-svc -h reloads); systemd-analyze verify
# accepts etc/systemd's unit.  The scripts run unchanged: ESV_JOBS,
# ESV_LOGS and ESV_BIN point them at this test's directories.
. "$(dirname "$0")/lib.sh"
esv_setup 170

ETC=$(cd "$ESV_TEST_DIR/../../etc" && pwd)
for p in runsvdir runsv sv svlogd s6-svscan s6-svscanctl s6-svc s6-svwait systemd-analyze; do
	command -v "$p" >/dev/null || skip "$p is not installed (tools/setup.sh installs it)"
done
export ESV_JOBS=$T/jobs ESV_LOGS=$T/logs ESV_BIN=$ESV_BIN_DIR
mkdir -p "$ESV_JOBS" "$ESV_LOGS"

# A job NAME whose workers print a line and hold until $T/go.NAME exists.
make_job()
{
	mkdir -p "$ESV_JOBS/$1"
	cat >"$ESV_JOBS/$1/job.ini" <<EOF
[job]
entrypoint = /bin/sh
args = -c 'echo "worker \$LOCAL_RANK of $1 runs"; while [ ! -e $T/go.$1 ]; do sleep 0.05; done'
no_python = true
nproc_per_node = 2
EOF
}
state() { kv "$ESV_JOBS/$1/supervise/state" "${2:-state}"; }

note "runit: runsvdir runs etc/runit/esv-job"
make_job rjob
mkdir -p "$T/runit"
cp -a "$ETC/runit/esv-job" "$T/runit/rjob"
touch "$T/runit/rjob/down"
runsvdir -P "$T/runit" >"$T/runsvdir.out" 2>&1 </dev/null &
RUNSVDIR=$!
SV=$T/runit/rjob
wait_for -t 20 eval 'sv status "$SV" >/dev/null 2>&1' || fail "runsv did not start"
# sv -w up waits for ./check: the workers run when it returns.
timeout 60 sv -w 30 up "$SV" >"$T/sv.out" 2>&1 || fail "sv -w 30 up: $(cat "$T/sv.out"; cat "$ESV_LOGS/rjob/current" 2>/dev/null)"
assert_grep "$T/sv.out" '^ok: run: ' "sv -w up"
assert_eq "$(state rjob)" running "esv's state when sv up returned"
pid1=$(state rjob supervisor_pid)
wait_for -t 10 grep -q 'worker 1 of rjob runs' "$ESV_LOGS/rjob/current" ||
    fail "the workers' lines did not reach svlogd: $(cat "$ESV_LOGS/rjob/current" 2>/dev/null)"
assert_grep "$ESV_LOGS/rjob/current" 'esv-supervise: started 2 workers' "svlogd"
# sv hup: a reload, the job runs on.
timeout 20 sv hup "$SV" >/dev/null || fail "sv hup"
wait_for -t 10 grep -q 'reload (SIGHUP)' "$ESV_LOGS/rjob/current" || fail "no reload on sv hup"
assert_eq "$(state rjob supervisor_pid)" "$pid1" "supervisor after sv hup"
# sv restart: a new supervisor, the group up again.
timeout 60 sv -w 30 restart "$SV" >"$T/sv.out" 2>&1 || fail "sv restart: $(cat "$T/sv.out")"
wait_for -t 20 eval '[ "$(state rjob)" = running ] && [ "$(state rjob supervisor_pid)" != "$pid1" ]' ||
    fail "no new supervisor after sv restart: $(tail -5 "$ESV_LOGS/rjob/current")"
assert_grep "$ESV_LOGS/rjob/current" 'received SIGTERM from pid' "the stop's line"
assert_grep "$ESV_LOGS/rjob/current" 'esv-supervise: exit 1: job stopped' "the last line of the first supervisor"
timeout 60 sv -w 30 down "$SV" >"$T/sv.out" 2>&1 || fail "sv down: $(cat "$T/sv.out")"
assert_grep "$T/sv.out" '^ok: down: ' "sv down"
pid2=$(state rjob supervisor_pid)
! esv_alive "$pid2" || fail "the supervisor still runs after sv down"
kill -HUP "$RUNSVDIR"
wait "$RUNSVDIR" 2>/dev/null

note "s6: s6-svscan runs etc/s6/esv-job"
make_job sjob
mkdir -p "$T/scan"
cp -a "$ETC/s6/esv-job" "$T/scan/sjob"
touch "$T/scan/sjob/down"
s6-svscan "$T/scan" >"$T/svscan.out" 2>&1 </dev/null &
SVSCAN=$!
S6=$T/scan/sjob
wait_for -t 20 eval '[ -p "$S6/supervise/control" ]' || fail "s6-supervise did not start"
# -wU: returns once the supervisor wrote its newline on fd 3.
timeout 60 s6-svc -wU -T 30000 -u "$S6" || fail "s6-svc -wU -u: $(cat "$T/svscan.out")"
assert_eq "$(state sjob)" running "esv's state when s6-svc -wU returned"
timeout 30 s6-svwait -U -t 20000 "$S6" || fail "s6-svwait -U"
pid1=$(state sjob supervisor_pid)
timeout 20 s6-svc -h "$S6" || fail "s6-svc -h"
wait_for -t 10 grep -q 'reload (SIGHUP)' "$T/svscan.out" || fail "no reload on s6-svc -h: $(cat "$T/svscan.out")"
timeout 60 s6-svc -wU -T 30000 -r "$S6" || fail "s6-svc -wU -r"
wait_for -t 20 eval '[ "$(state sjob)" = running ] && [ "$(state sjob supervisor_pid)" != "$pid1" ]' ||
    fail "no new supervisor after s6-svc -r"
assert_grep "$T/svscan.out" 'worker 1 of sjob runs' "the workers' output"
timeout 60 s6-svc -wD -T 30000 -d "$S6" || fail "s6-svc -wD -d"
! esv_alive "$(state sjob supervisor_pid)" || fail "the supervisor still runs after s6-svc -d"
s6-svscanctl -t "$T/scan"
wait "$SVSCAN" 2>/dev/null

note "systemd: systemd-analyze verify etc/systemd/esv@.service"
sed "s|/usr/local/bin/|$ESV_BIN_DIR/|g" "$ETC/systemd/esv@.service" >"$T/esv@train.service"
systemd-analyze verify --man=no "$T/esv@train.service" >"$T/verify.out" 2>&1 ||
    fail "systemd-analyze verify: $(cat "$T/verify.out")"
[ ! -s "$T/verify.out" ] || fail "systemd-analyze verify warned: $(cat "$T/verify.out")"
assert_grep "$T/esv@train.service" '^Type=notify$' "the unit's type"
note ok
exit 0
