#!/usr/bin/env python3
"""A worker that proves MASTER_ADDR:MASTER_PORT works across hosts: rank 0
listens there, every other rank connects and sends its rank, rank 0 checks
the sum; each worker appends one record line to $REC, then runs on until
$RZ_STOP_FLAG exists or SIGTERM."""
import os
import signal
import socket
import sys
import time

signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
env = os.environ
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
result = "?"
if rank == 0:
    srv = socket.create_server((addr, port))
    srv.settimeout(20)
    got = 0
    for _ in range(world - 1):
        conn, _ = srv.accept()
        got += int(conn.recv(16).decode())
        conn.close()
    result = "ok" if got == sum(range(1, world)) else "bad-sum-%d" % got
else:
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection((addr, port), timeout=2) as c:
                c.sendall(str(rank).encode())
            result = "sent"
            break
        except OSError as e:
            if time.monotonic() > deadline:
                result = "unreachable-%s" % e.errno
                break
            time.sleep(0.1)
with open(env["REC"], "a") as f:
    f.write("node=%s rank=%d world=%d restart=%s master=%s:%d result=%s\n" % (
        env.get("RZ_NODE", "?"), rank, world,
        env["TORCHELASTIC_RESTART_COUNT"], addr, port, result))
stop = env.get("RZ_STOP_FLAG", "")
while not (stop and os.path.exists(stop)):
    time.sleep(0.1)
