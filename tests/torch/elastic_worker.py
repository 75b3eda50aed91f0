# An ordinary torch program under an elastic job: env:// with torch's
# defaults, a gloo all_reduce of rank+1 checked against the world size,
# one record line per rank and attempt in $REC, then all_reduce every
# 0.2 s until $RZ_STOP_FLAG appears on any rank (so that all ranks leave
# together).  A lost peer makes all_reduce raise: the worker fails, as a
# real training step would.
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def main():
    e = os.environ
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([rank + 1])
    dist.all_reduce(t)
    ok = int(t.item() == world * (world + 1) // 2)
    with open(e["REC"], "a") as f:
        f.write(f"node={e.get('RZ_NODE', '?')} rank={rank} world={world} "
                f"group_rank={e['GROUP_RANK']} sum={t.item()} ok={ok} "
                f"restart={e['TORCHELASTIC_RESTART_COUNT']}\n")
    stop = e["RZ_STOP_FLAG"]
    while True:
        flag = torch.tensor([1 if os.path.exists(stop) else 0])
        dist.all_reduce(flag)
        if flag.item() > 0:
            break
        time.sleep(0.2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
