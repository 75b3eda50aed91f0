#!/usr/bin/env python3
"""No product source file longer than LIMIT lines unless its head comment
says why: a file that long usually holds several concerns, and a reader
should be told when it does not.  The reason is a line of the first
comment of the file that begins with "Long:" (after the comment's " * ").
Unit tests (tests/) and fuzz targets are not the product.
Usage: lengths.py SOURCE_DIR [LIMIT]
"""
import os
import re
import sys

src = os.path.abspath(sys.argv[1])
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 800
PRODUCT = ("lib", "supervisor", "rendezvous", "store", "watchdog", "healthd")

bad = 0
for top in PRODUCT:
    for d, _, files in os.walk(os.path.join(src, top)):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(d, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            n = text.count("\n")
            if n <= limit:
                continue
            head = re.match(r"\s*/\*.*?\*/", text, re.S)
            if head and re.search(r"^\s*\*?\s*Long:", head.group(0), re.M):
                continue
            print(f"{os.path.relpath(path, src)}: {n} lines, over {limit}, "
                  "and its head comment gives no reason (a \"Long:\" line)")
            bad += 1
sys.exit(1 if bad else 0)
