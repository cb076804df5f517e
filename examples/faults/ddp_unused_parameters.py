"""T29: a two-headed model whose loss uses only the second head, so DDP never receives the first
head's gradients.

    torchrun --standalone --nproc_per_node 2 ddp_unused_parameters.py
"""
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(10, 10, bias=False)
        self.b = nn.Linear(10, 1, bias=False)

    def forward(self, x):
        return self.a(x), self.b(x)


rank, world = init()
model = DDP(TwoHeads())
for step in range(3):
    outputs = model(torch.randn(4, 10))
    outputs[1].sum().backward()
