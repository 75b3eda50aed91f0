# An ordinary torch program, unaware of esv: env:// rendezvous with
# torch's defaults (worker rank 0 hosts the TCPStore on MASTER_PORT),
# one gloo all_reduce of rank+1, checked and printed.
import os

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    world = dist.get_world_size()
    t = torch.tensor([rank + 1])
    dist.all_reduce(t)
    e = os.environ
    print(f"esv-test: RANK={e['RANK']} LOCAL_RANK={e['LOCAL_RANK']} "
          f"WORLD_SIZE={e['WORLD_SIZE']} GROUP_RANK={e['GROUP_RANK']} "
          f"MASTER_PORT={e['MASTER_PORT']} get_rank={rank} "
          f"get_world_size={world} sum={t.item()}", flush=True)
    assert t.item() == world * (world + 1) // 2, t.item()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
