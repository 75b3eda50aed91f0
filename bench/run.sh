#!/bin/bash
# bash bench/run.sh — launch, restart, reaction and memory of esv-supervise
# against two bare loops (bench/floor.c: fork+exec, and posix_spawnp) and
# torch 1.13's torchrun.
# See bench/README.md for the method.  It measures and prints; it asserts
# nothing.
#
# Environment:
#   ESV_BIN_DIR          where esv-supervise is (default: <repo>/build/supervisor)
#   BENCH_REPS           repetitions per measurement, median reported (5)
#   BENCH_SIZES          worker counts for launch and memory ("4 64 256")
#   BENCH_RESTART_SIZES  worker counts for restart and reaction ("4 64 256")
#   BENCH_TOOLS          subset of "floor spawnfloor spawnfloor-cg esv esv-nocg
#                        esv-before torchrun" (esv-before: the esv-supervise
#                        of BENCH_BEFORE_BIN_DIR, an older build, measured
#                        in the same run, paired with esv: "esv esv-before"
#                        prints what a change costs; esv-nocg: esv with
#                        --cgroups=false; "esv
#                        esv-nocg" prints what cgroup containment costs;
#                        spawnfloor-cg: the spawn floor with each worker born
#                        in a cgroup of its own, as esv does; beside
#                        spawnfloor the least a cgroup per worker costs)
#   BENCH_BEFORE_BIN_DIR where esv-before's esv-supervise is
#   BENCH_FAIL_MS        how long the group runs before a worker fails (200)
#   BENCH_KEEP           keep the per-run stamps and logs in this directory
set -eu

. "$(dirname "$0")/common.sh" bench
: "${ESV_BIN_DIR:=$root/build/supervisor}"
: "${BENCH_REPS:=5}"
: "${BENCH_SIZES:=4 64 256}"
: "${BENCH_RESTART_SIZES:=4 64 256}"
: "${BENCH_TOOLS:=floor spawnfloor esv torchrun}"
: "${BENCH_FAIL_MS:=200}"

cc_bench "$bench/stamp_worker.c" "$work/stamp_worker"
cc_bench "$bench/floor.c" "$work/floor" -I"$root/supervisor/spawn" \
    "$root/supervisor/spawn/clone_into.c"

export BENCH_BEFORE_BIN_DIR=${BENCH_BEFORE_BIN_DIR:-}
export BENCH_WORK=$work BENCH_DIR=$bench ESV_BIN_DIR BENCH_REPS BENCH_SIZES \
    BENCH_RESTART_SIZES BENCH_TOOLS BENCH_FAIL_MS BENCH_PYTHON=$python

"$python" - <<'PY'
import atexit
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

WORK = os.environ["BENCH_WORK"]
BENCH = os.environ["BENCH_DIR"]
sys.path.insert(0, BENCH)
PYTHON = os.environ["BENCH_PYTHON"]
REPS = int(os.environ["BENCH_REPS"])
SIZES = [int(x) for x in os.environ["BENCH_SIZES"].split()]
RSIZES = [int(x) for x in os.environ["BENCH_RESTART_SIZES"].split()]
TOOLS = os.environ["BENCH_TOOLS"].split()
WORKER = os.path.join(WORK, "stamp_worker")
FLOOR = os.path.join(WORK, "floor")
ESV = os.path.join(os.environ["ESV_BIN_DIR"], "esv-supervise")
ESV_BEFORE = os.path.join(os.environ["BENCH_BEFORE_BIN_DIR"] or "/nonexistent",
                          "esv-supervise")
SHIM = os.path.join(BENCH, "torchrun_shim.py")
FAIL_MS = int(os.environ["BENCH_FAIL_MS"])
KEEP = os.environ.get("BENCH_KEEP", "") != ""
# The bare loops: no restart of their own, stopped by their session.
FLOORS = ("floor", "spawnfloor", "spawnfloor-cg")


def floor_cgroup():
    """
    A cgroup for spawnfloor-cg's workers, under our own in the cgroup v2
    hierarchy (found as esv-supervise finds it), or None.
    """
    mount = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                mount = left.split()[4]
                break
    own = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                own = line[3:].strip()
    if mount is None or own is None:
        return None
    path = os.path.join(mount + own, f"esv-bench-floor.{os.getpid()}")
    try:
        os.mkdir(path)
    except OSError as e:
        print(f"note: spawnfloor-cg not measured: {path}: {e.strerror}",
              file=sys.stderr)
        return None
    atexit.register(remove_floor_cgroup, path)
    return path


def remove_floor_cgroup(path):
    """At any exit, also an interrupted run: its workers are reaped."""
    for d in os.listdir(path):
        if os.path.isdir(os.path.join(path, d)):
            os.rmdir(os.path.join(path, d))
    os.rmdir(path)


CGFLOOR = floor_cgroup() if "spawnfloor-cg" in TOOLS else None
if "spawnfloor-cg" in TOOLS and CGFLOOR is None:
    TOOLS = [t for t in TOOLS if t != "spawnfloor-cg"]
TIMEOUT = 90.0

if ("esv" in TOOLS or "esv-nocg" in TOOLS) and not os.access(ESV, os.X_OK):
    print(f"note: {ESV} not found or not executable: esv not measured "
          "(set ESV_BIN_DIR)", file=sys.stderr)
    TOOLS = [t for t in TOOLS if t not in ("esv", "esv-nocg")]
if "esv-before" in TOOLS and not os.access(ESV_BEFORE, os.X_OK):
    print(f"note: {ESV_BEFORE} not found or not executable: esv-before not "
          "measured (set BENCH_BEFORE_BIN_DIR)", file=sys.stderr)
    TOOLS = [t for t in TOOLS if t != "esv-before"]
run_seq = 0

from benchlib import children, fstype, loadavg, read_stamps  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(tool, n, rundir, mode):
    # In a failure run the floors restart once: the bar for a restart.
    again = ["--restart"] if mode == "failonce" else []
    if tool == "floor":
        return [FLOOR] + again + [str(n), WORKER]
    if tool == "spawnfloor":
        return [FLOOR, "--spawn"] + again + [str(n), WORKER]
    if tool == "spawnfloor-cg":
        return [FLOOR, "--cgroup", CGFLOOR] + again + [str(n), WORKER]
    if tool in ("esv", "esv-nocg", "esv-before"):
        cg = ["--cgroups=false"] if tool == "esv-nocg" else []
        return [ESV_BEFORE if tool == "esv-before" else ESV,
                "--nproc-per-node", str(n), "--no-python",
                "--max-restarts", "1"] + cg + [os.path.join(rundir, "job"),
                "--", WORKER]
    # 1.13's argparse only knows the underscore spellings.
    return [PYTHON, SHIM, "--nproc_per_node", str(n), "--no_python",
            "--monitor_interval", "0.1", "--max_restarts", "1",
            "--master_port", str(free_port()), WORKER]


def status_kib(pid, key):
    """A kB field of /proc/<pid>/status, e.g. VmHWM (peak RSS)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def helpers_hwm_kib(pid, workers):
    """Peak RSS of the supervisor's descendants that are not workers."""
    total, todo = 0, children(pid)
    while todo:
        c = todo.pop()
        if c in workers:
            continue
        total += status_kib(c, "VmHWM") or 0
        todo.extend(children(c))
    return total


def reap_leftovers(p, stamps):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    for s in stamps:
        if s[3] == "launch":
            continue
        try:
            with open(f"/proc/{s[4]}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0] != WORKER.encode():
                    continue
            os.kill(s[4], signal.SIGKILL)
        except OSError:
            pass


def start(tool, n, mode, rep):
    global run_seq
    run_seq += 1
    rundir = os.path.join(WORK, f"{run_seq:03d}-{tool}-{mode}-{n}")
    os.makedirs(rundir)
    stamps = os.path.join(rundir, "stamps")
    env = dict(os.environ, ESV_BENCH_STAMPS=stamps, ESV_BENCH_MODE=mode,
               TMPDIR=rundir)
    # Spread the failure over torchrun's 100 ms poll period, so its
    # detection delay is sampled, not fixed by a lucky phase.
    env["ESV_BENCH_FAIL_MS"] = str(FAIL_MS + (rep * 100) // REPS + 7)
    log = open(os.path.join(rundir, "log"), "w")
    p = subprocess.Popen([WORKER, "--exec"] + command(tool, n, rundir, mode),
                         env=env, stdin=subprocess.DEVNULL, stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return p, stamps, rundir


def tidy(rundir):
    """Drop a run's job and log trees (thousands of files at N=256)."""
    if KEEP:
        return
    for e in os.scandir(rundir):
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path, ignore_errors=True)


def wait_exit(p, timeout):
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def measure_launch(tool, n, rep):
    """Launch-to-last-worker (ms) and peak RSS (KiB) of supervisor, helpers."""
    p, path, rundir = start(tool, n, "sleep", rep)
    deadline = time.monotonic() + TIMEOUT
    st = []
    while time.monotonic() < deadline and p.poll() is None:
        st = read_stamps(path)
        if sum(1 for s in st if s[3] == "start" and s[1] == 0) >= n:
            break
        time.sleep(0.005)
    starts = [s for s in st if s[3] == "start" and s[1] == 0]
    launch = [s for s in st if s[3] == "launch"]
    res = {"launch": None, "rss": None, "anon": None, "helpers": None}
    if len(starts) >= n and launch and p.poll() is None:
        res["launch"] = (max(s[2] for s in starts) - launch[0][2]) / 1e6
        # Settle, so the sample sees the supervisor after it has
        # written its state for the started group.
        time.sleep(0.2)
        res["rss"] = status_kib(p.pid, "VmHWM")
        res["anon"] = status_kib(p.pid, "RssAnon")
        res["helpers"] = helpers_hwm_kib(p.pid, {s[4] for s in starts})
    else:
        note(tool, n, "launch", rundir)
    try:
        if tool in FLOORS:
            os.killpg(p.pid, signal.SIGTERM)
        else:
            p.send_signal(signal.SIGTERM)
    except OSError:
        pass
    if wait_exit(p, TIMEOUT) is None:
        note(tool, n, "stop", rundir)
    reap_leftovers(p, read_stamps(path))
    wait_exit(p, 5)
    tidy(rundir)
    return res


def measure_failure(tool, n, rep):
    """Restart latency and exit-to-action latency (ms) from a failonce run."""
    p, path, rundir = start(tool, n, "failonce", rep)
    rc = wait_exit(p, TIMEOUT)
    st = read_stamps(path)
    reap_leftovers(p, st)
    wait_exit(p, 5)
    tidy(rundir)
    res = {"restart": None, "act": None, "act_all": None}
    fail = [s for s in st if s[3] == "exit" and s[1] == 0]
    sigs = [s[2] for s in st if s[3] == "signal" and s[1] == 0]
    again = [s[2] for s in st if s[3] == "start" and s[1] == 1]
    if not fail:
        note(tool, n, "failure", rundir)
        return res
    t = fail[0][2]
    if len(sigs) == n - 1:
        res["act"] = (min(sigs) - t) / 1e6
        res["act_all"] = (max(sigs) - t) / 1e6
    if len(again) == n and rc == 0:
        res["restart"] = (max(again) - t) / 1e6
    else:
        note(tool, n, f"restart (rc {rc})", rundir)
    return res


notes = []


def note(tool, n, what, rundir):
    notes.append(f"{tool} N={n}: {what} not observed, see "
                 f"{os.path.relpath(rundir, WORK)}/log")


def med(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(v) if v else None


def collect():
    launch = {(t, n): [] for t in TOOLS for n in SIZES}
    fail = {(t, n): [] for t in TOOLS for n in RSIZES}
    # Repetitions outermost and tools interleaved, so drift of the
    # machine over the run hits every tool alike; the order of the tools
    # flips at each repetition, so that no tool always runs first.
    for rep in range(REPS):
        order = TOOLS if rep % 2 == 0 else TOOLS[::-1]
        for n in SIZES:
            for t in order:
                launch[t, n].append(measure_launch(t, n, rep))
        for n in RSIZES:
            for t in order:
                fail[t, n].append(measure_failure(t, n, rep))
        print(f"repetition {rep + 1}/{REPS} done", file=sys.stderr)
    return launch, fail


def fmt(v, unit="", prec=1):
    return "n/a" if v is None else f"{v:.{prec}f}{unit}"


def ratio(a, b):
    return "n/a" if a is None or not b else f"{a / b:.2f}x"


def delta(a, b):
    return "n/a" if a is None or b is None else f"{a - b:+.1f} ms"


def verdict(ok):
    return "n/a" if ok is None else ("yes" if ok else "no")


def mib(launch, tool, n):
    """Peak RSS, with its anonymous part and the helpers' peak beside it."""
    rows = launch.get((tool, n), [])
    rss, anon, helpers = (med(rows, k) for k in ("rss", "anon", "helpers"))
    if rss is None:
        return "n/a"
    out = f"{rss / 1024:.2f} (anon {anon / 1024:.2f}"
    if helpers:
        out += f"; helpers +{helpers / 1024:.2f}"
    return out + ")"


def table(launch, fail):
    get = lambda d, t, n, k: med(d.get((t, n), []), k)
    rows = []
    # Targets are the issue's, against the fork floor ("a bare C loop
    # that forks and execs"); the spawn floor is shown beside it.
    for n in SIZES:
        fl, sf, ev, tr = (get(launch, t, n, "launch") for t in
                          ("floor", "spawnfloor", "esv", "torchrun"))
        rows.append(("launch, ms", n, fmt(fl, prec=2), fmt(sf, prec=2),
                     fmt(ev, prec=2), fmt(tr), ratio(ev, fl), ratio(ev, sf),
                     ratio(tr, fl), "esv <= 1.25x floor",
                     verdict(None if ev is None or fl is None
                             else ev <= 1.25 * fl)))
    # The floors' restart: SIGTERM the others, reap, spawn all N again.
    for n in RSIZES:
        fl, sf, ev, tr = (get(fail, t, n, "restart") for t in
                          ("floor", "spawnfloor", "esv", "torchrun"))
        rows.append(("restart, ms", n, fmt(fl, prec=2), fmt(sf, prec=2),
                     fmt(ev, prec=2), fmt(tr), ratio(ev, fl), ratio(ev, sf),
                     ratio(tr, fl), "esv <= 1.1x floor restart",
                     verdict(None if ev is None or fl is None
                             else ev <= 1.1 * fl)))
    for n in RSIZES:
        fl, sf, ev, tr = (get(fail, t, n, "act") for t in
                          ("floor", "spawnfloor", "esv", "torchrun"))
        rows.append(("exit to first SIGTERM, ms", n, fmt(fl, prec=3),
                     fmt(sf, prec=3), fmt(ev, prec=3), fmt(tr),
                     delta(ev, fl), delta(ev, sf), delta(tr, fl),
                     "esv <= 1 ms",
                     verdict(None if ev is None else ev <= 1)))
    for n in RSIZES:
        fl, sf, ev, tr = (get(fail, t, n, "act_all") for t in
                          ("floor", "spawnfloor", "esv", "torchrun"))
        rows.append(("exit to last SIGTERM, ms", n, fmt(fl, prec=3),
                     fmt(sf, prec=3), fmt(ev, prec=3), fmt(tr),
                     delta(ev, fl), delta(ev, sf), delta(tr, fl), "", ""))
    for n in SIZES:
        ev = get(launch, "esv", n, "rss")
        rows.append(("supervisor peak RSS, MiB", n, "-", "-",
                     mib(launch, "esv", n), mib(launch, "torchrun", n),
                     "", "", "", "esv < 2 MiB at N=256, torchrun ~230",
                     verdict(None if ev is None or n != 256
                             else ev < 2048)))
    head = ("measure", "N", "floor", "floor (posix_spawn)", "esv",
            "torchrun", "esv vs floor", "esv vs spawn floor",
            "torchrun vs floor", "target", "esv meets")
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def paired_cost(on_rows, off_rows, key):
    """
    The cost of cgroups from the runs of one repetition side by side
    (on / off - 1), which the drift of the machine over a run hits alike:
    their median and a distribution-free 95 % interval of it (order
    statistics of the binomial, normal approximation).
    """
    r = sorted(a[key] / b[key] - 1 for a, b in zip(on_rows, off_rows)
               if a.get(key) is not None and b.get(key))
    if not r:
        return None, None, None
    k = max(0, int((len(r) - 1.96 * len(r) ** 0.5) / 2))
    return statistics.median(r), r[k], r[len(r) - 1 - k]


def paired_table(launch, fail, on_tool="esv", off_tool="esv-nocg"):
    """One tool against another, paired run by run in the same run."""
    get = lambda d, t, n, k: med(d.get((t, n), []), k)
    pct = lambda v: "n/a" if v is None else f"{v * 100:+.1f} %"
    rows = []
    for what, d, key, sizes in (("launch, ms", launch, "launch", SIZES),
                                ("restart, ms", fail, "restart", RSIZES),
                                ("exit to first SIGTERM, ms", fail, "act",
                                 RSIZES),
                                ("exit to last SIGTERM, ms", fail, "act_all",
                                 RSIZES)):
        for n in sizes:
            on, off = get(d, on_tool, n, key), get(d, off_tool, n, key)
            if on is None and off is None:
                continue
            cost, lo, hi = paired_cost(d.get((on_tool, n), []),
                                       d.get((off_tool, n), []), key)
            rows.append((what, n, fmt(on, prec=3), fmt(off, prec=3),
                         pct(cost), "n/a" if lo is None else
                         f"{pct(lo)} .. {pct(hi)}",
                         verdict(None if cost is None else cost <= 0.10)))
    head = ("measure", "N", f"{on_tool} (median)", f"{off_tool} (median)",
            "cost (median of pairs)",
            "95 % interval", "within 10 %")
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def raw(launch, fail):
    out = []
    for (t, n), rs in sorted(launch.items()):
        out.append(f"launch   {t:10} N={n:<3} ms: " + " ".join(
            fmt(r["launch"], prec=2) for r in rs))
    for (t, n), rs in sorted(fail.items()):
        out.append(f"restart  {t:10} N={n:<3} ms: " + " ".join(
            fmt(r["restart"], prec=2) for r in rs))
        out.append(f"act      {t:10} N={n:<3} ms: " + " ".join(
            fmt(r["act"], prec=3) for r in rs))
    return "\n".join(out)


def machine(began):
    model = "unknown cpu"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    u = os.uname()
    return (f"{began}, {u.nodename}, "
            f"{os.cpu_count()} cpus ({model}), Linux {u.release}")


began = time.strftime('%Y-%m-%d %H:%M %Z')
load_before = loadavg()
t_begin = time.monotonic()
launch, fail = collect()
print(f"esv benchmark: {machine(began)}")
print(f"median of {REPS} runs; tools: {' '.join(TOOLS)}; "
      f"total {time.monotonic() - t_begin:.0f} s")
print(f"load average (1, 5, 15 min) before: {load_before}, after: "
      f"{loadavg()}; job dirs on {fstype(os.path.realpath(WORK))} "
      f"({WORK})\n")
print(table(launch, fail))
if "esv" in TOOLS and "esv-nocg" in TOOLS:
    print("\ncgroup containment (esv) against none (esv --cgroups=false):")
    print(paired_table(launch, fail))
if "esv" in TOOLS and "esv-before" in TOOLS:
    print(f"\nthis build (esv, {ESV}) against the one before (esv-before, "
          f"{ESV_BEFORE}):")
    print(paired_table(launch, fail, "esv", "esv-before"))
if "spawnfloor" in TOOLS and "spawnfloor-cg" in TOOLS:
    print("\nthe floor's: each worker born in a cgroup of its own "
          "(spawnfloor-cg) against not (spawnfloor):")
    print(paired_table(launch, fail, "spawnfloor-cg", "spawnfloor"))
print("\nper-run values:")
print(raw(launch, fail))
for n in notes:
    print("note:", n)
PY
