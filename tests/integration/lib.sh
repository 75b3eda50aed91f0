# Shared helpers of the integration tests.  Source it first thing:
#	. "$(dirname "$0")/lib.sh"
#	esv_setup
# API (kept stable, other test files rely on it):
#	SUP CTL		paths of esv-supervise and esv-ctl ($ESV_BIN_DIR)
#	PY		a python3 for checks (/usr/bin/python3 if present)
#	ESV_TEST_DIR	this directory; WORKERS=$ESV_TEST_DIR/workers
#	T		the test's private work directory (made by esv_setup)
#	esv_setup [SECS]	bound the whole test (default 150 s) by running
#			the script again, without arguments, under timeout(1);
#			make $T; trap the cleanup that kills every leftover
#			process of the test.  Skips (77) without the binaries.
#	fail MSG...	"FAIL: MSG" on stderr, exit 1 (in a subshell it only
#			leaves the subshell: use `|| fail` at top level)
#	skip MSG...	"SKIP: MSG" on stderr, exit 77
#	note MSG...	a progress line on stderr
#	wait_for [-t SECS] CMD...	retry CMD until it succeeds; return 1
#			after SECS (default 10)
#	start_sup JOBDIR [OPTIONS...] [-- ENTRYPOINT ARGS...]
#			run `esv-supervise OPTIONS JOBDIR -- ENTRYPOINT ARGS`
#			in the background (JOBDIR is created).  Sets SUP_PID,
#			SUP_OUT=JOBDIR.out, SUP_ERR=JOBDIR.err.
#			Environment: `FOO=bar start_sup ...` works; a set
#			array SUP_PREFIX is put before the command, e.g.
#			SUP_PREFIX=(env -i PATH=/usr/bin:/bin) (keep
#			ESV_ITEST_TAG=$T in such an env, for the cleanup).
#	wait_sup [-t SECS] [PID]	wait for a supervisor (default $SUP_PID,
#			30 s); returns its exit status; fails on deadline.
#	run_sup [-t SECS] JOBDIR [OPTIONS...] [-- ENTRY...]
#			start_sup + wait_sup; status in SUP_RC
#	stop_sup [PID]	SIGTERM a supervisor and wait (bounded)
#	esv_alive PID	PID runs (and is not a zombie)
#	ctl ARGS...	esv-ctl with a 30 s bound
#	kv FILE KEY	value of KEY in a key=value file (empty if absent)
#	free_port	print a free TCP port of 127.0.0.1
#	write_ini JOBDIR	job.ini from stdin
#	assert_eq GOT WANT [WHAT]	assert_ne GOT NOTWANT [WHAT]
#	assert_rc WANT CMD...	run CMD (bounded 30 s) with stdout in $T/out,
#			stderr in $T/err; fail unless it exits WANT
#	assert_grep FILE ERE [WHAT]	assert_grep_F FILE STRING [WHAT]
#	assert_no_grep FILE ERE [WHAT]	assert_no_grep_F FILE STRING [WHAT]
#	assert_file PATH	assert_no_file PATH
#	assert_json FILE	FILE parses as JSON
#	count_lines FILE ERE	number of lines matching (0 if no FILE)
#	event_names JOBDIR	the job's events.jsonl in order, one a line: the
#			event's name, "control:L" for the control letter L
#	event_time JOBDIR NAME	the time (Unix seconds) of the last NAME
#			event in events.jsonl; empty if none
#	sleep_until TIME	sleep until the wall clock passes TIME (Unix
#			seconds, fractional).  Only for a "nothing happened"
#			window, whose end is derived from the delay it checks
#			(say how where it is used); never to wait for an event
#	in_poll PID	PID sleeps in poll(2)/ppoll(2): an esv-ctl waiter has
#			read the state, found its condition unmet, and waits

: "${ESV_BIN_DIR:=/work/main/build/supervisor}"
# Absolute, as workers and symlinks made in $T refer to it.
ESV_TEST_DIR=$(cd "${ESV_TEST_DIR:-$(dirname "${BASH_SOURCE[0]}")}" && pwd)
export ESV_BIN_DIR ESV_TEST_DIR
SUP=$ESV_BIN_DIR/esv-supervise
CTL=$ESV_BIN_DIR/esv-ctl
WORKERS=$ESV_TEST_DIR/workers
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
SUP_PREFIX=()
ESV_SUP_PIDS=()

note()
{
	echo "${0##*/}: $*" >&2
}

fail()
{
	echo "FAIL: ${0##*/}: $*" >&2
	exit 1
}

skip()
{
	echo "SKIP: ${0##*/}: $*" >&2
	exit 77
}

# Every process the test starts inherits ESV_ITEST_TAG (the supervisor
# passes its env on to the workers), so the cleanup finds them all, orphans
# included, by pid.
esv_kill_tagged()
{
	local f pid
	for f in $(grep -lzxF "ESV_ITEST_TAG=$T" /proc/[0-9]*/environ \
	    2>/dev/null); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		[ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] ||
		    kill -KILL "$pid" 2>/dev/null
	done
}

esv_cleanup()
{
	local rc=$? pid
	trap - EXIT INT TERM HUP
	for pid in "${ESV_SUP_PIDS[@]}"; do
		esv_alive "$pid" && kill -KILL "$pid" 2>/dev/null
	done
	esv_kill_tagged
	sleep 0.1
	esv_kill_tagged
	# The daemons a test starts write their sanitizers' reports to the
	# stderr files the test keeps (a hosted esv-rdzv to its job's
	# supervise/rdzv.log): a report fails the test that passed.
	if [ "$rc" -eq 0 ] && [ -d "$T" ] && grep -rlE \
	    'ERROR: (Address|Leak|Memory|Thread)Sanitizer|runtime error: ' \
	    --include='*.err' --include=rdzv.log "$T" >"$T/.sanitizer" \
	    2>/dev/null; then
		echo "FAIL: ${0##*/}: a sanitizer report in $(tr '\n' ' ' <"$T/.sanitizer")" >&2
		rc=1
	fi
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] || [ -n "${ESV_KEEP:-}" ]; then
		echo "${0##*/}: exit $rc, work directory kept: $T" >&2
	else
		rm -rf "$T"
	fi
	exit "$rc"
}

esv_setup()
{
	local limit=${1:-150}
	if [ -z "${ESV_ITEST_BOUNDED:-}" ]; then
		ESV_ITEST_BOUNDED=1 exec timeout -k 5 "$limit" bash "$0"
	fi
	[ -x "$SUP" ] || skip "$SUP is not built"
	[ -x "$CTL" ] || skip "$CTL is not built"
	T=$(mktemp -d "/tmp/esv-itest.${0##*/}.XXXXXX") || exit 111
	export T
	export ESV_ITEST_TAG=$T
	trap esv_cleanup EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	trap 'exit 129' HUP
}

wait_for()
{
	local secs=10 deadline ms
	if [ "$1" = -t ]; then
		secs=$2
		shift 2
	fi
	ms=${secs#*.}
	[ "$ms" = "$secs" ] && ms=
	ms=${ms}000
	deadline=$(($(date +%s%3N) + 10#0${secs%%.*} * 1000 + 10#${ms:0:3}))
	until "$@"; do
		[ "$(date +%s%3N)" -ge "$deadline" ] && return 1
		sleep 0.05
	done
	return 0
}

start_sup()
{
	local job=$1 opts=() ep=()
	shift
	while [ $# -gt 0 ]; do
		if [ "$1" = -- ]; then
			shift
			ep=(-- "$@")
			break
		fi
		opts+=("$1")
		shift
	done
	mkdir -p "$job"
	SUP_OUT=$job.out
	SUP_ERR=$job.err
	"${SUP_PREFIX[@]}" "$SUP" "${opts[@]}" "$job" "${ep[@]}" \
	    >"$SUP_OUT" 2>"$SUP_ERR" </dev/null &
	SUP_PID=$!
	ESV_SUP_PIDS+=("$SUP_PID")
}

# esv_alive PID: a pid that exited but was not reaped still answers
# kill -0, so look at its state (the field after the "(comm)").
esv_alive()
{
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}

wait_sup()
{
	local secs=30 pid
	if [ "$1" = -t ]; then
		secs=$2
		shift 2
	fi
	pid=${1:-$SUP_PID}
	if ! wait_for -t "$secs" eval '! esv_alive '"$pid"; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		fail "esv-supervise (pid $pid) still running after ${secs}s"
	fi
	wait "$pid"
}

run_sup()
{
	local secs=30
	if [ "$1" = -t ]; then
		secs=$2
		shift 2
	fi
	start_sup "$@"
	wait_sup -t "$secs"
	SUP_RC=$?
	return 0
}

stop_sup()
{
	local pid=${1:-$SUP_PID}
	kill -TERM "$pid" 2>/dev/null
	wait_sup -t 40 "$pid"
}

ctl()
{
	timeout 30 "$CTL" "$@"
}

kv()
{
	awk -v k="$2" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$1" 2>/dev/null
}

# cgroup2_mount: where the cgroup v2 hierarchy is mounted (as esv-supervise
# finds it in /proc/self/mountinfo), or nothing.
cgroup2_mount()
{
	awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
	    /proc/self/mountinfo | head -n 1
}

free_port()
{
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_ini()
{
	mkdir -p "$1"
	cat >"$1/job.ini"
}

assert_eq()
{
	[ "$1" = "$2" ] || fail "${3:-value}: got '$1', wanted '$2'"
}

assert_ne()
{
	[ "$1" != "$2" ] || fail "${3:-value}: got '$1', wanted anything else"
}

assert_rc()
{
	local want=$1 rc
	shift
	timeout 30 "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq "$want" ] ||
	    fail "$* exited $rc, wanted $want; stdout: $(head -c 2000 "$T/out"); stderr: $(head -c 2000 "$T/err")"
}

assert_grep()
{
	grep -qE -- "$2" "$1" ||
	    fail "${3:-$1} lacks /$2/: $(head -c 3000 "$1" 2>&1)"
}

assert_grep_F()
{
	grep -qF -- "$2" "$1" ||
	    fail "${3:-$1} lacks '$2': $(head -c 3000 "$1" 2>&1)"
}

assert_no_grep()
{
	! grep -qE -- "$2" "$1" ||
	    fail "${3:-$1} has /$2/: $(grep -E -- "$2" "$1" | head -5)"
}

assert_no_grep_F()
{
	! grep -qF -- "$2" "$1" ||
	    fail "${3:-$1} has '$2': $(grep -F -- "$2" "$1" | head -5)"
}

assert_file()
{
	[ -e "$1" ] || fail "$1 does not exist"
}

assert_no_file()
{
	[ ! -e "$1" ] || fail "$1 exists"
}

assert_json()
{
	"$PY" -m json.tool "$1" >/dev/null 2>&1 ||
	    fail "$1 is not JSON: $(head -c 2000 "$1" 2>&1)"
}

count_lines()
{
	local n
	n=$(grep -cE -- "$2" "$1" 2>/dev/null)
	echo "${n:-0}"
}

# The supervisor writes compact JSON: "key":value, no blanks.
event_names()
{
	awk 'match($0, /"event":"[^"]*"/) {
		e = substr($0, RSTART + 9, RLENGTH - 10)
		if (e == "control" && match($0, /"command":"[^"]*"/))
			e = e ":" substr($0, RSTART + 11, RLENGTH - 12)
		print e
	}' "$1/events.jsonl" 2>/dev/null
}

event_time()
{
	awk -v e="\"event\":\"$2\"" 'index($0, e) && match($0, /"time":[0-9.e+]+/) {
		t = substr($0, RSTART + 7, RLENGTH - 7)
	} END { if (t != "") printf "%.6f\n", t }' "$1/events.jsonl" 2>/dev/null
}

sleep_until()
{
	local left
	left=$(awk -v t="$1" -v now="$EPOCHREALTIME" 'BEGIN { if (t > now) printf "%.3f", t - now }')
	[ -z "$left" ] || sleep "$left"
}

# The kernel's wait channel names the poll; where it is hidden, the
# syscall number (x86_64 poll 7 and ppoll 271; aarch64 ppoll 73).
in_poll()
{
	local w n
	w=$(cat "/proc/$1/wchan" 2>/dev/null) || return 1
	case $w in *poll*) return 0 ;; esac
	read -r n _ <"/proc/$1/syscall" 2>/dev/null || return 1
	case $(uname -m):$n in
	x86_64:7 | x86_64:271 | aarch64:73) return 0 ;;
	esac
	return 1
}
