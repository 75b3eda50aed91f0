#!/usr/bin/python3
"""Never two live workers with one global rank.

fence_check.py [--frozen NODE:T0:T1]... [--thaw-bound S] REC JOBDIR...

REC holds the workers' start lines (workers/fence_worker.sh); a worker's
end is the time of its worker.exit event in its supervisor's
events.jsonl (JOBDIR/events.jsonl), written when the supervisor reaped
it, so after it died; a worker without one is alive (to the end of
time).  Two holders of one rank whose lifetimes overlap are printed, and
the exit status is 1.  On success: the number of workers checked.

--frozen NODE:T0:T1: every process of NODE's host was frozen from T0 to
T1 (Unix seconds; test_bed_freeze.sh).  A worker of NODE alive at T0
must be dead (reaped) by T1 plus the thaw bound (--thaw-bound, seconds,
default 0): otherwise it is printed, and the status is 1.  If it is, it
held its rank until T0 only: frozen, it could not act, and from the thaw
to its death is the fence's grace, which the bound limits.
"""
import json
import re
import sys


def main():
    args, frozen, bound = sys.argv[1:], [], 0.0
    while args and args[0].startswith("--"):
        if args[0] == "--frozen":
            node, t0, t1 = args[1].split(":")
            frozen.append((node, float(t0), float(t1)))
        elif args[0] == "--thaw-bound":
            bound = float(args[1])
        else:
            print("fence_check.py: unknown option %s" % args[0],
                  file=sys.stderr)
            return 2
        args = args[2:]
    rec, jobdirs = args[0], args[1:]
    ends = {}
    for d in jobdirs:
        try:
            f = open(d + "/events.jsonl")
        except FileNotFoundError:
            continue
        with f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue        # a line being written
                if ev.get("event") == "worker.exit":
                    ends.setdefault(ev["pid"], []).append(ev["time"])
    workers = []
    with open(rec) as f:
        for line in f:
            kv = dict(re.findall(r"(\w+)=(\S+)", line))
            if not line.startswith("start ") or "t" not in kv:
                continue
            start, pid = float(kv["t"]), int(kv["pid"])
            end = min((t for t in ends.get(pid, []) if t >= start),
                      default=float("inf"))
            workers.append((int(kv["rank"]), start, end, kv["node"],
                            int(kv["world"]), pid))
    bad = 0
    for k, (r, start, end, node, world, pid) in enumerate(workers):
        for fnode, t0, t1 in frozen:
            if fnode != node or not start < t0 < end:
                continue
            if end > t1 + bound:
                bad += 1
                print("node %s pid %d (rank %d, world %d), frozen %.3f..%.3f,"
                      " %s, past the thaw's bound of %.3f s" % (
                          node, pid, r, world, t0, t1,
                          "still alive" if end == float("inf") else
                          "reaped %.3f s after the thaw" % (end - t1), bound))
            end = min(end, t0)
        workers[k] = (r, start, end, node, world, pid)
    for i, (r1, s1, e1, n1, w1, p1) in enumerate(workers):
        for r2, s2, e2, n2, w2, p2 in workers[i + 1:]:
            if r1 == r2 and p1 != p2 and s1 < e2 and s2 < e1:
                bad += 1
                print("rank %d held twice: node %s pid %d (world %d) "
                      "%.3f..%s and node %s pid %d (world %d) %.3f..%s" % (
                          r1, n1, p1, w1, s1,
                          "alive" if e1 == float("inf") else "%.3f" % e1,
                          n2, p2, w2, s2,
                          "alive" if e2 == float("inf") else "%.3f" % e2))
    if bad:
        return 1
    print(len(workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
