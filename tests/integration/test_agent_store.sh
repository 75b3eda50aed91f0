#!/bin/bash
# --agent-store on one node (esv-supervise(8)): the supervisor serves the
# workers' store with esv-stored on the MASTER_PORT it offered, shown as
# store_listen in supervise/state and by esv-ctl status; the workers are
# told TORCHELASTIC_USE_AGENT_STORE=True; a restart (the control letter
# t) gets a fresh store on a new port and the old one is gone; nothing of
# the store is left when the job ends.  The store's key count is in
# supervise/store, esv-ctl status, /status and /metrics.
. "$(dirname "$0")/lib.sh"
esv_setup 60
cat >"$T/w.sh" <<'EOS'
#!/bin/sh
exec sleep 60
EOS
chmod +x "$T/w.sh"

# store_at JOB: once the store runs, "ADDR:PORT PID" of it.
store_at()
{
	local where
	where=$(kv "$1/supervise/state" store_listen)
	[ -n "$where" ] || return 1
	echo "$where $(pgrep -x esv-stored -P "$SUP_PID")"
}
# ping PORT: esv-stored answers the newer dialect's PING with its nonce.
ping_store()
{
	"$PY" - "$1" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"\x00\xce\xf7\x85\x3c" + b"\x0d" + struct.pack("<I", 4242))
got = b""
while len(got) < 4:
    d = s.recv(4 - len(got))
    if not d:
        sys.exit("closed")
    got += d
sys.exit(0 if struct.unpack("<I", got)[0] == 4242 else "wrong echo")
PY
}

start_sup "$T/job" --agent-store --nproc-per-node 2 --health-port 0 \
    --health-address 127.0.0.1 --no-python -- "$T/w.sh"
wait_for -t 10 eval 'store_at "$T/job" >/dev/null' ||
	fail "no store_listen in supervise/state: $(cat "$T/job.err")"
wait_for -t 10 eval '[ "$(kv "$T/job/supervise/state" pids | wc -w)" = 2 ]' ||
	fail "the workers did not start: $(cat "$T/job.err")"
read -r where1 pid1 < <(store_at "$T/job")
assert_eq "$where1" "$(kv "$T/job/supervise/state" master_addr):$(kv "$T/job/supervise/state" master_port)" \
    "the store at MASTER_ADDR:MASTER_PORT"
[ -n "$pid1" ] || fail "no esv-stored child of the supervisor"
ping_store "${where1##*:}" || fail "esv-stored at $where1 does not answer"
assert_eq "$(cat "$T/job/workers/0/env/TORCHELASTIC_USE_AGENT_STORE")" True \
    "the workers told of the agent's store"
ctl status "$T/job" >"$T/status" 2>&1
assert_grep "$T/status" "agent store $where1" "esv-ctl status shows the store"

note "the key count: supervise/store, esv-ctl status, /status, /metrics"
# Three SETs in torch 1.13's dialect, then GETNUMKEYS to see them counted.
"$PY" - "${where1##*:}" <<'PY' || fail "the SETs failed"
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
def blob(b):
    return struct.pack("<Q", len(b)) + b
for k in (b"k1", b"k2", b"k3"):
    s.sendall(b"\x00" + blob(k) + blob(b"v"))
s.sendall(b"\x06")
got = b""
while len(got) < 8:
    d = s.recv(8 - len(got))
    if not d:
        sys.exit("closed")
    got += d
sys.exit(0 if struct.unpack("<q", got)[0] == 3 else "num_keys is not 3")
PY
wait_for -t 5 eval '[ "$(kv "$T/job/supervise/store" keys)" = 3 ]' ||
	fail "supervise/store does not count 3 keys: $(cat "$T/job/supervise/store" 2>&1)"
assert_eq "$(kv "$T/job/supervise/store" pid)" "$pid1" "supervise/store's pid"
ctl status "$T/job" >"$T/status" 2>&1
assert_grep "$T/status" "agent store $where1 \\(3 keys\\)" "esv-ctl status counts the keys"
wait_for -t 10 eval '[ -n "$(kv "$T/job/supervise/state" health_listen)" ]' ||
	fail "no health_listen"
health=$(kv "$T/job/supervise/state" health_listen)
# keys_served: /status and /metrics count 3 keys.  esv-healthd re-reads
# the job's files at most every 100 ms (healthd/view.c): a view read
# before the SETs may answer for that long.
keys_served()
{
	"$PY" - "$health" 2>"$T/keys.err" <<'PY'
import json, sys, urllib.request
base = "http://" + sys.argv[1]
st = json.load(urllib.request.urlopen(base + "/status", timeout=5))
if st["store"]["keys"] != 3:
    sys.exit("/status store: %r" % (st["store"],))
m = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
if "\nesv_store_keys 3\n" not in m:
    sys.exit("/metrics: no esv_store_keys 3")
PY
}
wait_for -t 5 keys_served || fail "/status or /metrics lacks the key count: $(cat "$T/keys.err")"

note "a restart gets a fresh store"
timeout 5 bash -c 'printf t >"$1/supervise/control"' _ "$T/job"
wait_for -t 15 eval 'read -r w p < <(store_at "$T/job") && [ "$w" != "$where1" ] && [ -n "$p" ]' ||
	fail "no new store after the restart: $(kv "$T/job/supervise/state" store_listen)"
read -r where2 pid2 < <(store_at "$T/job")
wait_for -t 5 eval '! kill -0 "$pid1" 2>/dev/null' ||
	fail "the first attempt's esv-stored ($pid1) still runs"
ping_store "${where2##*:}" || fail "the new esv-stored at $where2 does not answer"

note "nothing of the store outlives the job"
stop_sup
wait_for -t 5 eval '! kill -0 "$pid2" 2>/dev/null' ||
	fail "esv-stored ($pid2) outlived its supervisor"
assert_eq "$(kv "$T/job/supervise/state" store_listen)" "" "store_listen once the job is over"
exit 0
