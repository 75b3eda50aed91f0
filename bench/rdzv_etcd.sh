#!/bin/bash
# bash bench/rdzv_etcd.sh — the rendezvous on etcd (issue 12's benchmarks):
# how fast K nodes complete a round through esv-rdzv-etcd on a private
# one-member etcd, beside esv-rdzv for the same K (bench/rdzv_bench.c both
# ways); the etcd requests a round costs; the helpers' memory; how soon the
# other nodes hear of a node lost (kill -9: its lease expires) and of a node
# that leaves (its lease revoked); and, for each K, a floor: the etcd work
# of such a round (joins, watches, places, flip, reads) on a bare etcd,
# with curl watching and nothing decided.
# See bench/README.md, "Rendezvous on etcd".  It measures and prints; it
# asserts nothing and exits 0 even when a target is missed.
#
# Environment:
#   ESV_BUILD        meson build directory holding rendezvous/esv-rdzv and
#                    rendezvous/esv-rdzv-etcd (default: <repo>/build)
#   BENCH_K          node counts ("2 64 512")
#   BENCH_RUNS       runs per K and backend, median reported (3)
#   BENCH_LIVE_REPS  repetitions of each liveness timing (5)
#   BENCH_FLOOR      1: measure the curl floor at each K (1)
#   BENCH_ETCD       the etcd binary (/usr/bin/etcd)
#   BENCH_KEEP       keep etcd's data and log, the helpers' logs and the
#                    outputs here
set -eu

. "$(dirname "$0")/common.sh" rdzv-etcd-bench
: "${ESV_BUILD:=$root/build}"
: "${BENCH_K:=2 64 512}"
: "${BENCH_RUNS:=3}"
: "${BENCH_LIVE_REPS:=5}"
: "${BENCH_FLOOR:=1}"
: "${BENCH_ETCD:=/usr/bin/etcd}"

# Whatever the python started (etcd, esv-rdzv, each rdzv_bench's process
# group with its helpers, the floor's curls) is listed in $work/pids, one
# pid or -pgid a line: killed by id at exit, also when the run fails.
cleanup() {
	local p
	if [ -f "$work/pids" ]; then
		while read -r p; do
			kill -KILL -- "$p" 2>/dev/null || true
		done <"$work/pids"
	fi
	if [ -z "$BENCH_KEEP" ]; then
		rm -rf "$work"
	else
		rm -rf "$work/etcd.data"
	fi
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

[ -x "$BENCH_ETCD" ] || { echo "rdzv_etcd.sh: no $BENCH_ETCD (Debian: etcd-server)" >&2; exit 1; }
command -v curl >/dev/null || { echo "rdzv_etcd.sh: no curl" >&2; exit 1; }
for b in esv-rdzv esv-rdzv-etcd; do
	[ -x "$ESV_BUILD/rendezvous/$b" ] ||
	    { echo "rdzv_etcd.sh: no $ESV_BUILD/rendezvous/$b" >&2; exit 1; }
done
# 512 nodes: 512 helpers with a few connections to etcd each, and etcd's
# end of them all.
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 8192 ] ||
    echo "rdzv_etcd.sh: warning: only $(ulimit -n) open files" >&2

gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$root/lib" \
    -o "$work/rdzv_bench" "$bench/rdzv_bench.c" "$root/lib/rdzvproto.c" \
    $(pkg-config --cflags --libs libbsd-overlay libmd)
rm -f "$work/token"
(umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$work/token")

export BENCH_WORK=$work BENCH_DIR=$bench BENCH_ETCD BENCH_K BENCH_RUNS \
    BENCH_LIVE_REPS BENCH_FLOOR ESV_RDZV=$ESV_BUILD/rendezvous/esv-rdzv \
    ESV_RDZV_ETCD=$ESV_BUILD/rendezvous/esv-rdzv-etcd

"$python" - <<'PY'
import base64
import http.client
import json
import os
import queue
import random
import re
import resource
import select
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

WORK = os.environ["BENCH_WORK"]
sys.path.insert(0, os.environ["BENCH_DIR"])
from benchlib import cpu_ns, fstype, loadavg, status_kib  # noqa: E402
from rdzvlink import KeepaliveProxy, Node, pump  # noqa: E402

ETCD = os.environ["BENCH_ETCD"]
RDZV = os.environ["ESV_RDZV"]
HELPER = os.environ["ESV_RDZV_ETCD"]
KS = [int(x) for x in os.environ["BENCH_K"].split()]
RUNS = int(os.environ["BENCH_RUNS"])
LIVE_REPS = int(os.environ["BENCH_LIVE_REPS"])
FLOOR = os.environ["BENCH_FLOOR"] == "1"
CLIENT = os.path.join(WORK, "rdzv_bench")
TOKEN = os.path.join(WORK, "token")
ROUND_TTL = "30s"       # round runs: no keep-alive, no idle hang-up
LIVE_TTL = "2s"
TARGET_K, TARGET_MS, TARGET_KIB = 512, 500.0, 8 * 1024
TARGET_LOSS_MS = 2000 + 100
TARGET_LEAVE_MS = 50.0
METHODS = ("Txn", "Range", "LeaseGrant", "LeaseRevoke", "LeaseKeepAlive",
           "Watch")
notes = []


_tracked = set()


def _write_pids():
    tmp = os.path.join(WORK, "pids.tmp")
    with open(tmp, "w") as f:
        f.writelines(f"{p}\n" for p in _tracked)
    os.rename(tmp, os.path.join(WORK, "pids"))


def track(p):
    """Killed by the shell's cleanup, whatever happens here; untracked
    once reaped, so that a pid used again is never killed."""
    _tracked.add(p)
    _write_pids()


def untrack(p):
    _tracked.discard(p)
    _write_pids()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def b64(s):
    return base64.b64encode(s.encode()).decode()


# ---- etcd ----

class Etcd:
    def __init__(self):
        self.port, peer = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = os.path.join(WORK, "etcd.data")
        self.log = os.path.join(WORK, "etcd.log")
        self.cmd = [ETCD, "--name", "bench", "--data-dir", self.data,
                    "--listen-client-urls", self.url,
                    "--advertise-client-urls", self.url,
                    "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                    "--initial-advertise-peer-urls",
                    f"http://127.0.0.1:{peer}",
                    "--initial-cluster", f"bench=http://127.0.0.1:{peer}",
                    "--heartbeat-interval", "50",
                    "--election-timeout", "500"]
        with open(self.log, "w") as log:
            self.p = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                      stdout=log, stderr=log)
        track(self.p.pid)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                with urllib.request.urlopen(self.url + "/health",
                                            timeout=2) as r:
                    if json.load(r).get("health") == "true":
                        return
            except OSError:
                pass
            if self.p.poll() is not None:
                break
            time.sleep(0.1)
        sys.exit(f"rdzv_etcd.sh: etcd did not come up; see {self.log}")

    def api(self, path, body):
        req = urllib.request.Request(self.url + path,
                                     json.dumps(body).encode())
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def metrics(self):
        """{(family, method): value} of the gRPC server's counters."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        out = {}
        for m in re.finditer(r'^(grpc_server_(?:handled|started|msg_sent)'
                             r'_total)\{([^}]*)\} (\S+)$', text, re.M):
            meth = re.search(r'grpc_method="([^"]*)"', m.group(2)).group(1)
            svc = re.search(r'grpc_service="([^"]*)"', m.group(2)).group(1)
            if not svc.startswith("etcdserverpb."):
                continue
            key = (m.group(1), meth)
            out[key] = out.get(key, 0) + float(m.group(3))
        return out

    def leases(self):
        return len(self.api("/v3/lease/leases", {}).get("leases", []))

    def drain(self, timeout):
        """Wait for every lease to be gone (revoked, or expired when a
        revocation went unanswered); seconds waited, None on timeout."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                if self.leases() == 0:
                    return time.monotonic() - t0
            except OSError:
                pass
            time.sleep(0.2)
        return None

    def cpu_ms(self):
        v = cpu_ns(self.p.pid)
        return None if v is None else v / 1e6

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        untrack(self.p.pid)


def mdiff(a, b, fam, meth=None):
    return sum(v - a.get(k, 0) for k, v in b.items()
               if k[0] == fam and (meth is None or k[1] == meth))


# ---- rounds ----

def parse(out):
    for line in out.splitlines():
        if line.startswith("nodes="):
            return {k: float(v) for k, v in
                    (f.split("=", 1) for f in line.split())}
    return None


def bench_run(tag, k, cmd, timeout, errlog):
    """rdzv_bench in a session of its own (its helpers with it): killed
    as a group on timeout, and by the shell's cleanup."""
    with open(errlog, "w") as err:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=err, text=True,
                             start_new_session=True)
    track(-p.pid)
    try:
        out, _ = p.communicate(timeout=timeout)
        why = f"exit {p.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        why = "no exit (killed)"
    try:
        os.killpg(p.pid, signal.SIGKILL)    # a helper left behind
    except ProcessLookupError:
        pass
    untrack(-p.pid)
    res = parse(out)
    if p.returncode != 0 or res is None or res.get("ok") != 1:
        with open(errlog) as f:
            tail = [l for l in f.read().splitlines()
                    if "rdzv_bench" in l][:3]
        notes.append(f"{tag} K={k}: {why}: {' / '.join(tail)[:400]}")
    return res


def start_esv():
    cmd = [RDZV, "--listen", "127.0.0.1:0", "--token-file", TOKEN,
           "--max-unauth", str(max(KS) + 16),
           "--max-unauth-per-addr", str(max(KS) + 16),
           "--auth-timeout", "10000"]
    log = open(os.path.join(WORK, "esv-rdzv.log"), "w")
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=log)
    log.close()
    track(p.pid)
    if not select.select([p.stdout], [], [], 10)[0]:
        sys.exit("rdzv_etcd.sh: esv-rdzv printed nothing in 10 s")
    line = p.stdout.readline().decode().split()
    return p, line[1]


def helper_warnings(path):
    """The helpers' warning lines of a run, counted by kind (numbers and
    run ids out)."""
    kinds = {}
    if not os.path.exists(path):
        return kinds
    with open(path, errors="replace") as f:
        for line in f:
            if not line.startswith("esv-rdzv-etcd:") or \
                    "warning" not in line:
                continue
            k = re.sub(r"\d+", "N", line.strip())[:160]
            kinds[k] = kinds.get(k, 0) + 1
    return kinds


def rounds(etcd):
    esv = {k: [] for k in KS}
    et = {k: [] for k in KS}
    warns = {}
    p, endpoint = start_esv()
    for k in KS:
        timeout = 30 + k // 4
        for run in range(RUNS):
            rid = f"bench-k{k}-r{run}-{os.getpid()}"
            r = bench_run("esv-rdzv", k, [
                CLIENT, "--endpoint", endpoint, "--token-file", TOKEN,
                "--nodes", str(k), "--run-id", rid, "--timeout",
                str(timeout)], timeout + 30,
                os.path.join(WORK, f"esv-k{k}-r{run}.err"))
            time.sleep(0.5)
            esv[k].append(r)

            m0, c0 = etcd.metrics(), etcd.cpu_ms()
            errlog = os.path.join(WORK, f"etcd-k{k}-r{run}.err")
            r = bench_run("etcd", k, [
                CLIENT, "--etcd", etcd.url, "--helper", HELPER,
                "--lease-ttl", ROUND_TTL, "--settle", str(max(500, 4 * k)),
                "--nodes", str(k), "--run-id", rid, "--timeout",
                str(timeout)], timeout + 60, errlog)
            # Every lease gone: the next run starts on a quiet etcd.
            drained = etcd.drain(40)
            time.sleep(0.3)     # the last watch streams' ends counted
            m1, c1 = etcd.metrics(), etcd.cpu_ms()
            if drained is None:
                notes.append(f"etcd K={k} run {run + 1}: leases still "
                             "there 40 s after the run")
            if r is not None:
                r["etcd_cpu_ms"] = c1 - c0
                r["drain_s"] = drained if drained is not None else -1
                r["req"] = mdiff(m0, m1, "grpc_server_handled_total")
                for meth in METHODS:
                    r["req_" + meth] = mdiff(m0, m1,
                                             "grpc_server_handled_total",
                                             meth)
                r["watch_msgs"] = mdiff(m0, m1, "grpc_server_msg_sent_total",
                                        "Watch")
            et[k].append(r)
            for kind, n in helper_warnings(errlog).items():
                warns.setdefault(k, {}).setdefault(kind, 0)
                warns[k][kind] += n
    p.terminate()
    p.wait()
    untrack(p.pid)
    return esv, et, warns


# ---- liveness ----

def form(etcd, rid, logs, proxy_port=None):
    """3 helpers in job rid (min 2, max 3), round 0 formed; node 2's
    etcd traffic through the proxy if given."""
    nodes = []
    try:
        for i in range(3):
            ep = etcd.url if i != 2 or proxy_port is None else \
                f"http://127.0.0.1:{proxy_port}"
            nodes.append(Node(HELPER, ep, rid, LIVE_TTL, logs))
            track(nodes[-1].pid)
        for i, n in enumerate(nodes):
            n.join(f"node{i}", rid, 2, 3, 2000)
        if not pump(nodes, lambda i, text, t: text.startswith("ROUND"), 20):
            raise RuntimeError("no round of 3 within 20 s")
    except BaseException:
        for n in nodes:
            n.close()
            n.kill()
            untrack(n.pid)
        raise
    return nodes


def restart_times(nodes, survivors, t0, timeout):
    got = {}

    def until(i, text, t):
        if text.startswith("RESTART"):
            got[i] = (t - t0) * 1000
            return True
        return None

    pump([n if i in survivors else None for i, n in enumerate(nodes)],
         until, timeout)
    return got


def finish(nodes, tag):
    for n in nodes:
        n.close()
    for i, n in enumerate(nodes):
        st = n.reap(5)
        if st is None:
            n.kill()
            notes.append(f"{tag}: node {i}'s helper did not exit within 5 s "
                         "of the hang-up")
        elif st != 0 and not (st == -9 and tag.startswith("loss")):
            notes.append(f"{tag}: node {i}'s helper exited {st}")
        untrack(n.pid)


def liveness(etcd):
    logs = os.path.join(WORK, "live-helpers.err")
    loss, loss_ka, leave = [], [], []
    for rep in range(LIVE_REPS):
        tag = f"loss rep {rep + 1}"
        proxy = KeepaliveProxy(etcd.port)
        proxy.start()
        try:
            nodes = form(etcd, f"live-loss-{rep}-{os.getpid()}", logs,
                         proxy.port)
            # A phase of the victim's keep-alive period (TTL/3) at random.
            time.sleep(1 + random.random() * 0.7)
            t0 = time.monotonic()
            os.kill(nodes[2].pid, signal.SIGKILL)
            last_ka = proxy.stamps[-1] if proxy.stamps else None
            got = restart_times(nodes, {0, 1}, t0, 10)
            nodes[2].reap(5)
            if len(got) < 2:
                notes.append(f"{tag}: RESTART at {len(got)} of 2 survivors "
                             "within 10 s")
            for ms in got.values():
                loss.append(ms)
                if last_ka is not None:
                    loss_ka.append(ms + (t0 - last_ka) * 1000)
            finish(nodes, tag)
        except (RuntimeError, EOFError, OSError) as e:
            notes.append(f"{tag}: {e}")
    for rep in range(LIVE_REPS):
        tag = f"leave rep {rep + 1}"
        try:
            nodes = form(etcd, f"live-leave-{rep}-{os.getpid()}", logs)
            time.sleep(0.3)
            t0 = time.monotonic()
            nodes[2].close()
            got = restart_times(nodes, {0, 1}, t0, 10)
            if len(got) < 2:
                notes.append(f"{tag}: RESTART at {len(got)} of 2 survivors "
                             "within 10 s")
            leave.extend(got.values())
            finish(nodes, tag)
        except (RuntimeError, EOFError, OSError) as e:
            notes.append(f"{tag}: {e}")
    etcd.drain(10)
    return loss, loss_ka, leave, helper_warnings(logs)


# ---- the floor: the round's etcd work alone, on a bare etcd ----

def floor(etcd, k):
    """What a round of K nodes asks of etcd in esv-rdzv-etcd's design,
    with nobody deciding anything: one curl watches the whole job (the
    leader), K-1 curls watch its h/ (the followers); K transactions of a
    join's shape (put r/0/join/<node>, put r/0/seq, read seq's version,
    create h/lead if absent) come from 16 connections at once; once they
    are in and the leader's watch has them, the places go out in writes
    of 100 and the flip (put h/state); as each follower's watch brings
    the flip, its place is read (serializable, at the flip's revision)
    on 16 connections.  The time from the last join's reply to the last
    place read is what etcd and its JSON gateway alone take for the part
    of a round that esv-rdzv-etcd's "last join to last ROUND" covers."""
    prefix = f"/floor/{os.getpid()}-{k}/"
    nodes = [f"node-{i:05d}" for i in range(k)]

    def rng(pfx):
        e = pfx[:-1] + chr(ord(pfx[-1]) + 1)
        return {"key": b64(pfx), "range_end": b64(e)}

    procs = []
    sel = selectors.DefaultSelector()
    for i in range(k):
        body = json.dumps({"create_request": rng(prefix if i == 0 else
                                                 prefix + "h/")})
        p = subprocess.Popen(["curl", "-sN", "--max-time", "120", "-X",
                              "POST", etcd.url + "/v3/watch", "-d", body],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, bufsize=0)
        track(p.pid)
        os.set_blocking(p.stdout.fileno(), False)
        sel.register(p.stdout, selectors.EVENT_READ, i)
        procs.append(p)
    created, events = [False] * k, [0] * k
    tails = [b""] * k
    flip_seen = [None] * k
    pat = b'"kv":'
    state_key = b64(prefix + "h/state").encode()
    host = ("127.0.0.1", etcd.port)
    reads = queue.Queue()
    read_done = [None] * k
    flip_rev = [None]

    def reader():
        c = http.client.HTTPConnection(*host, timeout=60)
        while (i := reads.get()) is not None:
            c.request("POST", "/v3/kv/range", json.dumps({
                "key": b64(prefix + f"a/0/{nodes[i]}"),
                "serializable": True, "revision": flip_rev[0]}))
            c.getresponse().read()
            read_done[i] = time.monotonic()
        c.close()

    def read_some(deadline, cond):
        while not cond() and time.monotonic() < deadline:
            for key, _ in sel.select(min(0.05, max(0, deadline -
                                                   time.monotonic()))):
                i = key.data
                try:
                    data = os.read(key.fileobj.fileno(), 1 << 20)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                t = time.monotonic()
                buf = tails[i] + data
                if not created[i] and b'"created":true' in buf:
                    created[i] = True
                events[i] += buf.count(pat) - tails[i].count(pat)
                if i > 0 and flip_seen[i] is None and state_key in buf:
                    flip_seen[i] = t
                    reads.put(i)
                tails[i] = buf[-(len(state_key) + 8):]

    read_some(time.monotonic() + 60, lambda: all(created))
    if not all(created):
        notes.append(f"floor: {k - sum(created)} of {k} watches not "
                     "created within 60 s")
    time.sleep(0.5)
    # The same libcurl as the helpers' (and its TLS libraries), watching.
    curl_mem = status_kib(procs[0].pid)
    c0 = etcd.cpu_ms()
    stamps = []

    def joiner(ids):
        c = http.client.HTTPConnection(*host, timeout=60)
        for i in ids:
            txn = {"compare": [], "success": [
                {"request_put": {"key": b64(prefix + "r/0/join/" + nodes[i]),
                                 "value": b64(json.dumps({
                                     "nproc": 1, "role": "default",
                                     "addr": "127.0.0.1", "port": 29500}))}},
                {"request_put": {"key": b64(prefix + "r/0/seq"),
                                 "value": ""}},
                {"request_range": {"key": b64(prefix + "r/0/seq"),
                                   "keys_only": True}},
                {"request_txn": {
                    "compare": [{"key": b64(prefix + "h/lead"),
                                 "target": "CREATE", "result": "EQUAL",
                                 "create_revision": "0"}],
                    "success": [{"request_put": {
                        "key": b64(prefix + "h/lead"),
                        "value": b64(nodes[i])}}]}}]}
            t = time.monotonic()
            c.request("POST", "/v3/kv/txn", json.dumps(txn))
            c.getresponse().read()
            stamps.append((t, time.monotonic()))
        c.close()

    joiners = [threading.Thread(target=joiner, args=(range(j, k, 16),))
               for j in range(16)]
    readers = [threading.Thread(target=reader) for _ in range(16)]
    for t in joiners + readers:
        t.start()
    # Every join in the leader's copy: K joins and K seq puts, h/lead.
    read_some(time.monotonic() + 120,
              lambda: events[0] >= 2 * k + 1 and
              not any(t.is_alive() for t in joiners))
    for t in joiners:
        t.join()
    t_led = time.monotonic()
    c = http.client.HTTPConnection(*host, timeout=60)
    place = json.dumps({"group_rank": 0, "group_world_size": k,
                        "base_rank": 0, "world_size": k,
                        "base_role_rank": 0, "role_world_size": k,
                        "master_addr": "127.0.0.1", "master_port": 29500})
    for j in range(0, k, 100):
        c.request("POST", "/v3/kv/txn", json.dumps({"success": [
            {"request_put": {"key": b64(prefix + f"a/0/{n}"),
                             "value": b64(place)}}
            for n in nodes[j:j + 100]]}))
        c.getresponse().read()
    c.request("POST", "/v3/kv/put", json.dumps({
        "key": b64(prefix + "h/state"),
        "value": b64('{"round":0,"status":"running"}')}))
    flip_rev[0] = json.loads(c.getresponse().read())["header"]["revision"]
    c.close()
    t_flip = time.monotonic()
    read_some(time.monotonic() + 120,
              lambda: all(x is not None for x in flip_seen[1:]))
    for _ in readers:
        reads.put(None)
    for t in readers:
        t.join()
    c1 = etcd.cpu_ms()
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()
        untrack(p.pid)
    sel.close()
    etcd.api("/v3/kv/deleterange", rng(prefix))
    if k > 1 and not all(x is not None for x in read_done[1:]):
        notes.append(f"floor K={k}: {sum(x is None for x in flip_seen[1:])}"
                     " followers never saw the flip")
        return None
    first_w = min(s[0] for s in stamps)
    last_w = max(s[1] for s in stamps)
    last = max([x for x in read_done if x is not None] + [t_flip])
    return {"k": k, "joins_ms": (last_w - first_w) * 1000,
            "led_ms": (t_led - last_w) * 1000,
            "commit_ms": (t_flip - t_led) * 1000,
            "flip_seen_ms": (max(x for x in flip_seen[1:] if x) - t_flip) *
            1000 if k > 1 else 0,
            "last_join_to_last_read_ms": (last - last_w) * 1000,
            "etcd_cpu_ms": c1 - c0, "curl_rss_kib": curl_mem["VmRSS"],
            "curl_anon_kib": curl_mem["RssAnon"]}


# ---- output ----

def med(rows, key):
    v = [r[key] for r in rows if r is not None and key in r]
    return statistics.median(v) if v else None


def fmt(v, prec=1):
    return "n/a" if v is None else f"{v:.{prec}f}"


def failed(rows):
    return sum(1 for r in rows if r is None)


def hexits(rows):
    """Runs that completed the round but where a helper did not exit 0
    within 5 s of the hang-up."""
    return sum(1 for r in rows if r is not None and r.get("ok") != 1)


def table(esv, et):
    head = ("K", "esv-rdzv: last join to last ROUND, ms",
            "etcd: last join to last ROUND, ms",
            "etcd: first join to last ROUND, ms",
            "etcd requests per round", "per node",
            "etcd CPU per round, ms", "helper VmRSS max, MiB",
            "helper RssAnon max, MiB", "failed runs (esv, etcd)")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in KS:
        req = med(et[k], "req")
        rss = max((r["helper_rss_max_kib"] for r in et[k] if r), default=None)
        anon = max((r["helper_anon_max_kib"] for r in et[k] if r),
                   default=None)
        out.append("| " + " | ".join([
            str(k), fmt(med(esv[k], "last_join_to_last_done_ms"), 2),
            fmt(med(et[k], "last_join_to_last_done_ms")),
            fmt(med(et[k], "first_join_to_last_done_ms")),
            fmt(req, 0), fmt(None if req is None else req / k),
            fmt(med(et[k], "etcd_cpu_ms"), 0),
            fmt(None if rss is None else rss / 1024, 2),
            fmt(None if anon is None else anon / 1024, 2),
            f"{failed(esv[k])}, {failed(et[k])} of {RUNS}" +
            (f" (+{hexits(et[k])} with a helper not gone in 5 s)"
             if hexits(et[k]) else "")]) + " |")
    return "\n".join(out)


def breakdown(et):
    head = ["K"] + [f"{m}" for m in METHODS] + ["Watch messages sent",
                                                "all"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in KS:
        out.append("| " + " | ".join(
            [str(k)] + [fmt(med(et[k], "req_" + m), 0) for m in METHODS] +
            [fmt(med(et[k], "watch_msgs"), 0), fmt(med(et[k], "req"), 0)])
            + " |")
    return "\n".join(out)


def raw(esv, et):
    out = []
    for name, d, keys in (
            ("esv-rdzv", esv, ["last_join_to_last_done_ms",
                               "join_spread_ms", "done_spread_ms"]),
            ("etcd", et, ["last_join_to_last_done_ms",
                          "first_join_to_last_done_ms", "join_spread_ms",
                          "done_spread_ms", "etcd_cpu_ms", "req",
                          "helper_rss_max_kib", "helper_rss_median_kib",
                          "helper_hwm_max_kib", "helper_anon_max_kib",
                          "helper_pss_max_kib", "helper_exit_max_ms",
                          "helpers_failed", "drain_s"])):
        for k, rows in d.items():
            for key in keys:
                out.append(f"{name:8} K={k:<3} {key:28} " + " ".join(
                    "fail" if r is None else fmt(r.get(key), 2)
                    for r in rows))
    return "\n".join(out)


def stats(v):
    if not v:
        return "n/a"
    return (f"median {statistics.median(v):.0f} ms, max {max(v):.0f} ms, "
            f"min {min(v):.0f} ms ({len(v)} samples)")


def verdicts(esv, et, loss, leave):
    out = []
    rows = et.get(TARGET_K)
    m = med(rows, "last_join_to_last_done_ms") if rows else None
    worst = max((r["last_join_to_last_done_ms"] for r in rows or []
                 if r is not None), default=None)
    out.append(f"| {TARGET_K} nodes complete a round within "
               f"{TARGET_MS:.0f} ms of the last join (one-member etcd) | "
               f"{'n/a' if m is None else 'yes' if m <= TARGET_MS else 'no'}"
               f" (median {fmt(m)} ms, worst {fmt(worst)} ms) |")
    mx = max(loss) if loss else None
    out.append(f"| node loss (kill -9) noticed within the TTL + 100 ms "
               f"({TARGET_LOSS_MS} ms) | "
               f"{'n/a' if mx is None else 'yes' if mx <= TARGET_LOSS_MS else 'no'}"
               f" (kill to RESTART: {stats(loss)}) |")
    mx = max(leave) if leave else None
    out.append(f"| a clean leave noticed within {TARGET_LEAVE_MS:.0f} ms | "
               f"{'n/a' if mx is None else 'yes' if mx <= TARGET_LEAVE_MS else 'no'}"
               f" (hang-up to RESTART: {stats(leave)}) |")
    hwm = max((r["helper_hwm_max_kib"] for k in KS for r in et[k] if r),
              default=None)
    anon = max((r["helper_anon_max_kib"] for k in KS for r in et[k] if r),
               default=None)
    out.append(f"| no esv process above 8 MiB (esv-rdzv-etcd) | "
               f"{'n/a' if hwm is None else 'yes' if hwm <= TARGET_KIB else 'no'}"
               f" (VmHWM max {fmt(None if hwm is None else hwm / 1024, 2)} "
               f"MiB; RssAnon max "
               f"{fmt(None if anon is None else anon / 1024, 2)} MiB) |")
    return "| target | met |\n|---|---|\n" + "\n".join(out)


began = time.strftime("%Y-%m-%d %H:%M %Z")
load_before = loadavg()
t_start = time.monotonic()
phases = []


def phase(name, fn, *args):
    t = time.monotonic()
    r = fn(*args)
    phases.append(f"{name} {time.monotonic() - t:.0f} s")
    print(f"rdzv_etcd.sh: {phases[-1]}", file=sys.stderr)
    return r


etcd = phase("etcd start", Etcd)
try:
    ver = subprocess.run([ETCD, "--version"], capture_output=True,
                         text=True).stdout.split("\n")[0]
    esv, et, warns = phase("rounds", rounds, etcd)
    loss, loss_ka, leave, live_warns = phase("liveness", liveness, etcd)
    fl = phase("floor", lambda: [floor(etcd, k) for k in KS]) \
        if FLOOR else []
finally:
    etcd.stop()
u = os.uname()
print(f"rendezvous on etcd: {began}, {u.nodename}, {os.cpu_count()} cpus, "
      f"Linux {u.release}; total {time.monotonic() - t_start:.0f} s "
      f"({', '.join(phases)})")
print(f"load average (1, 5, 15 min) before: {load_before}, after: "
      f"{loadavg()}")
print(f"etcd: {ver}, one member, --heartbeat-interval 50 "
      f"--election-timeout 500, data on {fstype(WORK)}")
print(f"helper: {HELPER} (built "
      f"{time.strftime('%Y-%m-%d %H:%M %Z', time.localtime(os.stat(HELPER).st_mtime))}),"
      f" --lease-ttl {ROUND_TTL} for rounds, {LIVE_TTL} for liveness")
print(f"median of {RUNS} runs per K and backend\n")
print(table(esv, et))
print("\netcd requests per round (gRPC calls handled; the JSON gateway "
      "makes one per HTTP request, a watch one per stream), by method:\n")
print(breakdown(et))
print()
print(verdicts(esv, et, loss, leave))
print(f"\nnode loss, the victim's last keep-alive (or grant) sent to etcd, "
      f"to RESTART: {stats(loss_ka)}")
if fl:
    print("\nfloor: the etcd work of a round in esv-rdzv-etcd's design with "
          "nothing decided: a curl watching the job (the leader) and K-1 "
          "watching its h/ (the followers); K join transactions from 16 "
          "connections; the places in writes of 100 and the flip once the "
          "leader's watch has every join; each follower's place read "
          "(serializable) when its watch brings the flip:\n")
    print("| K | joins took, ms | last join to the leader's watch having "
          "all, ms | places and flip, ms | flip to the last follower's "
          "watch, ms | last join to the last place read, ms | etcd CPU, ms "
          "| a curl's VmRSS / RssAnon, MiB |\n|---|---|---|---|---|---|---|---|")
    for f in fl:
        if f is not None:
            print(f"| {f['k']} | {f['joins_ms']:.0f} | {f['led_ms']:.0f} | "
                  f"{f['commit_ms']:.0f} | {f['flip_seen_ms']:.0f} | "
                  f"{f['last_join_to_last_read_ms']:.0f} | "
                  f"{f['etcd_cpu_ms']:.0f} | "
                  f"{f['curl_rss_kib'] / 1024:.2f} / "
                  f"{f['curl_anon_kib'] / 1024:.2f} |")
print("\nper-run values:")
print(raw(esv, et))
for k, kinds in warns.items():
    for kind, n in sorted(kinds.items(), key=lambda x: -x[1]):
        print(f"helpers' warnings K={k}: {n} x {kind}")
for kind, n in live_warns.items():
    print(f"helpers' warnings, liveness: {n} x {kind}")
for n in notes:
    print("note:", n)
PY
