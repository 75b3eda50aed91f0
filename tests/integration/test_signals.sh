#!/bin/bash
# Signals sent to esv-supervise, as torchrun handles them:
# forwarded once to every live worker, grace period then SIGKILL, the
# --signals-to-handle list (SIGUSR1 forwarded as itself, unknown names
# warned about and skipped), and a signal outside the list is not
# forwarded.  Workers are workers/b_sigrec.py, which append
# "RANK PID EVENT TIME" to a file for every signal they catch.
. "$(dirname "$0")/lib.sh"
esv_setup 120

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is missing"
REC=$WORKERS/b_sigrec.py

# started FILE N: N workers have their handlers installed.
started()
{
	[ -e "$1" ] && [ "$(count_lines "$1" ' START ')" -eq "$2" ]
}

gone()
{
	! esv_alive "$1"
}

# events FILE PID: the events recorded by PID, space separated, in order.
events()
{
	awk -v p="$2" '$2 == p && $3 != "START" { printf "%s%s", s, $3; s = " " }' "$1"
}

# pids FILE: the pids that recorded START.
pids()
{
	awk '$3 == "START" { print $2 }' "$1"
}

# ---- 13: SIGTERM to the supervisor reaches each live worker exactly once,
# the supervisor exits 1 once the workers are gone.
note "13: SIGTERM forwarded exactly once"
J=$T/term
start_sup "$J" --no-python --nproc-per-node 3 --shutdown-timeout 10 \
    -- "$PY" "$REC" "$T/term.rec" linger
wait_for -t 15 started "$T/term.rec" 3 ||
    fail "3 workers did not start: $(cat "$SUP_ERR")"
# The workers can run before the supervisor has written that they do.
assert_rc 0 "$CTL" wait up -t 10 "$J"
assert_eq "$(kv "$J/supervise/state" state)" running "state before SIGTERM"
kill -TERM "$SUP_PID"
t0=$(date +%s%3N)
wait_sup -t 15
rc=$?
ms=$(($(date +%s%3N) - t0))
assert_eq "$rc" 1 "exit status after SIGTERM"
# Workers leave 0.5 s after their SIGTERM: no reason to wait for the
# 10 s shutdown timeout.
[ "$ms" -lt 5000 ] || fail "supervisor took ${ms}ms to exit after SIGTERM"
for p in $(pids "$T/term.rec"); do
	assert_eq "$(events "$T/term.rec" "$p")" SIGTERM "signals seen by worker $p"
	gone "$p" || fail "worker $p still alive after the supervisor exited"
done
assert_grep "$SUP_ERR" 'received SIGTERM' "supervisor stderr"
assert_eq "$(kv "$J/supervise/state" state)" down "state after SIGTERM"
assert_eq "$(kv "$J/supervise/state" pids)" "" "pids after SIGTERM"

# ---- 14: a worker that ignores SIGTERM is SIGKILLed after the shutdown
# timeout (2 s), measured from the SIGTERM it recorded.
note "14: grace period then SIGKILL"
J=$T/ignore
start_sup "$J" --no-python --nproc-per-node 2 --shutdown-timeout 2 \
    -- "$PY" "$REC" "$T/ignore.rec" ignore
wait_for -t 15 started "$T/ignore.rec" 2 ||
    fail "2 workers did not start: $(cat "$SUP_ERR")"
wpids=$(pids "$T/ignore.rec")
# Watch the workers from outside as well: when did each pid vanish?
(
	for p in $wpids; do
		while esv_alive "$p"; do sleep 0.01; done
		echo "$p $(date +%s.%N)"
	done >"$T/ignore.gone"
) &
watcher=$!
kill -TERM "$SUP_PID"
wait_sup -t 20
rc=$?
assert_eq "$rc" 1 "exit status after SIGTERM with stubborn workers"
wait "$watcher"
for p in $wpids; do
	assert_eq "$(events "$T/ignore.rec" "$p")" SIGTERM "signals caught by worker $p"
	tterm=$(awk -v p="$p" '$2 == p && $3 == "SIGTERM" { print $4 }' "$T/ignore.rec")
	tgone=$(awk -v p="$p" '$1 == p { print $2 }' "$T/ignore.gone")
	r=$(grep -lx "pid=$p" "$J"/workers/*/state)
	[ -n "$r" ] || fail "no workers/N/state with pid=$p"
	assert_eq "$(kv "$r" signal)" SIGKILL "$r signal"
	assert_eq "$(kv "$r" state)" stopped "$r state"
	texit=$(kv "$r" exited)
	awk -v a="$tterm" -v b="$tgone" -v c="$texit" 'BEGIN {
		d = b - a; e = c - a
		exit !(d >= 1.5 && d <= 2.5 && e >= 1.5 && e <= 2.5) }' ||
	    fail "worker $p: SIGTERM at $tterm, gone at $tgone, exited= $texit: want 2.0±0.5 s"
done
assert_grep "$SUP_ERR" 'sending SIGKILL' "supervisor stderr"

# ---- 15: --signals-to-handle SIGTERM,SIGFOO,SIGUSR1: SIGUSR1 is forwarded
# as SIGUSR1 (then SIGKILL after the timeout, since the workers keep
# running), SIGFOO is warned about and skipped.
note "15: --signals-to-handle with SIGUSR1 and an unknown name"
J=$T/usr1
start_sup "$J" --no-python --nproc-per-node 2 --shutdown-timeout 1 \
    --signals-to-handle SIGTERM,SIGFOO,SIGUSR1 \
    -- "$PY" "$REC" "$T/usr1.rec" exit
wait_for -t 15 started "$T/usr1.rec" 2 ||
    fail "2 workers did not start: $(cat "$SUP_ERR")"
assert_grep "$SUP_ERR" 'warning: .*SIGFOO' "supervisor stderr"
assert_rc 0 "$CTL" wait up -t 10 "$J"
assert_eq "$(kv "$J/supervise/state" state)" running \
    "state (an unknown signal name must not stop the job)"
kill -USR1 "$SUP_PID"
wait_sup -t 15
assert_eq "$?" 1 "exit status after SIGUSR1"
for p in $(pids "$T/usr1.rec"); do
	assert_eq "$(events "$T/usr1.rec" "$p")" SIGUSR1 "signals seen by worker $p"
	gone "$p" || fail "worker $p alive after the supervisor exited"
done
assert_grep "$SUP_ERR" 'received SIGUSR1' "supervisor stderr"

# The list from TORCHELASTIC_SIGNALS_TO_HANDLE.
note "15b: TORCHELASTIC_SIGNALS_TO_HANDLE"
J=$T/envlist
TORCHELASTIC_SIGNALS_TO_HANDLE=SIGUSR2,SIGTERM start_sup "$J" --no-python \
    --nproc-per-node 2 --shutdown-timeout 1 \
    -- "$PY" "$REC" "$T/envlist.rec" exit
wait_for -t 15 started "$T/envlist.rec" 2 ||
    fail "2 workers did not start: $(cat "$SUP_ERR")"
kill -USR2 "$SUP_PID"
wait_sup -t 15
assert_eq "$?" 1 "exit status after SIGUSR2"
for p in $(pids "$T/envlist.rec"); do
	assert_eq "$(events "$T/envlist.rec" "$p")" SIGUSR2 "signals seen by worker $p"
done

# A signal outside the list is not forwarded: with the default list,
# SIGUSR2 takes its default action on the supervisor (as torch's agent),
# and the workers, which never see SIGUSR2, die with it within a second.
note "15c: a signal outside the list is not forwarded"
J=$T/unlisted
start_sup "$J" --no-python --nproc-per-node 2 \
    -- "$PY" "$REC" "$T/unlisted.rec" exit
wait_for -t 15 started "$T/unlisted.rec" 2 ||
    fail "2 workers did not start: $(cat "$SUP_ERR")"
kill -USR2 "$SUP_PID"
wait_sup -t 10
rc=$?
assert_eq "$rc" $((128 + 12)) "exit status of a supervisor killed by SIGUSR2"
for p in $(pids "$T/unlisted.rec"); do
	wait_for -t 1 gone "$p" || fail "worker $p alive 1 s after its supervisor died"
	assert_eq "$(events "$T/unlisted.rec" "$p")" "" "signals seen by worker $p"
done

note ok
exit 0
