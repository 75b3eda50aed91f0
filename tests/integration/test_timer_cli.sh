#!/bin/bash
# esv-timer(1) and esv-timer.h against a real esv-watchdogd, started by hand
# with --any-pid (no supervisor): an armed timer kills the worker shell
# that ran `esv-timer arm` with the timer's signal, after the duration; a
# release (same scope) prevents it; `run` arms, runs, releases and passes
# the status on; a small C worker built here against watchdog/esv-timer.h
# is killed when it does not release, and survives when it does.
. "$(dirname "$0")/lib.sh"
esv_setup 120

WD=$ESV_BIN_DIR/../watchdog/esv-watchdogd
TIMER=$ESV_BIN_DIR/../watchdog/esv-timer
HDR_DIR=$ESV_TEST_DIR/../../watchdog
[ -x "$WD" ] || skip "$WD is not built"
[ -x "$TIMER" ] || skip "$TIMER is not built"
[ -e "$HDR_DIR/esv-timer.h" ] || skip "$HDR_DIR/esv-timer.h is missing"
CC=$(command -v cc || command -v gcc) || skip "no C compiler"

FIFO=$T/timer.fifo
mkfifo -m 600 "$FIFO" || fail "mkfifo $FIFO"
"$WD" --fifo "$FIFO" --socket "$T/wd.sock" --any-pid 2>"$T/wd.err" &
WD_PID=$!
wait_for test -S "$T/wd.sock" || fail "esv-watchdogd did not start: $(cat "$T/wd.err")"
export TORCHELASTIC_TIMER_FILE=$FIFO

now_ms()
{
	date +%s%3N
}

# timed CMD...: run CMD, status in RC, wall time in MS.
timed()
{
	local t0
	t0=$(now_ms)
	timeout 20 "$@" >"$T/out" 2>"$T/err"
	RC=$?
	MS=$(($(now_ms) - t0))
}

# The watchdog names the pid it killed, and the scope.
expired_line()
{
	grep -q "timer expired: pid $1 scope $2 " "$T/wd.err"
}

# ---- arm: the calling shell (esv-timer's parent) dies by the signal.
note "arm kills the worker shell after the duration"
timed sh -c 'echo $$ >"$1"; "$0" arm 0.5s --signal TERM || exit 9; sleep 5' \
    "$TIMER" "$T/sh1.pid"
assert_eq "$RC" 143 "status of a shell whose timer expired (SIGTERM)"
[ "$MS" -ge 500 ] && [ "$MS" -lt 2000 ] ||
    fail "shell died after ${MS} ms, wanted 0.5 s after the arm"
wait_for -t 2 expired_line "$(cat "$T/sh1.pid")" esv-timer ||
    fail "no 'timer expired' line for the shell: $(cat "$T/wd.err")"
assert_grep "$T/wd.err" "pid $(cat "$T/sh1.pid") scope esv-timer .*sent SIGTERM"

# The default signal is SIGKILL, as torch's client.
note "default signal: SIGKILL"
timed sh -c '"$0" arm 300ms; sleep 5' "$TIMER"
assert_eq "$RC" 137 "status with the default signal"

# ---- release: the same scope, and the shell lives on.  The proof is a
# marker timer that expires after the released one would have (the
# watchdog fires in deadline order): its SIGUSR1 ends the shell's wait.
note "release prevents the kill"
timed sh -c 'trap "echo survived; exit 0" USR1
    "$0" arm 0.4s --scope step --signal TERM &&
    "$0" release --scope step &&
    "$0" arm 0.6s --scope marker --signal USR1 || exit 9
    sleep 10 & wait $!' "$TIMER"
assert_eq "$RC" 0 "status of a shell that released its timer"
assert_grep_F "$T/out" survived
# Releasing another scope leaves this one armed.
timed sh -c '"$0" arm 0.4s --scope step --signal TERM &&
    "$0" release --scope other && sleep 3 && echo survived' "$TIMER"
assert_eq "$RC" 143 "status after releasing the wrong scope"
assert_no_grep_F "$T/out" survived

# ---- --pid: another process is named explicitly.
note "--pid names another process"
sleep 30 &
victim=$!
assert_rc 0 "$TIMER" arm 200ms --pid "$victim" --signal USR1 --scope v
wait "$victim"
assert_eq "$?" $((128 + 10)) "status of the --pid victim (SIGUSR1)"

# ---- run: armed around the command, released after, status passed on.
note "run: released after the command, its status kept"
timed sh -c 'trap "echo survived; exit 0" USR1
    "$0" run 1s --signal TERM -- sh -c "exit 7"; echo "rc=$?"
    "$0" arm 1.2s --scope marker --signal USR1 || exit 9
    sleep 10 & wait $!' "$TIMER"
assert_eq "$RC" 0 "status of a shell after run"
assert_grep_F "$T/out" rc=7
assert_grep_F "$T/out" survived
note "run: a command that overruns kills the calling worker"
timed sh -c 'echo $$ >"$1"; "$0" run 0.5s --scope slow --signal TERM -- sleep 5;
    echo not-reached' "$TIMER" "$T/sh2.pid"
assert_eq "$RC" 143 "status of a shell whose run overran"
[ "$MS" -ge 500 ] && [ "$MS" -lt 2000 ] ||
    fail "run's shell died after ${MS} ms, wanted 0.5 s"
assert_no_grep_F "$T/out" not-reached
wait_for -t 2 expired_line "$(cat "$T/sh2.pid")" slow ||
    fail "no 'timer expired' line for run: $(cat "$T/wd.err")"
assert_rc 127 "$TIMER" run 1s -- "$T/no-such-command"

# ---- errors: no watchdog reading, no FIFO named, usage.
note "exit codes"
mkfifo "$T/orphan.fifo"
assert_rc 111 "$TIMER" arm 1s --fifo "$T/orphan.fifo"
assert_grep_F "$T/err" "no watchdog reads FIFO"
assert_rc 111 "$TIMER" run 1s --fifo "$T/orphan.fifo" -- touch "$T/ran"
assert_no_file "$T/ran"
assert_rc 100 env -u TORCHELASTIC_TIMER_FILE "$TIMER" arm 1s
assert_grep_F "$T/err" TORCHELASTIC_TIMER_FILE
assert_rc 100 "$TIMER" arm soon
assert_rc 100 "$TIMER" arm 1s --signal NOPE
assert_rc 100 "$TIMER" arm 1s --scope "$(head -c 300 /dev/zero | tr '\0' x)"
assert_rc 100 "$TIMER" run 1s sleep 1
assert_rc 100 "$TIMER" frobnicate
assert_rc 0 "$TIMER" --help
assert_grep_F "$T/out" "esv-timer arm DURATION"
assert_rc 0 "$TIMER" --version
assert_grep "$T/out" '^esv-timer [0-9]'

# ---- the C header, strict C99, in a worker of its own.
note "esv-timer.h in a C worker"
# It waits for a marker timer that expires after c-step would have (the
# watchdog fires in deadline order): surviving it proves c-step never fired.
cat >"$T/c_worker.c" <<'EOF'
#define _POSIX_C_SOURCE 200809L
#include "esv-timer.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t marker;

static void
on_marker(int sig)
{
	(void)sig;
	marker = 1;
}

int
main(int argc, char *argv[])
{
	sigset_t usr1, old;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	signal(SIGUSR1, on_marker);
	if (esv_timer_arm(0.5, "c-step", SIGTERM) == -1) {
		perror("esv_timer_arm");
		return 111;
	}
	if (argc > 1 && strcmp(argv[1], "release") == 0 &&
	    esv_timer_release("c-step") == -1) {
		perror("esv_timer_release");
		return 111;
	}
	if (esv_timer_arm(0.7, "c-marker", SIGUSR1) == -1) {
		perror("esv_timer_arm");
		return 111;
	}
	while (!marker)
		sigsuspend(&old);
	puts("survived");
	return 0;
}
EOF
"$CC" -std=c99 -pedantic -Wall -Wextra -Werror -I"$HDR_DIR" \
    -o "$T/c_worker" "$T/c_worker.c" 2>"$T/cc.err" ||
    fail "the header does not build as C99: $(cat "$T/cc.err")"
timed "$T/c_worker"
assert_eq "$RC" 143 "status of the C worker that did not release"
[ "$MS" -ge 500 ] && [ "$MS" -lt 2000 ] ||
    fail "C worker died after ${MS} ms, wanted 0.5 s"
assert_no_grep_F "$T/out" survived
assert_grep "$T/wd.err" "timer expired: pid [0-9]+ scope c-step .*sent SIGTERM"
timed "$T/c_worker" release
assert_eq "$RC" 0 "status of the C worker that released"
assert_grep_F "$T/out" survived
assert_eq "$(count_lines "$T/wd.err" 'scope c-step ')" 1 "expiries of c-step"

# The watchdog took every request without a complaint, and is still up.
assert_no_grep "$T/wd.err" 'warning|fatal'
esv_alive "$WD_PID" || fail "esv-watchdogd died: $(cat "$T/wd.err")"
kill -TERM "$WD_PID"
wait "$WD_PID"
assert_eq "$?" 0 "esv-watchdogd status after SIGTERM"
exit 0
