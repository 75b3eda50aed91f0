"""What the bench scripts read off /proc, in one place."""


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
