#!/bin/bash
# esv-watchdogd killed with -9 while four workers fail and are restarted in
# a loop: the supervisor restarts it, goes on, and exits within 2 s of
# SIGTERM.  The watchdog's SIGCHLD and the hang-up of its socket could
# come in one epoll batch, the SIGCHLD first: the new watchdog was started
# in the first handler, and the stale hang-up event then read its fresh,
# empty, blocking socket, forever.
#
# Part 1 forces that order: the supervisor is stopped (SIGSTOP) in
# epoll_wait, a worker dies, then the watchdog, then it goes on (SIGCONT).  Part 2 is the fault
# run that found it: the kill lands within a few ms of a group start.
# ESV_HELPER_RACE_RUNS sets its number of runs (default 16, to keep the
# test under a minute; the fault campaign ran 30).
. "$(dirname "$0")/lib.sh"
esv_setup 170
WD=${ESV_WATCHDOGD:-$ESV_BIN_DIR/../watchdog/esv-watchdogd}
[ -x "$WD" ] || skip "$WD is not built"
RUNS=${ESV_HELPER_RACE_RUNS:-16}

# children PID [COMM]: PID's children (named COMM), one a line.
children()
{
	ps -o pid=,comm= --ppid "$1" |
	    awk -v c="${2-}" 'c == "" || $2 == c { print $1 }'
}

zombie()
{
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[ "${st%% *}" = Z ]
}

# age_ms PID: how long PID has run, from its start time in /proc.
age_ms()
{
	local st up
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	read -r up _ </proc/uptime
	awk -v s="$(echo "$st" | awk '{ print $20 }')" -v u="$up" \
	    -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%d\n", (u - s / hz) * 1000 }'
}

wd_up()
{
	wd=$(children "$SUP_PID" esv-watchdogd | head -1)
	[ -n "$wd" ] && ! zombie "$wd"
}

hd_up()
{
	hd=$(children "$SUP_PID" esv-healthd | head -1)
	[ -n "$hd" ] && ! zombie "$hd"
}

gone()
{
	! esv_alive "$SUP_PID"
}

# events NAME: how many NAME events the job logged.
events()
{
	count_lines "$job/events.jsonl" "\"$1\""
}

# start_job NAME [WORKER...]: a job of 4 workers, by default failing in a
# loop, whose watchdog has run for over 1 s.
start_job()
{
	local name=$1
	shift
	[ $# -gt 0 ] || set -- /bin/sh -c 'exit 1'
	job=$T/$name
	start_sup "$job" --file-timer --health-port 0 -r 3 \
	    --max-restarts 1000000 --nproc-per-node 4 --no-python -- "$@"
	wait_for wd_up || fail "$name: no esv-watchdogd: $(cat "$SUP_ERR")"
	# A watchdog younger than 1 s (WD_RESTART_MS) is restarted from a
	# timer, later; the race needs the restart done at once, in the
	# SIGCHLD handler: wait until it is 1.1 s old (the supervisor reads
	# its clock just after the spawn; /proc counts in 10 ms ticks).
	wait_for -t 5 eval '[ "$(age_ms "$wd")" -ge 1100 ]' ||
	    fail "$name: esv-watchdogd $wd did not grow old: $(age_ms "$wd") ms"
	wait_for wd_up || fail "$name: esv-watchdogd went away"
}

# term_within_2s WHAT: SIGTERM the supervisor; it must be gone in 2 s.
term_within_2s()
{
	local st
	kill -TERM "$SUP_PID"
	if ! wait_for -t 2 gone; then
		st=$(grep -E '^(State|SigPnd|ShdPnd)' "/proc/$SUP_PID/status" |
		    tr '\n\t' '  ')
		fail "$1: esv-supervise (pid $SUP_PID) still runs 2 s after" \
		    "SIGTERM: in $(cat "/proc/$SUP_PID/wchan" 2>/dev/null), $st"
	fi
	wait "$SUP_PID"
}

note "part 1: a worker's SIGCHLD, then the watchdog's hang-up, in one batch"
for i in 1 2 3; do
	# Workers that wait: the supervisor sleeps in epoll_wait.
	start_job det$i /bin/sleep 60
	hd_up || fail "det$i: no esv-healthd"
	kill -STOP "$SUP_PID"
	# Ready in this order: the signalfd (the worker's SIGCHLD), then the
	# watchdog's socket.  On SIGCONT both come in one batch.
	w=$(children "$SUP_PID" sleep | head -1)
	[ -n "$w" ] || fail "det$i: no worker"
	kill -KILL "$w"
	wait_for zombie "$w" || fail "det$i: the worker did not die"
	kill -KILL "$wd"
	# The third time esv-healthd dies too: its restart has the same shape.
	[ "$i" = 3 ] && kill -KILL "$hd"
	wait_for zombie "$wd" || fail "det$i: the watchdog did not die"
	kill -CONT "$SUP_PID"
	wait_for -t 5 eval '[ "$(events watchdog.restart)" -gt 0 ]' ||
	    fail "det$i: the watchdog's death was not seen"
	# The supervisor goes on: the group is started again.
	wait_for -t 5 eval '[ "$(events group.start)" -gt 1 ]' ||
	    fail "det$i: no group start after the watchdog's restart" \
	    "(supervisor in $(cat "/proc/$SUP_PID/wchan" 2>/dev/null))"
	wait_for wd_up || fail "det$i: no new esv-watchdogd"
	term_within_2s "det$i"
done

note "part 2: $RUNS runs, the watchdog killed just after a group start"
delays=
for i in $(seq "$RUNS"); do
	start_job r$i
	# The next group start, seen within a few ms (inotify), then the kill.
	exec {ev}< <(exec tail -n0 -F "$job/events.jsonl" 2>/dev/null)
	tailpid=$!
	line=
	while IFS= read -r -t 10 line <&"$ev"; do
		[[ $line == *'"group.start"'* ]] && break
	done
	[[ $line == *'"group.start"'* ]] ||
	    fail "r$i: no group start in 10 s: $(tail -3 "$SUP_ERR")"
	kill -KILL "$wd"
	now=$EPOCHREALTIME
	exec {ev}<&-
	kill "$tailpid" 2>/dev/null
	started=${line##*\"time\":}
	delays+=" $(awk -v a="$now" -v b="${started%%[,\}]*}" \
	    'BEGIN { printf "%d", (a - b) * 1000 }')"
	wait_for -t 5 eval '[ "$(events watchdog.restart)" -gt 0 ]' ||
	    fail "r$i: the watchdog's death was not seen"
	term_within_2s "r$i"
done
note "killed${delays:- (no run)} ms after the group start"
note "every supervisor exited within 2 s of SIGTERM"
