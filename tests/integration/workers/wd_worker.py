#!/usr/bin/env python3
"""A worker for the watchdog tests: it follows $W_PLAN, steps separated by
';', writing torch's FileTimerClient requests to $TORCHELASTIC_TIMER_FILE
(one line, one non-blocking write per open, as torch's client does), and
appends "<step> <wall time>" to $REC after each step.  Only local rank
$W_RANK (default 0) follows the plan; the others sleep $W_OTHERS seconds
(default 0) and exit 0.
	arm:SCOPE:SECS:SIG	expire SECS from now with signal SIG
	armpid:FILE:SCOPE:SECS:SIG	the same for the pid written in FILE
	release:SCOPE		expiration_time -1, signal 0
	raw:TEXT		TEXT as it is (Python escapes: \\n, \\x00...),
				without a newline of its own
	flood:N:bad		N malformed lines, in large blocking writes
	flood:N:pairs		N arm+release pairs (scope "flood"), the same way
	sleep:SECS		sleep
	waitfile:PATH		wait until PATH exists (the test says go)
	exit:CODE		exit
The plan's end is exit 0."""
import json
import os
import sys
import time

env = os.environ
rec = env["REC"]
if env.get("LOCAL_RANK") != env.get("W_RANK", "0"):
    time.sleep(float(env.get("W_OTHERS", "0")))
    sys.exit(0)
fifo = env["TORCHELASTIC_TIMER_FILE"]


def write(data):
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def request(pid, scope, secs, sig):
    exp = time.time() + secs if secs >= 0 else -1
    write((json.dumps({"version": 1, "pid": pid, "scope_id": scope,
                       "expiration_time": exp, "signal": sig}) + "\n").encode())


def flood(n, kind):
    if kind == "bad":
        data = "".join("{not json %d\n" % i for i in range(n))
    else:
        pid = os.getpid()
        far = time.time() + 3600
        data = "".join(
            json.dumps({"version": 1, "pid": pid, "scope_id": "flood",
                        "expiration_time": t, "signal": 9}) + "\n"
            for _ in range(n) for t in (far, -1))
    with open(fifo, "wb") as f:
        f.write(data.encode())


def note(step):
    with open(rec, "a") as f:
        f.write("%s %d %.6f\n" % (step, os.getpid(), time.time()))


for step in env.get("W_PLAN", "").split(";"):
    if not step:
        continue
    op, _, arg = step.partition(":")
    a = arg.split(":")
    if op == "arm":
        request(os.getpid(), a[0], float(a[1]), int(a[2]))
    elif op == "armpid":
        with open(a[0]) as f:
            pid = int(f.read().strip())
        request(pid, a[1], float(a[2]), int(a[3]))
    elif op == "release":
        request(os.getpid(), a[0], -1, 0)
    elif op == "raw":
        write(arg.encode().decode("unicode_escape").encode("latin-1"))
    elif op == "flood":
        flood(int(a[0]), a[1])
    elif op == "sleep":
        time.sleep(float(arg))
    elif op == "waitfile":
        while not os.path.exists(arg):
            time.sleep(0.01)
    elif op == "exit":
        note(step)
        sys.exit(int(arg))
    note(step)
note("end")
