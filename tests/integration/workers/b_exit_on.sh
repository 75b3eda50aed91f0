#!/bin/bash
# Waits until the file "$1.$LOCAL_RANK" exists, then exits with its
# content as the status (0 when empty); for tests that fail a chosen
# worker at a chosen moment.  Prints "start RANK RESTART_COUNT" first.
echo "start $LOCAL_RANK $TORCHELASTIC_RESTART_COUNT"
f=$1.$LOCAL_RANK
while [ ! -e "$f" ]; do
	sleep 0.05
done
rc=$(cat "$f")
exit "${rc:-0}"
