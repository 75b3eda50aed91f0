"""Run Debian's torch 1.13 torchrun on Python 3.11 without editing it.

Std.from_str in 1.13 looks the value up by iterating over the IntFlag
members; Python 3.11 skips the aliases NONE and ALL there, so "0" and
"3" parse to None and every launch dies in to_map.  Replacing the classmethod on the class
is enough: run.py looks it up through the class at call time.

Usage: python3 torchrun_shim.py <torchrun arguments>
"""
import re
import sys

from torch.distributed.elastic.multiprocessing import api
from torch.distributed.run import main

_VALUE = re.compile(r"^[0123]$")
_MAPPING = re.compile(r"^(\d:[0123],)*(\d:[0123])$")


def _from_str(cls, vm):
    if _VALUE.match(vm):
        return cls(int(vm))
    if _MAPPING.match(vm):
        return {int(i): cls(int(v))
                for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} does not match: <{_VALUE.pattern}> or "
                     f"<{_MAPPING.pattern}>")


api.Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    sys.argv[0] = "torchrun"
    main()
