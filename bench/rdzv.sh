#!/bin/bash
# bash bench/rdzv.sh — how fast a rendezvous round completes: esv-rdzv
# driven by bench/rdzv_bench.c (K client processes, one TCP connection
# each), against torch 1.13's c10d dynamic rendezvous driven by
# bench/rdzv_torch.py (K agent processes, one hosting the TCPStore).
# See bench/README.md, "Rendezvous".  It measures and prints; it asserts
# nothing and exits 0 even when a target is missed.
#
# Environment:
#   ESV_BUILD           meson build directory holding rendezvous/esv-rdzv
#                       (default: <repo>/build)
#   BENCH_RUNS          runs per K for esv-rdzv, median reported (5)
#   BENCH_K             node counts for esv-rdzv ("2 64 512")
#   BENCH_TORCH_RUNS    runs per K for torch (3)
#   BENCH_TORCH_K       node counts for torch ("2 4 8"; "" skips torch)
#   BENCH_HEARTBEAT     esv-rdzv --heartbeat MS (default: the server's)
#   BENCH_KEEP          keep the token, the server's log and the outputs here
set -eu

. "$(dirname "$0")/common.sh" rdzv-bench
: "${ESV_BUILD:=$root/build}"
: "${BENCH_RUNS:=5}"
: "${BENCH_K:=2 64 512}"
: "${BENCH_TORCH_RUNS:=3}"
: "${BENCH_TORCH_K=2 4 8}"
: "${BENCH_HEARTBEAT:=}"

gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$root/lib" \
    -o "$work/rdzv_bench" "$bench/rdzv_bench.c" "$root/lib/rdzvproto.c" \
    $(pkg-config --cflags --libs libbsd-overlay libmd)

# The server refuses a token file others may read.
rm -f "$work/token"
(umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$work/token")

export BENCH_WORK=$work BENCH_DIR=$bench BENCH_PYTHON=$python \
    ESV_RDZV=$ESV_BUILD/rendezvous/esv-rdzv BENCH_RUNS BENCH_K \
    BENCH_TORCH_RUNS BENCH_TORCH_K BENCH_HEARTBEAT

"$python" - <<'PY'
import os
import select
import statistics
import subprocess
import sys
import time

WORK = os.environ["BENCH_WORK"]
BENCH = os.environ["BENCH_DIR"]
sys.path.insert(0, BENCH)
PYTHON = os.environ["BENCH_PYTHON"]
RDZV = os.environ["ESV_RDZV"]
RUNS = int(os.environ["BENCH_RUNS"])
KS = [int(x) for x in os.environ["BENCH_K"].split()]
TRUNS = int(os.environ["BENCH_TORCH_RUNS"])
TKS = [int(x) for x in os.environ["BENCH_TORCH_K"].split()]
HB = os.environ["BENCH_HEARTBEAT"]
CLIENT = os.path.join(WORK, "rdzv_bench")
TOKEN = os.path.join(WORK, "token")
SERVER_LOG = os.path.join(WORK, "esv-rdzv.log")
TIMEOUT = 60
TARGET_K, TARGET_MS, TARGET_MIB = 512, 100.0, 16.0
notes = []


from benchlib import loadavg, status_kib  # noqa: E402


def cpu_ms(pid):
    """Time pid has run on a CPU so far (schedstat, ns), in ms."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e6


def start_server():
    # Every client is on 127.0.0.1 and all connect at once: room for
    # them all in the pool of connections yet to authenticate.
    cmd = [RDZV, "--listen", "127.0.0.1:0", "--token-file", TOKEN,
           "--max-unauth", str(max(KS) + 16),
           "--max-unauth-per-addr", str(max(KS) + 16),
           "--auth-timeout", "10000"]
    if HB:
        cmd += ["--heartbeat", HB]
    log = open(SERVER_LOG, "w")
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=log)
    log.close()
    if not select.select([p.stdout], [], [], 10)[0]:
        sys.exit(f"rdzv.sh: {RDZV} printed nothing in 10 s")
    line = p.stdout.readline().decode().split()
    if len(line) != 2 or line[0] != "listening":
        sys.exit(f"rdzv.sh: {RDZV}: unexpected first line {line}")
    return p, line[1], cmd


def parse(out):
    """The key=value line of rdzv_bench or rdzv_torch.py."""
    for line in out.splitlines():
        if line.startswith("nodes="):
            return {k: float(v) for k, v in
                    (f.split("=", 1) for f in line.split())}
    return None


def one_run(tool, k, run, cmd):
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True,
                           timeout=TIMEOUT + 30)
        res = parse(r.stdout) if r.returncode == 0 else None
        why = f"exit {r.returncode}: {r.stderr.strip()[:600]}"
    except subprocess.TimeoutExpired:
        res, why = None, "no exit (killed)"
    if res is None:
        notes.append(f"{tool} K={k} run {run + 1} failed, {why}")
    return res


def run_esv():
    res = {k: [] for k in KS}
    mem = {}
    p, endpoint, cmd = start_server()
    alive = True
    for k in KS:
        for run in range(RUNS):
            if p.poll() is not None:
                alive = False
                notes.append(f"esv-rdzv exited with {p.returncode} before "
                             f"K={k} run {run + 1}")
                break
            rid = f"bench-k{k}-r{run}-{os.getpid()}"
            cpu = cpu_ms(p.pid)
            r = one_run("esv-rdzv", k, run, [
                CLIENT, "--endpoint", endpoint, "--token-file", TOKEN,
                "--nodes", str(k), "--run-id", rid,
                "--timeout", str(TIMEOUT)])
            # Let the server see the K hang-ups before the next burst.
            time.sleep(0.5)
            if r is not None and p.poll() is None:
                r["server_cpu_ms"] = cpu_ms(p.pid) - cpu
            res[k].append(r)
        if not alive:
            break
        mem[k] = status_kib(p.pid)
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            notes.append("esv-rdzv ignored SIGTERM for 10 s (killed)")
    return res, mem, p.returncode, cmd


def run_torch():
    res = {k: [] for k in TKS}
    for run in range(TRUNS):
        for k in TKS:
            res[k].append(one_run("torch", k, run, [
                PYTHON, os.path.join(BENCH, "rdzv_torch.py"), "--nodes",
                str(k), "--run-id", f"bench-k{k}-r{run}",
                "--timeout", str(TIMEOUT)]))
    return res


def med(rows, key):
    v = [r[key] for r in rows if r is not None]
    return statistics.median(v) if v else None


def fmt(v, prec=2):
    return "n/a" if v is None else f"{v:.{prec}f}"


def failed(rows):
    return sum(1 for r in rows if r is None)


def table(esv, tor):
    head = ("rendezvous", "K", "last join to last done, ms",
            "first join to last done, ms", "join spread, ms",
            "done spread, ms", "esv-rdzv CPU per run, ms", "failed runs")
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    for name, d in (("esv-rdzv", esv), ("torch c10d", tor)):
        for k, rows in d.items():
            cols = [fmt(med(rows, key)) for key in (
                "last_join_to_last_done_ms", "first_join_to_last_done_ms",
                "join_spread_ms", "done_spread_ms")]
            cols.append(fmt(med(rows, "server_cpu_ms")) if d is esv else "-")
            cols.append(f"{failed(rows)} of {len(rows)}")
            out.append(f"| {name} | {k} | " + " | ".join(cols) + " |")
    return "\n".join(out)


def raw(esv, tor):
    out = []
    keys = [("last_join_to_last_done_ms", "last join"),
            ("first_join_to_last_done_ms", "first join"),
            ("join_spread_ms", "join spread"),
            ("done_spread_ms", "done spread"),
            ("server_cpu_ms", "server CPU"),
            ("last_entry_to_last_done_ms", "last entry"),
            ("first_entry_to_last_done_ms", "first entry")]
    for name, d in (("esv-rdzv", esv), ("torch", tor)):
        for k, rows in d.items():
            for key, label in keys:
                if not any(r is not None and key in r for r in rows):
                    continue
                out.append(f"{name:8} K={k:<3} {label:12} ms: " + " ".join(
                    "fail" if r is None else fmt(r[key], 3) for r in rows))
    return "\n".join(out)


def memory(mem):
    out = []
    for k, m in mem.items():
        out.append(f"esv-rdzv after the K={k} runs: VmHWM "
                   f"{m['VmHWM'] / 1024:.2f} MiB, VmRSS "
                   f"{m['VmRSS'] / 1024:.2f} MiB, RssAnon "
                   f"{m['RssAnon'] / 1024:.2f} MiB")
    return "\n".join(out)


def verdicts(esv, mem):
    rows = esv.get(TARGET_K)
    if not rows:
        lat = f"n/a (K={TARGET_K} not run)"
    else:
        m = med(rows, "last_join_to_last_done_ms")
        worst = max((r["last_join_to_last_done_ms"] for r in rows
                     if r is not None), default=None)
        ok = m is not None and m <= TARGET_MS and failed(rows) == 0
        lat = (f"{'yes' if ok else 'no'} (median {fmt(m)} ms, worst "
               f"{fmt(worst)} ms, {failed(rows)} failed runs)")
    m = mem.get(TARGET_K)
    if m is None:
        rss = f"n/a (no reading after K={TARGET_K})"
    else:
        hwm = m["VmHWM"] / 1024
        rss = (f"{'yes' if hwm < TARGET_MIB else 'no'} (VmHWM {hwm:.2f} "
               f"MiB, VmRSS {m['VmRSS'] / 1024:.2f} MiB)")
    return (f"{TARGET_K} nodes complete a round within {TARGET_MS:.0f} ms "
            f"of the last join: {lat}\n"
            f"esv-rdzv RSS at K={TARGET_K} under {TARGET_MIB:.0f} MiB: {rss}")


def server_log():
    with open(SERVER_LOG, errors="replace") as f:
        lines = f.read().splitlines()
    odd = [l for l in lines if "warning" in l or "fatal" in l]
    out = [f"esv-rdzv log: {len(lines)} lines, {len(odd)} warnings"]
    out += ["  " + l for l in odd[:20]]
    return "\n".join(out)


began = time.strftime("%Y-%m-%d %H:%M %Z")
load_before = loadavg()
t0 = time.monotonic()
esv, mem, rc, cmd = run_esv() if os.access(RDZV, os.X_OK) else \
    ({}, {}, None, None)
if cmd is None:
    notes.append(f"{RDZV} not found: esv-rdzv not measured (ESV_BUILD)")
tor = run_torch()
u = os.uname()
print(f"rendezvous benchmark: {began}, {u.nodename}, {os.cpu_count()} cpus, "
      f"Linux {u.release}; total {time.monotonic() - t0:.0f} s")
print(f"load average (1, 5, 15 min) before: {load_before}, after: "
      f"{loadavg()}")
if cmd is not None:
    print(f"server: {' '.join(cmd)} (built "
          f"{time.strftime('%Y-%m-%d %H:%M %Z', time.localtime(os.stat(RDZV).st_mtime))}"
          f"), exit status after SIGTERM: {rc}")
print(f"esv-rdzv: median of {RUNS} runs; torch: median of {TRUNS} runs\n")
print(table(esv, tor))
print()
print(verdicts(esv, mem))
print()
print(memory(mem))
print("\nper-run values:")
print(raw(esv, tor))
if cmd is not None:
    print(server_log())
for n in notes:
    print("note:", n)
PY
