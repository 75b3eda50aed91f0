#!/usr/bin/env python3
"""A worker whose child escapes everything but a cgroup: it double-forks,
the grandchild calls setsid (a new session and process group, so no
killpg of the worker's group and no sweep by session reaches it) and
closes every fd (group.lock too), appends its pid to REC and sleeps.
The worker itself runs on until signalled.
Usage: b_escape.py REC"""
import os, sys, time

rec = sys.argv[1]
if os.environ.get("LOCAL_RANK") == "0" and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 1 << 16)
        fd = os.open(rec, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, b"%d\n" % os.getpid())
        os.close(fd)
        while True:
            time.sleep(1)
    os._exit(0)
while True:
    time.sleep(1)
