#!/usr/bin/python3
"""What watching collectives costs a training step, and how soon traindoc speaks.

1. Step time: a 2-rank DDP training step on CPU (gloo) run plain, under `traindoc run`, and with
   TORCH_DISTRIBUTED_DEBUG=DETAIL (PyTorch's own cross-rank check), the three interleaved round
   after round in one run. Target: traindoc within 1 % of plain (the median over the rounds of
   each round's ratio).
2. Detection latency: from a mismatching all_reduce (float64 on one rank, int64 on the other:
   gloo completes it silently) to traindoc's terminal line (target: under 2 s), and from a
   skipped all_reduce to the collective-missing line (target: under --stall-seconds + 2 s).

Usage: /usr/bin/python3 bench/ddp_step_overhead.py [--rounds 3] [--steps 60] [--idle-timeout S]
       [--traindoc PATH]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_util  # noqa: E402

PYTHON = "/usr/bin/python3"

STEP_JOB = r"""
import os, sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
    torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 10)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))
steps = int(sys.argv[1])
times, cpu = [], []
for step in range(steps + 5):
    start, start_cpu = time.perf_counter(), time.process_time()
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
if dist.get_rank() == 0:
    times, cpu = sorted(times[5:]), sorted(cpu[5:])
    print("STEP", times[len(times) // 2], cpu[len(cpu) // 2], flush=True)
"""

LATENCY_JOB = r"""
import sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(8)
dist.all_reduce(t)
if sys.argv[1] == "mismatch":
    t = torch.ones(8, dtype=torch.float64 if rank == 0 else torch.int64)
    if rank == 0:
        print("CALL", time.time(), flush=True)
    dist.all_reduce(t)
    time.sleep(4)
else:
    if rank == 0:
        print("CALL", time.time(), flush=True)
        dist.all_reduce(t)
    else:
        time.sleep(float(sys.argv[2]) + 5)
"""


def torchrun(script, *args):
    port = bench_util.free_port()
    return [PYTHON, "-m", "torch.distributed.run", "--redirects", "2", "--tee", "2", "--nnodes",
            "1", "--master_addr", "127.0.0.1", "--master_port", str(port), "--nproc_per_node", "2",
            script, *map(str, args)]


def step_time(traindoc, mode, script, steps, scratch):
    env = dict(os.environ)
    argv = torchrun(script, steps)
    if mode == "traindoc":
        argv = [traindoc, "run", "--silent", "--out", tempfile.mkdtemp(dir=scratch), "--", *argv]
    elif mode == "DETAIL":
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if "STEP" in l)
    wall, cpu = line.split("STEP", 1)[1].split()
    return float(wall), float(cpu)


def latency(traindoc, script, scenario, stall_s, scratch):
    """Seconds from the job's call (its printed time) to traindoc's line on stderr."""
    argv = [traindoc, "run", "--quiet", "--stall-seconds", str(stall_s), "--out",
            tempfile.mkdtemp(dir=scratch), "--", *torchrun(script, scenario, stall_s)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    called = None
    seen = None
    for line in proc.stdout:
        if "CALL" in line and called is None:
            called = float(line.split("CALL", 1)[1].split()[0])
        if line.startswith("traindoc: collective-") and seen is None:
            seen = time.time()
    proc.wait()
    return None if called is None or seen is None else seen - called


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--stall-seconds", type=float, default=3)
    parser.add_argument("--idle-timeout", type=float, default=120,
                        help="seconds to wait for idle CPUs before each run")
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    args = parser.parse_args()
    bench_util.check_traindoc(args.traindoc)
    print(bench_util.machine())
    print(bench_util.load_average())
    scratch = tempfile.mkdtemp(prefix="traindoc-bench-")
    step_script = Path(scratch) / "ddp_step.py"
    step_script.write_text(STEP_JOB)
    latency_script = Path(scratch) / "latency.py"
    latency_script.write_text(LATENCY_JOB)

    modes = ["plain", "traindoc", "DETAIL"]
    times = {m: [] for m in modes}
    busy = 0
    for round_ in range(args.rounds):
        # Each round starts with another mode: a slow drift of the machine favours none.
        for mode in modes[round_ % 3:] + modes[:round_ % 3]:
            busy += not bench_util.wait_for_idle(timeout_s=args.idle_timeout)
            times[mode].append(step_time(args.traindoc, mode, step_script, args.steps, scratch))
    walls = {m: [w for w, _ in times[m]] for m in modes}
    cpus = {m: [c for _, c in times[m]] for m in modes}
    plain = bench_util.median(walls["plain"])
    plain_cpu = bench_util.median(cpus["plain"])
    rows = []
    for mode in modes:
        m = bench_util.median(walls[mode])
        c = bench_util.median(cpus[mode])
        rows.append([mode, f"{m * 1e3:.2f}", f"{m / plain:.3f}",
                     f"{bench_util.spread(walls[mode]):.1f}%", f"{c * 1e3:.2f}",
                     f"{c / plain_cpu:.3f}", f"{bench_util.spread(cpus[mode]):.1f}%"])
    print(f"\n2-rank DDP step on CPU (gloo), rank 0's median of {args.steps} steps, {args.rounds} "
          "rounds interleaved; wall time, and CPU time of the rank's process")
    bench_util.print_table(["mode", "wall ms", "vs plain", "noise", "cpu ms", "vs plain", "noise"],
                           rows)
    # The machine drifts between rounds more than between the runs of one round: the ratio to
    # plain within each round, then its median, resolves what the medians above cannot.
    ratios = {m: sorted(w / p for w, p in zip(walls[m], walls["plain"])) for m in modes[1:]}
    print("\nwall time vs plain in the same round, over the rounds")
    bench_util.print_table(
        ["mode", "median", "min", "max"],
        [[m, f"{bench_util.median(r):.3f}", f"{r[0]:.3f}", f"{r[-1]:.3f}"]
         for m, r in ratios.items()])

    mismatch = [latency(args.traindoc, latency_script, "mismatch", args.stall_seconds, scratch)
                for _ in range(args.rounds)]
    stall = [latency(args.traindoc, latency_script, "skip", args.stall_seconds, scratch)
             for _ in range(args.rounds)]
    print("\ndetection latency, seconds from the call to traindoc's line")
    bench_util.print_table(
        ["case", "median s", "max s", "target s"],
        [["mismatch (float64 vs int64)", f"{bench_util.median(mismatch):.2f}",
          f"{max(mismatch):.2f}", "2"],
         [f"skipped call, --stall-seconds {args.stall_seconds:g}",
          f"{bench_util.median(stall):.2f}", f"{max(stall):.2f}",
          f"{args.stall_seconds + 2:g}"]])
    print(bench_util.load_average())
    if busy:
        print(f"{busy} run(s) started on a busy machine")
    ok = (bench_util.median(ratios["traindoc"]) <= 1.01 and max(mismatch) < 2 and
          max(stall) < args.stall_seconds + 2)
    print("verdict:", "within targets" if ok else "OVER a target")
    bench_util.remove_tree(scratch)


if __name__ == "__main__":
    main()
