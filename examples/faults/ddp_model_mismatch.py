"""T28: the model is built differently per rank (a rank-dependent config), then wrapped in DDP.

    torchrun --standalone --nproc_per_node 2 ddp_model_mismatch.py
"""
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init

rank, world = init()
layers = [nn.Linear(8, 8), nn.Linear(8, 8)] if rank == 0 else [nn.Linear(8, 8)]
model = DDP(nn.Sequential(*layers))
