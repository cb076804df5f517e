#!/usr/bin/python3
"""What watching a collective costs each call, from Python.

1. The call loop: one-element `dist.all_reduce` calls in a loop (best of 5 repetitions of
   --calls calls), one process and two ranks, plain / under `traindoc run` / under it without
   the Python hook (nothing recorded: what the rest of traindoc costs) / with
   TORCH_DISTRIBUTED_DEBUG=DETAIL, interleaved round after round in one run.
2. A step of many small collectives, as FSDP and ZeRO make them: per layer, an all-gather of the
   layer's parameters, a small matmul, and a reduce-scatter of its gradients (gloo has no
   reduce-scatter: an all-reduce of the shard stands in for it there), --layers layers a step;
   the median step time of two ranks, in the same modes.
3. The recorder alone, under `traindoc run`: the hook's wrapper around a function that does
   nothing, with all_reduce's parameters, against that function unwrapped, both recording into
   the real agent. A call made again (same site, group and shapes), a call described anew
   every time (the recorder's kept descriptions emptied before each), the first call at a site
   (all it keeps emptied), and a call made again from 8 frames inside torch's folder, as FSDP
   makes them. Targets: 1 µs and 5 µs.
4. Why a call's wait grows under a slow recorder: gloo's wait for a one-element all_reduce after
   the caller spent 0 to 200 µs elsewhere (plain).

With --backend nccl (a GPU machine) the loop and the step run on CUDA tensors with NCCL and the
step uses all_gather_into_tensor and reduce_scatter_tensor; one rank then measures the CPU side
of each launch.

Usage: /usr/bin/python3 bench/collective_call_cost.py [--rounds 3] [--calls 20000] [--layers 150]
       [--backend gloo|nccl] [--only loop,step,gap,alone] [--python PATH] [--traindoc PATH]
       [--baseline OTHER/bin/traindoc]
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
import os, sys, time, torch, torch.distributed as dist
mode, backend, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
dist.init_process_group(backend)
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()

if mode == "loop":
    t = torch.ones(1, device=device)
    best = float("inf")
    for _ in range(5):
        dist.barrier()
        sync()
        start = time.perf_counter()
        for _ in range(count):
            dist.all_reduce(t)
        sync()
        best = min(best, (time.perf_counter() - start) / count)
    result = best * 1e6
elif mode == "step":
    shard = 4096
    params = [torch.randn(shard * world // 64, 64, device=device) for _ in range(count)]
    weights = torch.randn(64, 64, device=device)
    x = torch.randn(16, 64, device=device)
    def layer(index):
        local = params[index].view(-1)[rank * shard:(rank + 1) * shard]
        if backend == "nccl":
            gathered = torch.empty(shard * world, device=device)
            dist.all_gather_into_tensor(gathered, local)
        else:
            gathered = [torch.empty(shard, device=device) for _ in range(world)]
            dist.all_gather(gathered, local)
        y = x @ weights
        grad = torch.empty(shard, device=device)
        if backend == "nccl":
            dist.reduce_scatter_tensor(grad, torch.ones(shard * world, device=device))
        else:
            grad.copy_(local)
            dist.all_reduce(grad)
        return y
    times = []
    for step in range(35):
        sync()
        start = time.perf_counter()
        for index in range(count):
            layer(index)
        sync()
        times.append(time.perf_counter() - start)
    times = sorted(times[5:])
    result = times[len(times) // 2] * 1e3
elif mode == "gap":  # plain: the wait of a call after the caller spent `gap` µs elsewhere
    from torch._C._distributed_c10d import AllreduceOptions
    group = dist.distributed_c10d._get_default_group()
    t = torch.ones(1, device=device)
    waits = []
    for gap in (0, 20, 50, 100, 200):
        best = float("inf")
        for _ in range(3):
            waited = 0.0
            for _ in range(count):
                until = time.perf_counter() + gap * 1e-6
                while time.perf_counter() < until:
                    pass
                work = group.allreduce([t], AllreduceOptions())
                start = time.perf_counter()
                work.wait()
                waited += time.perf_counter() - start
            best = min(best, waited / count)
        waits.append("%.1f" % (best * 1e6))
    result = " ".join(waits)
else:  # the recorder alone
    from traindoc_hook import collectives
    c10d = sys.modules["torch.distributed.distributed_c10d"]
    def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
        return None
    recorded = collectives._wrap(c10d, "all_reduce", all_reduce, *collectives._agent_entries())
    # Frames of torch's own between the job's line and the call, as FSDP's are: a function in a
    # file of torch's folder, 8 deep.
    where = os.path.join(os.path.dirname(torch.__file__), "_traindoc_bench_frames.py")
    frames = {}
    exec(compile("def through(f, t, depth):\n"
                 "    return f(t) if depth == 0 else through(f, t, depth - 1)\n",
                 where, "exec"), frames)
    through = frames["through"]
    t = torch.ones(1, device=device)
    def per_call(call, before):
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(count):
                before()
                call()
            best = min(best, (time.perf_counter() - start) / count)
        return best
    def added(call, before=lambda: None):  # the middle of 3 differences of the best of 5
        runs = [per_call(lambda: call(recorded), before)
                - per_call(lambda: call(all_reduce), before) for _ in range(3)]
        return sorted(runs)[1] * 1e6
    result = "%.3f %.3f %.3f %.3f" % (added(lambda f: f(t)),
                                       added(lambda f: f(t), collectives._forget),
                                       added(lambda f: f(t), collectives._forget_all),
                                       added(lambda f: through(f, t, 7)))
if rank == 0:
    print("RESULT", result, flush=True)
dist.destroy_process_group()
"""


NO_HOOK = " without the hook"


def run_job(python, mode, script, ranks, job_args, scratch):
    """The job's RESULT line's values, run as `mode` says: "plain", "DETAIL", or under the
    traindoc it names (a path), with NO_HOOK after it: without the Python hook."""
    env = dict(os.environ)
    # --redirects: Debian's PyTorch 1.13 on Python 3.11 fails with none (its default).
    argv = [python, "-m", "torch.distributed.run", "--redirects", "2", "--tee", "2", "--nnodes",
            "1", "--master_addr", "127.0.0.1", "--master_port", str(bench_util.free_port()),
            "--nproc_per_node", str(ranks), str(script), *map(str, job_args)]
    if mode == "DETAIL":
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    elif mode != "plain":
        traindoc = mode
        if mode.endswith(NO_HOOK):  # the Python hook's folder without the hook: nothing recorded
            traindoc = mode[:-len(NO_HOOK)]
            env["TRAINDOC_PYTHON_HOOK"] = tempfile.mkdtemp(dir=scratch)
        argv = [traindoc, "run", "--silent", "--out", tempfile.mkdtemp(dir=scratch), "--", *argv]
    out = subprocess.run(argv, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT"))
    return [float(v) for v in line.split()[1:]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--layers", type=int, default=150)
    parser.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
    parser.add_argument("--python", default="/usr/bin/python3", help="an interpreter with torch")
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    parser.add_argument("--baseline", help="another build's bin/traindoc, run side by side")
    parser.add_argument("--only", default="loop,step,gap,alone",
                        help="the parts to run, of loop, step, gap (the wait after time spent "
                             "elsewhere) and alone (the recorder alone)")
    parser.add_argument("--idle-timeout", type=float, default=60,
                        help="seconds to wait for idle CPUs before each run")
    args = parser.parse_args()
    builds = bench_util.builds(args.traindoc, args.baseline)
    print(bench_util.machine())
    print(bench_util.load_average())
    scratch = tempfile.mkdtemp(prefix="traindoc-bench-")
    script = Path(scratch) / "collectives.py"
    script.write_text(JOB)
    ranks_of_step = 1 if args.backend == "nccl" else 2
    cases = [("loop", 1, args.calls, "µs a call"), ("loop", 2, args.calls // 4, "µs a call"),
             ("step", ranks_of_step, args.layers, "ms a step")]
    if args.backend == "nccl":
        cases = cases[:1] + cases[2:]  # one GPU: one rank
    parts = args.only.split(",")
    cases = [case for case in cases if case[0] in parts]
    busy = 0
    if cases:
        busy += side_by_side(args, builds, cases, script, scratch)
    ok = True
    if "gap" in parts:
        busy += wait_after_gaps(args, script, scratch)
    if "alone" in parts:
        alone_busy, ok = recorder_alone(args, script, scratch)
        busy += alone_busy
    print(bench_util.load_average())
    if busy:
        print(f"{busy} run(s) started on a busy machine")
    print("verdict:", "within targets" if ok else "OVER a target")
    bench_util.remove_tree(scratch)


def side_by_side(args, builds, cases, script, scratch):
    """Runs each case plain, under each build and with DETAIL, interleaved round after round,
    and prints the table; returns how many runs started on a busy machine."""
    modes = ["plain", *builds, "no hook", "DETAIL"]
    how = dict(builds, **{"no hook": builds["traindoc"] + NO_HOOK})
    results = {(case, mode): [] for case in cases for mode in modes}
    busy = 0
    for round_ in range(args.rounds):
        for case in cases:
            # Each round starts with another mode: a slow drift of the machine favours none.
            shift = round_ % len(modes)
            for mode in modes[shift:] + modes[:shift]:
                busy += not bench_util.wait_for_idle(timeout_s=args.idle_timeout)
                value = run_job(args.python, how.get(mode, mode), script, case[1],
                                [case[0], args.backend, case[2]], scratch)[0]
                results[(case, mode)].append(value)
    print(f"\n{args.backend}, medians of {args.rounds} rounds; the ratio is each round's to plain "
          "in the same round, then their median; added: the median's difference to plain")
    rows = []
    for case in cases:
        name, ranks, count, unit = case
        plain = results[(case, "plain")]
        for mode in modes:
            values = results[(case, mode)]
            ratios = [v / p for v, p in zip(values, plain)]
            rows.append([f"{name} x{count}, {ranks} rank(s)", mode, unit,
                         f"{bench_util.median(values):.2f}", f"{bench_util.median(ratios):.3f}",
                         f"{bench_util.median(values) - bench_util.median(plain):+.2f}",
                         f"{bench_util.spread(values):.1f}%"])
    bench_util.print_table(["case", "mode", "unit", "median", "vs plain", "added", "noise"], rows)
    return busy


def wait_after_gaps(args, script, scratch):
    """How long gloo's wait for a one-element all_reduce takes after the caller spent some time
    elsewhere (plain, one rank): its worker thread sleeps deeper the longer it is idle. Prints
    the table; returns 1 if the run started on a busy machine."""
    busy = not bench_util.wait_for_idle(timeout_s=args.idle_timeout)
    waits = run_job(args.python, "plain", script, 1, ["gap", args.backend, args.calls // 4],
                    scratch)
    print(f"\nthe wait of a call after µs spent elsewhere (plain, 1 rank, best of 3 of "
          f"{args.calls // 4} calls)")
    gaps = (0, 20, 50, 100, 200)
    bench_util.print_table(["µs before the call", "wait µs"],
                           [[gap, f"{wait:.1f}"] for gap, wait in zip(gaps, waits)])
    return busy


def recorder_alone(args, script, scratch):
    """The recorder's own cost, one run a round under this build; prints the table and returns
    (runs started on a busy machine, whether both targets hold)."""
    print("\nthe recorder alone (a no-op all_reduce wrapped, against it unwrapped), "
          f"added µs a call, the middle of 3 best-of-5 of {args.calls} calls, each round")
    busy = 0
    alone = []
    for _ in range(args.rounds):
        busy += not bench_util.wait_for_idle(timeout_s=args.idle_timeout)
        alone.append(run_job(args.python, args.traindoc, script, 1,
                             ["alone", args.backend, args.calls], scratch))
    again, anew, first, through = zip(*alone)
    rows = []
    for name, values, target in (("made again (same site, group, shapes)", again, "1"),
                                 ("described anew (other shapes at a known site)", anew, "5"),
                                 ("the first call at a site", first, ""),
                                 ("made again through 8 frames of torch's (FSDP)", through, "")):
        rows.append([name, f"{bench_util.median(values):.3f}", f"{min(values):.3f}",
                     f"{max(values):.3f}", target])
    bench_util.print_table(["call", "median µs", "min", "max", "target µs"], rows)
    return busy, bench_util.median(again) <= 1 and bench_util.median(anew) <= 5


if __name__ == "__main__":
    main()
