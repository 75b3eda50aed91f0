#!/bin/bash
# Issue 20.6: esv-watchdogd signals workers only through the pidfds the
# supervisor sends with its list.  A worker reaped while its timer runs,
# whose pid a stranger then gets (forced with ns_last_pid in a private
# pid namespace), is not signalled when the timer fires; nor is a pid
# listed without its pidfd; nor is a pid listed again for another
# process by an earlier process's timer; the live listed worker is.
. "$(dirname "$0")/lib.sh"
esv_setup 60
WD=${ESV_WATCHDOGD:-$ESV_BIN_DIR/../watchdog/esv-watchdogd}
[ -x "$WD" ] || skip "$WD is not built"
[ "$(id -u)" = 0 ] || skip "needs root for a pid namespace and ns_last_pid"
unshare -p -f --mount-proc true 2>"$T/unshare.err" ||
    skip "no pid namespace: $(cat "$T/unshare.err")"

unshare -p -f --mount-proc "$PY" "$WORKERS/wd_pidreuse.py" "$WD" "$T" \
    >"$T/out" 2>"$T/err" || fail "$(cat "$T/err")"
assert_grep_F "$T/out" ok
assert_grep "$T/err" "pid [0-9]+ scope nofd .*: SIGKILL not sent: the supervisor gave no pidfd for it"
exit 0
