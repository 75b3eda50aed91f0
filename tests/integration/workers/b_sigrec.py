# Signal recorder for the integration tests: appends one line per event,
# "LOCAL_RANK PID EVENT UNIXTIME", to the file in argv[1] (O_APPEND, one
# write per line, so lines from several workers never mix).
# argv[2]: what SIGTERM does: "exit" (record, exit 0), "linger" (record,
# exit 0 half a second later, so a repeated SIGTERM would be recorded too),
# "ignore" (record, keep running until SIGKILL), "die" (record, die by it).
import os
import signal
import sys
import time

OUT = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "exit"
RANK = os.environ.get("LOCAL_RANK", "?")
CAUGHT = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
          signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)


def record(event):
    line = "%s %d %s %.6f\n" % (RANK, os.getpid(), event, time.time())
    fd = os.open(OUT, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, line.encode())
    os.close(fd)


def handler(signo, _frame):
    record(signal.Signals(signo).name)
    if signo != signal.SIGTERM or MODE == "ignore":
        return
    if MODE == "linger":
        signal.signal(signal.SIGALRM, lambda *_: os._exit(0))
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        return
    if MODE == "die":
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    os._exit(0)


for s in CAUGHT:
    signal.signal(s, handler)
record("START")
while True:
    signal.pause()
