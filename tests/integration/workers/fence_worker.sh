#!/bin/bash
# A worker for the fencing tests (test_rdzv_fence.sh, bench/fence.sh): it
# appends one line to $REC when it starts,
#	start node=N rank=R world=W group_rank=G pid=P t=UNIXTIME
# then runs until $RZ_STOP_FLAG exists.  SIGTERM ends it, unless the file
# $FENCE_STUBBORN exists then: it ignores the signal, so that only a
# SIGKILL ends it (what the fence's deadline must bring).
: "${REC:?REC unset}"
echo "start node=${RZ_NODE:-?} rank=$RANK world=$WORLD_SIZE" \
    "group_rank=$GROUP_RANK pid=$$ t=$EPOCHREALTIME" >>"$REC"
trap '[ -n "${FENCE_STUBBORN:-}" ] && [ -e "$FENCE_STUBBORN" ] || exit 143' TERM
while :; do
	[ -n "${RZ_STOP_FLAG:-}" ] && [ -e "$RZ_STOP_FLAG" ] && exit 0
	sleep 0.1 & wait $!
done
