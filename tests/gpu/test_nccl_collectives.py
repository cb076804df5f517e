"""Run only where a GPU is lent (`python3 -m pytest -q tests/gpu`), with the PyTorch that has CUDA
and NCCL: the NCCL interposers on a real training step. The records of DDP's own all-reduces,
and what recording costs that step (printed; no threshold here, see docs/BENCHMARKS.md)."""
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")

ROOT = Path(__file__).resolve().parents[2]
STEPS = 210  # 10 untimed, then 200 timed
TRAINDOC = Path(os.environ.get("TRAINDOC_BIN", ROOT / "build" / "bin" / "traindoc"))

STEP = r"""
import os, sys, time, torch, torch.distributed as dist
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29533", rank=0, world_size=1)
model = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)
                        ).cuda(), device_ids=[0])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 4096, device="cuda")
y = torch.randint(0, 10, (256,), device="cuda")
times = []
for step in range(int(sys.argv[1]) + 10):
    torch.cuda.synchronize()
    start = time.perf_counter()
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - start)
times = sorted(times[10:])
print("STEP", times[len(times) // 2], flush=True)
dist.destroy_process_group()
"""


def step_ms(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    return 1e3 * float(next(l for l in out.splitlines() if l.startswith("STEP")).split()[1])


def test_ddp_all_reduces_are_recorded_and_cheap(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(STEP)
    job = [sys.executable, str(script), str(STEPS - 10)]
    # Alternated, three of each: the median of each side leaves out a run that paid the GPU's
    # warm-up, whichever side it was.
    plain, with_traindoc = [], []
    for attempt in range(3):
        plain.append(step_ms(job))
        run_dir = tmp_path / f"run{attempt}"
        with_traindoc.append(step_ms([str(TRAINDOC), "run", "--silent", "--out", str(run_dir),
                                      "--", *job]))
    plain, with_traindoc = sorted(plain)[1], sorted(with_traindoc)[1]
    print(f"DDP step, median of 3 alternated runs: {plain:.3f} ms plain, {with_traindoc:.3f} ms "
          f"under traindoc ({with_traindoc / plain:.3f}x)")
    db = sqlite3.connect(run_dir / "run.db")
    rows = db.execute("SELECT op, dtype, count, redop FROM collectives WHERE source = 'nccl' "
                      "ORDER BY number").fetchall()
    assert rows, "no NCCL call recorded: is libnccl loaded through the dynamic linker?"
    params = sum(p.numel() for p in torch.nn.Sequential(
        torch.nn.Linear(4096, 4096), torch.nn.Linear(4096, 10)).parameters())
    # DDP's construction: the parameters' shapes checked (an all_gather of int64), then the
    # parameters broadcast from rank 0.
    assert rows[0][:2] == ("all_gather", "int64"), rows[:6]
    assert ("broadcast", "float32", params, "") in rows[:6], rows[:6]
    reduces = [row for row in rows if row[0] == "all_reduce"]
    assert all(dtype == "float32" and redop in ("sum", "avg", "premul_sum")
               for _, dtype, _, redop in reduces)
    # Every step's bucket all-reduces cover every parameter once.
    assert sum(count for _, _, count, _ in reduces) == params * STEPS
