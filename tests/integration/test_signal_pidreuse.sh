#!/bin/bash
# Issue 20.6: the supervisor signals workers' process groups through the
# leaders' pidfds.  Worker 0 exits 0 early (it is left alone) and its
# group is empty; a stranger is given its pid and makes a session of its
# own, so a group with the same id exists again.  A control letter that
# signals every group (h: SIGHUP) reaches worker 1, never the stranger.
# Runs in a private pid namespace, where ns_last_pid hands out a pid.
. "$(dirname "$0")/lib.sh"
if [ -z "${ESV_IN_PIDNS:-}" ]; then
	[ "$(id -u)" = 0 ] || skip "needs root for a pid namespace and ns_last_pid"
	unshare -p -f --mount-proc true 2>/dev/null ||
	    skip "unable to make a pid namespace"
	ESV_IN_PIDNS=1 exec unshare -p -f --mount-proc bash "$0"
fi
esv_setup 60

cat >"$T/w.sh" <<'EOS'
#!/bin/sh
[ "$LOCAL_RANK" = 0 ] && exit 0
exec sleep 30
EOS
chmod +x "$T/w.sh"
start_sup "$T/job" --nproc-per-node 2 --no-python -- "$T/w.sh"
wait_for -t 10 eval '[ "$(kv "$T/job/workers/0/state" state)" = succeeded ] &&
    [ "$(kv "$T/job/workers/1/state" state)" = running ]' ||
    fail "workers: $(cat "$T/job.err")"
pid=$(kv "$T/job/workers/0/state" pid)
[ -n "$pid" ] && [ "$pid" -gt 1 ] || fail "worker 0's pid: '$pid'"

# The stranger: pid $pid, leader of a new session and group $pid.
for _ in 1 2 3 4 5; do
	echo $((pid - 1)) >/proc/sys/kernel/ns_last_pid
	setsid sleep 60 &
	s=$!
	[ "$s" = "$pid" ] && break
	kill "$s"
done
[ "$s" = "$pid" ] || fail "could not get pid $pid again"
wait_for -t 5 eval '[ "$(ps -o pgid= -p "$s" | tr -d " ")" = "$pid" ]' ||
    fail "the stranger did not lead group $pid"

printf h >"$T/job/supervise/control"
wait_for -t 10 grep -q '"signal":"SIGHUP"' "$T/job/events.jsonl" ||
    fail "worker 1 did not get SIGHUP: $(cat "$T/job/events.jsonl")"
esv_alive "$s" || fail "SIGHUP for worker 0's group reached pid $s, not a worker"
kill "$s"
stop_sup
exit 0
