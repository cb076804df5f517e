"""A training loop for the leak tests (CASES.md S04, H02): Linear 64->4096->10, batch 256, with
what it keeps between steps chosen by MODE. After every optimizer step it prints its own RSS
(/proc/self/status) as "rss <step> <bytes>", so that a test can compare traindoc's MiB per step
with what the job measured itself.

  total-loss  total_loss += loss          (keeps every step's autograd graph: leaks)
  outputs     outputs.append(out)         (keeps every step's output and its graph: leaks)
  clean       total_loss += loss.item()   (keeps a float)
  warm-up     clean, plus a large buffer at step 2 and a one-off cache of 400 MiB at step 35
  evaluation  clean, then as many forward passes without torch.no_grad() after the last step,
              their losses summed as tensors (`total += loss`: keeps every pass's graph); it
              prints "eval <pass> <bytes>" after each

  memory_loop.py MODE STEPS [BATCH [PAUSE [PORT]]]: BATCH samples a step (256), PAUSE seconds of
  sleep after each step or pass (0), so that a short job spans several of traindoc's samples;
  with PORT, the model is wrapped in DistributedDataParallel, one gloo rank of a world of 1 whose
  store listens on PORT, and the steps and passes go through it.
"""
import sys
import time

import torch


def rss():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main(mode, steps, batch=256, pause=0.0, port=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10))
    if port is not None:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                                world_size=1)
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    total_loss = 0
    outputs = []
    buffers = []
    for step in range(1, steps + 1):
        x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))
        optimizer.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        if mode == "total-loss":
            total_loss += loss
        elif mode == "outputs":
            outputs.append(out)
        else:
            total_loss += loss.item()
        if mode == "warm-up" and step in (2, 35):
            buffers.append(torch.ones((200 if step == 2 else 400) << 18))  # MiB of float32
        print("rss", step, rss(), flush=True)
        time.sleep(pause)
    print("loss", float(total_loss) / steps, len(outputs), len(buffers), flush=True)
    if mode == "evaluation":
        evaluate(model, steps, batch, pause)


def evaluate(model, passes, batch, pause):
    model.eval()
    total = 0
    for step in range(1, passes + 1):
        x, y = torch.randn(batch, 64), torch.randint(0, 10, (batch,))
        total += torch.nn.functional.cross_entropy(model(x), y)  # should be .item(), in no_grad()
        print("eval", step, rss(), flush=True)
        time.sleep(pause)
    print("eval loss", float(total) / passes, flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0], int(args[1]), int(args[2]) if len(args) > 2 else 256,
         float(args[3]) if len(args) > 3 else 0.0, int(args[4]) if len(args) > 4 else None)
