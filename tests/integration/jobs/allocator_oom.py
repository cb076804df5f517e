"""A job that runs out of GPU memory on the stand-in caching allocator of
tests/fakes/torch_cuda (a GPU of 1000 MiB), for tests/integration/test_allocator_oom.py:

  allocator_oom.py live          nine 100 MiB tensors stay live; a 200 MiB request fails
  allocator_oom.py fragmented    nine 100 MiB tensors freed, nine of 60 MiB take their blocks
                                 (each split, 40 MiB left free); a 200 MiB request fails with
                                 360 MiB free in blocks of 40 MiB
  allocator_oom.py caught        300 MiB of weights, then a search for the batch that fits: 64
                                 samples of 20 MiB fail, caught without a word, 32 fit; exit 0

The error ends the first two uncaught."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fakes",
                                "torch_cuda"))
import fake_cuda_memory as cuda  # noqa: E402

MiB = 1 << 20


def build_model():
    weights = []
    for _ in range(9):
        weights.append(cuda.alloc(100 * MiB))  # the weights' line
    return weights


def forward(samples):
    return cuda.alloc(samples * 20 * MiB)


def main(mode):
    cuda.install(1000 * MiB)
    held = []  # what the job keeps alive
    if mode == "live":
        held += build_model()
        held.append(cuda.alloc(200 * MiB))
    elif mode == "fragmented":
        for block in build_model():
            cuda.free(block)
        held += [cuda.alloc(60 * MiB) for _ in range(9)]
        held.append(cuda.alloc(200 * MiB))
    elif mode == "caught":
        held += [cuda.alloc(100 * MiB) for _ in range(3)]
        for batch in (64, 32):
            try:
                held.append(forward(batch))
                break
            except torch.cuda.OutOfMemoryError:
                continue
        print("trained on batches of", batch)


if __name__ == "__main__":
    main(sys.argv[1])
