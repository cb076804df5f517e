"""Ranks started with torch.multiprocessing.spawn, the rank passed in code (no launcher
variables), one DataLoader worker each. With `raise`, rank 1 raises at its second step; with
`early`, before init_process_group, while rank 0 waits there for it; `reversed` is `raise` with
the ranks numbered against spawn's index (rank = world - 1 - index).
Usage: spawn_ranks.py PORT clean|raise|early|reversed"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader


def run(index, world, port, mode):
    rank = world - 1 - index if mode == "reversed" else index
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    if mode == "early" and rank == 1:
        open(f"/nonexistent/shard-{rank}.bin")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    for step, batch in enumerate(DataLoader(torch.ones(8, 2), batch_size=2, num_workers=1)):
        if mode in ("raise", "reversed") and rank == 1 and step == 1:
            raise RuntimeError(f"bad batch on rank {rank}")
        dist.all_reduce(batch)
    print(f"rank {rank} pid {os.getpid()} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(2, sys.argv[1], sys.argv[2]), nprocs=2)
