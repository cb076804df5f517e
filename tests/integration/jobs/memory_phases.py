"""Memory that grows outside training steps, on a clock, for runs recorded as fixtures
(tests/fixtures/runs/, test_memory.py): growth per minute needs minutes, longer than a test may
run.

  memory_phases.py before SECONDS   keeps 1 MiB of "prepared samples" every 0.25 s for SECONDS
                                    (a dataset tokenized up front into a list), then trains 20
                                    clean steps
  memory_phases.py after SECONDS    trains 20 clean steps, then evaluates for SECONDS without
                                    torch.no_grad(), the losses summed as tensors (every pass's
                                    graph kept, about 1 MiB), a pass every 0.25 s

No DistributedDataParallel: the hook counts no forward pass, so the phases are measured per
minute.
"""
import sys
import time

import torch


def train(model, steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        time.sleep(0.05)


def main(phase, seconds):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10))
    deadline = time.monotonic() + seconds
    if phase == "before":
        prepared = []
        while time.monotonic() < deadline:
            prepared.append(torch.ones(1 << 18))  # 1 MiB of float32
            time.sleep(0.25)
        train(model, 20)
        print("prepared", len(prepared), flush=True)
        return
    train(model, 20)
    model.eval()
    total, passes = 0, 0
    while time.monotonic() < deadline:
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        total += torch.nn.functional.cross_entropy(model(x), y)  # should be .item(), in no_grad()
        passes += 1
        time.sleep(0.25)
    print("evaluated", passes, float(total) / passes, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
