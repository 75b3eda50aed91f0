#!/bin/bash
# Restart backoff: --restart-delay doubles per
# consecutive fast failure, is capped by --restart-delay-max and reset by
# an attempt lasting --restart-reset; state=backoff with next_start while
# waiting; d during the wait goes down at once.
. "$(dirname "$0")/lib.sh"
esv_setup 120

# The worker appends "RESTART_COUNT UNIXTIME" to $STARTS, then exits 2;
# with $SLOW_AT=N it first sleeps 1.5 s in the attempt with restart count N.
FAILER='echo "$TORCHELASTIC_RESTART_COUNT $(date +%s.%N)" >>"$STARTS"
[ "$TORCHELASTIC_RESTART_COUNT" = "${SLOW_AT:-}" ] && sleep 1.5
exit 2'

# gaps FILE: the times between consecutive starts, one a line.
gaps()
{
	awk 'NR > 1 { printf "%.3f\n", $2 - t } { t = $2 }' "$1"
}

# check_gaps FILE WANT...: gap k is within [0.9 * WANT_k, WANT_k + 0.5].
check_gaps()
{
	local f=$1 g i=0
	shift
	mapfile -t g < <(gaps "$f")
	[ "${#g[@]}" -eq $# ] || fail "$# gaps wanted, got ${#g[@]}: ${g[*]}"
	for want; do
		awk -v g="${g[i]}" -v w="$want" 'BEGIN { exit !(g >= 0.9 * w && g <= w + 0.5) }' ||
		    fail "gap $((i + 1)) is ${g[i]} s, wanted about $want s (all: ${g[*]})"
		i=$((i + 1))
	done
}

# ---- Doubling: 0.3, 0.6, 1.2 s, then the budget is spent.
note "doubling delay"
J=$T/double
export STARTS=$T/double.starts
start_sup "$J" --no-python --max-restarts 3 --restart-delay 300ms \
    -- bash -c "$FAILER"
# Sample the state during the waits.
: >"$T/double.samples"
while esv_alive "$SUP_PID"; do
	# One read: state and next_start from the same version of the file.
	cp "$J/supervise/state" "$T/snap" 2>/dev/null || continue
	echo "$(kv "$T/snap" state)|$(kv "$T/snap" next_start)|$(date +%s.%N)" \
	    >>"$T/double.samples"
	sleep 0.05
	[ "$(wc -l <"$T/double.samples")" -gt 400 ] && break
done
wait_sup -t 10
assert_eq "$?" 1 "exit status once the budget is spent"
assert_eq "$(awk '{ print $1 }' "$STARTS" | tr '\n' ' ')" "0 1 2 3 " "restart counts started"
check_gaps "$STARTS" 0.3 0.6 1.2
# While waiting: state=backoff and next_start in the future, close to
# the next start.
n=$(grep -c '^backoff|' "$T/double.samples")
[ "$n" -ge 5 ] || fail "state=backoff seen $n times: $(head -20 "$T/double.samples")"
awk -F'|' '$1 == "backoff" && ($2 == "" || $2 + 0.3 < $3 || $2 > $3 + 1.3) { bad++ } END { exit bad > 0 }' \
    "$T/double.samples" ||
    fail "backoff without a sensible next_start: $(grep '^backoff|' "$T/double.samples" | head -5)"
for k in 1 2 3; do
	t=$(awk -v k="$k" '$1 == k { print $2 }' "$STARTS")
	awk -F'|' -v t="$t" '$1 == "backoff" && $2 > t - 0.2 && $2 < t + 0.05 { f = 1 } END { exit !f }' \
	    "$T/double.samples" ||
	    fail "no next_start announcing start $k at $t: $(grep '^backoff|' "$T/double.samples" | head -30)"
done
awk -F'|' '$1 != "backoff" && $2 != "" { bad++ } END { exit bad > 0 }' "$T/double.samples" ||
    fail "next_start set outside backoff: $(awk -F'|' '$1 != "backoff" && $2 != ""' "$T/double.samples" | head -3)"
assert_grep "$SUP_ERR" 'delayed by 300 ms' "supervisor stderr"
assert_grep "$SUP_ERR" 'delayed by 1200 ms' "supervisor stderr"

# ---- The cap: 0.2, 0.4, 0.4, 0.4.
note "--restart-delay-max"
J=$T/cap
export STARTS=$T/cap.starts
run_sup "$J" --no-python --max-restarts 4 --restart-delay 200ms \
    --restart-delay-max 400ms -- bash -c "$FAILER"
assert_eq "$SUP_RC" 1 "exit status"
check_gaps "$STARTS" 0.2 0.4 0.4 0.4

# ---- The reset: the third attempt lasts 1.5 s > --restart-reset 1s, so
# the delay before the fourth is 0.3 s again, not 1.2 s.
note "--restart-reset"
J=$T/reset
export STARTS=$T/reset.starts
SLOW_AT=2 run_sup "$J" --no-python --max-restarts 3 --restart-delay 300ms \
    --restart-reset 1s -- bash -c "$FAILER"
assert_eq "$SUP_RC" 1 "exit status"
check_gaps "$STARTS" 0.3 0.6 1.8

# ---- d during the backoff wait: down at once, no more starts.
note "d during backoff"
J=$T/down
export STARTS=$T/down.starts
start_sup "$J" --no-python --max-restarts 5 --restart-delay 2s \
    -- bash -c "$FAILER"
wait_for -t 10 eval '[ "$(kv "$J/supervise/state" state)" = backoff ]' ||
    fail "no backoff state: $(cat "$SUP_ERR")"
ns=$(kv "$J/supervise/state" next_start)
[ -n "$ns" ] || fail "next_start empty during backoff"
t0=$(date +%s%3N)
timeout 5 bash -c 'printf d >"$1/supervise/control"' _ "$J" || fail "could not write d"
wait_for -t 1 eval '[ "$(kv "$J/supervise/state" state)" = down ]' ||
    fail "not down 1 s after d: $(cat "$J/supervise/state")"
ms=$(($(date +%s%3N) - t0))
[ "$ms" -lt 500 ] || fail "d during backoff took $ms ms"
assert_eq "$(kv "$J/supervise/state" want)" down "want after d"
assert_eq "$(kv "$J/supervise/state" next_start)" "" "next_start after d"
# The start d cancelled was due at next_start (2 s after the failure):
# past it, with 0.5 s for a loaded machine to run the supervisor's timer,
# u starts the group again.  The supervisor logs what it does in order, so
# a start by the cancelled timer is a group.start before the control u.
sleep_until "$(awk -v t="$ns" 'BEGIN { printf "%.3f", t + 0.5 }')"
esv_alive "$SUP_PID" || fail "the supervisor exited after d"
timeout 5 bash -c 'printf u >"$1/supervise/control"' _ "$J" || fail "could not write u"
wait_for -t 5 eval '[ "$(wc -l <"$STARTS")" -ge 2 ]' || fail "u did not start the group"
assert_eq "$(event_names "$J" | grep -E '^(group\.start|control:[du])$' | head -4 | tr '\n' ' ')" \
    "group.start control:d control:u group.start " "starts and letters (d during backoff, then u)"
timeout 5 bash -c 'printf x >"$1/supervise/control"' _ "$J" || fail "could not write x"
wait_sup -t 10
assert_eq "$?" 1 "exit status after x"

note ok
exit 0
