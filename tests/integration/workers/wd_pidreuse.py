"""esv-watchdogd never signals a pid that is not the live listed worker
(test_watchdog_pidreuse.sh).  Plays the supervisor on the control
socketpair; runs as pid 1 of a new pid namespace (root), so that it can
hand a reaped worker's pid to another process (ns_last_pid).
Usage: wd_pidreuse.py ESV-WATCHDOGD DIR"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

WD, DIR = sys.argv[1:3]
FIFO = os.path.join(DIR, "timer.fifo")
SOCK = os.path.join(DIR, "wd.sock")
DEADLINE = 0.8       # seconds from arming to expiry


def fail(msg):
    sys.exit("FAIL: " + msg)


def status():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(SOCK)
    s.sendall(b"status\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(1024)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)


def wait_for(pred, what, secs=10):
    end = time.time() + secs
    while time.time() < end:
        try:
            if pred():
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    fail("timed out waiting for " + what)


def arm(pid, scope):
    line = json.dumps({"version": 1, "pid": pid, "scope_id": scope,
                       "expiration_time": time.time() + DEADLINE,
                       "signal": signal.SIGKILL}) + "\n"
    fd = os.open(FIFO, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, line.encode())
    os.close(fd)


def expired_report(ctl, secs):
    """The next {"expired": ...} line from the watchdog."""
    buf = b""
    end = time.time() + secs
    while time.time() < end:
        if b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            return json.loads(line)["expired"]
        r, _, _ = select.select([ctl], [], [], end - time.time())
        if r:
            chunk = ctl.recv(4096)
            if not chunk:
                fail("the watchdog hung up")
            buf += chunk
    fail("no expiry reported within %s s" % secs)


def sleeper():
    return subprocess.Popen(["sleep", "1000"])


def sleeper_with_pid(pid):
    """A new process given exactly pid (free now), via ns_last_pid."""
    for _ in range(5):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        p = sleeper()
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    fail("could not get pid %d again" % pid)


ctl, theirs = socket.socketpair()
os.mkfifo(FIFO, 0o600)
wd = subprocess.Popen(["sh", "-c", 'exec "$0" "$@" 3<&%d' % theirs.fileno(),
                       WD, "-v", "--fifo", FIFO, "--socket", SOCK,
                       "--control-fd", "3"], pass_fds=(theirs.fileno(),))
theirs.close()
wait_for(lambda: status()["pid"] == wd.pid, "the watchdog")

# 1. The worker is reaped while its timer runs, before the supervisor's
# next list; its pid goes to a stranger; the timer fires.
w = sleeper()
pfd = os.pidfd_open(w.pid)
socket.send_fds(ctl, [b'{"pids":[%d]}\n' % w.pid], [pfd])
os.close(pfd)
arm(w.pid, "reused")
wait_for(lambda: status()["armed"] == 1, "the timer to be armed")
pid = w.pid
w.kill()
w.wait()
stranger = sleeper_with_pid(pid)
e = expired_report(ctl, 5 + DEADLINE)
if stranger.poll() is not None:
    fail("the timer of reaped pid %d killed another process given that "
         "pid: %s" % (pid, e))
if e["pid"] != pid or e["sent"]:
    fail("expiry report: %s" % e)
stranger.kill()
stranger.wait()

# 2. A pid listed without its pidfd is never signalled.
w = sleeper()
ctl.sendall(b'{"pids":[%d]}\n' % w.pid)
arm(w.pid, "nofd")
wait_for(lambda: status()["armed"] == 1, "the second timer")
e = expired_report(ctl, 5 + DEADLINE)
if w.poll() is not None:
    fail("a pid listed without a pidfd was signalled: %s" % e)
if e["pid"] != w.pid or e["sent"]:
    fail("expiry report: %s" % e)
w.kill()
w.wait()

# 3. The supervisor lists a pid again, for another process (the pid was
# reused): the timers the first process armed are dropped, not fired at
# the second.  Only where pidfds tell processes apart (pidfs, Linux 6.9).
w = sleeper()
pfd = os.pidfd_open(w.pid)
me = os.pidfd_open(os.getpid())
pidfs = os.fstat(pfd).st_ino != os.fstat(me).st_ino
os.close(me)
if pidfs:
    socket.send_fds(ctl, [b'{"pids":[%d]}\n' % w.pid], [pfd])
    arm(w.pid, "before")
    armed_at = time.time()
    wait_for(lambda: status()["armed"] == 1, "the third timer")
    before = status()["expired"]
    pid = w.pid
    w.kill()
    w.wait()
    stranger = sleeper_with_pid(pid)
    sfd = os.pidfd_open(pid)
    socket.send_fds(ctl, [b'{"pids":[%d]}\n' % pid], [sfd])
    os.close(sfd)
    wait_for(lambda: status()["armed"] == 0, "the timer to be dropped")
    # Past the deadline: nothing expired, nobody was signalled.
    time.sleep(max(0, armed_at + DEADLINE + 0.3 - time.time()))
    if status()["expired"] != before or stranger.poll() is not None:
        fail("a timer of pid %d's earlier process fired" % pid)
    stranger.kill()
    stranger.wait()
    ctl.sendall(b'{"pids":[]}\n')
else:
    print("no pidfs: part 3 skipped", file=sys.stderr)
    w.kill()
    w.wait()
os.close(pfd)

# 4. The live listed worker is signalled, through its pidfd.
w = sleeper()
pfd = os.pidfd_open(w.pid)
socket.send_fds(ctl, [b'{"pids":[%d]}\n' % w.pid], [pfd])
os.close(pfd)
arm(w.pid, "live")
e = expired_report(ctl, 5 + DEADLINE)
if w.wait(timeout=5) != -signal.SIGKILL or not e["sent"]:
    fail("the live worker was not killed: %s" % e)

ctl.close()
if wd.wait(timeout=10) != 0:
    fail("esv-watchdogd exited %s" % wd.returncode)
print("ok")
