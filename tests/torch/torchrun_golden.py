"""esv-run's command line against torchrun's own parser (torch.distributed.run
of the torch that /usr/bin/python3 imports): every option torchrun has is
taken by esv-run with the same arity, in each of torch's spellings, with
the same default and from the same PET_* variable, unless DIFFERS says why
not.  esv-supervise --torchrun --dry-run prints what it read.
Usage: torchrun_golden.py ESV_RUN"""
import argparse
import os
import subprocess
import sys

import torch
import torch.distributed.run as torchrun

ESV_RUN = sys.argv[1]

# torch's dest -> esv's key (esv-job.ini(5)), where the names differ.
KEY = {"rdzv_id": "run_id"}

# A value each option takes, for the checks of arity and PET_*.
SAMPLE = {"nnodes": "2", "nproc_per_node": "3", "rdzv_backend": "static",
          "rdzv_endpoint": "127.0.0.1:29555", "rdzv_id": "golden",
          "rdzv_conf": "timeout=5", "max_restarts": "4",
          "monitor_interval": "2", "start_method": "fork", "role": "trainer",
          "log_dir": "/tmp/esv-golden-logs", "redirects": "3", "tee": "1",
          "node_rank": "1", "master_addr": "10.1.2.3", "master_port": "29511",
          "local_addr": "127.0.0.1", "logs_specs": "golden",
          "event_log_handler": "console", "numa_binding": "socket",
          "signals_to_handle": "SIGTERM,SIGUSR1",
          "local_ranks_filter": "0", "log_line_prefix_template": "x"}

# What an option needs beside it to be valid (a rank below the node count).
CONTEXT = {"node_rank": ["--nnodes", "2"]}
CONTEXT_ENV = {"node_rank": {"PET_NNODES": "2"}}

# Defaults that differ on purpose, and why.
DIFFERS = {
    "monitor_interval": "esv is event-driven: the value is accepted and "
                        "ignored (esv's own figure is 0.1)",
    "start_method": "workers are always exec'd: accepted and ignored, "
                    "empty unless given",
    "log_dir": "torch makes a temporary directory; esv's logs go to "
               "JOBDIR/logs unless given (printed at start)",
    "rdzv_id": "--standalone and esv-run's job directory aside, the same "
               "'none'",
}
# Options esv does not take yet, and why (none: newer torch's plugin points,
# --logs-specs and --event-log-handler, and --numa-binding are taken and
# noted, not applied).
MISSING = {}


def dry_run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([ESV_RUN, "--dry-run"] + args, env=e,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return dict(l.split("=", 1) for l in r.stdout.splitlines() if "=" in l), ""


def norm(dest, v):
    """torch's default as esv prints it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    return str(v)


def same(dest, v):
    """How esv prints a value it took: --nnodes N is N:N."""
    if dest == "nnodes" and ":" not in v:
        return f"{v}:{v}"
    return v


failures = []
checked = 0
parser = torchrun.get_args_parser()
base, err = dry_run(["/bin/true"])
if base is None:
    sys.exit("esv-run --dry-run failed: " + err)
for a in parser._actions:
    if not a.option_strings or isinstance(a, argparse._HelpAction):
        continue
    dest = a.dest
    if dest in MISSING:
        continue
    key = KEY.get(dest, dest)
    flag = a.nargs == 0
    sample = None if flag else SAMPLE.get(dest)
    if not flag and sample is None:
        failures.append(f"{dest}: no sample value in this test")
        continue
    # Every spelling torch takes, and its other one (- and _).
    spellings = set(a.option_strings)
    for o in list(spellings):
        if o.startswith("--"):
            spellings.add("--" + o[2:].replace("_", "-"))
            spellings.add("--" + o[2:].replace("-", "_"))
    for o in sorted(spellings):
        args = CONTEXT.get(dest, []) + ([o] if flag else [o, sample])
        got, err = dry_run(args + ["/bin/true", "--x"])
        checked += 1
        if got is None:
            failures.append(f"{o}: refused: {err}")
            continue
        want = "true" if flag else same(dest, sample)
        if key not in got:
            failures.append(f"{o}: esv has no key {key}")
        elif got[key] != want:
            failures.append(f"{o} {'' if flag else sample}: {key}={got[key]!r}, wanted {want!r}")
        if got.get("command") != "/bin/true --x":
            failures.append(f"{o}: arity: the command became {got.get('command')!r}")
    # The PET_ variable torch reads for it.
    pet = "PET_" + dest.upper()
    env = dict(CONTEXT_ENV.get(dest, {}))
    env[pet] = "1" if flag else sample
    got, err = dry_run(["/bin/true"], env)
    checked += 1
    if got is None:
        failures.append(f"{pet}: refused: {err}")
    elif got.get(key) != ("true" if flag else same(dest, sample)):
        failures.append(f"{pet}={'1' if flag else sample}: {key}={got.get(key)!r}")
    # The default.
    if dest not in DIFFERS and base.get(key) != norm(dest, a.default):
        failures.append(f"{dest}: default {base.get(key)!r}, torch's {a.default!r}")

for f in failures:
    print("torchrun_golden: " + f)
print(f"torchrun_golden: torch {torch.__version__}: {checked} checks, "
      f"{len(failures)} wrong")
sys.exit(1 if failures else 0)
