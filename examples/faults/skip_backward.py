"""H11: a per-rank skip of a bad batch (`continue` before backward) in DDP: the ranks' gradient
all_reduce counts diverge, and the rank that finishes first leaves the other waiting.

    torchrun --standalone --nproc_per_node 2 skip_backward.py
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init

rank, world = init(timeout_s=10)
model = DDP(torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(4):
    loss = model(torch.randn(8, 16)).sum()
    if rank == 1 and step == 1:
        continue  # "NaN loss, skip this batch"
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
dist.destroy_process_group()
