#!/bin/bash
# esv-stored serves torch 1.13's own TCPStore client (is_master=False, from
# /usr/bin/python3): set, get, add, compare_set, wait with and without a
# timeout, num_keys, delete_key; the wait that timed out is dropped by the
# client's next request, so that a later set of its key cannot put a stale
# byte in front of a reply (torch 1.13's own server does: the client then
# reads a wrong number or times out); and 64 clients at once, each
# counting on one key and waiting for the others.
. "$(dirname "$0")/lib.sh"
esv_setup 120
STORED=$ESV_BIN_DIR/../store/esv-stored
[ -x "$STORED" ] || fail "$STORED is not built"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
	skip "/usr/bin/python3 cannot import torch (python3-torch)"

"$STORED" --listen 127.0.0.1:0 >"$T/stored.out" 2>"$T/stored.err" &
ESV_SUP_PIDS+=("$!")
wait_for test -s "$T/stored.out" || fail "esv-stored printed no address"
port=$(sed -n 's/^listening 127.0.0.1:\([0-9]*\)$/\1/p' "$T/stored.out")
[ -n "$port" ] || fail "no port in: $(cat "$T/stored.out")"

cat >"$T/client.py" <<'PY'
import datetime
import sys
import threading
import time
from torch.distributed import TCPStore

port = int(sys.argv[1])
T = datetime.timedelta


def store():
    return TCPStore("127.0.0.1", port, is_master=False, timeout=T(seconds=20))


s = store()
s.set("k1", "v1")
assert s.get("k1") == b"v1"
assert s.add("ctr", 5) == 5
assert s.add("ctr", -2) == 3
assert s.get("ctr") == b"3", "a counter reads as decimal ASCII"
assert s.compare_set("k1", "v1", "v2") == b"v2"
assert s.compare_set("k1", "nope", "v3") == b"v2"
assert s.compare_set("newk", "", "fresh") == b"fresh"
assert s.compare_set("ghost", "x", "y") == b"x", "torch's 'lie' on absent"
n = s.num_keys()
assert s.delete_key("k1") is True
assert s.delete_key("k1") is False
assert s.num_keys() == n - 1
s.wait(["ctr", "newk"])
t0 = time.monotonic()
try:
    s.wait(["absent"], T(milliseconds=300))
    sys.exit("wait on a missing key did not time out")
except RuntimeError:
    pass
assert time.monotonic() - t0 < 5
other = store()
assert s.add("c", 7) == 7
other.set("absent", "now")     # after s gave up: no stale byte for s
assert s.add("c", 1) == 8, "a stale STOP_WAITING read as a reply"
assert s.get("absent") == b"now"
threading.Timer(0.2, lambda: other.set("late", "x")).start()
s.wait(["late"], T(seconds=5))
print("single ok", flush=True)

# Many clients: each adds to one counter, then waits for the last one's
# key; the counter is exact and every wait returns.
N = 64
errors = []


def worker(i):
    try:
        c = store()
        c.add("many", 1)
        if c.add("arrived", 1) == N:
            c.set("all_in", "yes")
        c.wait(["all_in"], T(seconds=20))
        assert c.get("all_in") == b"yes"
    except Exception as e:  # noqa: BLE001
        errors.append(repr(e))


ts = [threading.Thread(target=worker, args=(i,)) for i in range(N)]
for t in ts:
    t.start()
for t in ts:
    t.join()
assert not errors, errors[:3]
assert s.get("many") == str(N).encode()
print("many ok", flush=True)
PY
/usr/bin/python3 "$T/client.py" "$port" >"$T/client.out" 2>"$T/client.err" ||
	fail "torch's client: $(tail -3 "$T/client.err")"
assert_grep "$T/client.out" "^many ok$" "64 clients at once"
note "esv-stored's log: $(wc -l <"$T/stored.err") line(s)"
assert_no_grep "$T/stored.err" "closing" "no connection closed by the store"
