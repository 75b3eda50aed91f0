#!/bin/sh
# A worker for the integration tests: it records what esv-supervise gave it
# in $DUMP_DIR, then does what the W_* variables ask.
#	DUMP_DIR/env.R.C	its environment exactly as exec'd (NUL separated)
#	DUMP_DIR/argv.R.C	$0 and its arguments, NUL separated
#	DUMP_DIR/pid.R.C	its pid, written once the worker is set up
#	DUMP_DIR/term.R.C	written when it gets SIGTERM
#	DUMP_DIR/done.R.C	written when it exits 0
# R is LOCAL_RANK and C TORCHELASTIC_RESTART_COUNT.
#	W_FAIL_RANK	local rank that fails (none by default)
#	W_FAIL_AT	restart counts at which it fails, e.g. "0" or "0 1"
#			(default: every attempt)
#	W_FAIL_CODE	its exit code (1)
#	W_FAIL_SIGNAL	kill itself with this signal instead
#	W_FAIL_DELAY	seconds before failing, once all workers of the
#			attempt wrote their pid files (0.3)
#	W_ERROR_JSON	1: write torch's error file into $TORCHELASTIC_ERROR_FILE
#			before failing
#	W_SLEEP		seconds every other worker runs before exiting 0 (0)
#	W_SLEEP_RANK	if set, only this rank sleeps; the others exit at once
#	W_SLEEP_AT	if set, restart counts at which they sleep, e.g. "0"
d=${DUMP_DIR:?DUMP_DIR unset}
tag=$LOCAL_RANK.$TORCHELASTIC_RESTART_COUNT
cat /proc/$$/environ >"$d/env.$tag"
printf '%s\0' "$0" "$@" >"$d/argv.$tag"
trap 'echo $$ >"$d/term.$tag"; exit 143' TERM
echo $$ >"$d/pid.$tag.tmp" && mv "$d/pid.$tag.tmp" "$d/pid.$tag"

fails=0
if [ "${W_FAIL_RANK-x}" = "$LOCAL_RANK" ]; then
	fails=1
	if [ -n "${W_FAIL_AT+set}" ]; then
		fails=0
		for c in $W_FAIL_AT; do
			[ "$c" = "$TORCHELASTIC_RESTART_COUNT" ] && fails=1
		done
	fi
fi
if [ "$fails" = 1 ]; then
	# Fail only once every worker of the attempt is set up (bounded), so
	# that each of them can witness the stop.
	n=0
	while [ "$(ls "$d" | grep -c "^pid\..*\.$TORCHELASTIC_RESTART_COUNT\$")" \
	    -lt "$LOCAL_WORLD_SIZE" ] && [ "$n" -lt 100 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	sleep "${W_FAIL_DELAY:-0.3}"
	if [ "${W_ERROR_JSON:-0}" = 1 ]; then
		printf '%s' '{"message": {"message": "ValueError: boom from rank '"$RANK"'", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", line 7, in <module>\n    main()\nValueError: boom from rank '"$RANK"'", "timestamp": "1700000000"}}}' \
		    >"$TORCHELASTIC_ERROR_FILE"
	fi
	if [ -n "${W_FAIL_SIGNAL:-}" ]; then
		kill -"$W_FAIL_SIGNAL" $$
		sleep 5
	fi
	exit "${W_FAIL_CODE:-1}"
fi
sleeps=1
if [ -n "${W_SLEEP_RANK:-}" ] && [ "$W_SLEEP_RANK" != "$LOCAL_RANK" ]; then
	sleeps=0
fi
if [ -n "${W_SLEEP_AT+set}" ]; then
	at=0
	for c in $W_SLEEP_AT; do
		[ "$c" = "$TORCHELASTIC_RESTART_COUNT" ] && at=1
	done
	[ "$at" = 1 ] || sleeps=0
fi
# In the background so that SIGTERM runs the trap at once; the shell's
# "Terminated" notice would only clutter the supervisor's stderr.
if [ "$sleeps" = 1 ]; then
	{ sleep "${W_SLEEP:-0}" & wait $!; } 2>/dev/null
fi
echo $$ >"$d/done.$tag"
exit 0
