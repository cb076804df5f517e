"""T13 / H05: a data-dependent shape: rank 0 reduces 100 rows, rank 1 200 rows, in one
all_reduce. Without DETAIL, gloo aborts the process that receives more bytes than it expects.
Set TORCH_DISTRIBUTED_DEBUG=DETAIL to have PyTorch compare shapes first.

    torchrun --standalone --nproc_per_node 2 collective_shape_mismatch.py
"""
import torch
import torch.distributed as dist

from common import init

rank, world = init()
rows = 100 if rank == 0 else 200  # e.g. the per-rank count of valid samples
embeddings = torch.ones(rows, 2560)
dist.all_reduce(embeddings)
dist.destroy_process_group()
