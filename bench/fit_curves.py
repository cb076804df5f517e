#!/usr/bin/env python3
"""Measures the memory curves that bench/fit_search replays: for each model and each batch size
of its grid, one fresh process trains 1 + 3 steps on the CPU and reports its peak RSS (VmHWM,
what traindoc measures on the host) and its seconds. Writes a CSV (bench/fit_curves.csv).

    /usr/bin/python3 bench/fit_curves.py [--out bench/fit_curves.csv] [--models a,b] [--quick]

Needs PyTorch and torchvision (Debian's python3-torch, python3-torchvision); downloads nothing.
About 8 minutes of trials on an idle 2-core machine; each waits up to 5 s for idle CPUs first.
"""
import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import bench_util

VOCAB = 1000
STEPS = 1 + 3  # as a `traindoc fit` trial: one step to warm up, then K = 3 measured
# The grids: powers of two and the points halfway between them (in a log sense), so that the
# linear interpolation between neighbours stays near the curve. DeepLab's ASPP pools each image
# to 1x1 before a BatchNorm, which then needs two samples: its grid starts at 2.
GRID = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256]
GRIDS = {
    "deeplabv3": GRID[1:14],
    "resnet18": GRID,
    "transformer": GRID[:14],
    "lstm": GRID,
}
DESCRIPTIONS = {
    "deeplabv3": "the demo's DeepLabV3 MobileNetV3-Large, 19 classes, 64x128 images, SGD momentum",
    "resnet18": "torchvision ResNet-18, 1000 classes, 64x64 images, SGD momentum",
    "transformer": "Transformer encoder LM: 2 layers, width 64, 8 heads, 128 tokens, "
                   "1000 words, Adam",
    "lstm": "LSTM LM: 2 layers, 128 units, 64 tokens, 1000 words, Adam",
}


def build(name, batch):
    """(model, optimizer, a function that makes one batch's loss): torch is imported here, in the
    child process, so that the parent never loads it."""
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    if name in ("deeplabv3", "resnet18"):
        model, loss = vision(torch, nn, name, batch)
        return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), loss
    model, loss = language(torch, nn, name, batch)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3), loss


def vision(torch, nn, name, batch):
    """The demo's segmentation (its model, at a small image size) or an image classifier."""
    if name == "deeplabv3":
        from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large
        model = deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                             num_classes=19, aux_loss=False)
        images = torch.randn(batch, 3, 64, 128)
        labels = torch.randint(0, 19, (batch, 64, 128))
    else:
        from torchvision.models import resnet18
        model = resnet18(weights=None)
        images = torch.randn(batch, 3, 64, 64)
        labels = torch.randint(0, 1000, (batch,))
    loss_fn = nn.CrossEntropyLoss()

    def loss():
        out = model(images)
        return loss_fn(out["out"] if isinstance(out, dict) else out, labels)
    return model, loss


def language(torch, nn, name, batch):
    """A small next-token model: a Transformer encoder (GPT-like, without the causal mask, which
    changes no memory) or an LSTM, between an embedding and a linear head."""
    class Model(nn.Module):
        def __init__(self, width, body):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, width)
            self.body = body
            self.head = nn.Linear(width, VOCAB)

        def forward(self, tokens):
            out = self.body(self.embed(tokens))
            return self.head(out[0] if isinstance(out, tuple) else out)

    if name == "transformer":
        layer = nn.TransformerEncoderLayer(64, 8, 128, dropout=0.1, batch_first=True)
        model, tokens = Model(64, nn.TransformerEncoder(layer, 2)), 128
    else:
        model, tokens = Model(128, nn.LSTM(128, 128, 2, batch_first=True)), 64
    text = torch.randint(0, VOCAB, (batch, tokens + 1))

    def loss():
        logits = model(text[:, :-1])
        return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), text[:, 1:].reshape(-1))
    return model, loss


def peak_rss_bytes():
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(name, batch):
    """One trial: build, train STEPS steps, print its peak and the steps' seconds as JSON."""
    model, optimizer, loss = build(name, batch)
    model.train()
    start = time.perf_counter()
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss().backward()
        optimizer.step()
    step_seconds = time.perf_counter() - start
    print(json.dumps({"peak_bytes": peak_rss_bytes(), "step_seconds": step_seconds}))


def measure(name, batch):
    """Runs one trial in a fresh process; its whole wall time, start-up included."""
    idle = bench_util.wait_for_idle(min_idle=0.8, timeout_s=5)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--one", name, str(batch)],
                          capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["peak_bytes"], seconds, result["step_seconds"], idle


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(Path(__file__).with_name("fit_curves.csv")))
    parser.add_argument("--models", default=",".join(GRIDS), help="comma-separated: %(default)s")
    parser.add_argument("--quick", action="store_true", help="every other batch of each grid")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        child(args.one[0], int(args.one[1]))
        return
    print(bench_util.machine())
    print(bench_util.load_average())
    rows, busy = [], 0
    for name in args.models.split(","):
        grid = GRIDS[name][::2] if args.quick else GRIDS[name]
        print(f"{name}: {DESCRIPTIONS[name]}", flush=True)
        for batch in grid:
            peak, seconds, step_seconds, idle = measure(name, batch)
            busy += not idle
            rows.append([name, batch, peak, f"{seconds:.3f}", f"{step_seconds:.3f}"])
            print(f"  batch {batch:4d}: peak {peak / 2**20:8.1f} MiB, {seconds:6.2f} s "
                  f"({step_seconds:.2f} s of steps)", flush=True)
    with open(args.out, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["model", "batch", "peak_bytes", "seconds", "step_seconds"])
        writer.writerows(rows)
    print(bench_util.load_average())
    print(f"{len(rows)} trials ({busy} started on a busy machine), written to {args.out}")


if __name__ == "__main__":
    main()
