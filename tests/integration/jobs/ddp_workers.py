"""A small DDP job for role tests: each rank reads batches through a DataLoader with two
workers and all-reduces a gradient-like tensor, so launcher, ranks and workers all exist."""
import os
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        time.sleep(0.1)  # keep the workers alive for a few samples of the supervisor
        return torch.full((4,), float(i))


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    loader = DataLoader(Slow(), batch_size=2, num_workers=2)
    for batch in loader:
        total = batch.sum().reshape(1)
        dist.all_reduce(total)
    print(f"rank {rank} pid {os.getpid()} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
