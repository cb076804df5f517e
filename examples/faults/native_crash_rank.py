"""S08: rank 1 crashes in native code (a custom extension reading a freed or NULL pointer) in its
third step, with no Python error at all.

    torchrun --standalone --nproc_per_node 2 native_crash_rank.py
"""
import ctypes

import torch
import torch.distributed as dist

from common import init


def fused_op(x, rank, step):
    if rank == 1 and step == 3:
        ctypes.string_at(0x10, 8)  # the extension's bug
    return x * 2


rank, world = init()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(6):
    loss = fused_op(model(torch.randn(16, 32)), rank, step).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.destroy_process_group()
