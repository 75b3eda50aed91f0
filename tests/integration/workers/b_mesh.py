#!/usr/bin/env python3
"""A worker shaped like a gloo job's, for the exit-barrier tests: it meets
its peers through the agent store (MASTER_ADDR:MASTER_PORT) as
init_process_group does, holds a TCP connection to every other rank, and
fails (exit 1) when a peer vanishes: a connection that ends without the
peer's "bye".  It works B_RUN seconds (default 1), then goes on using the
store B_STORE_MORE seconds (default 0; a lost store: exit 1), says "bye"
to its peers and exits 0.  B_RUN_G<n> and B_STORE_MORE_G<n>, if set, are
those of the workers of group rank n (the node of group rank 0 serves the
agent store).  Record lines, appended to $REC: "start", "met" (connected
to every peer), then "done", "stopped" or "fail ...".
	REC, RZ_NODE	as workers/rz_worker.sh"""
import os
import select
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import storecli  # noqa: E402

env = os.environ


def conf(name, default):
    g = "%s_G%s" % (name, env.get("GROUP_RANK", "0"))
    return float(env.get(g, env.get(name, default)))


rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
tag = "node=%s pid=%d rank=%d world=%d restart=%s" % (
    env.get("RZ_NODE", "?"), os.getpid(), rank, world,
    env.get("TORCHELASTIC_RESTART_COUNT", "?"))


def rec(what):
    with open(env["REC"], "a") as f:
        f.write("%s %s\n" % (tag, what))


def fail(why):
    rec("fail " + why)
    sys.exit(1)


signal.signal(signal.SIGTERM, lambda *_: (rec("stopped"), sys.exit(143)))
rec("start")
try:
    st = storecli.connect(port, addr, 20, timeout=20)
except OSError as e:
    fail("no store: %s" % e)
try:
    me = st.k.getsockname()[0]
    lsn = socket.create_server((me, 0))
    st.set(b"peer/%d" % rank, b"%s %d" % (me.encode(), lsn.getsockname()[1]))
    peers = {}
    for r in range(rank):
        st.send(bytes([storecli.WAIT]) + struct.pack("<Q", 1) +
                storecli.s(b"peer/%d" % r))
        st.read(1)
        host, p = st.get(b"peer/%d" % r).decode().split()
        c = socket.create_connection((host, int(p)), timeout=20)
        c.sendall(struct.pack("<I", rank))
        peers[c] = r
    lsn.settimeout(20)
    for _ in range(rank + 1, world):
        c, _ = lsn.accept()
        peers[c] = struct.unpack("<I", c.recv(4))[0]
except (OSError, EOFError) as e:
    fail("rendezvous of the workers: %s" % e)
rec("met")


def watch(secs):
    """Fail if a peer's connection ends without its bye."""
    end = time.monotonic() + secs
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        r, _, _ = select.select(list(peers), [], [], left)
        for c in r:
            try:
                d = c.recv(16)
            except OSError:
                d = b""
            if d == b"":
                fail("peer rank %d vanished" % peers[c])
            if d.startswith(b"bye"):
                del peers[c]
                c.close()


watch(conf("B_RUN", "1"))
end = time.monotonic() + conf("B_STORE_MORE", "0")
n = 0
while time.monotonic() < end:
    try:
        st.add(b"more/%d" % rank, 1)
    except (OSError, EOFError) as e:
        fail("store lost after %d uses: %s" % (n, e))
    n += 1
    watch(0.1)
for c in peers:
    try:
        c.sendall(b"bye")
    except OSError:
        pass
rec("done store_uses=%d" % n)
