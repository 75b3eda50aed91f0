#!/usr/bin/python3
"""Produce failure_golden_*.txt with real torch 1.13 (Debian python3-torch).

    cd tests/unit && TZ=UTC /usr/bin/python3 failure_golden.py

Each golden is str(ChildFailedError(...)) without its leading newline, plus
a final newline: the block torchrun prints under the traceback.  The error
files and the fixed pid/timestamp/host inputs are the same ones test_failure.c
builds; paths are relative to a scratch directory so they print the same.
"""
import json
import os
import tempfile

from torch.distributed.elastic.multiprocessing import errors
from torch.distributed.elastic.multiprocessing.errors import (
    ChildFailedError, ProcessFailure)

FILES = {
    "err/0.json": {"message": {
        "message": "ValueError: boom from rank 0",
        "extraInfo": {
            "py_callstack": "Traceback (most recent call last):\n"
                            "  File \"train.py\", line 3, in <module>\n"
                            "ValueError: boom from rank 0\n",
            "timestamp": "1700000100"}}},
    "err/2.json": {"message": "plain text\nsecond line",
                   "timestamp": "1700000200"},
    "e/3.json": {"message": "Gr\u00f6\u00dfe \u2260 drei " + "\u00e9" * 30,
                 "timestamp": 1700000001},
}


def failure(local_rank, pid, exitcode, path, ts=None):
    f = ProcessFailure(local_rank=local_rank, pid=pid, exitcode=exitcode,
                       error_file=path)
    if ts is not None:  # no error file: torch takes time.time()
        f.timestamp = ts
    return f


def golden(name, host, failures, out):
    errors.socket.getfqdn = lambda: host
    text = str(ChildFailedError(name, failures))
    with open(out, "w", encoding="utf-8") as fp:
        fp.write(text[1:] + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    os.chdir(tempfile.mkdtemp())
    for path, data in FILES.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fp:
            json.dump(data, fp)
    golden("fail.py", "localhost",
           {1: failure(1, 14139, 3, "err/1.json", 1796224999)},
           os.path.join(here, "failure_golden_single.txt"))
    golden("train.py", "node0.example.com",
           {0: failure(0, 40, 1, "err/0.json"),
            1: failure(1, 42, -9, "err/1.json", 1700000050),
            2: failure(2, 44, 1, "err/2.json")},
           os.path.join(here, "failure_golden_multi.txt"))
    golden("w", "h",
           {2: failure(0, 42, -9, "e/2.json", 1700000000),
            3: failure(1, 43, 1, "e/3.json")},
           os.path.join(here, "failure_golden_narrow.txt"))


if __name__ == "__main__":
    main()
