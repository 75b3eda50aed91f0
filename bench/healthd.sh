#!/bin/bash
# bash bench/healthd.sh — esv-healthd under wrk while its job fails and
# restarts in a loop (bench/stamp_worker.c, mode failalways): requests per
# second and p99 latency of /healthz and /metrics, and the supervisor's
# restart latency with no health server, with an idle one, and with one
# under wrk; and, as the floor, the same wrk load on a bare libmicrohttpd
# server (bench/httpfloor.c) beside a job without a health server.
# See bench/README.md, "Health server".  It measures and prints; it
# asserts nothing and exits 0 even when a target is missed.
#
# Environment:
#   ESV_BUILD          meson build directory holding supervisor/esv-supervise
#                      and healthd/esv-healthd (default: <repo>/build)
#   BENCH_SECS         length of one wrk run, seconds (10)
#   BENCH_IDLE_SECS    length of each phase without wrk, seconds (4)
#   BENCH_REPS         repetitions, median of the wrk runs reported (3)
#   BENCH_WRK_THREADS  wrk -t (1)
#   BENCH_WRK_CONNS    wrk -c (32)
#   BENCH_WRK_NICE     run wrk in a session of its own at this niceness
#                      (and its autogroup's), standing in for a prober on
#                      another machine (empty: wrk competes at nice 0)
#   BENCH_NPROC        workers in the group (4)
#   BENCH_FAIL_MS      how long the group runs before a worker fails (200)
#   BENCH_FLOOR        httpfloor's mode: keepalive (as esv-healthd), close
#                      (a connection per request), or empty to skip it
#                      (keepalive)
#   BENCH_KEEP         keep the job directories, stamps and logs here
set -eu

. "$(dirname "$0")/common.sh" healthd-bench
: "${ESV_BUILD:=$root/build}"
: "${BENCH_SECS:=10}"
: "${BENCH_IDLE_SECS:=4}"
: "${BENCH_REPS:=3}"
: "${BENCH_WRK_THREADS:=1}"
: "${BENCH_WRK_CONNS:=32}"
: "${BENCH_WRK_NICE:=}"
: "${BENCH_NPROC:=4}"
: "${BENCH_FAIL_MS:=200}"
: "${BENCH_FLOOR=keepalive}"

cc_bench "$bench/stamp_worker.c" "$work/stamp_worker" -Werror
gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
    -o "$work/httpfloor" "$bench/httpfloor.c" \
    $(pkg-config --cflags --libs libmicrohttpd)

export BENCH_WORK=$work BENCH_DIR=$bench ESV_BUILD BENCH_SECS \
    BENCH_IDLE_SECS BENCH_REPS BENCH_WRK_THREADS BENCH_WRK_CONNS \
    BENCH_WRK_NICE BENCH_NPROC BENCH_FAIL_MS BENCH_FLOOR

"$python" - <<'PY'
import http.client
import math
import os
import random
import re
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
BUILD = os.environ["ESV_BUILD"]
SUP = os.path.join(BUILD, "supervisor", "esv-supervise")
HEALTHD = os.path.join(BUILD, "healthd", "esv-healthd")
WORKER = os.path.join(WORK, "stamp_worker")
SECS = int(os.environ["BENCH_SECS"])
IDLE = int(os.environ["BENCH_IDLE_SECS"])
REPS = int(os.environ["BENCH_REPS"])
THREADS = int(os.environ["BENCH_WRK_THREADS"])
CONNS = int(os.environ["BENCH_WRK_CONNS"])
WRK_NICE = os.environ["BENCH_WRK_NICE"]
NPROC = int(os.environ["BENCH_NPROC"])
FAIL_MS = int(os.environ["BENCH_FAIL_MS"])
FLOOR_MODE = os.environ["BENCH_FLOOR"]
FLOOR = os.path.join(WORK, "httpfloor")
KEEP = os.environ.get("BENCH_KEEP", "") != ""
WRK = shutil.which("wrk") or "/usr/bin/wrk"
TARGET_RPS, TARGET_P99_MS = 20000, 5.0
# Restarts that straddle a phase's edge belong to neither phase.
GAP = 0.3
PHASES = ("nohealth", "floor", "idle", "healthz", "metrics")
LABELS = {"nohealth": "no health server",
          "floor": "no health server, wrk on httpfloor",
          "idle": "health server, idle",
          "healthz": "health server, wrk /healthz",
          "metrics": "health server, wrk /metrics"}
notes = []

from benchlib import (children, cpu_ns, fstype, loadavg,  # noqa: E402
                      read_stamps, sched_ns)


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def kv(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                out[k] = v
    except OSError:
        pass
    return out


# The floor server runs in the job's session: with the kernel's autogroups
# (sched_autogroup_enabled) a session shares one CPU share, and
# esv-healthd, the supervisor's child, is in the job's session too;
# started from here it would be in wrk's.  It is forked from a subshell
# that exits, not from the shell that becomes the supervisor: the
# supervisor SIGKILLs every child it does not know after each attempt.
WITH_FLOOR = ('p=$1 m=$2 o=$3; shift 3; ( "$p" $m >"$o" & echo $! >"$o.pid" '
              '); exec "$@"')


class Job:
    seq = 0

    def __init__(self, tag, health, floor=False):
        Job.seq += 1
        self.dir = os.path.join(WORK, f"{Job.seq:02d}-{tag}")
        os.makedirs(self.dir)
        self.jobdir = os.path.join(self.dir, "job")
        self.stamps = os.path.join(self.dir, "stamps")
        self.logpath = os.path.join(self.dir, "log")
        cmd = [SUP, "--no-python", "--max-restarts", "1000000",
               "--nproc-per-node", str(NPROC)]
        if health:
            cmd += ["--health-port", "0", "--health-address", "127.0.0.1"]
        self.cmd = cmd + [self.jobdir, "--", WORKER]
        portfile = os.path.join(self.dir, "floor.port")
        launch = ["/bin/sh", "-c", WITH_FLOOR, "sh", FLOOR,
                  "--close" if FLOOR_MODE == "close" else "",
                  portfile] + self.cmd if floor else self.cmd
        env = dict(os.environ, ESV_BENCH_STAMPS=self.stamps,
                   ESV_BENCH_MODE="failalways",
                   ESV_BENCH_FAIL_MS=str(FAIL_MS), ESV_HEALTHD=HEALTHD,
                   TMPDIR=self.dir)
        log = open(self.logpath, "w")
        self.p = subprocess.Popen(launch, env=env,
                                  stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT,
                                  start_new_session=True)
        log.close()
        self.port = self.hd_pid = self.floor_port = self.floor_pid = None
        end = time.monotonic() + 20
        while time.monotonic() < end and self.p.poll() is None:
            if floor and self.floor_port is None:
                try:
                    with open(portfile) as f:
                        self.floor_port = int(f.readline())
                    with open(portfile + ".pid") as f:
                        self.floor_pid = int(f.readline())
                except (OSError, ValueError):
                    pass
            if health and self.port is None:
                m = re.search(r":(\d+)$", kv(os.path.join(
                    self.jobdir, "supervise", "state")).get(
                    "health_listen", ""))
                if m:
                    self.port = int(m.group(1))
            if (self.port or not health) and (self.floor_pid or not floor) \
                    and os.path.exists(self.stamps):
                break
            time.sleep(0.02)
        if self.p.poll() is not None or (health and self.port is None) \
                or (floor and self.floor_pid is None) \
                or not os.path.exists(self.stamps):
            self.stop()
            sys.exit(f"healthd.sh: the job did not start (see "
                     f"{self.logpath}):\n" + open(self.logpath).read()[-2000:])
        if health:
            hd = [c for c in children(self.p.pid) if comm(c) == "esv-healthd"]
            self.hd_pid = hd[0] if hd else None

    def stop(self):
        if self.floor_pid:
            try:
                os.kill(self.floor_pid, signal.SIGTERM)
            except OSError:
                pass
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                notes.append(f"{self.dir}: esv-supervise ignored SIGTERM "
                             "for 30 s")
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except OSError:
            pass
        for s in read_stamps(self.stamps):
            try:
                with open(f"/proc/{s[4]}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[0] == WORKER.encode():
                        os.kill(s[4], signal.SIGKILL)
            except OSError:
                pass
        self.p.wait()

    def tidy(self):
        """Drop the job directory: thousands of attempt log dirs."""
        if not KEEP:
            shutil.rmtree(self.jobdir, ignore_errors=True)


def restarts(path):
    """[(exit ns, last start ns, restart ms, exit to first SIGTERM ms)]."""
    by = {}
    for rank, att, ns, ev, pid in read_stamps(path):
        by.setdefault(att, {}).setdefault(ev, []).append(ns)
    out = []
    for att, evs in sorted(by.items()):
        nxt = by.get(att + 1, {}).get("start", [])
        if "exit" not in evs or len(nxt) != NPROC:
            continue
        t = evs["exit"][0]
        sigs = evs.get("signal", [])
        act = (min(sigs) - t) / 1e6 if len(sigs) == NPROC - 1 else None
        out.append((t, max(nxt), (max(nxt) - t) / 1e6, act))
    return out


UNIT = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4, "h": 3.6e6}


def ms_of(s):
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", s)
    return float(m.group(1)) * UNIT[m.group(2)] if m else None


def wrk(port, path, server):
    """wrk against 127.0.0.1:port; server is the pid whose CPU counts."""
    url = f"http://127.0.0.1:{port}{path}"
    c0 = cpu_ns(server) if server else None
    t0 = time.time_ns()
    cmd = [WRK, f"-t{THREADS}", f"-c{CONNS}", f"-d{SECS}s", "--latency", url]
    if WRK_NICE:
        # A new session is a new autogroup, whose weight is set apart.
        cmd = ["setsid", "-w", "nice", "-n", WRK_NICE, "sh", "-c",
               'echo "$0" >/proc/self/autogroup; exec "$@"', WRK_NICE] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True,
                       timeout=SECS + 60)
    t1 = time.time_ns()
    c1 = cpu_ns(server) if server else None
    out = r.stdout
    res = {"window": (t0, t1), "out": out, "rc": r.returncode}
    m = re.search(r"Requests/sec:\s+([0-9.]+)", out)
    res["rps"] = float(m.group(1)) if m else None
    m = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    res["p99"] = ms_of(m.group(1)) if m else None
    m = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    res["p50"] = ms_of(m.group(1)) if m else None
    m = re.search(r"(\d+) requests in", out)
    res["n"] = int(m.group(1)) if m else None
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    res["non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", out)
    res["sockerr"] = tuple(int(x) for x in m.groups()) if m else (0,) * 4
    res["cpu_us"] = ((c1 - c0) / 1e3 / res["n"]) \
        if c0 is not None and c1 is not None and res["n"] else None
    res["cpu_share"] = (100 * (c1 - c0) / (t1 - t0)) \
        if c0 is not None and c1 is not None else None
    if r.returncode != 0 or res["rps"] is None:
        notes.append(f"wrk {path}: exit {r.returncode}: "
                     f"{(r.stderr or out).strip()[:300]}")
    return res


def keepalive(port):
    """The first answer's Connection header; is a second request answered
    on the same connection?"""
    req = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(req)
        buf = b""
        while b"\r\n\r\n" not in buf:
            b = s.recv(4096)
            if not b:
                break
            buf += b
        head, _, body = buf.partition(b"\r\n\r\n")
        hdrs = dict((k.strip().lower(), v.strip()) for k, _, v in
                    (l.partition(":") for l in
                     head.decode(errors="replace").split("\r\n")[1:]))
        need = int(hdrs.get("content-length", "0"))
        while len(body) < need:
            b = s.recv(4096)
            if not b:
                break
            body += b
        try:
            s.sendall(req)
            second = s.recv(4096).startswith(b"HTTP/1.1 ")
        except OSError:
            second = False
    return hdrs.get("connection", "(none)"), second


def metric(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", "/metrics")
        body = c.getresponse().read().decode()
    finally:
        c.close()
    m = re.search(rf"^{name} (\S+)$", body, re.M)
    return float(m.group(1)) if m else None


def in_window(rs, w):
    return [r for r in rs if r[0] >= w[0] and r[1] <= w[1]]


def sampled(job, fn):
    """Run fn(); its window (wall ns), its result, and the supervisor's
    on-CPU and run-queue time over it."""
    s0 = sched_ns(job.p.pid)
    t0 = time.time_ns()
    res = fn()
    t1 = time.time_ns()
    s1 = sched_ns(job.p.pid)
    d = (s1[0] - s0[0], s1[1] - s0[1]) if s0 and s1 else None
    return (t0, t1), res, d


def log_warnings(job):
    with open(job.logpath, errors="replace") as f:
        lines = f.read().splitlines()
    # The default OMP_NUM_THREADS note is torchrun's too: not a problem.
    return [l for l in lines if ("warning" in l or "HTTP" in l or
                                 "fatal" in l) and "OMP_NUM_THREADS" not in l
            and "worker group failed" not in l]


def collect():
    rst = {p: [] for p in PHASES}
    # The supervisor's [on-CPU ns, run-queue ns, restarts begun] by phase.
    sup = {p: [0, 0, 0] for p in PHASES}
    runs = {"floor": [], "healthz": [], "metrics": []}
    extra = []

    def account(job, windows):
        all_r = restarts(job.stamps)
        for phase, w, d in windows:
            rst[phase] += in_window(all_r, w)
            if d:
                sup[phase][0] += d[0]
                sup[phase][1] += d[1]
                sup[phase][2] += sum(1 for r in all_r
                                     if w[0] <= r[0] < w[1])
        return all_r

    def without_health(rep):
        job = Job(f"nohealth-{rep}", False, floor=bool(FLOOR_MODE))
        time.sleep(GAP)
        w, _, d = sampled(job, lambda: time.sleep(IDLE))
        windows = [("nohealth", w, d)]
        time.sleep(GAP)
        if FLOOR_MODE:
            w, r, d = sampled(job, lambda: wrk(job.floor_port, "/healthz",
                                               job.floor_pid))
            runs["floor"].append(r)
            windows.append(("floor", w, d))
            time.sleep(GAP)
        job.stop()
        account(job, windows)
        extra.append(("warnings", rep, "without", log_warnings(job)))
        job.tidy()

    def with_health(rep):
        job = Job(f"health-{rep}", True)
        if rep == 0:
            extra.append(("keepalive",) + keepalive(job.port))
        time.sleep(GAP)
        c0 = cpu_ns(job.hd_pid) if job.hd_pid else None
        w, _, d = sampled(job, lambda: time.sleep(IDLE))
        c1 = cpu_ns(job.hd_pid) if job.hd_pid else None
        extra.append(("idlecpu", rep, None if c0 is None or c1 is None
                      else 100 * (c1 - c0) / (w[1] - w[0])))
        time.sleep(GAP)
        windows = [("idle", w, d)]
        for path in ("healthz", "metrics"):
            w, r, d = sampled(job, lambda: wrk(job.port, "/" + path,
                                               job.hd_pid))
            runs[path].append(r)
            windows.append((path, w, d))
            time.sleep(GAP)
        end_metric = metric(job.port, "esv_restarts_total")
        end_state = kv(os.path.join(job.jobdir, "supervise",
                                    "state")).get("restart_count")
        job.stop()
        all_r = account(job, windows)
        extra.append(("counts", rep, end_metric, end_state, len(all_r)))
        extra.append(("warnings", rep, "with", log_warnings(job)))
        job.tidy()

    # Repetitions outermost, the two jobs interleaved and in turn first:
    # drift of the machine's load over the run hits every phase alike.
    for rep in range(REPS):
        order = (without_health, with_health)
        for fn in order if rep % 2 == 0 else order[::-1]:
            fn(rep)
        print(f"repetition {rep + 1}/{REPS} done", file=sys.stderr)
    return rst, sup, runs, extra


def pct(v, q):
    s = sorted(v)
    return s[max(0, math.ceil(q * len(s)) - 1)] if s else None


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def diff_ci(a, b, n=2000):
    """95 % bootstrap interval of median(b) - median(a)."""
    if len(a) < 5 or len(b) < 5:
        return None
    rng = random.Random(1)
    d = sorted(statistics.median(rng.choices(b, k=len(b))) -
               statistics.median(rng.choices(a, k=len(a)))
               for _ in range(n))
    return d[int(0.025 * n)], d[int(0.975 * n) - 1]


def f(v, p=2):
    return "n/a" if v is None else f"{v:.{p}f}"


def table(rst, sup, runs):
    head = ["measure"] + [LABELS[p] for p in PHASES] + ["target", "meets"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    wrk_of = f"wrk -t{THREADS} -c{CONNS}, {SECS} s, median of {REPS}" + \
        (f", wrk at nice {WRK_NICE}" if WRK_NICE else "")

    def wrkrow(label, key, prec, target, ok):
        cells, met = [], []
        for p in PHASES:
            if p not in runs or not runs[p]:
                cells.append("-")
                continue
            v = med([r[key] for r in runs[p]])
            cells.append(f(v, prec))
            if target and p != "floor":
                met.append(f"/{p}: " + ("n/a" if v is None else
                                       "yes" if ok(v) else "no"))
        out.append(f"| {label} ({wrk_of}) | " + " | ".join(cells) +
                   f" | {target} | {'; '.join(met)} |")

    wrkrow("requests/s", "rps", 0, f"> {TARGET_RPS}",
           lambda v: v > TARGET_RPS)
    wrkrow("p99 latency, ms", "p99", 2, f"< {TARGET_P99_MS:g} ms",
           lambda v: v < TARGET_P99_MS)
    wrkrow("p50 latency, ms", "p50", 3, "", None)
    wrkrow("server CPU per request, us", "cpu_us", 1, "", None)
    wrkrow("server CPU, % of one CPU", "cpu_share", 0, "", None)
    base = [r[2] for r in rst["nohealth"]]
    for label, fn in (("restart latency median, ms", statistics.median),
                      ("restart latency p90, ms", lambda v: pct(v, 0.9))):
        cells, met = [], []
        for p in PHASES:
            v = [r[2] for r in rst[p]]
            cells.append(f(fn(v)) if v else "n/a")
        if fn is statistics.median:
            for p in ("idle", "healthz", "metrics"):
                v = [r[2] for r in rst[p]]
                ci = diff_ci(base, v)
                m = f"{p}: " + ("n/a" if ci is None else "yes" if
                                ci[0] <= 0 <= ci[1] else "no")
                ci = diff_ci([r[2] for r in rst["floor"]], v)
                if p != "idle" and ci is not None:
                    m += (" (vs the floor's: " + ("yes" if ci[0] <= 0 <=
                                                  ci[1] else "no") + ")")
                met.append(m)
            target = "no measurable effect (vs no health server)"
        else:
            target = ""
        out.append(f"| {label} | " + " | ".join(cells) +
                   f" | {target} | {'; '.join(met)} |")
    cells = []
    for p in PHASES:
        v = [r[3] for r in rst[p] if r[3] is not None]
        cells.append(f(statistics.median(v), 3) if v else "n/a")
    out.append("| exit to first SIGTERM median, ms | " + " | ".join(cells) +
               " | | |")
    for i, label in ((0, "esv-supervise on-CPU time per restart, ms"),
                     (1, "esv-supervise run-queue wait per restart, ms")):
        out.append(f"| {label} | " + " | ".join(
            f(sup[p][i] / 1e6 / sup[p][2], 3) if sup[p][2] else "n/a"
            for p in PHASES) + " | | |")
    out.append("| restarts observed | " + " | ".join(
        str(len(rst[p])) for p in PHASES) + " | | |")
    return "\n".join(out)


def raw(rst, runs, extra):
    out = []
    base = [r[2] for r in rst["nohealth"]]
    for p in PHASES:
        if p == "floor" and not FLOOR_MODE:
            continue
        v = [r[2] for r in rst[p]]
        a = [r[3] for r in rst[p] if r[3] is not None]
        line = (f"restart {p:8} n={len(v)} min={f(min(v) if v else None)} "
                f"p50={f(med(v))} p90={f(pct(v, 0.9))} "
                f"p99={f(pct(v, 0.99))} max={f(max(v) if v else None)} ms; "
                f"exit to first SIGTERM p50={f(med(a), 3)} "
                f"p90={f(pct(a, 0.9), 3)} ms")
        for q, what in (("nohealth", "no health server"),
                        ("floor", "httpfloor under wrk")):
            ref = [r[2] for r in rst[q]]
            ci = diff_ci(ref, v) if p != q and (q == "nohealth" or p in
                                               ("healthz", "metrics")) \
                else None
            if ci:
                line += (f"; median vs {what} {med(v) - med(ref):+.2f} ms "
                         f"(95% CI {ci[0]:+.2f} .. {ci[1]:+.2f})")
        out.append(line)
    for path in ("floor", "healthz", "metrics"):
        for i, r in enumerate(runs[path]):
            se = r["sockerr"]
            name = "httpfloor" if path == "floor" else "/" + path
            out.append(
                f"wrk {name:9} run {i + 1}: {f(r['rps'], 0)} req/s, "
                f"p50 {f(r['p50'], 3)} ms, p99 {f(r['p99'], 2)} ms, "
                f"{r['n']} requests, non-2xx {r['non2xx']}, socket errors "
                f"connect {se[0]} read {se[1]} write {se[2]} timeout "
                f"{se[3]}; server CPU {f(r['cpu_us'], 1)} us/request, "
                f"{f(r['cpu_share'], 0)}"
                f"% of a CPU")
    for e in extra:
        if e[0] == "keepalive":
            out.append(f"keep-alive: first answer's Connection header "
                       f"'{e[1]}'; second request on the same connection "
                       f"{'answered' if e[2] else 'refused (closed)'}")
        elif e[0] == "idlecpu":
            out.append(f"health job {e[1] + 1}: esv-healthd CPU while idle "
                       f"{f(e[2], 2)}% of a CPU")
        elif e[0] == "counts":
            out.append(f"health job {e[1] + 1}: esv_restarts_total "
                       f"{f(e[2], 0)} at the end, state restart_count "
                       f"{e[3]}, restarts in the stamps {e[4]}")
        elif e[0] == "warnings":
            out.append(f"repetition {e[1] + 1}, job {e[2]} a health "
                       f"server: {len(e[3])} unexpected warning lines in "
                       f"the log")
            out += ["    " + l for l in e[3][:10]]
    return "\n".join(out)


if FLOOR_MODE not in ("", "keepalive", "close"):
    sys.exit(f"healthd.sh: BENCH_FLOOR={FLOOR_MODE}: keepalive, close or "
             "empty")
for exe in (SUP, HEALTHD, WRK):
    if not os.access(exe, os.X_OK):
        sys.exit(f"healthd.sh: {exe} not found (set ESV_BUILD)")
began = time.strftime("%Y-%m-%d %H:%M %Z")
load_before = loadavg()
t_begin = time.monotonic()
rst, sup, runs, extra = collect()
u = os.uname()
print(f"health server benchmark: {began}, {u.nodename}, {os.cpu_count()} "
      f"cpus, Linux {u.release}; total {time.monotonic() - t_begin:.0f} s")
print(f"load average (1, 5, 15 min) before: {load_before}, after: "
      f"{loadavg()}; job dirs on {fstype(os.path.realpath(WORK))} ({WORK})")
for exe in (SUP, HEALTHD):
    print(f"{os.path.basename(exe)}: {exe} (built "
          f"{time.strftime('%Y-%m-%d %H:%M %Z', time.localtime(os.stat(exe).st_mtime))})")
print(f"job: {NPROC} workers, one exits 1 {FAIL_MS} ms after the group "
      f"started, --max-restarts 1000000; phases per repetition: "
      f"{IDLE} s without a health server, "
      + (f"{SECS} s of wrk on httpfloor ({FLOOR_MODE}) beside it, "
         if FLOOR_MODE else "") +
      f"{IDLE} s with an idle health server, {SECS} s of wrk on /healthz, "
      f"{SECS} s on /metrics; {REPS} repetitions\n")
print(table(rst, sup, runs))
print("\nper-run values:")
print(raw(rst, runs, extra))
for n in notes:
    print("note:", n)
PY
