#!/usr/bin/python3
"""What the live workers of a rendezvous test hold, read from /proc.

A worker of the rendezvous tests (workers/rz_worker.sh) carries the test's
ESV_ITEST_TAG, RZ_NODE, RANK, WORLD_SIZE and MASTER_ADDR/PORT in its
environment, and leads its own process group (esv starts each worker so).
A round is the (MASTER_ADDR, MASTER_PORT, WORLD_SIZE) its workers were
given.  The invariant: a global rank is held by live workers of one node
and one round only.

    rank_sampler.py check TAG [--nodes a,b] [--world N]
        exit 0 if the live workers are all of one round, of world N, on
        every node named, with no rank held twice; else 1, saying why.
    rank_sampler.py sample TAG STOPFILE OUT
        every 5 ms until STOPFILE exists, look for a rank held by two
        nodes or two rounds; write "samples=N violations=M" and the first
        violations (with state, pid and ppid of the holders) to OUT.
"""

import os
import sys
import time


# Pids of processes of other tests and of the system: an environment does
# not change without an exec, and such a process never execs into one of
# ours (ours all descend from the test), so they are read once.
foreign = set()


def live_workers(tag, detail=False):
    """{pid: env} of the live processes of the test that hold a RANK;
    with detail, env["_st"] says state, pid and ppid."""
    want = ("ESV_ITEST_TAG=" + tag).encode()
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or d in foreign:
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                raw = f.read()
            if raw and want not in raw:
                foreign.add(d)
                continue
            with open("/proc/%s/stat" % d, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        if want not in raw or b"\0RANK=" not in b"\0" + raw:
            continue
        f = stat.rpartition(b")")[2].split()
        # A worker is what esv started, each the leader of its own
        # process group; what a worker forks (rz_worker.sh's sleep) is
        # not waited for by a group stop, and is not one.
        if f[0] == b"Z" or f[2].decode() != d:
            continue
        env = dict(kv.split(b"=", 1) for kv in raw.split(b"\0") if b"=" in kv)
        if env.get(b"ESV_ITEST_TAG") != tag.encode() or b"RANK" not in env:
            continue
        out[int(d)] = {k.decode(): v.decode() for k, v in env.items()
                       if k in (b"RZ_NODE", b"RANK", b"WORLD_SIZE",
                                b"MASTER_ADDR", b"MASTER_PORT")}
        if detail:
            out[int(d)]["_st"] = "%s pid=%s ppid=%s" % (
                f[0].decode(), d, f[1].decode())
    return out


def holders(workers):
    """{rank: {(node, round)}}, a round being (addr, port, world)."""
    by_rank = {}
    for env in workers.values():
        rnd = (env.get("MASTER_ADDR"), env.get("MASTER_PORT"),
               env.get("WORLD_SIZE"))
        by_rank.setdefault(env["RANK"], set()).add((env.get("RZ_NODE"), rnd))
    return by_rank


def conflicts(workers):
    return {r: h for r, h in holders(workers).items() if len(h) > 1}


def check(tag, nodes, world):
    w = live_workers(tag)
    bad = conflicts(w)
    if bad:
        return "rank held twice: %r" % bad
    rounds = {(e.get("MASTER_ADDR"), e.get("MASTER_PORT"), e["WORLD_SIZE"])
              for e in w.values()}
    if len(rounds) != 1:
        return "workers of %d rounds: %r" % (len(rounds), sorted(rounds))
    if world is not None and next(iter(rounds))[2] != str(world):
        return "world %s, not %s" % (next(iter(rounds))[2], world)
    seen = {e.get("RZ_NODE") for e in w.values()}
    missing = [n for n in nodes if n not in seen]
    if missing:
        return "no live worker on %s" % ",".join(missing)
    return None


def sample(tag, stop, out):
    n, violations = 0, []
    while not os.path.exists(stop):
        w = live_workers(tag, True)
        bad = conflicts(w)
        n += 1
        if bad:
            violations.append("%.3f %r" % (time.monotonic(), bad))
            violations.append("  " + " ".join(
                "%s:rank=%s:%s" % (e["RZ_NODE"], e["RANK"], e["_st"])
                for e in w.values() if e["RANK"] in bad))
        time.sleep(0.005)
    with open(out + ".tmp", "w") as f:
        f.write("samples=%d violations=%d\n" % (n, len(violations) // 2))
        for v in violations[:40]:
            f.write(v + "\n")
    os.rename(out + ".tmp", out)


def main():
    a = sys.argv[1:]
    if len(a) >= 2 and a[0] == "check":
        nodes, world = [], None
        rest = a[2:]
        while rest:
            opt, val = rest[0], rest[1]
            rest = rest[2:]
            if opt == "--nodes":
                nodes = val.split(",")
            elif opt == "--world":
                world = int(val)
        why = check(a[1], nodes, world)
        if why:
            print(why)
            return 1
        return 0
    if len(a) == 4 and a[0] == "sample":
        sample(a[1], a[2], a[3])
        return 0
    sys.stderr.write(__doc__)
    return 100


if __name__ == "__main__":
    sys.exit(main())
