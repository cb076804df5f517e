"""A training job that runs out of memory at its batch size (tests/integration/
test_batch_advice.py): a real DataLoader of --batch-size samples, a real model and optimizer.

  batch_oom.py --batch-size N gpu FILE    two steps, an evaluation loader (batch 3) iterated
      between them, then the third step's forward holds 15000 MiB of the GPU (it writes the
      number to FILE, which the stand-in NVML plays as its memory) and PyTorch 1.13's CUDA
      out-of-memory error ends it
  batch_oom.py --batch-size N host CGROUP    started inside memory cgroup CGROUP (no limit), it
      limits the cgroup to what it uses plus 64 MiB, then its first step's forward keeps 1 MiB
      of activations per sample and layer until the cgroup's OOM killer ends it

Each sleeps a moment before training, so that its memory is sampled there."""
import argparse
import os
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

GPU_PEAK_MIB = 15000
# PyTorch 1.13's text (c10/cuda/CUDACachingAllocator.cpp), of a 16000 MiB GPU.
CUDA_OOM = ("CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.62 GiB total capacity; "
            "13.80 GiB already allocated; 120.00 MiB free; 13.90 GiB reserved in total by "
            "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to "
            "avoid fragmentation.  See documentation for Memory Management and "
            "PYTORCH_CUDA_ALLOC_CONF")


def limit_memory(cgroup):
    """Limits `cgroup` (v1 or v2) to its usage now plus 64 MiB, swap included."""
    v2 = os.path.exists(os.path.join(cgroup, "memory.max"))
    usage = os.path.join(cgroup, "memory.current" if v2 else "memory.usage_in_bytes")
    with open(usage) as f:
        limit = str(int(f.read()) + (64 << 20))
    names = ["memory.max"] if v2 else ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
    for name in names:  # lower the memory first: v1 keeps memory+swap at least the memory
        if os.path.exists(os.path.join(cgroup, name)):
            with open(os.path.join(cgroup, name), "w") as f:
                f.write(limit)


def forward(model, x, memory, where, step):
    if memory == "gpu" and step == 2:
        with open(where, "w") as f:
            f.write(str(GPU_PEAK_MIB))
        time.sleep(0.8)
        raise getattr(torch.cuda, "OutOfMemoryError", RuntimeError)(CUDA_OOM)
    if memory == "host":
        activations = []
        for _ in range(1000):
            activations.append(torch.ones(x.shape[0], 1 << 18))  # 1 MiB a sample, written
            time.sleep(0.05)
    return model(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("memory", choices=["gpu", "host"])
    parser.add_argument("where")
    args = parser.parse_args()
    if args.memory == "host":
        limit_memory(args.where)
    time.sleep(0.8)
    model = torch.nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    evaluation = DataLoader(data, batch_size=3)
    for step, (x, y) in enumerate(DataLoader(data, batch_size=args.batch_size, shuffle=True)):
        loss = F.cross_entropy(forward(model, x, args.memory, args.where, step), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step == 1:
            with torch.no_grad():  # its batches take no optimizer step: not the training batch
                for x, _ in evaluation:
                    model(x)


if __name__ == "__main__":
    main()
