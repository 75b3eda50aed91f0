#!/usr/bin/python3
"""A worker that fails when a peer vanishes, as gloo's do: through the
agent store at MASTER_ADDR:MASTER_PORT (as init_process_group does) rank
0 publishes a TCP port, every other rank connects to it and holds the
connection; then each worker beats on the store every 0.2 s and exits 1
when a connection of its own ends or the store goes (exit 1, "peer gone"
on stderr).  It appends, once connected,
    start node=N rank=R world=W group_rank=G pid=P t=UNIXTIME
to $REC, and exits 0 once $RZ_STOP_FLAG exists (checked before any
failure counts, so that the end of a job is no failure).  SIGTERM: 143."""
import os
import select
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import storecli  # noqa: E402

signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
env = os.environ
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
stop = env.get("RZ_STOP_FLAG", "")


def stopped():
    return bool(stop) and os.path.exists(stop)


def gone(why):
    if stopped():
        sys.exit(0)
    print("peer_worker rank %d: peer gone: %s" % (rank, why),
          file=sys.stderr, flush=True)
    sys.exit(1)


deadline = time.monotonic() + 30
try:
    st = storecli.connect(port, addr, 30)
except OSError as e:
    gone("store %s:%d: %s" % (addr, port, e))
conns = []
try:
    if rank == 0:
        srv = socket.create_server(("", 0))
        srv.settimeout(30)
        st.set(b"peer", ("%s:%d" % (addr, srv.getsockname()[1])).encode())
        st.add(b"peer_set", 1)
        for _ in range(world - 1):
            c, _ = srv.accept()
            conns.append(c)
        srv.close()
    else:
        while st.add(b"peer_set", 0) < 1:
            if time.monotonic() > deadline:
                gone("rank 0 never published its port")
            time.sleep(0.05)
        h, p = st.get(b"peer").decode().rsplit(":", 1)
        conns.append(socket.create_connection((h, int(p)), timeout=10))
except (OSError, EOFError, AssertionError) as e:
    gone("joining: %s" % e)
with open(env["REC"], "a") as f:
    f.write("start node=%s rank=%d world=%d group_rank=%s pid=%d t=%.6f\n" % (
        env.get("RZ_NODE", "?"), rank, world, env["GROUP_RANK"], os.getpid(),
        time.time()))
next_beat = 0.0
while not stopped():
    r, _, _ = select.select(conns, [], [], 0.1)
    for c in r:
        try:
            if c.recv(1) == b"":
                gone("a peer's connection closed")
        except OSError as e:
            gone("a peer's connection: %s" % e)
    if time.monotonic() >= next_beat:
        try:
            st.add(b"beat", 1)
        except (OSError, EOFError, AssertionError) as e:
            gone("the store: %s" % e)
        next_beat = time.monotonic() + 0.2
sys.exit(0)
