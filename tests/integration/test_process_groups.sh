#!/bin/bash
# Process groups and leftovers: a failure restart kills a worker's
# grandchild (in its group) and a double-forked setsid daemon; nothing of
# the job survives the
# supervisor; kill -9 of the supervisor takes the workers and their groups
# down within 1 s; a supervisor started again on the same JOBDIR never runs
# a second copy of the group, and one started while another runs exits 111
# without touching the running workers.
# The job's processes carry B_MARK=<unique> in their environment (set by
# env(1) in the worker command, so the supervisor itself does not), and
# are found through /proc/PID/environ.
. "$(dirname "$0")/lib.sh"
esv_setup 120

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is missing"
FORKER=$WORKERS/b_forker.sh

# marked MARK: one line "pid ppid pgid sid role restart_count local_rank"
# per live (not zombie) process whose environment holds B_MARK=MARK.
marked()
{
	"$PY" - "$1" <<'EOF'
import os, sys
mark = "B_MARK=" + sys.argv[1]
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        env = open("/proc/%s/environ" % d, "rb").read().decode(errors="replace")
        st = open("/proc/%s/stat" % d).read()
    except OSError:
        continue
    env = env.split("\0")
    if mark not in env:
        continue
    f = st[st.rindex(")") + 2:].split()
    if f[0] in ("Z", "X"):
        continue
    kv = dict(e.split("=", 1) for e in env if "=" in e)
    print(d, f[1], f[2], f[3], kv.get("B_ROLE", "worker"),
          kv.get("TORCHELASTIC_RESTART_COUNT", "-"), kv.get("LOCAL_RANK", "-"))
EOF
}

# count_role MARK ROLE [RESTART_COUNT]
count_role()
{
	marked "$1" | awk -v r="$2" -v c="${3:-}" \
	    '$5 == r && (c == "" || $6 == c) { n++ } END { print n + 0 }'
}

# have_roles MARK RESTART_COUNT N DAEMONS: attempt RESTART_COUNT runs N
# workers (a worker's own short commands count as "worker" too), N
# grandchildren, and N daemons unless DAEMONS is 0.
have_roles()
{
	[ "$(count_role "$1" worker "$2")" -ge "$3" ] &&
	[ "$(count_role "$1" child "$2")" -eq "$3" ] &&
	{ [ "$4" = 0 ] || [ "$(count_role "$1" daemon "$2")" -eq "$3" ]; }
}

# state_is KEY VALUE: $J's supervise/state says KEY=VALUE.
state_is()
{
	[ "$(kv "$J/supervise/state" "$1")" = "$2" ]
}

# all_dead PID...: none of them is alive (no fork: fast enough to time).
all_dead()
{
	local p st
	for p; do
		st=
		read -r st 2>/dev/null <"/proc/$p/stat" || continue
		st=${st##*) }
		case ${st%% *} in
		Z | X) ;;
		*) return 1 ;;
		esac
	done
	return 0
}

# ---- 16: a failure restart kills the worker's grandchild and the setsid
# daemon; after the supervisor exits no process of the job remains.
note "16: failure restart kills the whole tree"
M=pg16.$$.$RANDOM
J=$T/tree
start_sup "$J" --no-python --nproc-per-node 2 --max-restarts 1 \
    --shutdown-timeout 3 -- env B_MARK="$M" bash "$FORKER" daemon fail=1
wait_for -t 10 have_roles "$M" 0 2 1 ||
    fail "attempt 0 did not start its tree: $(marked "$M"); $(cat "$SUP_ERR")"
marked "$M" >"$T/tree.0"
# The daemon really left the worker's session and group.
awk '$5 == "daemon" && $3 == $1 && $4 == $1 { n++ } END { exit n != 2 }' "$T/tree.0" ||
    fail "daemons are not session leaders: $(cat "$T/tree.0")"
awk '$5 == "child" { n++; if ($3 != $2) bad = 1 } END { exit n != 2 || bad }' "$T/tree.0" ||
    fail "grandchildren are not in their worker's group: $(cat "$T/tree.0")"
wait_for -t 15 have_roles "$M" 1 2 1 ||
    fail "attempt 1 did not start: $(marked "$M"); $(cat "$SUP_ERR")"
# The workers may have started before the supervisor wrote the state.
wait_for -t 5 eval '[ "$(kv "$J/supervise/state" restart_count)" = 1 ]' ||
    fail "restart_count: $(kv "$J/supervise/state" restart_count)"
left=$(marked "$M" | awk '$6 == 0')
[ -z "$left" ] || fail "attempt 0 processes survived the restart: $left"
ctl exit "$J" >/dev/null || fail "esv-ctl exit failed"
wait_sup -t 15
assert_eq "$?" 1 "exit status after x"
left=$(marked "$M")
if [ -n "$left" ]; then
	# Failing: tell a late death from none.
	wait_for -t 0.5 eval '[ -z "$(marked "$M")" ]' &&
	    fail "processes of the job alive right after the supervisor exited (gone within 0.5 s): $left"
	fail "processes of the job alive after the supervisor exited: $(marked "$M")"
fi

# The same with a SIGTERM to the supervisor instead of a restart.
note "16b: SIGTERM to the supervisor leaves nothing behind"
M=pg16b.$$.$RANDOM
J=$T/tree2
start_sup "$J" --no-python --nproc-per-node 2 --shutdown-timeout 3 \
    -- env B_MARK="$M" bash "$FORKER" daemon
wait_for -t 10 have_roles "$M" 0 2 1 ||
    fail "the tree did not start: $(marked "$M"); $(cat "$SUP_ERR")"
kill -TERM "$SUP_PID"
wait_sup -t 15
assert_eq "$?" 1 "exit status after SIGTERM"
left=$(marked "$M")
[ -z "$left" ] || fail "processes of the job alive after the supervisor exited: $left"

# ---- 17: kill -9 of the supervisor: the workers and the grandchildren in
# their groups die within 1 s.
note "17: kill -9 of the supervisor"
M=pg17.$$.$RANDOM
J=$T/k9
start_sup "$J" --no-python --nproc-per-node 2 \
    -- env B_MARK="$M" bash "$FORKER"
wait_for -t 10 have_roles "$M" 0 2 0 ||
    fail "the workers did not start: $(marked "$M"); $(cat "$SUP_ERR")"
list=$(marked "$M" | awk '{ print $1 }')
kill -KILL "$SUP_PID"
t0=$(date +%s%3N)
wait_for -t 1 all_dead $list ||
    fail "alive 1 s after kill -9 of the supervisor: $(marked "$M")"
note "17: all gone $(($(date +%s%3N) - t0)) ms after kill -9"
left=$(marked "$M")
[ -z "$left" ] || fail "processes of the job alive after kill -9 of the supervisor: $left"
wait "$SUP_PID" 2>/dev/null

# ---- A supervisor started again at once on the same JOBDIR never runs a
# second copy: at no moment more than nproc workers.
note "restart after kill -9 never runs two copies"
M=pgdup.$$.$RANDOM
J=$T/dup
start_sup "$J" --no-python --nproc-per-node 2 -- env B_MARK="$M" sleep 1000
wait_for -t 10 eval '[ "$(count_role "$M" worker)" -eq 2 ]' ||
    fail "first supervisor: 2 workers did not start: $(marked "$M")"
old=$(marked "$M" | awk '{ print $1 }' | sort | tr '\n' ' ')
first=$SUP_PID
kill -KILL "$first"
# Until it has exited its supervise/lock is held: a new supervisor started
# in that moment is refused, rightly ("another esv-supervise runs").
wait "$first" 2>/dev/null
start_sup "$J" --no-python --nproc-per-node 2 -- env B_MARK="$M" sleep 1000
second=$SUP_PID
# Count the workers every 20 ms until the second supervisor says its group
# runs and 2 workers are there: the first one's were killed before.
max=0
end=$(($(date +%s%3N) + 10000))
while [ "$(date +%s%3N)" -lt "$end" ]; do
	n=$(count_role "$M" worker)
	[ "$n" -gt "$max" ] && max=$n
	[ "$n" -gt 2 ] && marked "$M" >"$T/dup.too-many"
	[ "$n" -eq 2 ] && state_is supervisor_pid "$second" &&
	    state_is state running && break
	sleep 0.02
done
[ "$max" -le 2 ] ||
    fail "saw $max worker processes at once (nproc 2): $(cat "$T/dup.too-many")"
esv_alive "$second" || fail "the second supervisor exited: $(cat "$SUP_ERR")"
state_is supervisor_pid "$second" && state_is state running ||
    fail "the second supervisor did not reach running: $(cat "$SUP_ERR")"
wait_for -t 5 eval '[ "$(count_role "$M" worker)" -eq 2 ]' ||
    fail "second supervisor: not 2 workers: $(marked "$M")"
new=$(marked "$M" | awk '{ print $1 }' | sort | tr '\n' ' ')
for p in $old; do
	case " $new " in
	*" $p "*) fail "worker $p of the killed supervisor still runs" ;;
	esac
done
assert_eq "$(kv "$J/supervise/state" supervisor_pid)" "$second" supervisor_pid

# ---- A second supervisor while the first runs: exit 111, clear message,
# the running workers untouched.
note "a second supervisor on a busy JOBDIR exits 111"
before=$(cat "$J"/workers/*/state | grep -E '^(pid|state|started)=')
out=$T/dup.third
t0=$(date +%s%3N)
timeout 10 "$SUP" --no-python --nproc-per-node 2 "$J" \
    -- env B_MARK="$M" sleep 1000 >"$out.out" 2>"$out.err" </dev/null
rc=$?
assert_eq "$rc" 111 "exit status of a supervisor on a locked JOBDIR"
[ $(($(date +%s%3N) - t0)) -lt 3000 ] ||
    fail "the refused supervisor took $(($(date +%s%3N) - t0)) ms"
assert_grep_F "$out.err" "esv-supervise: fatal: $J: another esv-supervise runs in this JOBDIR"
[ "$(grep -c fatal "$out.err")" -eq 1 ] ||
    fail "wanted one fatal line on stderr: $(cat "$out.err")"
assert_no_grep "$out.err" started "stderr of the refused supervisor"
# What the refused supervisor did to the workers, the running one has seen
# once it has read a letter written after: u, a no-op, logged.
nu=$(event_names "$J" | grep -c '^control:u$')
assert_rc 0 "$CTL" up "$J"
wait_for -t 5 eval '[ "$(event_names "$J" | grep -c "^control:u$")" -gt $nu ]' ||
    fail "the running supervisor did not read u: $(tail -3 "$J/events.jsonl")"
after=$(cat "$J"/workers/*/state | grep -E '^(pid|state|started)=')
assert_eq "$after" "$before" "workers' state after the refused supervisor"
now=$(marked "$M" | awk '{ print $1 }' | sort | tr '\n' ' ')
assert_eq "$now" "$new" "worker pids after the refused supervisor"
assert_eq "$(kv "$J/supervise/state" supervisor_pid)" "$second" supervisor_pid
assert_eq "$(kv "$J/supervise/state" state)" running "job state"
esv_alive "$second" || fail "the running supervisor died"
stop_sup "$second"
left=$(marked "$M")
[ -z "$left" ] || fail "processes of the job alive after the supervisor exited: $left"

note "a child the caller started before exec'ing the supervisor is not ours to kill"
# sh -c 'sidecar & exec esv-supervise ...': the sidecar becomes our child.
SUP_PREFIX=(sh -c 'sleep 60 & echo $! >"$0"; exec "$@"' "$T/sidecar.pid")
run_sup "$T/side" --max-restarts 1 --no-python -- sh -c 'exit 1'
SUP_PREFIX=()
assert_eq "$SUP_RC" 1 "sidecar job: exit status"
esv_alive "$(cat "$T/sidecar.pid")" || fail "the caller's sidecar was killed"
kill "$(cat "$T/sidecar.pid")"

note ok
exit 0
