#!/bin/bash
# esv-stored's trust model on one host (esv-stored(8), "Trust model"): a
# local peer must run as esv-stored's own uid (the job's) or root,
# whatever address it comes from.  As root: root is served, uid 65534 is
# hung up on with a line naming the peer and its uid.  As uid 65534 (a
# job of another user): 65534 and root are served, 65533 is refused.
# Over IPv6 loopback too, if the host has ::1.
. "$(dirname "$0")/lib.sh"
esv_setup 60
STORED=$ESV_BIN_DIR/../store/esv-stored
[ -x "$STORED" ] || fail "$STORED is not built"
[ "$(id -u)" = 0 ] || skip "other uids need root"
command -v setpriv >/dev/null || skip "setpriv(1) is not installed"
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }

# ping HOST PORT: a PING answered (0), or the connection closed (1).  The
# script comes on stdin: another uid may not read $T.
ping_as()
{
	local u=$1 host=$2 port=$3
	as "$u" "$PY" - "$ESV_TEST_DIR" "$host" "$port" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import storecli
try:
    storecli.C(int(sys.argv[3]), host=sys.argv[2])
except (EOFError, ConnectionResetError, BrokenPipeError) as e:
    print("closed:", e)
    sys.exit(1)
PY
}

# serve UID ADDR NAME: esv-stored as UID on ADDR, port in $port.
serve()
{
	as "$1" "$STORED" --listen "$2:0" >"$T/$3.out" 2>"$T/$3.err" &
	ESV_SUP_PIDS+=("$!")
	wait_for test -s "$T/$3.out" || fail "esv-stored ($3) printed no address: $(cat "$T/$3.err")"
	port=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$T/$3.out")
}

note "esv-stored of root: root served, uid 65534 refused"
serve 0 127.0.0.1 root
ping_as 0 127.0.0.1 "$port" || fail "root was refused: $(cat "$T/root.err")"
ping_as 65534 127.0.0.1 "$port" && fail "uid 65534 was served by root's store"
wait_for -t 5 grep -q "127.0.0.1:[0-9]*: refused: a local process of uid 65534" "$T/root.err" ||
	fail "no line naming the peer and its uid: $(cat "$T/root.err")"

note "esv-stored of uid 65534: 65534 and root served, 65533 refused"
serve 65534 127.0.0.1 nobody
ping_as 65534 127.0.0.1 "$port" || fail "the job's uid was refused: $(cat "$T/nobody.err")"
ping_as 0 127.0.0.1 "$port" || fail "root was refused: $(cat "$T/nobody.err")"
ping_as 65533 127.0.0.1 "$port" && fail "uid 65533 was served by 65534's store"
wait_for -t 5 grep -q "refused: a local process of uid 65533" "$T/nobody.err" ||
	fail "no line naming uid 65533: $(cat "$T/nobody.err")"

if ip -6 addr show dev lo 2>/dev/null | grep -q "inet6 ::1"; then
	note "the same over ::1"
	serve 0 '[::1]' root6
	ping_as 0 ::1 "$port" || fail "root was refused over ::1: $(cat "$T/root6.err")"
	ping_as 65534 ::1 "$port" && fail "uid 65534 was served over ::1"
	wait_for -t 5 grep -q "\[::1\]:[0-9]*: refused: a local process of uid 65534" "$T/root6.err" ||
		fail "no line for the ::1 peer: $(cat "$T/root6.err")"
fi
exit 0
