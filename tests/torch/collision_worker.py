# The all_reduce program with @record and a short torch timeout, so that
# a port collision ends up in the failure summary and no rank can wait
# on the store for torch's default 30 minutes.
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=10))
    t = torch.tensor([dist.get_rank() + 1])
    dist.all_reduce(t)
    print(f"esv-test: sum={t.item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
