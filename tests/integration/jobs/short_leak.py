"""The short leak of the stability test (test_memory.py): a loop that keeps every step's output
with its autograd graph (`outputs.append(out)`, should be `out.detach()`), 10 MiB a step, for
STEPS steps of about PAUSE seconds each, then exits 0. Its model is an embedding lookup and a
ReLU, whose output is what the graph keeps: a step costs a few ms of CPU, most of it the faults of
the new pages, so that the job's length is its steps even with several runs on a busy machine.

  short_leak.py STEPS PAUSE
"""
import sys
import time

import torch


def main(steps, pause):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(64, 4096), torch.nn.ReLU())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    outputs = []
    for _ in range(steps):
        tokens = torch.randint(0, 64, (320,))
        optimizer.zero_grad()
        out = model(tokens)  # 320 x 4096 float32: 5 MiB
        out.square().mean().backward()
        optimizer.step()
        outputs.append(out)
        time.sleep(pause)
    print("kept", len(outputs), "outputs", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
