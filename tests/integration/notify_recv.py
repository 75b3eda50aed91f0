#!/usr/bin/env python3
"""A stand-in for systemd's notification socket: binds a datagram socket
at PATH and appends each message it receives to LOG as one JSON line
{"t": monotonic seconds, "msg": text}, until SIGTERM."""
import json, os, signal, socket, sys, time

path, log = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
with open(log, "a") as f:
    f.write(json.dumps({"t": time.monotonic(), "msg": "BOUND"}) + "\n")
    f.flush()
    while True:
        d = s.recv(65536)
        f.write(json.dumps({"t": time.monotonic(), "msg": d.decode()}) + "\n")
        f.flush()
