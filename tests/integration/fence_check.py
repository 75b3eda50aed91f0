#!/usr/bin/python3
"""Never two live workers with one global rank.

fence_check.py REC JOBDIR...

REC holds the workers' start lines (workers/fence_worker.sh); a worker's
end is the time of its worker.exit event in its supervisor's
events.jsonl (JOBDIR/events.jsonl), written when the supervisor reaped
it, so after it died; a worker without one is alive (to the end of
time).  Two holders of one rank whose lifetimes overlap are printed, and
the exit status is 1.  On success: the number of workers checked.
"""
import json
import re
import sys


def main():
    rec, jobdirs = sys.argv[1], sys.argv[2:]
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
