#!/bin/sh
# A worker for the fencing tests: lifetimes of global ranks across hosts.
# At start it appends "start" to $LIVES (shared by every node), then looks
# for another live worker of the same global rank: one is a duplicate
# rank, appended as "OVERLAP".  A worker killed with SIGKILL leaves no
# "end": the check at start is what proves lifetimes never overlapped.
#	LIVES		file shared by the nodes
#	RZ_NODE		the test's name of this node
#	RZ_STOP_FLAG	exit 0 once this file exists (checked every 0.1 s)
: "${LIVES:?LIVES unset}"
now() { date +%s.%N; }
echo "start node=${RZ_NODE:-?} pid=$$ rank=$RANK world=$WORLD_SIZE" \
    "t=$(now)" >>"$LIVES"
# Every earlier start of this rank whose process is alive and not a
# zombie (exited, not yet reaped: it holds nothing).
while read -r what node pid rank rest; do
	[ "$what" = start ] && [ "$rank" = "rank=$RANK" ] || continue
	p=${pid#pid=}
	[ "$p" = $$ ] && continue
	st=$(cat "/proc/$p/stat" 2>/dev/null) || continue
	st=${st##*) }
	[ "${st%% *}" = Z ] && continue
	echo "OVERLAP rank=$RANK node=${RZ_NODE:-?} pid=$$" \
	    "world=$WORLD_SIZE; alive: $node pid=$p t=$(now)" >>"$LIVES"
done <"$LIVES"
end() { echo "end pid=$$ rank=$RANK world=$WORLD_SIZE t=$(now)" >>"$LIVES"; }
trap 'end; exit 143' TERM
while :; do
	[ -n "${RZ_STOP_FLAG:-}" ] && [ -e "$RZ_STOP_FLAG" ] && exit 0
	sleep 0.1 & wait $!
done
