#!/usr/bin/env python3
"""The build refuses a wrong arrow: a header of an executable included from
lib/, or one component's header included from another's code.

For a source file of each component, its own compile command (from the
build's compile_commands.json) is run on a one-line file that includes a
header the component must not see, with the component's directory searched
first for quoted includes, as for the real file.  Each must fail with "No
such file"; a header it may see must compile, so that the check can tell.
And no source of the product includes a header by a path, which would
climb over the walls the include directories draw.
Usage: arrows.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

build, src = (os.path.abspath(a) for a in sys.argv[1:3])

# component's sample source -> (headers it may include, headers it must not)
RULES = {
    "lib/msg.c": (["msg.h"], ["supervise.h", "config.h", "rdzv.h",
                              "rdzv_server.h", "store.h",
                              "healthd.h", "timers.h", "esv-timer.h"]),
    "healthd/view.c": (["healthd.h", "jobstatus.h"],
                       ["supervise.h", "config.h", "rdzv.h", "rdzv_server.h",
                        "timers.h", "watchdogd.h"]),
    "watchdog/timers.c": (["timers.h", "msg.h", "watchdogd.h"],
                          ["supervise.h", "rdzv.h", "healthd.h", "config.h",
                           "rdzv_server.h"]),
    "rendezvous/server/rdzv_job.c": (["rdzv_server_int.h", "rdzvproto.h"],
                                     ["rdzv.h", "rdzv_host.h", "supervise.h",
                                      "healthd.h"]),
    "rendezvous/client/rdzv.c": (["rdzv.h", "rdzvproto.h"],
                                 ["rdzv_server.h", "supervise.h", "config.h",
                                  "healthd.h"]),
    "supervisor/main.c": (["supervise.h", "config.h", "rdzv.h", "msg.h",
                           "group.h", "control.h", "helpers.h",
                           "contain.h", "report.h", "spawning.h"],
                          ["rdzv_server.h", "healthd.h", "timers.h",
                           "watchdogd.h", "store.h"]),
    # esv-supervise's parts (supervisor/README.md): each sees the headers
    # of what it may call.  Nothing but main.c and control/ reaches the
    # state machine (group.h); only main.c reaches control/.
    "supervisor/core/fsm.c": (["fsm.h", "backoff.h", "ctlschema.h"],
                         ["group.h", "config.h", "report.h", "contain.h",
                          "helpers.h", "control.h", "spawning.h"]),
    "supervisor/config/config.c": (["config.h", "trust.h", "subst.h"],
                                   ["supervise.h", "group.h", "report.h",
                                    "spawning.h", "contain.h", "helpers.h",
                                    "control.h", "fsm.h"]),
    "supervisor/spawn/output.c": (["spawning.h", "supervise.h", "config.h",
                                   "linebuf.h", "workerenv.h"],
                                  ["group.h", "control.h", "helpers.h",
                                   "contain.h", "guardproto.h"]),
    "supervisor/contain/cgroup.c": (["contain.h", "supervise.h",
                                     "guardproto.h"],
                                    ["group.h", "control.h", "helpers.h"]),
    "supervisor/report/report.c": (["report.h", "supervise.h", "failure.h",
                                    "statusrec.h", "contain.h"],
                                   ["group.h", "control.h", "helpers.h",
                                    "rdzv_server.h", "healthd.h"]),
    "supervisor/helpers/run_healthd.c": (["helpers.h", "report.h",
                                          "supervise.h"],
                                         ["group.h", "control.h",
                                          "contain.h", "healthd.h",
                                          "watchdogd.h", "store.h"]),
    "supervisor/state/group.c": (["group.h", "contain.h", "helpers.h",
                                  "report.h", "spawning.h", "fsm.h"],
                                 ["control.h", "rdzv_server.h", "healthd.h",
                                  "store.h"]),
    "supervisor/control/control.c": (["control.h", "group.h", "report.h",
                                      "contain.h"],
                                     ["helpers.h", "rdzv_server.h",
                                      "healthd.h"]),
    # The client programs speak to a supervisor through its files only.
    "supervisor/clients/esv-ctl.c": (["ctldir.h", "jobstatus.h", "fifodir.h"],
                                     ["supervise.h", "config.h", "fsm.h",
                                      "group.h", "report.h", "control.h",
                                      "spawning.h", "contain.h", "helpers.h"]),
    "supervisor/clients/esv-run.c": (["msg.h", "progpath.h"],
                                     ["supervise.h", "config.h", "fsm.h",
                                      "group.h", "report.h", "control.h",
                                      "spawning.h", "contain.h", "helpers.h"]),
    "store/store.c": (["store.h", "msg.h", "loop.h"],
                      ["supervise.h", "config.h", "rdzv.h", "rdzv_server.h",
                       "healthd.h", "timers.h"]),
    "store/store_cmd.c": (["store_int.h", "store.h", "msg.h"],
                          ["supervise.h", "config.h", "rdzv.h",
                           "rdzv_server.h", "healthd.h", "timers.h"]),
    "store/peers.c": (["peers.h", "sockdiag.h", "msg.h"],
                      ["supervise.h", "config.h", "rdzv.h", "rdzv_server.h",
                       "healthd.h", "timers.h"]),
    "rendezvous/server/rdzv_wire.c": (["rdzv_server_int.h", "rdzvproto.h"],
                                      ["rdzv.h", "rdzv_host.h", "supervise.h",
                                       "healthd.h"]),
    # The esv and etcd backends' layers (esv_int.h) see the client's
    # headers, never the server's insides.
    "rendezvous/client/esv_lease.c": (["esv_int.h", "rdzv.h", "rdzvproto.h"],
                                      ["rdzv_server.h", "rdzv_server_int.h",
                                       "supervise.h", "healthd.h"]),
    "rendezvous/client/freeport.c": (["freeport.h", "lookup.h"],
                                     ["rdzv_server.h", "supervise.h",
                                      "config.h", "healthd.h"]),
    # esv-rdzv-etcd sees lib/ and its own folder: not the client it
    # stands behind (rdzv.h), not the server.
    "rendezvous/etcd/node_keys.c": (["node_int.h", "node.h", "etcd.h",
                                     "rdzvproto.h"],
                                    ["rdzv.h", "rdzv_host.h", "rdzv_server.h",
                                     "rdzv_server_int.h", "supervise.h",
                                     "healthd.h", "store.h"]),
    "watchdog/workers.c": (["watchdogd.h", "timers.h", "msg.h"],
                           ["supervise.h", "rdzv.h", "healthd.h", "config.h",
                            "rdzv_server.h"]),
}

OPTIONAL = {"rendezvous/etcd/node_keys.c"}

with open(os.path.join(build, "compile_commands.json")) as f:
    commands = json.load(f)


def command_for(rel):
    want = os.path.realpath(os.path.join(src, rel))
    for c in commands:
        path = os.path.realpath(os.path.join(c["directory"], c["file"]))
        # The executable's own compile, not a unit test's copy of it.
        if path == want and "tests/" not in c["command"].split(" -o ")[1]:
            return c
    return None


failures = 0
checked = 0
with tempfile.TemporaryDirectory() as tmp:
    probe = os.path.join(tmp, "probe.c")
    for rel, (allowed, forbidden) in RULES.items():
        c = command_for(rel)
        # Built only where libcurl is (meson's etcd option).
        if c is None and rel in OPTIONAL:
            continue
        if c is None:
            print("arrows: no compile command for %s" % rel)
            failures += 1
            continue
        argv = shlex.split(c["command"])
        # Drop the output, dependency and source arguments; compile the probe.
        out = []
        skip = False
        for a in argv:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MQ", "-MF", "-c"):
                skip = True
                continue
            if a in ("-MD",) or a.startswith("-fdiagnostics-color"):
                continue
            out.append(a)
        out[1:1] = ["-iquote", os.path.dirname(os.path.join(src, rel))]
        out += ["-fsyntax-only", "-c", probe]
        for header, want_ok in [(h, True) for h in allowed] + \
                [(h, False) for h in forbidden]:
            with open(probe, "w") as p:
                p.write('#include "%s"\n' % header)
            r = subprocess.run(out, cwd=c["directory"], capture_output=True,
                               text=True)
            checked += 1
            ok = r.returncode == 0
            # Not found itself: a header it includes missing is no proof.
            if ok != want_ok or (not ok and "%s: No such file" % header
                                 not in r.stderr):
                failures += 1
                print("arrows: %s including %s: %s" % (
                    rel, header, "compiles, and must not" if ok else
                    "fails: " + r.stderr.strip().splitlines()[0]
                    if r.stderr.strip() else "fails"))

# A wall is climbed by a path ("../state/group.h", "state/group.h"): the
# product's sources name a header by its name only, and find it through
# the include directories their build gives them.
for top in ("lib", "supervisor", "rendezvous", "watchdog", "healthd", "store"):
    for dirpath, _, names in os.walk(os.path.join(src, top)):
        for name in names:
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    s = line.strip()
                    if s.startswith("#") and "include" in s and '"' in s:
                        inc = s.split('"')[1]
                        checked += 1
                        if "/" in inc:
                            failures += 1
                            print("arrows: %s:%d: includes \"%s\" by a path"
                                  % (os.path.relpath(path, src), lineno, inc))
print("arrows: %d includes tried, %d wrong" % (checked, failures))
sys.exit(1 if failures else 0)
