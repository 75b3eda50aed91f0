#!/bin/bash
# Checks the facts supervisor/report/statusrec.h relies on against
# a record written by the real runsv: 20 bytes, TAI64 label 2^62 + 10 +
# Unix seconds, pid little-endian at 12..15, state byte 1 while running.
# Exit 0 pass, 77 skip (runit not installed), anything else failure.
. "$(dirname "$0")/lib.sh"
esv_setup 60

command -v runsv >/dev/null && command -v sv >/dev/null ||
    skip "runit (runsv, sv) not installed"

# runsv and its service inherit ESV_ITEST_TAG: the cleanup kills them.
svc=$T/svc
mkdir "$svc" || exit 1
printf '#!/bin/sh\nexec sleep 100\n' >"$svc/run"
chmod 755 "$svc/run"

before=$(date +%s)
runsv "$svc" </dev/null >/dev/null 2>&1 &
runsv_pid=$!

# Wait until runsv reports a running child (a non-empty pid file).
wait_for -t 5 eval '[ -s "$svc/supervise/pid" ] && [ -s "$svc/supervise/status" ]' ||
    fail "runsv did not start the service within 5 s"
pid=$(cat "$svc/supervise/pid")
after=$(date +%s)

size=$(stat -c %s "$svc/supervise/status")
[ "$size" -eq 20 ] || fail "status is $size bytes, want 20"

# One byte per line, decimal.
mapfile -t b < <(od -An -v -tu1 -w1 "$svc/supervise/status" | tr -d ' ')
[ "${#b[@]}" -eq 20 ] || fail "read ${#b[@]} bytes"

recpid=$(( b[12] | b[13] << 8 | b[14] << 16 | b[15] << 24 ))
[ "$recpid" -eq "$pid" ] ||
	fail "pid field (little-endian 12..15) is $recpid, supervise/pid is $pid"
[ "${b[19]}" -eq 1 ] || fail "state byte is ${b[19]}, want 1 (run)"
[ "${b[17]}" -eq 117 ] || fail "want byte is ${b[17]}, want 'u' (117)"
[ "${b[16]}" -eq 0 ] || fail "paused byte is ${b[16]}, want 0"

label=0
for i in 0 1 2 3 4 5 6 7; do
	label=$(( label << 8 | b[i] ))
done
secs=$(( label - (1 << 62) - 10 ))
[ "$secs" -ge $((before - 1)) ] && [ "$secs" -le $((after + 1)) ] ||
	fail "TAI64 label - 2^62 - 10 = $secs, not within [$before, $after]"
nsec=$(( b[8] << 24 | b[9] << 16 | b[10] << 8 | b[11] ))
[ "$nsec" -lt 1000000000 ] || fail "nanoseconds field $nsec out of range"

timeout 10 sv exit "$svc" >/dev/null 2>&1 || fail "sv exit failed"
wait_for -t 5 eval '! esv_alive "$runsv_pid"' ||
    fail "runsv still running 5 s after sv exit"
wait "$runsv_pid"
note ok
exit 0
