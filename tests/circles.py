#!/usr/bin/env python3
"""No circle between the product's files: if a.c calls (or reads) a symbol
of b.c, b.c must not reach back to a.c, directly or through others.

The arrows are read from the build itself, not from the text: for each
object of the product (compile_commands.json names its source), `nm`
lists the global symbols it defines and those it needs, and a file needs
another when it uses a symbol the other defines.  Static functions never
make an arrow, so a file is free to be as tangled inside as it likes;
what is checked is what a reader must follow across files.  Unit tests
(tests/) are not the product and are left out.

Every strongly connected set of files larger than one is printed with one
arrow per pair that closes it, and the check fails.
Usage: circles.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import subprocess
import sys

build, src = (os.path.abspath(a) for a in sys.argv[1:3])

with open(os.path.join(build, "compile_commands.json")) as f:
    commands = json.load(f)

# object -> source (relative to src); target dir groups the objects that
# are linked together, so a name defined twice resolves to its own target
objects = {}
for c in commands:
    out = c.get("output") or c["command"].split(" -o ")[1].split()[0]
    srcpath = os.path.relpath(os.path.realpath(os.path.join(c["directory"],
                                                            c["file"])), src)
    if srcpath.startswith("tests/") or srcpath.startswith(".."):
        continue
    if "tests/" in out or out.startswith("tests"):
        continue
    objects[os.path.join(c["directory"], out)] = srcpath


def symbols(obj):
    defined, needed = set(), set()
    res = subprocess.run(["nm", "-g", obj], capture_output=True, text=True,
                         check=True)
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            needed.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRCVWGS":
            defined.add(parts[2])
    return defined, needed


definers = {}		# symbol -> {target dir: source}
needs = {}		# source -> set of symbols
target_of = {}
for obj, srcpath in sorted(objects.items()):
    if not os.path.exists(obj):
        sys.exit(f"circles.py: {obj}: missing; build first")
    d, n = symbols(obj)
    tdir = os.path.dirname(obj)
    target_of[srcpath] = target_of.get(srcpath, set()) | {tdir}
    for s in d:
        definers.setdefault(s, {})[tdir] = srcpath
    needs.setdefault(srcpath, set()).update(n)

edges = {f: {} for f in needs}	# file -> {file: an example symbol}
for f, syms in needs.items():
    for s in sorted(syms):
        by_target = definers.get(s)
        if not by_target:
            continue		# libc, libbsd, ...
        # Prefer the definition linked with f: its own target, else the one
        # shared definition (lib/, a static library).
        own = [by_target[t] for t in target_of[f] if t in by_target]
        cands = own or list(set(by_target.values()))
        for g in cands:
            if g != f:
                edges[f].setdefault(g, s)


def sccs(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


circles = sccs(edges)
for comp in circles:
    print(f"circle of {len(comp)} files: {' '.join(comp)}")
    members = set(comp)
    for f in comp:
        for g, s in sorted(edges[f].items()):
            if g in members:
                print(f"  {f} -> {g} ({s})")
if circles:
    sys.exit(1)
print(f"no circle among {len(edges)} files")
