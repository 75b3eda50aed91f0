#!/bin/bash
# runit's own sv(8) drives an esv job:
# status lines, up/down/restart/term/kill/pause/cont/exit, the JOBDIR/down
# file, and the files sv reads (supervise/status, 20 bytes; stat; pid).
# Workers are workers/b_sigrec.py (they record the signals they get).
. "$(dirname "$0")/lib.sh"
esv_setup 120

SV=/usr/bin/sv
[ -x "$SV" ] || skip "runit's sv is not installed"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is missing"
REC=$WORKERS/b_sigrec.py

sv()
{
	timeout 20 "$SV" "$@"
}

# status_bytes JOBDIR: the 20 bytes of supervise/status, one decimal a line.
status_bytes()
{
	od -An -v -tu1 -w1 "$1/supervise/status" | tr -d ' '
}

# check_record JOBDIR PID WANT STATE: the runit record says so.
check_record()
{
	local b size pid
	size=$(stat -c %s "$1/supervise/status")
	assert_eq "$size" 20 "size of supervise/status"
	mapfile -t b < <(status_bytes "$1")
	pid=$((b[12] | b[13] << 8 | b[14] << 16 | b[15] << 24))
	assert_eq "$pid" "$2" "pid in supervise/status"
	assert_eq "$(printf "\\$(printf %03o "${b[17]}")")" "$3" "want byte of supervise/status"
	assert_eq "${b[19]}" "$4" "state byte of supervise/status"
}

# pid0 JOBDIR: pid of local rank 0 from workers/0/state.
pid0()
{
	kv "$1/workers/0/state" pid
}

running_with_new_pid()	# JOBDIR OLDPID
{
	local p
	[ "$(kv "$1/supervise/state" state)" = running ] || return 1
	p=$(cat "$1/supervise/pid" 2>/dev/null)
	[ -n "$p" ] && [ "$p" != "$2" ] && esv_alive "$p"
}

state_is()	# JOBDIR STATE
{
	[ "$(kv "$1/supervise/state" state)" = "$2" ]
}

recorded()	# REC PID EVENT
{
	awk -v p="$2" -v e="$3" '$2 == p && $3 == e { f = 1 } END { exit !f }' "$1"
}

J=$T/job
start_sup "$J" --no-python --nproc-per-node 2 --shutdown-timeout 5 \
    -- "$PY" "$REC" "$T/rec" exit
wait_for -t 15 eval '[ -e "$T/rec" ] && [ "$(count_lines "$T/rec" " START ")" -eq 2 ]' ||
    fail "workers did not start: $(cat "$SUP_ERR")"
# The workers can run before the supervisor has written that they do.
assert_rc 0 "$CTL" wait up -t 10 "$J"

# ---- status
note "sv status"
sv status "$J" >"$T/st" || fail "sv status failed: $(cat "$T/st")"
p=$(cat "$J/supervise/pid")
assert_eq "$p" "$(pid0 "$J")" "supervise/pid vs workers/0/state pid"
esv_alive "$p" || fail "supervise/pid $p is not alive"
assert_grep "$T/st" "^run: $J: \\(pid $p\\) [0-9]+s$" "sv status"
assert_eq "$(cat "$J/supervise/stat")" run "supervise/stat"
check_record "$J" "$p" u 1
# A relative ./name works as well.
(cd "$T" && timeout 10 "$SV" status ./job) >"$T/st" ||
    fail "sv status ./job failed: $(cat "$T/st")"
assert_grep "$T/st" "^run: \\./job: \\(pid $p\\)" "sv status ./job"

# ---- down
note "sv down"
pids=$(kv "$J/supervise/state" pids)
sv down "$J" >/dev/null || fail "sv down failed"
wait_for -t 10 state_is "$J" down || fail "state did not become down"
for w in $pids; do
	wait_for -t 2 eval '! esv_alive '"$w" || fail "worker $w alive after sv down"
	recorded "$T/rec" "$w" SIGTERM || fail "worker $w got no SIGTERM on sv down"
done
assert_eq "$(kv "$J/supervise/state" want)" down "want after sv down"
assert_eq "$(cat "$J/supervise/pid")" "" "supervise/pid while down"
sv status "$J" >"$T/st"
assert_grep "$T/st" "^down: $J: [0-9]+s, normally up$" "sv status when down"
assert_eq "$(cat "$J/supervise/stat")" down "supervise/stat when down"
check_record "$J" 0 d 0
esv_alive "$SUP_PID" || fail "the supervisor exited on sv down"

# ---- up
note "sv up"
sv up "$J" >/dev/null || fail "sv up failed"
wait_for -t 10 running_with_new_pid "$J" "$p" || fail "not running after sv up"
p=$(cat "$J/supervise/pid")
assert_eq "$p" "$(pid0 "$J")" "supervise/pid after sv up"
sv status "$J" >"$T/st"
assert_grep "$T/st" "^run: $J: \\(pid $p\\) [0-9]+s$" "sv status after sv up"
check_record "$J" "$p" u 1

# ---- restart: new pids, manual_restarts + 1, restart_count unchanged.
note "sv restart"
wait_for -t 10 eval '[ "$(count_lines "$T/rec" " START ")" -eq 4 ]' ||
    fail "the workers of sv up did not start"
mr=$(kv "$J/supervise/state" manual_restarts)
rc0=$(kv "$J/supervise/state" restart_count)
pids=$(kv "$J/supervise/state" pids)
sv restart "$J" >"$T/st" || fail "sv restart failed: $(cat "$T/st")"
assert_grep "$T/st" "^ok: run: $J: \\(pid [0-9]+\\)" "sv restart output"
wait_for -t 10 running_with_new_pid "$J" "$p" || fail "no new pid after sv restart"
assert_eq "$(kv "$J/supervise/state" manual_restarts)" $((mr + 1)) manual_restarts
assert_eq "$(kv "$J/supervise/state" restart_count)" "$rc0" restart_count
for w in $pids; do
	recorded "$T/rec" "$w" SIGTERM || fail "worker $w got no SIGTERM on sv restart"
	case " $(kv "$J/supervise/state" pids) " in
	*" $w "*) fail "pid $w still listed after sv restart" ;;
	esac
done
p=$(cat "$J/supervise/pid")

# ---- term: SIGTERM, then the group comes back (want up).
note "sv term"
wait_for -t 10 eval '[ "$(count_lines "$T/rec" " START ")" -eq 6 ]' ||
    fail "the workers of sv restart did not start"
pids=$(kv "$J/supervise/state" pids)
sv term "$J" >/dev/null || fail "sv term failed"
wait_for -t 10 running_with_new_pid "$J" "$p" || fail "no new pid after sv term"
for w in $pids; do
	recorded "$T/rec" "$w" SIGTERM || fail "worker $w got no SIGTERM on sv term"
done
assert_eq "$(kv "$J/supervise/state" manual_restarts)" $((mr + 2)) "manual_restarts after term"
assert_eq "$(kv "$J/supervise/state" restart_count)" "$rc0" "restart_count after term"
p=$(cat "$J/supervise/pid")

# ---- kill: SIGKILL (nothing recorded), then back up.
note "sv kill"
wait_for -t 10 eval '[ "$(count_lines "$T/rec" " START ")" -eq 8 ]' ||
    fail "the workers of sv term did not start"
pids=$(kv "$J/supervise/state" pids)
sv kill "$J" >/dev/null || fail "sv kill failed"
wait_for -t 3 running_with_new_pid "$J" "$p" || fail "no new pid within 3 s of sv kill"
for w in $pids; do
	! esv_alive "$w" || fail "worker $w alive after sv kill"
	assert_eq "$(awk -v p="$w" '$2 == p && $3 != "START"' "$T/rec")" "" \
	    "signals caught by worker $w on sv kill"
done
p=$(cat "$J/supervise/pid")

# ---- pause / cont: the paused flag in status, stat and sv's line.
note "sv pause / sv cont"
sv pause "$J" >/dev/null || fail "sv pause failed"
wait_for -t 5 eval '[ "$(kv "$J/supervise/state" paused)" = 1 ]' ||
    fail "paused=1 not in supervise/state"
sv status "$J" >"$T/st"
assert_grep "$T/st" "^run: $J: \\(pid $p\\) [0-9]+s, paused$" "sv status when paused"
assert_eq "$(cat "$J/supervise/stat")" "run, paused" "supervise/stat when paused"
assert_eq "$(status_bytes "$J" | sed -n 17p)" 1 "paused byte"
sv cont "$J" >/dev/null || fail "sv cont failed"
wait_for -t 5 eval '[ "$(kv "$J/supervise/state" paused)" = 0 ]' ||
    fail "paused=0 not in supervise/state after sv cont"
assert_eq "$(status_bytes "$J" | sed -n 17p)" 0 "paused byte after sv cont"

# ---- exit: the supervisor stops the group and exits.
note "sv exit"
pids=$(kv "$J/supervise/state" pids)
sv exit "$J" >/dev/null || fail "sv exit failed"
wait_sup -t 15
assert_eq "$?" 1 "exit status after sv exit"
for w in $pids; do
	! esv_alive "$w" || fail "worker $w alive after sv exit"
done
sv status "$J" >"$T/st" 2>&1
assert_grep "$T/st" "^fail: $J: runsv not running" "sv status without supervisor"

# ---- JOBDIR/down: start down, wait for sv up.
note "JOBDIR/down"
J=$T/downjob
mkdir -p "$J"
: >"$J/down"
start_sup "$J" --no-python --nproc-per-node 2 -- "$PY" "$REC" "$T/rec2" exit
wait_for -t 10 eval '[ -p "$J/supervise/ok" ] && [ -s "$J/supervise/status" ] && [ -s "$J/supervise/state" ]' ||
    fail "the supervisor did not set up $J/supervise: $(cat "$SUP_ERR")"
assert_no_file "$T/rec2"
assert_eq "$(kv "$J/supervise/state" state)" down "state with a down file"
sv status "$J" >"$T/st"
# sv prints "normally up" only for a down service without a down file,
# and "normally down" for a running one with it.
assert_grep "$T/st" "^down: $J: [0-9]+s$" "sv status with a down file"
check_record "$J" 0 d 0
sv up "$J" >/dev/null || fail "sv up failed"
wait_for -t 10 state_is "$J" running || fail "not running after sv up"
# The supervisor logs what it does in order: its first start came after
# sv's u, none before.  A start the down file failed to prevent would come
# by the loop's first turn (no --restart-delay: 0), before it read the u.
assert_eq "$(event_names "$J" | grep -E '^(group\.start|control:u)$' | head -2 | tr '\n' ' ')" \
    "control:u group.start " "the first start (down file)"
sv status "$J" >"$T/st"
assert_grep "$T/st" "^run: $J: \\(pid [0-9]+\\) [0-9]+s, normally down$" "sv status (down file, up)"
sv -w 10 exit "$J" >/dev/null
wait_sup -t 15
assert_eq "$?" 1 "exit status after sv exit"

note ok
exit 0
