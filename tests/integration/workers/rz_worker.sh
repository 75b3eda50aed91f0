#!/bin/sh
# A worker for the rendezvous tests: it appends what the round gave it to
# $REC (one line per worker start), then runs until told otherwise.
#	REC		file to append to
#	RZ_NODE		the test's name of this node (for the record)
#	RZ_FAIL_FLAG	if this file exists at start, local rank 0 removes
#			it and exits 1 after 0.3 s (a one-time failure)
#	RZ_STOP_FLAG	exit 0 once this file exists (checked every 0.1 s)
#	RZ_RUN		exit 0 after this many seconds (default: run on)
: "${REC:?REC unset}"
echo "node=${RZ_NODE:-?} pid=$$ rank=$RANK local_rank=$LOCAL_RANK" \
    "world=$WORLD_SIZE local_world=$LOCAL_WORLD_SIZE" \
    "group_rank=$GROUP_RANK group_world=$GROUP_WORLD_SIZE" \
    "role_rank=$ROLE_RANK role_world=$ROLE_WORLD_SIZE" \
    "restart=$TORCHELASTIC_RESTART_COUNT master=$MASTER_ADDR:$MASTER_PORT" \
    "agent_store=$TORCHELASTIC_USE_AGENT_STORE" >>"$REC"
# The same on stdout, for the tests of the log directories.
echo "rz_worker pid=$$ world=$WORLD_SIZE restart=$TORCHELASTIC_RESTART_COUNT"
trap 'exit 143' TERM
if [ -n "${RZ_FAIL_FLAG:-}" ] && [ "$LOCAL_RANK" = 0 ] &&
    rm "$RZ_FAIL_FLAG" 2>/dev/null; then
	sleep 0.3
	exit 1
fi
n=0
while :; do
	[ -n "${RZ_STOP_FLAG:-}" ] && [ -e "$RZ_STOP_FLAG" ] && exit 0
	[ -n "${RZ_RUN:-}" ] && [ "$n" -ge "$((RZ_RUN * 10))" ] && exit 0
	sleep 0.1 & wait $!
	n=$((n + 1))
done
