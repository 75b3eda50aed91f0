"""Readers of what tests/integration/workers/worker.sh records, for the checks
of test_env_contract.sh and test_static_ranks.sh."""
import os

def environ(path):
    """The NUL-separated dump of a worker as a dict."""
    out = {}
    for item in open(path, "rb").read().split(b"\0"):
        if item:
            k, _, v = item.decode().partition("=")
            out[k] = v
    return out

def argv(path):
    return [a.decode() for a in open(path, "rb").read().split(b"\0")[:-1]]

def kv(path):
    out = {}
    for line in open(path):
        k, _, v = line.rstrip("\n").partition("=")
        out[k] = v
    return out

def dumps(d, kind):
    """{local_rank: path} of DUMP_DIR/kind.R.0"""
    return {int(n.split(".")[1]): os.path.join(d, n)
            for n in os.listdir(d) if n.startswith(kind + ".") and n.endswith(".0")}

def check(cond, *msg):
    if not cond:
        raise SystemExit(" ".join(str(m) for m in msg))
