#!/usr/bin/python3
"""What `traindoc run --memory-history` costs a training step: PyTorch's allocator records every
allocation and free with its Python stack (at most 100000 entries). A small convolutional model's
training step (forward, backward, optimizer), timed in the job itself, under `traindoc run` and
under `traindoc run --memory-history`, the two alternated round after round. On a GPU the figure
that counts; without one (--device cpu) the steps allocate no CUDA memory, history records nothing,
and the run shows only that the script and the flag work.

Usage: python3 bench/memory_history_cost.py [--device cuda|cpu] [--rounds 3] [--steps 50]
       [--traindoc PATH]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_util  # noqa: E402

STEP_JOB = r"""
import json, sys, time, torch
device, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3, padding=1),
    torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
    torch.nn.Linear(64, 10)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 3, 64, 64, device=device)
y = torch.randint(0, 10, (32,), device=device)
times = []
for step in range(steps + 5):
    start = time.perf_counter()
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    if device == "cuda":
        torch.cuda.synchronize()
    if step >= 5:  # warm-up: the allocator's pool, cuDNN's choice of kernels
        times.append(time.perf_counter() - start)
times.sort()
print(json.dumps({"median_ms": 1000 * times[len(times) // 2]}))
"""


def step_ms(traindoc, device, steps, history):
    with tempfile.TemporaryDirectory() as folder:
        argv = [traindoc, "run", "--silent", "--out", os.path.join(folder, "run")]
        argv += ["--memory-history"] if history else []
        argv += ["--", sys.executable, "-c", STEP_JOB, device, str(steps)]
        out = subprocess.run(argv, stdout=subprocess.PIPE, check=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])["median_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    args = parser.parse_args()
    bench_util.check_traindoc(args.traindoc)
    print(bench_util.machine())
    rows = []
    ratios = []
    for round_ in range(args.rounds):
        plain = step_ms(args.traindoc, args.device, args.steps, False)
        history = step_ms(args.traindoc, args.device, args.steps, True)
        ratios.append(history / plain)
        rows.append([round_ + 1, f"{plain:.3f}", f"{history:.3f}",
                     f"{100 * (history / plain - 1):+.1f}%"])
    bench_util.print_table(["round", "step ms", "step ms --memory-history", "cost"], rows)
    print(f"median cost of --memory-history on {args.device}: "
          f"{100 * (bench_util.median(ratios) - 1):+.1f}% of a step")


if __name__ == "__main__":
    main()
