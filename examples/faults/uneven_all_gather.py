"""H06: per-rank sizes differ in an all_gather (rank r holds 2 + r predictions).

    torchrun --standalone --nproc_per_node 2 uneven_all_gather.py
"""
import torch
import torch.distributed as dist

from common import init

rank, world = init()
predictions = torch.ones(2 + rank)
gathered = [torch.zeros(2 + other) for other in range(world)]
dist.all_gather(gathered, predictions)
dist.destroy_process_group()
