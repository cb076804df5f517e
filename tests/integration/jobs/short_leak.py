"""The short leak of the stability test (test_memory.py): a loop that keeps every step's output
with its autograd graph (`outputs.append(out)`, should be `out.detach()`), about 10 MiB a step,
for STEPS steps of about PAUSE seconds each, then exits 0. Its model's first layer is narrow so
that a step costs little CPU and the job's length is its steps, even on a busy machine.

  short_leak.py STEPS PAUSE
"""
import sys
import time

import torch


def main(steps, pause):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    outputs = []
    for _ in range(steps):
        x, y = torch.randn(320, 8), torch.randint(0, 10, (320,))
        optimizer.zero_grad()
        out = model(x)
        torch.nn.functional.cross_entropy(out, y).backward()
        optimizer.step()
        outputs.append(out)
        time.sleep(pause)
    print("kept", len(outputs), "outputs", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
