"""timer_torch.py FIFO SOCKET [MAX_INTERVAL]

torch 1.13's FileTimerServer in a process of its own, as the elastic agent
runs it (max_interval 0.1, a daemon thread), for bench/timer.sh.  It
answers the same query as esv-watchdogd's socket, so the bench reads both
servers alike: connect to SOCKET, send "status\\n", read one JSON line

    {"requests": N, "armed": M, "pid": P}

requests is the server's own _request_count (counted in register_timers,
after a request was read and parsed), armed the number of its timers.
Nothing of the server is changed.  Prints "ready" once the server thread
runs, and exits on SIGTERM.
"""
import json
import os
import signal
import socket
import sys
import threading

from torch.distributed.elastic.timer import FileTimerServer


def serve_status(server, path):
    if os.path.exists(path):
        os.unlink(path)
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    os.chmod(path, 0o600)
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        with c:
            c.settimeout(1)
            try:
                if c.recv(64).strip() != b"status":
                    c.sendall(b'{"error": "unknown request"}\n')
                    continue
                st = {"requests": server._request_count,
                      "armed": len(server._timers), "pid": os.getpid()}
                c.sendall(json.dumps(st).encode() + b"\n")
            except OSError:
                pass


def main():
    fifo, sock = sys.argv[1], sys.argv[2]
    interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1
    server = FileTimerServer(fifo, max_interval=interval, daemon=True)
    server.start()
    threading.Thread(target=serve_status, args=(server, sock),
                     daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("ready", flush=True)
    stop.wait()
    # stop() joins the watchdog thread, which may sit in its blocking open.
    os._exit(0)


if __name__ == "__main__":
    main()
