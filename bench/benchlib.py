"""What the bench scripts read off /proc, and the workers' stamps, in one
place."""
import os


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def status_kib(pid):
    """VmHWM (peak RSS), VmRSS and RssAnon of pid, in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k = line.split(":")[0]
            if k in ("VmHWM", "VmRSS", "RssAnon"):
                out[k] = int(line.split()[1])
    return out


def sched_ns(pid):
    """(on-CPU, run-queue wait) of every thread of pid so far, in ns;
    None when pid is gone."""
    cpu = wait = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                v = f.read().split()
            cpu += int(v[0])
            wait += int(v[1])
        except OSError:
            pass
    return cpu, wait


def cpu_ns(pid):
    """On-CPU time of every thread of pid so far (schedstat), in ns."""
    s = sched_ns(pid)
    return None if s is None else s[0]


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def fstype(path):
    """Type of the file system holding path: the longest mount prefix."""
    best, kind = "", "unknown"
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            mnt = p[1].replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and \
                    len(mnt) >= len(best):
                best, kind = mnt, p[2]
    return kind


def read_stamps(path):
    """[(rank, attempt, ns, event, pid)] from a stamp_worker stamps file."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 5:
                    out.append((p[0], int(p[1]), int(p[2]), p[3], int(p[4])))
    except FileNotFoundError:
        pass
    return out
