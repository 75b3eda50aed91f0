#!/bin/bash
# The rendezvous client trusts no server that has not proved it knows the
# token.  A fake server on 127.0.0.1 (a local user who bound the port
# first) greets, and answers the JOIN with a JOINED and a ROUND naming its
# own master, sealed under a key it made up, then unsealed: the node says
# the server failed its proof, reconnects, and never starts a worker.  A
# relay in the path to the real esv-rdzv that rewrites the ROUND's master
# (leaving the seal as it was) is caught the same way.  Before the fix the
# client took the fake ROUND and its workers got MASTER=203.0.113.66:6666.
# FAKE_VERSION=1 makes the fakes speak protocol 1 (to try an old client).
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"

make_token "$T/token"
RZ_NNODES=1:1
RZ_CONF="token_file=$T/token,last_call_timeout=0,join_timeout=4s"

# fake.py MODE PORTFILE LOG [UPSTREAM]: serve 127.0.0.1:0 until killed.
#	fake: greet, then answer every JOIN with JOINED and a fake ROUND,
#	      sealed under a random key on odd connections, bare on even.
#	liar: the same, sealed under the true key (it knows the token), the
#	      ROUND giving a world of 1 to a node of 2 workers.
#	relay: pass bytes to and from UPSTREAM (host:port), rewriting the
#	      master address of every ROUND the server sends.
cat >"$T/fake.py" <<'PYEOF'
import os, socket, sys, threading
sys.path.insert(0, os.environ["ESV_TEST_DIR"])
import rdzv_client as rc
mode, portfile, log = sys.argv[1:4]
version = os.environ.get("FAKE_VERSION", "3")
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % srv.getsockname()[1])
os.rename(portfile + ".tmp", portfile)
lock = threading.Lock()

def note(s):
    with lock, open(log, "a") as f:
        f.write(s + "\n")

def fake(c, n):
    nonce = os.urandom(16).hex()
    c.sendall(("ESV-RDZV %s %s 200 1500\n" % (version, nonce)).encode())
    seal = " " + os.urandom(32).hex() if n % 2 == 1 and version != "1" else ""
    buf = b""
    while True:
        d = c.recv(4096)
        if not d:
            return
        buf += d
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.startswith(b"JOIN ") and mode == "liar":
                key = rc.session_key(rc.load_token(os.environ["FAKE_TOKEN"]),
                                     nonce, line.decode().split()[4])
                note("conn %d: %s" % (n, line.decode()[:40]))
                c.sendall((rc.seal(key, "s", 0, "JOINED 0 1 0") + "\n" +
                           rc.seal(key, "s", 1, "ROUND 0 0 1 0 1 0 1 "
                                   "127.0.0.1 6666") + "\n").encode())
            elif line.startswith(b"JOIN "):
                note("conn %d: %s" % (n, line.decode()[:40]))
                c.sendall(("JOINED 0 1 0%s\nROUND 0 0 1 0 1 0 1 "
                           "203.0.113.66 6666%s\n" % (seal, seal)).encode())

def pump(a, b, rewrite):
    buf = b""
    try:
        while True:
            d = a.recv(4096)
            if not d:
                break
            if not rewrite:
                b.sendall(d)
                continue
            buf += d
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.startswith(b"ROUND "):
                    f = line.split(b" ")
                    f[8] = b"203.0.113.66"
                    line = b" ".join(f)
                    note("rewrote a ROUND")
                b.sendall(line + b"\n")
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

def relay(c, n):
    host, _, port = sys.argv[4].rpartition(":")
    up = socket.create_connection((host, int(port)))
    note("conn %d relayed" % n)
    threading.Thread(target=pump, args=(c, up, False), daemon=True).start()
    pump(up, c, True)

n = 0
while True:
    c, _ = srv.accept()
    n += 1
    note("conn %d" % n)
    threading.Thread(target=relay if mode == "relay" else fake, args=(c, n),
                     daemon=True).start()
PYEOF

# run_fake NAME MODE [UPSTREAM]: sets EP to the fake's endpoint.
run_fake()
{
	FAKE_TOKEN=${FAKE_TOKEN:-} \
	"$PY" "$T/fake.py" "$2" "$T/$1.port" "$T/$1.log" ${3:+"$3"} \
	    2>"$T/$1.pyerr" &
	ESV_SUP_PIDS+=("$!")
	wait_for test -s "$T/$1.port" || fail "$1 did not start"
	EP=127.0.0.1:$(cat "$T/$1.port")
}

# refused NAME WHY: node NAME exited 1 at join_timeout, having started no
# worker and said WHY.
refused()
{
	wait_for -t 30 eval '! esv_alive "$NODE_PID_'"$1"'" || [ -s "$T/rec.'"$1"'" ]'
	assert_eq "$(recs "$1" .)" 0 "$1: workers started (master: $(last_rec "$1"))"
	wait_sup -t 30 "$(eval echo "\$NODE_PID_$1")"
	assert_eq $? 1 "$1: exit status"
	assert_grep "$T/$1.err" "$2"
	assert_grep "$T/$1.err" "no round within join_timeout"
}

note "a fake server that does not know the token"
run_fake fake fake
node f
refused f "failed to prove it knows the token"
[ "$(count_lines "$T/fake.log" '^conn [0-9]*: JOIN')" -ge 2 ] ||
    fail "the node did not retry: $(cat "$T/fake.log")"

note "a server that knows the token but gives ranks past the world"
FAKE_TOKEN=$T/token run_fake liar liar
node l --nproc-per-node 2
refused l "ROUND 0 gives ranks 0\.\.1 of 1 .* for 2 workers: not starting them"

note "a relay that rewrites the ROUND of the real server"
start_rdzv
real=$EP
run_fake relay relay "$real"
node r
refused r "failed its seal \(bad MAC\), altered on its way"
assert_grep "$T/relay.log" "rewrote a ROUND"

note "the same relay, left honest, is no obstacle"
: >"$T/relay.log"
sed -i 's/if line.startswith(b"ROUND "):/if False:/' "$T/fake.py"
run_fake honest relay "$real"
RZ_JOB=job2 node h
wait_recs h 'world=1 ' 1 || fail "h: no round through an honest relay: $(cat "$T/h.err")"
assert_grep "$T/rec.h" "master=127\.0\.0\.1:"
exit 0
