#!/bin/bash
# A flood on supervise/control, one letter at a time: 64 KiB of it, then
# more without end (a script writing in a loop).  Meanwhile a worker killed
# with -9 is seen within 100 ms (its worker.exit event), and SIGTERM ends
# the supervisor within 2 s.  Before, the supervisor read the FIFO until
# it was empty and wrote the state files and an event for every letter:
# 64 KiB took it about 100 s, during which nothing else was served.
. "$(dirname "$0")/lib.sh"
esv_setup 170

# Workers that shrug off every signal a letter sends them but SIGTERM,
# SIGKILL and SIGSTOP.
WORKER="trap '' HUP ALRM INT QUIT USR1 USR2; exec sleep 1000"
# 4095 letters and a newline (ignored) per line of yes(1).
block()
{
	head -c 4095 /dev/zero | tr '\0' "$1"
}

running()
{
	[ "$(kv "$job/supervise/state" state)" = running ] &&
	    [ "$(kv "$job/supervise/state" pids | wc -w)" = 2 ]
}

gone()
{
	! esv_alive "$SUP_PID"
}

# exit_time PID: the time of PID's worker.exit event, if logged.
exit_time()
{
	"$PY" - "$job/events.jsonl" "$1" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["event"] == "worker.exit" and o["pid"] == int(sys.argv[2]):
        print(o["time"])
        sys.exit(0)
sys.exit(1)
EOF
}

# flood L TRY: one job flooded with L.  Returns 2 if the worker's exit was
# seen late (the scheduler of a loaded machine can do that alone: the
# caller tries again); any other broken promise fails the test.
flood()
{
	local L=$1 job=$T/flood_$1.$2 t0 t1 w ms n
	start_sup "$job" --nproc-per-node 2 --max-restarts 1000000 \
	    --no-python -- /bin/sh -c "$WORKER"
	wait_for -t 10 running || fail "$L: the group did not start: $(cat "$SUP_ERR")"
	yes "$(block "$L")" >"$job/supervise/control" 2>/dev/null &
	writer=$!
	t0=$EPOCHREALTIME
	if [ "$L" = x ]; then
		wait_for -t 2 gone || fail "x: still running 2 s into a flood of x"
		wait "$SUP_PID"
		kill "$writer" 2>/dev/null
		wait "$writer" 2>/dev/null
		return 0
	fi
	wait_for -t 2 grep -qF "\"command\":\"$L\"" "$job/events.jsonl" ||
	    fail "$L: no control event"
	ms=0
	if [ "$L" != d ]; then
		# A worker of the current group, as the letters leave it.
		wait_for -t 2 eval 'w=$(kv "$job/supervise/state" pids); [ -n "$w" ]' ||
		    fail "$L: no worker runs: $(cat "$job/supervise/state")"
		w=${w%% *}
		t1=$EPOCHREALTIME
		kill -KILL "$w" 2>/dev/null
		wait_for -t 5 eval 'exit_time "$w" >/dev/null' ||
		    fail "$L: the exit of worker $w was not acted on"
		ms=$("$PY" -c "print(int(($(exit_time "$w") - $t1) * 1000))")
		note "$L: worker $w's exit seen after $ms ms"
	fi
	t1=$EPOCHREALTIME
	kill -TERM "$SUP_PID"
	wait_for -t 2 gone ||
	    fail "$L: still running 2 s after SIGTERM, $(( ${t1%.*} - ${t0%.*} )) s into the flood"
	wait "$SUP_PID"
	kill "$writer" 2>/dev/null
	wait "$writer" 2>/dev/null
	n=$(count_lines "$job/events.jsonl" "\"command\":\"$L\"")
	note "$L: $n control events"
	[ "$ms" -lt 100 ]
	return $(($? * 2))
}

for L in ${ESV_FLOOD_LETTERS:-u o d x t r k p c h a i q 1 2}; do
	note "64 KiB of '$L' and more"
	for try in 1 2 3; do
		flood "$L" "$try" && break
		[ "$try" = 3 ] &&
		    fail "$L: a worker's exit seen after 100 ms or more 3 times"
	done
done

# A letter while 8 workers fail at once, again and again: SIGCHLD comes
# back while the group is restarted, and the supervisor used to read the
# signalfd until it was empty, which it seldom was (a letter waited 11 s).
note "a letter while the workers fail in a loop"
job=$T/failloop
start_sup "$job" --nproc-per-node 8 --max-restarts 1000000 --no-python \
    -- /bin/sh -c 'exit 1'
wait_for -t 10 eval '[ "$(count_lines "$job/events.jsonl" group.start)" -ge 5 ]' ||
    fail "failloop: the group did not restart: $(cat "$SUP_ERR")"
t1=$EPOCHREALTIME
timeout 5 sh -c 'printf h >"$1/supervise/control"' _ "$job" ||
    fail "failloop: could not write the letter"
wait_for -t 5 grep -qF '"command":"h"' "$job/events.jsonl" ||
    fail "failloop: h not obeyed within 5 s"
ms=$("$PY" - "$job/events.jsonl" "$t1" <<'PYEOF'
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["event"] == "control":
        print(int((o["time"] - float(sys.argv[2])) * 1000))
        break
PYEOF
)
note "failloop: h obeyed after $ms ms"
[ "$ms" -lt 1000 ] || fail "failloop: h obeyed after $ms ms (limit 1000)"
stop_sup || :   # exits 1 on SIGTERM

# No worker can be started (no such entrypoint): the stop after the failed
# start ends at once, and the restart used to be started from inside it,
# recursing, restart after restart, without a turn of the loop: SIGTERM
# waited for the whole budget (or for the stack to overflow).
note "SIGTERM while no worker can be started, again and again"
job=$T/nospawn
start_sup "$job" --nproc-per-node 8 --max-restarts 1000000 --no-python \
    -- "$T/no such program"
wait_for -t 10 eval '[ "$(count_lines "$job/events.jsonl" group.restart)" -ge 20 ]' ||
    fail "nospawn: no restarts: $(tail -3 "$SUP_ERR")"
kill -TERM "$SUP_PID"
wait_for -t 2 gone ||
    fail "nospawn: still running 2 s after SIGTERM ($(count_lines "$job/events.jsonl" group.restart) restarts)"
wait "$SUP_PID" || :	# 1: stopped by a signal
