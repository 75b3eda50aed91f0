#!/bin/bash
# Thousands of connections to esv-stored (esv-stored(8), --max-conns):
# 2,000 clients held at once are each served (a GETNUMKEYS answered on
# every one) and counted in --state-file; 1,000 more are hung up on, with
# a few rate-limited lines rather than a line each; once they all go, the
# count falls back and a new client is served.
. "$(dirname "$0")/lib.sh"
esv_setup 120
STORED=$ESV_BIN_DIR/../store/esv-stored
[ -x "$STORED" ] || fail "$STORED is not built"
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 3200 ] || skip "only $(ulimit -n) file descriptors"

"$STORED" --listen 127.0.0.1:0 --max-conns 2000 --state-file "$T/store" \
    >"$T/stored.out" 2>"$T/stored.err" &
ESV_SUP_PIDS+=("$!")
wait_for test -s "$T/stored.out" || fail "esv-stored printed no address"
port=$(sed -n 's/^listening 127.0.0.1:\([0-9]*\)$/\1/p' "$T/stored.out")

mkfifo "$T/held" "$T/go"
cat >"$T/conns.py" <<'PY'
import selectors
import socket
import struct
import sys

port, held_fifo, go_fifo = int(sys.argv[1]), sys.argv[2], sys.argv[3]
NUMKEYS = 6      # torch 1.13's GETNUMKEYS


def numkeys(c):
    c.sendall(bytes([NUMKEYS]))
    got = b""
    while len(got) < 8:
        d = c.recv(8 - len(got))
        if not d:
            return None
        got += d
    return struct.unpack("<q", got)[0]


held = [socket.create_connection(("127.0.0.1", port), timeout=10)
        for _ in range(2000)]
for i, c in enumerate(held):
    assert numkeys(c) == 0, "connection %d was not served" % i
extra = [socket.create_connection(("127.0.0.1", port), timeout=10)
         for _ in range(1000)]
# Each extra one is hung up on: EOF (or a reset) within the timeout.
sel = selectors.DefaultSelector()
for c in extra:
    sel.register(c, selectors.EVENT_READ)
pending = len(extra)
while pending:
    ready = sel.select(10)
    assert ready, "%d extra connections still open" % pending
    for key, _ in ready:
        try:
            assert key.fileobj.recv(1) == b"", "an extra one was served"
        except ConnectionResetError:
            pass
        sel.unregister(key.fileobj)
        pending -= 1
with open(held_fifo, "w") as f:
    f.write("2000 held\n")
with open(go_fifo) as f:
    f.readline()
for c in held + extra:
    c.close()
c = socket.create_connection(("127.0.0.1", port), timeout=10)
assert numkeys(c) == 0, "a new client after the storm was not served"
print("conns ok", flush=True)
PY
# Opened both ways, so that neither end blocks if the clients die.
exec 3<>"$T/held" 4<>"$T/go"
"$PY" "$T/conns.py" "$port" "$T/held" "$T/go" >"$T/conns.out" 2>"$T/conns.err" &
py=$!
read -r -t 60 -u 3 line || fail "the clients failed: $(tail -3 "$T/conns.err")"
wait_for -t 10 eval '[ "$(kv "$T/store" connections)" = 2000 ]' ||
	fail "--state-file does not count 2000 connections: $(cat "$T/store")"
echo go >&4
wait "$py" || fail "the clients: $(tail -3 "$T/conns.err")"
assert_grep "$T/conns.out" "^conns ok" "every held client served"
wait_for -t 10 eval '[ "$(kv "$T/store" connections)" -le 1 ]' ||
	fail "--state-file still counts $(kv "$T/store" connections) connections"
lines=$(grep -c "refused" "$T/stored.err")
note "$lines lines about the 1000 refused connections"
[ "$lines" -ge 1 ] && [ "$lines" -le 50 ] ||
	fail "$lines lines for 1000 refusals: $(head -5 "$T/stored.err")"
exit 0
