#!/usr/bin/python3
"""Fault injection against a job that restarts in a loop.

Each iteration starts esv-supervise (--standalone: a private esv-rdzv;
--file-timer: esv-watchdogd; --health-port 0: esv-healthd; the guardian)
on a fresh JOBDIR with workers that fail again and again, injects one
fault at a random moment, ends the job, and checks what esv promises:

  - no process of the job outlives it (zombies aside), within a bound;
  - never two live workers of this node with the same RANK (sampled every
    few ms while the job runs);
  - every state file parses (esv-ctl status --json names no bad file),
    events.jsonl has no torn line, failure.json parses if present;
  - the job reaches a documented end: exit 0, 1, 100 or 111, or the
    SIGKILL the test sent.

Faults: kill -9 of the supervisor, the guardian, esv-watchdogd,
esv-healthd or esv-rdzv, of esv-stored in a job with the agent's store,
or of esv-rdzv-etcd in a job whose rendezvous is on etcd (a member of its
own, started once for the run; the fault is skipped without /usr/bin/etcd
or without the helper); SIGSTOP/SIGCONT of
the supervisor, shorter than its rendezvous lease or past it; a full file
system under JOBDIR and the logs (a small tmpfs, root only); few file
descriptors (RLIMIT_NOFILE); and workers that ignore SIGTERM, that leave a
double-forked, setsid daemon behind, or that stop themselves.

Usage: faults.py [-n ITERATIONS] [-s SEED] [-f FAULT[,FAULT...]] [-v]
ESV_BIN_DIR names the directory of esv-supervise and esv-ctl.
Exit 0 if every iteration held, 1 otherwise (each broken promise is one
line on stderr, with the seed and iteration to replay it), 77 if nothing
could run.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import socket
import threading
import time
import urllib.request

BIN = os.environ.get("ESV_BIN_DIR", "build/supervisor")
SUP = os.path.join(BIN, "esv-supervise")
CTL = os.path.join(BIN, "esv-ctl")
HELPER = os.path.join(BIN, "..", "rendezvous", "esv-rdzv-etcd")
KILLS = ["supervisor", "guardian", "esv-watchdogd", "esv-healthd", "esv-rdzv",
         "esv-rdzv-etcd", "esv-stored"]
FAULTS = ["kill:" + k for k in KILLS] + [
    "sigstop", "sigstop-long", "fulldisk", "fewfds", "ignoreterm", "daemon",
    "stopped"]
# The default rendezvous lease (esv-supervise(8), Leases): a stall past it
# leaves the guardian to kill the workers, and the supervisor to fence and
# join again when it goes on.
LEASE_S = 1.5
# How long after the supervisor ends the job's processes may linger: the
# guardian's sweep (SIGTERM to a private esv-rdzv, SIGKILL 1 s later), a
# SIGKILL reaching a stopped worker, and esv-healthd, which answers 503
# for 3 s after its supervisor died (esv-healthd(8)) before it exits.
LINGER_S = 8.0

WORKER = r"""#!/bin/sh
# Rank 0 fails after a moment; the others wait, as FAULT_KIND says.
case "$FAULT_KIND" in
ignoreterm) trap '' TERM ;;
daemon) [ "$LOCAL_RANK" = 1 ] && setsid sh -c 'sleep 120' </dev/null >/dev/null 2>&1 & ;;
stopped) [ "$LOCAL_RANK" = 1 ] && kill -STOP $$ ;;
chatty) i=0; while [ $i -lt 300 ]; do echo "rank $RANK line $i of a worker that talks a lot"; i=$((i+1)); done ;;
esac
if [ "$LOCAL_RANK" = 0 ]; then
	sleep "0.$(( $$ % 4 ))"
	exit 1
fi
exec sleep 60
"""


class Broken(Exception):
    pass


class Etcd:
    """One etcd member on free loopback ports, data under root; started
    on first use, killed at the end of the run."""

    BIN = os.environ.get("ESV_ETCD", "/usr/bin/etcd")

    def __init__(self, root):
        self.root = root
        self.p = None
        self.url = None

    def available(self):
        return os.access(self.BIN, os.X_OK) and os.access(HELPER, os.X_OK)

    def start(self):
        if self.p is not None:
            return self.url
        ports = []
        for _ in range(2):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                ports.append(s.getsockname()[1])
        self.url = "http://127.0.0.1:%d" % ports[0]
        peer = "http://127.0.0.1:%d" % ports[1]
        log = open(os.path.join(self.root, "etcd.log"), "wb")
        self.p = subprocess.Popen(
            [self.BIN, "--name", "faults", "--data-dir",
             os.path.join(self.root, "etcd.data"), "--listen-client-urls",
             self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls",
             peer, "--initial-cluster", "faults=" + peer,
             "--heartbeat-interval", "50", "--election-timeout", "500"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health",
                                            timeout=2) as r:
                    if json.load(r).get("health") == "true":
                        return self.url
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise RuntimeError("etcd did not become healthy in 30 s")

    def stop(self):
        if self.p is not None:
            self.p.kill()
            self.p.wait()


def tagged(tag):
    """Live processes of the job (their environment holds the tag)."""
    out = []
    needle = ("FAULT_TAG=" + tag).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read()
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        if needle not in env.split(b"\0"):
            continue
        state = stat[stat.rindex(")") + 2]
        if state in "ZX":
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        out.append((int(pid), comm, state))
    return out


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    env = {}
    for kv in raw.split(b"\0"):
        k, _, v = kv.partition(b"=")
        env[k.decode(errors="replace")] = v.decode(errors="replace")
    return env


class Sampler(threading.Thread):
    """Every few ms: the supervisor's children that are workers, by RANK."""

    def __init__(self, sup_pid):
        super().__init__(daemon=True)
        self.sup = sup_pid
        self.stop = False
        self.clash = None
        self.samples = 0

    def run(self):
        while not self.stop and self.clash is None:
            ranks = {}
            for pid in children(self.sup):
                env = environ(pid)
                if "RANK" not in env or "FAULT_TAG" not in env:
                    continue
                st = ""
                try:
                    with open("/proc/%d/stat" % pid) as f:
                        s = f.read()
                    st = s[s.rindex(")") + 2]
                except OSError:
                    continue
                if st in "ZX":
                    continue
                key = env["RANK"]
                if key in ranks:
                    self.clash = "rank %s held by pids %d and %d" % (
                        key, ranks[key], pid)
                ranks[key] = pid
            self.samples += 1
            time.sleep(0.005)


def check_spawn(jobdir, errfile, broken):
    """A worker that could not be started is a recorded failure."""
    err = open(errfile, errors="replace").read()
    if "unable to start it" not in err:
        return
    if not os.path.exists(os.path.join(jobdir, "supervise", "failure.json")):
        broken("a worker could not start, and no failure.json says so")


def check_files(jobdir, broken):
    r = subprocess.run([CTL, "status", "--json", jobdir],
                       capture_output=True, text=True, timeout=30)
    try:
        st = json.loads(r.stdout)
    except ValueError:
        broken("esv-ctl status --json: not JSON (exit %d): %s %s" % (
            r.returncode, r.stdout[:200], r.stderr[:200]))
        return
    for e in st.get("errors", []):
        broken("bad state file: " + e)
    ev = os.path.join(jobdir, "events.jsonl")
    if os.path.exists(ev):
        data = open(ev, "rb").read()
        if data and not data.endswith(b"\n"):
            broken("events.jsonl: no newline at the end")
        for i, line in enumerate(data.split(b"\n")[:-1], 1):
            try:
                json.loads(line)
            except ValueError:
                broken("events.jsonl: line %d torn: %r" % (i, line[:120]))
    fj = os.path.join(jobdir, "supervise", "failure.json")
    if os.path.exists(fj):
        try:
            json.load(open(fj))
        except ValueError as e:
            broken("failure.json: %s" % e)


def find(sup, what):
    """The pid of a component of the job run by the supervisor sup."""
    if what == "supervisor":
        return sup
    for pid in children(sup):
        c = comm(pid)
        if what == "guardian" and c == "esv-supervise":
            env = environ(pid)
            if "RANK" not in env:
                return pid
        elif c == what:
            return pid
    return None


def iteration(args, rng, fault, it, root, etcd):
    problems = []

    def broken(msg):
        problems.append(msg)

    tag = "%d.%d.%d" % (os.getpid(), args.seed, it)
    # Half the jobs serve their workers' store (the default): it must not
    # outlive them whatever the fault (its own kill, always); the others
    # leave it to worker rank 0.
    rdzv = ["--standalone"]
    if fault != "kill:esv-stored" and rng.random() < 0.5:
        rdzv.append("--agent-store=false")
    if fault == "kill:esv-rdzv-etcd":
        if not etcd.available():
            return "skipped (no %s or no %s)" % (etcd.BIN, HELPER)
        rdzv = ["--rdzv-backend", "etcd", "--rdzv-endpoint", etcd.start(),
                "--rdzv-id", "faults-" + tag.replace(".", "-"),
                "--nnodes", "1"]
    base = os.path.join(root, "it%d" % it)
    os.makedirs(base)
    mounted = False
    if fault == "fulldisk":
        if os.geteuid() != 0:
            return "skipped (needs root to mount a tmpfs)"
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700",
                        "tmpfs", base], check=True)
        mounted = True
    jobdir = os.path.join(base, "job")
    os.makedirs(jobdir)
    worker = os.path.join(root, "worker.sh")
    env = dict(os.environ, FAULT_TAG=tag, FAULT_KIND={
        "ignoreterm": "ignoreterm", "daemon": "daemon",
        "stopped": "stopped", "fulldisk": "chatty"}.get(fault, ""))
    # Few fds: enough workers that their pipes cannot all fit.
    nproc = "16" if fault == "fewfds" else "4"
    cmd = [SUP, "--no-python", "--nproc-per-node", nproc,
           "--max-restarts", "100000", "--shutdown-timeout", "1s",
           *rdzv, "--file-timer", "--health-port", "0",
           "--log-dir", os.path.join(base, "logs"), "--redirects", "3",
           jobdir, "--", worker]
    preexec = None
    if fault == "fewfds":
        def preexec():
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
    err = open(os.path.join(root, "it%d.err" % it), "wb")
    p = subprocess.Popen(cmd, env=env, stdout=err, stderr=err,
                         preexec_fn=preexec)
    sampler = Sampler(p.pid)
    sampler.start()
    killed_sup = False
    try:
        at = rng.uniform(0.05, 2.0)
        time.sleep(at)
        if fault.startswith("kill:"):
            what = fault[5:]
            pid = find(p.pid, what)
            if pid is None and p.poll() is None:
                time.sleep(0.3)
                pid = find(p.pid, what)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                killed_sup = what == "supervisor"
        elif fault.startswith("sigstop") and p.poll() is None:
            os.kill(p.pid, signal.SIGSTOP)
            if fault == "sigstop":
                time.sleep(rng.uniform(0.1, 1.0))
            else:
                time.sleep(rng.uniform(1.2 * LEASE_S, 2.5 * LEASE_S))
            os.kill(p.pid, signal.SIGCONT)
        time.sleep(rng.uniform(0.2, 1.5))
        if p.poll() is None and not killed_sup:
            p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            broken("the supervisor did not exit 20 s after SIGTERM")
            p.kill()
            rc = p.wait()
        if not killed_sup and rc not in (0, 1, 100, 111):
            broken("exit status %d is not a documented one" % rc)
        sampler.stop = True
        sampler.join()
        if sampler.clash:
            broken("two workers of one node with one rank: " + sampler.clash)
        deadline = time.monotonic() + LINGER_S
        left = tagged(tag)
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = tagged(tag)
        if left:
            broken("%d process(es) outlived the job: %s" % (
                len(left), ", ".join("%d %s (%s)" % x for x in left[:6])))
            for pid, _, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if not killed_sup:
            check_files(jobdir, broken)
            err.flush()
            check_spawn(jobdir, err.name, broken)
    finally:
        sampler.stop = True
        if p.poll() is None:
            p.kill()
            p.wait()
        for pid, _, _ in tagged(tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        err.close()
        if mounted:
            subprocess.run(["umount", "-l", base])
    if problems:
        raise Broken("; ".join(problems))
    return "ok (%d samples)" % sampler.samples


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--iterations", type=int, default=12)
    ap.add_argument("-s", "--seed", type=int, default=None)
    ap.add_argument("-f", "--faults", default=",".join(FAULTS))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("-k", "--keep", action="store_true",
                    help="keep the work directory")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 30)
    faults = args.faults.split(",")
    for f in faults:
        if f not in FAULTS:
            ap.error("unknown fault %s (known: %s)" % (f, ", ".join(FAULTS)))
    if not os.access(SUP, os.X_OK):
        print("SKIP: faults.py: %s is not built" % SUP, file=sys.stderr)
        return 77
    rng = random.Random(args.seed)
    root = tempfile.mkdtemp(prefix="esv-faults.")
    with open(os.path.join(root, "worker.sh"), "w") as f:
        f.write(WORKER)
    os.chmod(os.path.join(root, "worker.sh"), 0o755)
    print("faults: seed %d, %d iterations, work directory %s" % (
        args.seed, args.iterations, root), file=sys.stderr)
    failed = 0
    etcd = Etcd(root)
    for it in range(args.iterations):
        # Every fault in turn, then at random: the short run covers each.
        fault = faults[it] if it < len(faults) else rng.choice(faults)
        t0 = time.monotonic()
        try:
            verdict = iteration(args, rng, fault, it, root, etcd)
        except Broken as e:
            failed += 1
            verdict = "BROKEN: %s" % e
        line = "faults: %d %-20s %5.1f s %s" % (
            it, fault, time.monotonic() - t0, verdict)
        if verdict.startswith("BROKEN"):
            print(line + " (replay: -s %d -n %d)" % (args.seed, it + 1),
                  file=sys.stderr)
        elif args.verbose:
            print(line, file=sys.stderr)
    etcd.stop()
    print("faults: %d of %d iterations broke a promise" % (
        failed, args.iterations), file=sys.stderr)
    if failed == 0 and not args.keep:
        subprocess.run(["rm", "-rf", root])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
