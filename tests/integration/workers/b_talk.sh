#!/bin/bash
# Output for the log tests: COUNT lines "out RANK RESTART_COUNT PID I" on
# stdout and "err ..." on stderr.  With WAITFILE, then waits until
# "WAITFILE.$LOCAL_RANK" exists, removes it and exits with its content
# (0 when empty); without, exits 0.
# Usage: b_talk.sh COUNT [WAITFILE]
for ((i = 0; i < $1; i++)); do
	echo "out $LOCAL_RANK $TORCHELASTIC_RESTART_COUNT $$ $i"
	echo "err $LOCAL_RANK $TORCHELASTIC_RESTART_COUNT $$ $i" >&2
done
[ -n "${2:-}" ] || exit 0
f=$2.$LOCAL_RANK
while [ ! -e "$f" ]; do
	sleep 0.05
done
rc=$(cat "$f")
rm -f "$f"
exit "${rc:-0}"
