#!/bin/sh
# A stand-in for a training process, run by esv-supervise --no-python.
# Prints where it sits in the job, works for $EXAMPLE_WORK seconds (1), and
# exits 0; the worker of global rank $EXAMPLE_FAIL_RANK fails once, on the
# first attempt of its node, so that the groups of all nodes restart.
echo "rank $RANK/$WORLD_SIZE (node $GROUP_RANK, local $LOCAL_RANK)" \
    "restart $TORCHELASTIC_RESTART_COUNT/$TORCHELASTIC_MAX_RESTARTS," \
    "master $MASTER_ADDR:$MASTER_PORT"
if [ "$RANK" = "${EXAMPLE_FAIL_RANK:--1}" ] &&
    [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
	sleep 0.5
	echo "rank $RANK: failing on purpose (exit 1)" >&2
	exit 1
fi
sleep "${EXAMPLE_WORK:-1}"
echo "rank $RANK: done"
