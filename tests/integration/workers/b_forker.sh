#!/bin/bash
# A worker with descendants, for test_process_groups.sh.  Run it as
#	env B_MARK=<unique> bash b_forker.sh [daemon] [fail=RANK]
# Everything it starts inherits B_MARK (so the test finds the job's
# processes in /proc) and gets B_ROLE: "child" is a grandchild of the
# supervisor in the worker's process group; "daemon" (with the daemon
# argument) double-forks and calls setsid, leaving the worker's group.
# With fail=RANK, local rank RANK exits 3 during the first attempt.
daemon=0
fail=
for a; do
	case $a in
	daemon) daemon=1 ;;
	fail=*) fail=${a#fail=} ;;
	esac
done
B_ROLE=child sleep 1000 &
if [ "$daemon" = 1 ]; then
	( B_ROLE=daemon setsid sleep 1000 </dev/null >/dev/null 2>&1 & )
fi
if [ "$LOCAL_RANK" = "$fail" ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
	sleep 1.5
	exit 3
fi
wait
