#!/usr/bin/python3
"""What recording DDP's gradient all-reduce costs a training step (python/traindoc_hook/
ddp_gradients.py): per forward, a hook on the output's gradient; per backward, the record's enter,
two queued autograd callbacks and its exit, into the real agent.

One process under `traindoc run` (world of 1, gloo), a DDP model small enough that the hook's
microseconds show (Linear(16, 16), batch 8), --steps forward+backward steps per round, in three
modes interleaved round after round in the same process:
- recorded: as `traindoc run` leaves it;
- wrapper only: the forward wrapper runs, the recording it arranges does not (its work swapped for
  a function that does nothing);
- unwrapped: DistributedDataParallel.forward without this wrapper (the step counter's stays).
Prints the median per-step CPU time of the job's main thread (where the hook runs, and which a
busy machine's other work does not inflate as it does wall time) and the differences, in
microseconds.

Usage: /usr/bin/python3 bench/ddp_gradient_record_cost.py [--rounds 9] [--steps 2000]
       [--traindoc PATH]
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_util  # noqa: E402

JOB = r"""
import sys, time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from traindoc_hook import ddp_gradients

rounds, steps = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(16, 16))
x = torch.randn(8, 16)
recorded = DDP.forward
watch = ddp_gradients._watch
unwrapped = recorded.__wrapped__ if recorded.__code__.co_name == "forward_watched" else None
assert unwrapped is not None, "the hook did not wrap DistributedDataParallel.forward"

def mode(name):
    DDP.forward = unwrapped if name == "unwrapped" else recorded
    ddp_gradients._watch = watch if name == "recorded" else (lambda *args: None)

def step_s():
    start = time.thread_time()
    for _ in range(steps):
        model(x).sum().backward()
    return (time.thread_time() - start) / steps

modes = ("recorded", "wrapper only", "unwrapped")
times = {m: [] for m in modes}
for name in modes:  # warm up
    mode(name)
    step_s()
for _ in range(rounds):
    for name in modes:
        mode(name)
        times[name].append(step_s())
mode("recorded")
for name in modes:
    print(name, " ".join("%.9f" % t for t in times[name]))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    args = parser.parse_args()
    bench_util.check_traindoc(args.traindoc)
    print(bench_util.machine())
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.py"
        job.write_text(JOB)
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(bench_util.free_port()),
                   RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
        result = subprocess.run(
            [args.traindoc, "run", "--out", str(Path(tmp) / "run"), "--", "/usr/bin/python3",
             str(job), str(args.rounds), str(args.steps)],
            env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit("the job failed:\n" + result.stdout + result.stderr)
    times = {}
    for line in result.stdout.splitlines():
        for mode in ("recorded", "wrapper only", "unwrapped"):
            if line.startswith(mode + " "):
                times[mode] = [float(v) for v in line[len(mode) + 1:].split()]
    base = bench_util.median(times["unwrapped"])
    rows = []
    for mode, values in times.items():
        median = bench_util.median(values)
        rows.append([mode, "%.1f" % (median * 1e6), "%+.2f" % ((median - base) * 1e6),
                     "%.3f" % (median / base), "%.1f %%" % bench_util.spread(values)])
    bench_util.print_table(["mode", "µs per step", "µs added", "ratio", "noise"], rows)


if __name__ == "__main__":
    main()
