"""S06: the ranks issue the same two collectives in different orders (rank 1 broadcasts its
config before it reduces the loss; rank 0 after).

    torchrun --standalone --nproc_per_node 2 order_swapped.py
"""
import torch
import torch.distributed as dist

from common import init

rank, world = init(timeout_s=5)
loss = torch.ones(4)
config = torch.zeros(4)
if rank == 0:
    dist.all_reduce(loss)
    dist.broadcast(config, src=0)
else:
    dist.broadcast(config, src=0)
    dist.all_reduce(loss)
dist.destroy_process_group()
