#!/bin/bash
# Bad input to esv-rdzv, each case on its own connection while a real job
# of two nodes runs on the same server: garbage, NUL bytes, an oversized
# line, a client that never speaks, a byte trickler, a half-open client,
# a wrong token, a wrong version, an unsealed line, thousands of
# connections.  Each gets an error reply or is dropped, with a warning
# naming the peer and the line; the running job is not disturbed and a
# new job still forms its round.
. "$(dirname "$0")/lib.sh"
esv_setup 150
. "$ESV_TEST_DIR/rdzv.sh"

start_rdzv --max-clients 3000
RZ_STOP_FLAG=$T/stop node a
RZ_STOP_FLAG=$T/stop node b
for n in a b; do
	wait_recs $n 'world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
done

ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
"$PY" - "$EP" "$T/token" "$RZ_CLIENT" >"$T/py.out" 2>&1 <<'PYEOF' ||
import os, socket, sys, time
sys.path.insert(0, os.path.dirname(sys.argv[3]))
import rdzv_client as rc

addr, token = sys.argv[1], rc.load_token(sys.argv[2])


def expect_err(c, code, what):
    line = c.read_line(5)
    assert line is not None and line.startswith("ERR " + code), \
        "%s: got %r, wanted ERR %s" % (what, line, code)
    assert c.read_line(5) is None, what + ": not hung up"
    print("ok", what)


def expect_dropped(c, what, within):
    t0 = time.monotonic()
    while True:
        try:
            line = c.read_line(within)
        except TimeoutError:
            raise AssertionError(what + ": still connected")
        if line is None:
            break
        assert line.startswith("ERR "), "%s: got %r" % (what, line)
    dt = time.monotonic() - t0
    assert dt < within, "%s: dropped after %.1f s" % (what, dt)
    print("ok %s (dropped after %.2f s)" % (what, dt))


c = rc.connect(addr); c.send_line("HELLO WORLD"); expect_err(c, "proto", "garbage")
c = rc.connect(addr); c.send_raw(b"JOIN\x00\x01\xff\n"); expect_err(c, "proto", "NUL bytes")
c = rc.connect(addr); c.send_raw(b"J" * 5000); expect_err(c, "toolong", "oversized line")
c = rc.connect(addr); c.join("job1", "intruder", "x" * 32); expect_err(c, "auth", "wrong token")
c = rc.connect(addr); c.join("job1", "n", token, version=7); expect_err(c, "version", "wrong version")
c = rc.connect(addr); c.key = b"k" * 32; c.join("job1", "n", token); expect_err(c, "auth", "JOIN sealed under another key")
c = rc.connect(addr); c.join("job3", "lone", token, min_nodes=2, max_nodes=2)
assert c.read_line(5).startswith("JOINED "), "a node joins job3"
c.send_line("PING", sealed=False); expect_err(c, "proto", "an unsealed line after the JOIN")
c = rc.connect(addr); c.join("job1", "n", token, min_nodes=5, max_nodes=9)
expect_err(c, "mismatch", "min:max unlike the job's")
c = rc.connect(addr)
expect_dropped(c, "a client that never speaks", 3)
c = rc.connect(addr)
t0 = time.monotonic()
try:
    while time.monotonic() - t0 < 4:
        c.send_raw(b"J")
        time.sleep(0.05)
    raise AssertionError("a byte trickler: still connected after 4 s")
except (BrokenPipeError, ConnectionResetError):
    print("ok a byte trickler (dropped after %.2f s)" % (time.monotonic() - t0))
c = rc.connect(addr); c.send_raw(b"JOIN 1 job1 half"); c.sock.shutdown(socket.SHUT_WR)
expect_dropped(c, "a half-open client", 3)

# One address holds 16 connections yet to authenticate (the default of
# --max-unauth-per-addr): each newer one pushes its oldest out.
many, refused = [], 0
for i in range(3500):
    try:
        many.append(rc.connect(addr, greet=False))
    except OSError:
        refused += 1
greeted = pushed = 0
for m in many:
    line = m.read_line(10)
    if line is not None and line.startswith("ESV-RDZV "):
        greeted += 1
        line = m.read_line(10)
    if line is not None and line.startswith("ERR limit"):
        pushed += 1
for m in many:
    m.close()
assert greeted > 2000 and pushed >= 3500 - refused - 16, (greeted, pushed)
print("ok 3500 connections: %d greeted, %d pushed out, %d refused"
      % (greeted, pushed, refused))

x, y = rc.connect(addr), rc.connect(addr)
x.join("job2", "x", token, min_nodes=2, max_nodes=2)
y.join("job2", "y", token, min_nodes=2, max_nodes=2)
rx, ry = x.read_until("ROUND"), y.read_until("ROUND")
assert {rx[-1].split()[2], ry[-1].split()[2]} == {"0", "1"}, (rx, ry)
print("ok another job forms its round")
PYEOF
    fail "bad clients: $(cat "$T/py.out")"
cat "$T/py.out" >&2

assert_grep "$RDZV_ERR" '127\.0\.0\.1:[0-9]+: line 1: '
assert_grep "$RDZV_ERR" 'bad token'
esv_alive "$RDZV_PID" || fail "esv-rdzv died"
for n in a b; do
	assert_eq "$(recs $n .)" 1 "$n: worker starts (a restart would add one)"
	assert_eq "$(kv "$T/$n/supervise/state" membership_restarts)" 0 \
	    "$n: membership restarts"
done

note "esv-rdzv refuses a token file others may read"
echo secret-secret-secret >"$T/loose"
chmod 644 "$T/loose"
assert_rc 100 "$RDZV" --listen 127.0.0.1:0 --token-file "$T/loose"
assert_grep "$T/err" 'loose'
assert_eq "$(wc -l <"$T/err")" 1 "esv-rdzv's error lines"

note "esv-rdzv's durations: with a unit, or bare in the option's own unit"
for bad in 1.5x 5ms -1 2h ""; do
	assert_rc 100 "$RDZV" --listen 127.0.0.1:0 --token-file "$T/token" --heartbeat "$bad"
	assert_grep "$T/err" "^esv-rdzv: fatal: --heartbeat: "
	assert_eq "$(wc -l <"$T/err")" 1 "esv-rdzv's error lines for --heartbeat '$bad'"
done
"$RDZV" --listen 127.0.0.1:0 --token-file "$T/token" --heartbeat 250ms \
    --auth-timeout 1.5s --recovery-timeout 2000 --idle-exit 1s >"$T/dur.out" 2>"$T/dur.err" &
dpid=$!
ESV_SUP_PIDS+=("$dpid")
wait_for -t 10 grep -q '^listening ' "$T/dur.out" || fail "durations refused: $(cat "$T/dur.err")"
# --idle-exit 1s with nobody connecting: it exits 0 on its own.
wait_for -t 10 eval '! esv_alive '"$dpid" || fail "--idle-exit 1s did not exit"
wait "$dpid"; assert_eq $? 0 "exit status after --idle-exit"

note "a node with the wrong token retries, never starts a worker, and fails at join_timeout"
make_token "$T/other"
RZ_CONF="token_file=$T/other,join_timeout=3s" node w
wait_sup -t 20 "$NODE_PID_w"
assert_eq $? 1 "exit status with a wrong token"
assert_grep "$T/w.err" 'refused us without proving it knows the token \(ERR auth bad token\)'
assert_grep "$T/w.err" 'no round within join_timeout'
assert_eq "$(recs w .)" 0 "w: worker starts"
exit 0
