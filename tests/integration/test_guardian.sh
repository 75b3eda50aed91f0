#!/bin/bash
# The guardian and the sweeps of the job's processes.
# 1. kill -9 of the supervisor at a random moment of a 16-worker respawn
#    loop (guardian alive): nothing of the job is left 3 s later, and with
#    --standalone the private esv-rdzv goes down with it.  Killed while it
#    starts 200 workers by the first, which closed its fds and forked: the
#    guardian knew that worker's group all the same.
# 2. kill -9 of the supervisor AND its guardian, with a worker's child that
#    closed every fd (no group.lock): the next esv-supervise on the JOBDIR
#    kills it through supervise/pgids, and spares an unrelated process whose
#    group id was recorded before it existed.
# 3. Ordinary restarts whose workers' children die slowly (SIGTERM ignored,
#    so SIGKILLed at the end) never claim that processes left the groups.
# The job's processes carry B_MARK=<unique> (env(1) in the worker command)
# and are found through /proc/PID/environ.
. "$(dirname "$0")/lib.sh"
esv_setup 150

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is missing"
RUNS=${ESV_GUARDIAN_RUNS:-20}

# marked MARK: the live (not zombie) processes with B_MARK=MARK, "pid comm".
marked()
{
	local f p st
	for f in $(grep -lzxF "B_MARK=$1" /proc/[0-9]*/environ 2>/dev/null); do
		p=${f#/proc/}
		p=${p%/environ}
		st=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		st=${st##*) }
		case ${st%% *} in
		Z | X) ;;
		*) echo "$p $(cat "/proc/$p/comm" 2>/dev/null)" ;;
		esac
	done
}

none_marked()
{
	[ -z "$(marked "$1")" ]
}

# The guardian: the supervisor's child that is an esv-supervise too.
guardian_of()
{
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		[ "$(cat "/proc/$c/comm" 2>/dev/null)" = esv-supervise ] &&
		    echo "$c"
	done
}

# ---- 1: kill -9 of the supervisor while it respawns 16 workers.
note "1: kill -9 of the supervisor during respawns, $RUNS runs"
bad=0
for i in $(seq "$RUNS"); do
	M=g1.$$.$i
	J=$T/loop$i
	start_sup "$J" --no-python --nproc-per-node 16 --max-restarts 100000 \
	    -- env B_MARK="$M" sh -c \
	    'if [ "$LOCAL_RANK" = 0 ]; then exit 1; fi; sleep 30'
	sleep "0.$((RANDOM % 9 + 1))"
	kill -KILL "$SUP_PID"
	wait "$SUP_PID" 2>/dev/null
	if ! wait_for -t 3 none_marked "$M"; then
		note "run $i: left 3 s after kill -9: $(marked "$M" | tr '\n' ';')"
		bad=$((bad + 1))
		for p in $(marked "$M" | awk '{ print $1 }'); do
			kill -KILL "$p" 2>/dev/null
		done
	fi
done
[ "$bad" -eq 0 ] || fail "processes of the job survived in $bad of $RUNS runs"

note "1b: --standalone: the private esv-rdzv goes with the guardian's sweep"
for i in 1 2 3; do
	M=g1b.$$.$i
	J=$T/sa$i
	# The supervisor's own environment reaches esv-rdzv too.
	B_MARK=$M start_sup "$J" --standalone --no-python --nproc-per-node 2 \
	    -- sleep 30
	wait_for -t 10 eval '[ "$(kv "$J/supervise/state" state)" = running ]' ||
	    fail "the standalone job did not start: $(cat "$SUP_ERR")"
	rdzv=$(marked "$M" | awk '$2 == "esv-rdzv" { print $1 }')
	[ -n "$rdzv" ] || fail "no esv-rdzv found: $(marked "$M")"
	sleep "0.$((RANDOM % 5))"
	# A stopped one does not hear SIGTERM: it is killed.
	[ "$i" = 3 ] && kill -STOP "$rdzv"
	kill -KILL "$SUP_PID"
	wait "$SUP_PID" 2>/dev/null
	# The parent-death signal (--parent) ends it; a stopped one, the
	# guardian's SIGKILL.
	wait_for -t 3 none_marked "$M" ||
	    fail "run $i: alive 3 s after kill -9 of the supervisor: $(marked "$M")"
done

# A worker known to the guardian before it runs: rank 0 closes its fds
# (group.lock too), forks, and kills the supervisor while it is still
# starting the other workers.
note "1c: kill -9 of the supervisor by its first worker, mid-spawn"
cat >"$T/w1c.sh" <<'EOF'
if [ "$LOCAL_RANK" = 0 ]; then
	for fd in 3 4 5 6 7 8 9; do eval "exec $fd>&-"; done
	sleep 1000 &
	kill -KILL $PPID
fi
exec sleep 1000
EOF
for i in 1 2; do
	M=g1c.$$.$i
	start_sup "$T/mid$i" --no-python --nproc-per-node 200 -r 3 \
	    -- env B_MARK="$M" sh "$T/w1c.sh"
	wait "$SUP_PID" 2>/dev/null
	wait_for -t 3 none_marked "$M" ||
	    fail "run $i: alive 3 s after the supervisor died mid-spawn: $(marked "$M" | head -5)"
done

# ---- 2: the supervisor and its guardian both killed.
note "2: kill -9 of the supervisor and the guardian; a child without fds"
M=g2.$$
J=$T/both
cat >"$T/closer.py" <<'EOF'
import os, sys, time
pid = os.fork()
if pid == 0:
    os.closerange(3, 65536)
    time.sleep(1000)
    os._exit(0)
open(sys.argv[1] + ".tmp", "w").write("%d\n" % pid)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(1000)
EOF
start_sup "$J" --no-python -- env B_MARK="$M" "$PY" "$T/closer.py" "$T/child.pid"
wait_for -t 10 test -s "$T/child.pid" || fail "the worker did not fork: $(cat "$SUP_ERR")"
child=$(cat "$T/child.pid")
wait_for -t 5 eval '[ "$(kv "$J/supervise/state" state)" = running ]' ||
    fail "the job is not running: $(cat "$SUP_ERR")"
wait_for -t 5 eval '[ -z "$(ls -l /proc/'"$child"'/fd 2>/dev/null | grep group.lock)" ]' ||
    fail "the child still holds group.lock"
g=$(guardian_of "$SUP_PID")
[ -n "$g" ] || fail "no guardian found under $SUP_PID"
# Stopped first: a supervisor that saw its guardian die would start another.
kill -STOP "$SUP_PID"
kill -KILL "$g"
kill -KILL "$SUP_PID"
wait "$SUP_PID" 2>/dev/null
esv_alive "$child" || fail "the child died with the supervisor and guardian"
# An unrelated process in a group recorded before it existed: a recycled
# process group id.
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
stranger=$!
wait_for -t 5 eval '[ "$(awk "{ print \$5 }" /proc/'"$stranger"'/stat 2>/dev/null)" = '"$stranger"' ]' ||
    fail "setsid sleep did not lead its group"
echo "pgid=$stranger" >>"$J/supervise/pgids"
touch -d '10 seconds ago' "$J/supervise/pgids"
start_sup "$J" --no-python -- env B_MARK="$M.2" sleep 1000
wait_for -t 10 eval '! esv_alive '"$child" ||
    fail "the worker's child without fds survived a new supervisor: $(cat "$SUP_ERR")"
# The state file the killed one left says running too.
wait_for -t 10 eval '[ "$(kv "$J/supervise/state" supervisor_pid)" = "$SUP_PID" ] &&
    [ "$(kv "$J/supervise/state" state)" = running ]' ||
    fail "the new supervisor did not reach running: $(cat "$SUP_ERR")"
assert_grep "$SUP_ERR" "warning: $J: processes of an earlier worker group still ran: killed [1-9][0-9]* in its process groups and [0-9]+ more that held supervise/group.lock"
esv_alive "$stranger" || fail "an unrelated process in a recycled group was killed"
kill -KILL "$stranger"
[ -z "$(marked "$M")" ] || fail "the old job is still there: $(marked "$M")"
stop_sup

# ---- 3: ordinary restarts report no process outside the groups.
note "3: restarts with slow-dying children report no stray process"
M=g3.$$
J=$T/restarts
run_sup -t 60 "$J" --no-python --nproc-per-node 4 --max-restarts 30 \
    --shutdown-timeout 5 -- env B_MARK="$M" sh -c '[ "$LOCAL_RANK" = 0 ] && exit 1
	(trap "" TERM; exec sleep 30) & (trap "" TERM; exec sleep 30) & wait'
assert_eq "$SUP_RC" 1 "exit status after 30 restarts"
assert_eq "$(kv "$J/supervise/state" restart_count)" 30 restart_count
assert_no_grep "$SUP_ERR" "left its process groups" "stderr of ordinary restarts"
[ -z "$(marked "$M")" ] || fail "left after the job: $(marked "$M")"

note ok
exit 0
