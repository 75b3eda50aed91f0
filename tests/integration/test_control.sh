#!/bin/bash
# Control letters (runit's and s6's, esv-control(5)),
# written straight into JOBDIR/supervise/control and through esv-ctl:
# p/c, h a i q 1 2, garbage in the FIFO, o, x; esv-ctl status (human and
# --json), wait up/down/finished -t, -w, several JOBDIRs, no supervisor.
. "$(dirname "$0")/lib.sh"
esv_setup 150

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is missing"
REC=$WORKERS/b_sigrec.py
EXITON=$WORKERS/b_exit_on.sh

# put JOBDIR BYTES: write BYTES (printf format) into the control FIFO,
# bounded: with no reader the open would block for ever.
put()
{
	timeout 5 bash -c 'printf "$2" >"$1/supervise/control"' _ "$1" "$2" ||
	    fail "could not write '$2' into $1/supervise/control"
}

# proc_state PID: the state letter in /proc/PID/stat (R S T Z ...).
proc_state()
{
	awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null
}

all_in_state()	# LETTER PID...
{
	local want=$1 p
	shift
	for p; do
		[ "$(proc_state "$p")" = "$want" ] || return 1
	done
}

state_is()	# JOBDIR KEY VALUE
{
	[ "$(kv "$1/supervise/state" "$2")" = "$3" ]
}

# nsig REC PID SIGNAME: how many times PID recorded SIGNAME.
nsig()
{
	awk -v p="$2" -v s="$3" '$2 == p && $3 == s { n++ } END { print n + 0 }' "$1"
}

# others REC PID: signals PID recorded besides START, in order.
sigs()
{
	awk -v p="$2" '$2 == p && $3 != "START" { printf "%s%s", s, $3; s = " " }' "$1"
}

nstarted()
{
	[ -e "$1" ] && [ "$(count_lines "$1" ' START ')" -eq "$2" ]
}

elapsed_ms()
{
	echo $(($(date +%s%3N) - $1))
}

# ---- Job A: signal recorders.
J=$T/a
start_sup "$J" --no-python --nproc-per-node 2 --max-restarts 3 \
    --shutdown-timeout 5 -- "$PY" "$REC" "$T/a.rec" exit
wait_for -t 15 nstarted "$T/a.rec" 2 || fail "job a did not start: $(cat "$SUP_ERR")"
SUP_A=$SUP_PID
ERR_A=$SUP_ERR
# The state file is written once the workers' files are (later than they
# start, in a slow build).
wait_for -t 15 eval '[ "$(kv "$J/supervise/state" pids | wc -w)" = 2 ]' ||
    fail "supervise/state never listed 2 pids: $(cat "$J/supervise/state")"
pids=$(kv "$J/supervise/state" pids)
read -r P1 P2 <<<"$pids"
[ -n "$P2" ] || fail "supervise/state pids: '$pids'"

# p / c through the FIFO: with cgroup containment the workers' cgroup is
# frozen (the workers are not stopped, and cannot tell), then thawed;
# without, they are stopped (T), then run again.
note "p / c"
CG=$(kv "$J/supervise/state" cgroup)
put "$J" p					# byte 0
if [ -n "$CG" ]; then
	wait_for -t 3 grep -qx 'frozen 1' "$CG/workers/cgroup.events" ||
	    fail "workers not frozen after p: $(cat "$CG/workers/cgroup.events")"
	for p in $pids; do
		[ "$(proc_state "$p")" != T ] || fail "worker $p got SIGSTOP under cgroups"
	done
else
	wait_for -t 3 all_in_state T $pids ||
	    fail "workers not stopped after p: $(for p in $pids; do proc_state "$p"; done)"
fi
wait_for -t 3 state_is "$J" paused 1 || fail "paused=1 missing after p"
put "$J" c					# byte 1
if [ -n "$CG" ]; then
	wait_for -t 3 grep -qx 'frozen 0' "$CG/workers/cgroup.events" ||
	    fail "workers still frozen after c"
else
	wait_for -t 3 eval '! all_in_state T $pids' || fail "workers still stopped after c"
fi
for p in $pids; do
	case $(proc_state "$p") in
	S | R) ;;
	*) fail "worker $p in state $(proc_state "$p") after c" ;;
	esac
done
wait_for -t 3 state_is "$J" paused 0 || fail "paused=0 missing after c"

# h 1 2 in one write, then a i q: each forwarded exactly once.
note "h 1 2 a i q"
put "$J" h12					# bytes 2-4
wait_for -t 3 eval '[ "$(nsig "$T/a.rec" $P1 SIGUSR2)" -eq 1 ] && [ "$(nsig "$T/a.rec" $P2 SIGUSR2)" -eq 1 ]' ||
    fail "SIGUSR2 not forwarded: $(cat "$T/a.rec")"
put "$J" aiq					# bytes 5-7
# Python runs the handlers of signals pending together in signal number
# order: wait for all six, then compare sets.  A second copy of one would
# come before the signals of the letters written later, counted below.
wait_for -t 3 eval '[ "$(sigs "$T/a.rec" $P1 | wc -w)" -ge 6 ] && [ "$(sigs "$T/a.rec" $P2 | wc -w)" -ge 6 ]' ||
    fail "signals not forwarded: $(cat "$T/a.rec")"
for p in $pids; do
	assert_eq "$(sigs "$T/a.rec" "$p" | tr ' ' '\n' | sort | tr '\n' ' ')" \
	    "SIGALRM SIGHUP SIGINT SIGQUIT SIGUSR1 SIGUSR2 " "signals recorded by worker $p"
done

# Garbage: warnings naming the byte, nothing else happens.
note "garbage in the control FIFO"
pos=8
put "$J" z
wait_for -t 3 grep -qF "supervise/control: byte $pos: unknown command 'z' ignored" "$ERR_A" ||
    fail "no warning for 'z' at byte $pos: $(tail -3 "$ERR_A")"
pos=$((pos + 1))
# Random bytes without any command letter or whitespace.
head -c 4000 /dev/urandom | LC_ALL=C tr -d 'udoxtrkhaiqpcbylDUOQPCK12 \t\n\r\v\f\0' |
    head -c 200 >"$T/garbage"
n=$(stat -c %s "$T/garbage")
[ "$n" -gt 50 ] || fail "could not make garbage"
first=$(od -An -tx1 -N1 "$T/garbage" | tr -d ' ')
before=$(wc -l <"$ERR_A")
timeout 5 bash -c 'cat "$2" >"$1/supervise/control"' _ "$J" "$T/garbage" ||
    fail "could not write the garbage"
# The summary of the bytes past the 8th ends the warnings of one read.
wait_for -t 3 eval 'tail -n +$((before + 1)) "$ERR_A" | grep -q "more unknown commands ignored"' ||
    fail "no summary for $n bytes of garbage: $(tail -n +$((before + 1)) "$ERR_A")"
tail -n +$((before + 1)) "$ERR_A" >"$T/garbage.err"
assert_eq "$(count_lines "$T/garbage.err" 'byte [0-9]+: unknown command')" 8 "warnings for $n bytes of garbage"
assert_grep "$T/garbage.err" "supervise/control: byte $pos: unknown command" "warnings"
# The first line names the first byte, by its character or its hex code.
head -1 "$T/garbage.err" | grep -qiE "byte $pos: unknown command ('.'|0x$first) ignored" ||
    fail "first warning does not name byte $pos (0x$first): $(head -1 "$T/garbage.err")"
pos=$((pos + n))
# 10 KB of garbage: at most 8 warning lines and one summary.
before=$(wc -l <"$ERR_A")
head -c 10240 /dev/zero | tr '\0' Z >"$T/flood"
timeout 5 bash -c 'cat "$2" >"$1/supervise/control"' _ "$J" "$T/flood" ||
    fail "could not write the flood"
pos=$((pos + 10240))
put "$J" h
pos=$((pos + 1))
wait_for -t 3 eval '[ "$(nsig "$T/a.rec" $P1 SIGHUP)" -eq 2 ] && [ "$(nsig "$T/a.rec" $P2 SIGHUP)" -eq 2 ]' ||
    fail "h after the garbage was not obeyed: $(cat "$T/a.rec")"
tail -n +$((before + 1)) "$ERR_A" >"$T/flood.err"
w=$(count_lines "$T/flood.err" 'byte [0-9]+: unknown command')
s=$(count_lines "$T/flood.err" 'more unknown commands ignored')
[ "$w" -ge 1 ] && [ "$w" -le 8 ] && [ "$s" -eq 1 ] ||
    fail "10 KB flood: $w warning lines and $s summaries, wanted 1..8 and 1: $(head -20 "$T/flood.err")"
assert_eq "$(kv "$J/supervise/state" pids)" "$pids" "pids after the garbage"
assert_eq "$(kv "$J/supervise/state" state)" running "state after the garbage"
assert_eq "$(kv "$J/supervise/state" manual_restarts)" 0 "manual_restarts after the garbage"
for p in $pids; do
	esv_alive "$p" || fail "worker $p died during the garbage"
	[ "$(proc_state "$p")" != T ] || fail "worker $p stopped by the garbage"
done
put "$J" z
wait_for -t 3 grep -qF "byte $pos: unknown command 'z' ignored" "$ERR_A" ||
    fail "byte count lost after the flood, wanted byte $pos: $(tail -2 "$ERR_A")"

# The same through esv-ctl.
note "esv-ctl pause / cont / signal"
assert_rc 0 "$CTL" pause "$J"
if [ -n "$CG" ]; then
	wait_for -t 3 grep -qx 'frozen 1' "$CG/workers/cgroup.events" ||
	    fail "workers not frozen after esv-ctl pause"
else
	wait_for -t 3 all_in_state T $pids || fail "workers not stopped after esv-ctl pause"
fi
assert_rc 0 "$CTL" cont "$J"
if [ -n "$CG" ]; then
	wait_for -t 3 grep -qx 'frozen 0' "$CG/workers/cgroup.events" ||
	    fail "workers still frozen after esv-ctl cont"
else
	wait_for -t 3 eval '! all_in_state T $pids' || fail "workers still stopped after esv-ctl cont"
fi
assert_rc 0 "$CTL" signal USR1 "$J"
assert_rc 0 "$CTL" signal SIGHUP "$J"
wait_for -t 3 eval '[ "$(nsig "$T/a.rec" $P1 SIGHUP)" -eq 3 ] && [ "$(nsig "$T/a.rec" $P2 SIGHUP)" -eq 3 ]' ||
    fail "esv-ctl signal SIGHUP not forwarded: $(cat "$T/a.rec")"
for p in $pids; do
	assert_eq "$(nsig "$T/a.rec" "$p" SIGUSR1)" 2 "SIGUSR1 count of worker $p"
	assert_eq "$(nsig "$T/a.rec" "$p" SIGTERM)" 0 "SIGTERM count of worker $p"
done

# esv-ctl status, human form.
note "esv-ctl status"
assert_rc 0 "$CTL" status "$J"
assert_grep "$T/out" "^$J: running \\(pid $SUP_A\\) [0-9]+s, attempt 1, restarts 0/3,.* want up, agent store 127\.0\.0\.1:[0-9]+( \([0-9]+ keys\))?$" "status line"
assert_grep "$T/out" "^  worker 0: running, rank 0, pid $P1, [0-9]+s(, cpu [0-9.]+ s)?(, memory [0-9.]+ MiB)?$" "worker 0 line"
assert_grep "$T/out" "^  worker 1: running, rank 1, pid $P2, [0-9]+s(, cpu [0-9.]+ s)?(, memory [0-9.]+ MiB)?$" "worker 1 line"
assert_grep "$T/out" "^  containment: (cgroup v2 at /.*|off \\(--cgroups=false\\)|.*)$" "containment line"
[ "$(wc -l <"$T/out")" -eq 4 ] || fail "status: wanted 4 lines: $(cat "$T/out")"

# esv-ctl status --json.
assert_rc 0 "$CTL" status --json "$J"
"$PY" - "$T/out" "$J" "$SUP_A" "$pids" <<'EOF' || fail "status --json: $(cat "$T/out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
pids = [int(p) for p in sys.argv[4].split()]
assert o["jobdir"] == sys.argv[2], o["jobdir"]
assert o["supervisor"] == "running", o["supervisor"]
job = o["job"]
keys = ("state want paused since supervisor_pid attempt restart_count "
        "max_restarts manual_restarts run_id role rdzv_backend group_rank "
        "group_world_size local_world_size world_size base_rank master_addr "
        "master_port pids pgids attempt_dir next_start exit_code").split()
missing = [k for k in keys if k not in job]
assert not missing, missing
assert job["state"] == "running" and job["want"] == "up", job
assert job["supervisor_pid"] == int(sys.argv[3]), job
assert job["pids"] == pids and job["pgids"] == pids, job
assert job["paused"] in (0, False), job
assert (job["attempt"], job["restart_count"], job["max_restarts"]) == (1, 0, 3), job
assert job["world_size"] == 2 and job["local_world_size"] == 2, job
assert isinstance(job["master_port"], int), job
assert job["next_start"] is None and job["exit_code"] is None, job
assert isinstance(job["since"], float), job
ws = o["workers"]
assert [w["local_rank"] for w in ws] == [0, 1], ws
wkeys = ("state local_rank rank role_rank pid pgid attempt restart_count "
         "started exited exit_code signal error_file").split()
for w, pid in zip(ws, pids):
    missing = [k for k in wkeys if k not in w]
    assert not missing, missing
    assert w["state"] == "running" and w["pid"] == pid == w["pgid"], w
    assert w["exited"] is None and w["exit_code"] is None, w
EOF

# x through the FIFO: stop the group, exit 1.
note "x"
put "$J" x
wait_sup -t 15 "$SUP_A"
assert_eq "$?" 1 "exit status after x"
for p in $pids; do
	! esv_alive "$p" || fail "worker $p alive after x"
	assert_eq "$(nsig "$T/a.rec" "$p" SIGTERM)" 1 "SIGTERM count of worker $p after x"
done
assert_eq "$(kv "$J/supervise/state" want)" exit "want after x"

# A JOBDIR whose supervisor is gone: 1 at once, never blocking.
note "esv-ctl without a supervisor"
for cmd in up down once pause exit; do
	t0=$(date +%s%3N)
	assert_rc 1 "$CTL" "$cmd" "$J"
	[ "$(elapsed_ms "$t0")" -lt 2000 ] || fail "esv-ctl $cmd took $(elapsed_ms "$t0") ms"
	assert_grep_F "$T/err" "supervisor not running"
done
t0=$(date +%s%3N)
assert_rc 1 "$CTL" wait up -t 20 "$J"
[ "$(elapsed_ms "$t0")" -lt 2000 ] || fail "esv-ctl wait up took $(elapsed_ms "$t0") ms"
assert_rc 1 "$CTL" -w 20 restart "$J"
[ "$(elapsed_ms "$t0")" -lt 4000 ] || fail "esv-ctl -w restart took too long"
assert_rc 1 "$CTL" status "$J"
assert_grep "$T/out" "^$J: not running" "status without supervisor"

# ---- Jobs C and D: esv-ctl wait, -w, several JOBDIRs.
note "esv-ctl wait and -w"
C=$T/c
D=$T/d
start_sup "$C" --no-python --nproc-per-node 2 -- bash "$EXITON" "$T/c.exit"
SUP_C=$SUP_PID
start_sup "$D" --no-python --nproc-per-node 1 -- bash "$EXITON" "$T/d.exit"
SUP_D=$SUP_PID
# Until a supervisor has made its FIFOs, esv-ctl says "not running".
wait_for -t 10 eval '"$CTL" status "$C" "$D" >/dev/null 2>&1' ||
    fail "supervisors c and d did not come up"
assert_rc 0 "$CTL" wait up -t 10 "$C" "$D"
state_is "$C" state running && state_is "$D" state running ||
    fail "wait up returned 0 before both ran"
t0=$(date +%s%3N)
assert_rc 99 "$CTL" wait down -t 0.5 "$C"
ms=$(elapsed_ms "$t0")
[ "$ms" -ge 400 ] && [ "$ms" -lt 3000 ] || fail "wait down -t 0.5 took $ms ms"
assert_rc 0 "$CTL" status "$C" "$D"
assert_grep "$T/out" "^$C: running" "status of two jobs"
assert_grep "$T/out" "^$D: running" "status of two jobs"
assert_eq "$(count_lines "$T/out" '^  worker ')" 3 "worker lines of two jobs"
assert_rc 0 "$CTL" status --json "$C" "$D"
"$PY" -c '
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()]
assert [o["jobdir"] for o in objs] == sys.argv[2:], objs
assert [len(o["workers"]) for o in objs] == [2, 1], objs
' "$T/out" "$C" "$D" || fail "status --json of two jobs: $(cat "$T/out")"

# -w down on both: both are down when esv-ctl returns.
cpids=$(kv "$C/supervise/state" pids)
assert_rc 0 "$CTL" -w 10 down "$C" "$D"
state_is "$C" state down && state_is "$D" state down ||
    fail "-w down returned before both were down"
for p in $cpids; do
	! esv_alive "$p" || fail "worker $p alive when -w down returned"
done
assert_rc 0 "$CTL" wait down -t 5 "$C" "$D"
# A waiter in the background is woken by the state change.  Asleep in
# poll(2), it has read the state and found the job down.
"$CTL" wait up -t 20 "$C" >/dev/null 2>&1 &
waiter=$!
wait_for -t 5 in_poll "$waiter" || fail "wait up returned while the job was down"
assert_rc 0 "$CTL" up "$C"
t0=$(date +%s%3N)
wait_for -t 5 eval '! esv_alive '"$waiter" || fail "wait up not woken by up"
wait "$waiter"
assert_eq "$?" 0 "exit status of wait up"
state_is "$C" state running || fail "wait up returned before running"
assert_rc 0 "$CTL" -w 10 up "$D"
state_is "$D" state running || fail "-w up returned before running"
# -w restart: new pids when it returns.
cpids=$(kv "$C/supervise/state" pids)
assert_rc 0 "$CTL" -w 10 restart "$C"
new=$(kv "$C/supervise/state" pids)
state_is "$C" state running || fail "-w restart returned before running"
for p in $cpids; do
	case " $new " in
	*" $p "*) fail "pid $p still there when -w restart returned" ;;
	esac
done
# wait finished: the workers succeed, the waiter returns 0.
"$CTL" wait finished -t 20 "$C" >/dev/null 2>&1 &
waiter=$!
wait_for -t 5 in_poll "$waiter" || fail "wait finished returned while the job ran"
: >"$T/c.exit.0"
: >"$T/c.exit.1"
wait_for -t 10 eval '! esv_alive '"$waiter" || fail "wait finished not woken"
wait "$waiter"
assert_eq "$?" 0 "exit status of wait finished"
wait_sup -t 10 "$SUP_C"
assert_eq "$?" 0 "exit status of job c"
assert_rc 0 "$CTL" wait finished -t 1 "$C"
# -w exit.
assert_rc 0 "$CTL" -w 10 exit "$D"
wait_sup -t 5 "$SUP_D"
assert_eq "$?" 1 "exit status of job d after exit"

# ---- Job B: once.  A failure is not restarted.
note "o"
J=$T/b
start_sup "$J" --no-python --nproc-per-node 2 --max-restarts 3 \
    -- bash "$EXITON" "$T/b.fail"
wait_for -t 10 eval '[ "$(count_lines "$J.out" "^start ")" -eq 2 ]' ||
    fail "job b did not start: $(cat "$SUP_ERR")"
assert_rc 0 "$CTL" once "$J"
# Checked at the end, so that a stale state file does not hide the rest.
wait_for -t 3 state_is "$J" want once
want_after_o=$(kv "$J/supervise/state" want)
echo 3 >"$T/b.fail.1"
# The job ends with the failure: no restart can come after the exit.
wait_sup -t 10
assert_eq "$?" 1 "exit status of a failed once job"
assert_eq "$(event_names "$J" | grep -E '^(group\.(start|restart)|job\.failed)$' | tr '\n' ' ')" \
    "group.start job.failed " "starts and the end (o: no restart)"
assert_eq "$(count_lines "$J.out" "^start ")" 2 "workers started (o: no restart)"
assert_eq "$(kv "$J/supervise/state" state)" failed "state after a failure with o"
assert_eq "$(kv "$J/supervise/state" restart_count)" 0 "restart_count with o"
assert_eq "$(kv "$J/workers/1/state" exit_code)" 3 "exit code of worker 1"
assert_eq "$want_after_o" once "want in supervise/state after esv-ctl once"

note ok
exit 0
