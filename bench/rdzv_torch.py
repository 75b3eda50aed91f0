#!/usr/bin/python3
"""rdzv_torch.py --nodes K [--run-id ID] [--timeout S]

The rdzv_bench measurement for torch's c10d dynamic rendezvous (torch
1.13): K agent processes, node 0 hosting the TCPStore, each building a
DynamicRendezvousHandler with the C10dRendezvousBackend through the
rendezvous registry (min = max = K, as torchrun --rdzv_backend c10d
builds it) and calling next_rendezvous() once.  torch refuses a last call
of 0; it takes whole seconds, so it is 1 s, which never applies here: with
min = max the K-th join completes the round at once.

torch is imported once, in the parent, and the K nodes are forked from it,
so no node's import is inside the measurement.  Every node builds its
handler (node 0 first: it binds the store), then all wait on one pipe that
the parent closes to release the K calls at once.

Two start points per node, both CLOCK_MONOTONIC (time.monotonic_ns):
- "entry": next_rendezvous() called;
- "join": the end of the random 0-0.3 s delay torch sleeps before the
  first round, i.e. when the node starts talking to the store; this is the
  counterpart of rdzv_bench's "JOIN sent".  It is taken by wrapping
  dynamic_rendezvous._delay, which changes nothing in what it does.
"done" is the return of next_rendezvous().  The parent checks the ranks
are a permutation of 0..K-1 and the world size is K, and prints one line:

  nodes=K last_join_to_last_done_ms=... first_join_to_last_done_ms=...
  join_spread_ms=... done_spread_ms=... last_entry_to_last_done_ms=...
  first_entry_to_last_done_ms=... ok=1

Exit 0, or 1 when a node failed or the timeout passed (each on stderr).
"""
import argparse
import json
import os
import select
import signal
import socket
import sys
import time

from torch.distributed.elastic.rendezvous import RendezvousParameters
from torch.distributed.elastic.rendezvous import dynamic_rendezvous
from torch.distributed.elastic.rendezvous.registry import \
    get_rendezvous_handler

# torch's only randomized delay before a first round; the 1 s polls are
# _delay(seconds=1).
FIRST_ROUND_DELAY = (0, 0.3)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def send(fd, rec):
    """One JSON line, below PIPE_BUF: one atomic write on a shared pipe."""
    os.write(fd, (json.dumps(rec) + "\n").encode())


def wait_closed(fd):
    """Block until every writer of the pipe fd has closed it."""
    while os.read(fd, 1):
        pass


def node(i, args, port, out, go, done):
    rec = {"node": i}
    stamps = {}
    real_delay = dynamic_rendezvous._delay

    def delay(seconds):
        real_delay(seconds)
        if seconds == FIRST_ROUND_DELAY and "join" not in stamps:
            stamps["join"] = time.monotonic_ns()

    try:
        params = RendezvousParameters(
            backend="c10d", endpoint=f"127.0.0.1:{port}",
            run_id=args.run_id, min_nodes=args.nodes,
            max_nodes=args.nodes, is_host=(i == 0),
            join_timeout=args.timeout, last_entry_timeout=1,
            read_timeout=args.timeout)
        handler = get_rendezvous_handler(params)
        send(out, dict(rec, phase="ready"))
        wait_closed(go)
        dynamic_rendezvous._delay = delay
        t_entry = time.monotonic_ns()
        _, rank, world = handler.next_rendezvous()
        t_done = time.monotonic_ns()
        send(out, dict(rec, phase="done", rank=rank, world=world,
                       t_entry=t_entry, t_join=stamps.get("join", t_entry),
                       t_done=t_done))
        # Node 0's store must outlive every other node's rendezvous.
        wait_closed(done)
    except Exception as e:  # reported to the parent, whatever it is
        try:
            send(out, dict(rec, phase="fail", why=f"{type(e).__name__}: "
                           f"{str(e)[:300]}"))
        except OSError:
            pass
        os._exit(1)
    # The keep-alive timer thread would keep a normal exit waiting.
    os._exit(0)


class Collector:
    """Reads the nodes' JSON lines from the report pipe."""

    def __init__(self, fd, timeout):
        self.fd, self.timeout, self.buf = fd, timeout, b""
        self.deadline = time.monotonic() + timeout

    def records(self):
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                yield json.loads(line)
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return
            self.buf += chunk

    def collect(self, phase, want):
        """{node: record} of phase until want of them; None on failure."""
        got = {}
        for r in self.records():
            if r["phase"] == "fail":
                print(f"rdzv_torch: node {r['node']}: {r['why']}",
                      file=sys.stderr)
                return None
            if r["phase"] == phase:
                got[r["node"]] = r
                if len(got) == want:
                    return got
        print(f"rdzv_torch: timeout: {want - len(got)} of {want} nodes not "
              f"{phase} after {self.timeout} s",
              file=sys.stderr)
        return None


def check(recs, k):
    ranks = sorted(r["rank"] for r in recs.values())
    if ranks != list(range(k)) or any(r["world"] != k
                                      for r in recs.values()):
        print(f"rdzv_torch: bad ranks {ranks} or world sizes "
              f"{sorted(r['world'] for r in recs.values())}",
              file=sys.stderr)
        return False
    return True


def result(recs, k):
    def ms(a, b):
        return f"{(a - b) / 1e6:.3f}"
    v = recs.values()
    first_join, last_join = (f(r["t_join"] for r in v) for f in (min, max))
    first_entry, last_entry = (f(r["t_entry"] for r in v) for f in (min, max))
    first_done, last_done = (f(r["t_done"] for r in v) for f in (min, max))
    return (f"nodes={k} last_join_to_last_done_ms={ms(last_done, last_join)} "
            f"first_join_to_last_done_ms={ms(last_done, first_join)} "
            f"join_spread_ms={ms(last_join, first_join)} "
            f"done_spread_ms={ms(last_done, first_done)} "
            f"last_entry_to_last_done_ms={ms(last_done, last_entry)} "
            f"first_entry_to_last_done_ms={ms(last_done, first_entry)} ok=1")


def main():
    ap = argparse.ArgumentParser(description="torch c10d rendezvous timing")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--run-id", default=f"bench-{os.getpid()}")
    ap.add_argument("--timeout", type=int, default=60)
    args = ap.parse_args()
    if args.nodes < 1:
        ap.error("--nodes must be at least 1")
    port = free_port()
    out_r, out_w = os.pipe()
    go_r, go_w = os.pipe()
    done_r, done_w = os.pipe()
    col = Collector(out_r, args.timeout)
    pids, ok = [], True
    for i in range(args.nodes):
        pid = os.fork()
        if pid == 0:
            for fd in (out_r, go_w, done_w):
                os.close(fd)
            node(i, args, port, out_w, go_r, done_r)
        pids.append(pid)
        # Node 0 binds the store; the others connect to it.
        if i == 0 and col.collect("ready", 1) is None:
            ok = False
            break
    os.close(out_w)
    if ok:
        ok = col.collect("ready", args.nodes - 1) is not None \
            if args.nodes > 1 else True
    recs = None
    if ok:
        os.close(go_w)
        go_w = None
        recs = col.collect("done", args.nodes)
        ok = recs is not None and check(recs, args.nodes)
    os.close(out_r)
    for fd in (go_w, done_w):
        if fd is not None:
            os.close(fd)
    for pid in pids:
        if not ok:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(pid, 0)
    if not ok:
        return 1
    print(result(recs, args.nodes), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
