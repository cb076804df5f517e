"""Agent start-up cost per process: fork+exec of /bin/true N times (a shell loop), with and
without the injected agent.

Four conditions, the same job each time, repetitions interleaved (the order rotates):

  direct        no LD_PRELOAD: the baseline
  agent inert   LD_PRELOAD of libtraindoc_agent.so, TRAINDOC_RUN_DIR unset: loading the library
  agent         LD_PRELOAD and TRAINDOC_RUN_DIR of a fresh run folder whose agent/slots exists
                (made by a `traindoc run -- true` before), no supervisor: each process maps the
                slots file and claims a slot (two per iteration: the shell's fork, then the exec)
  traindoc run  the job under `traindoc run --silent`: the agent plus the supervisor's sampling

The job is a Python wrapper that times `sh -c 'for i in $(seq N); do /bin/true; done'` with
perf_counter and writes the seconds to a side file, so the wrapper's own start (and traindoc's
start-up and report) stay out of the figure.

Usage:
  /usr/bin/python3 bench/agent_startup.py [--traindoc build/bin/traindoc] [--count 1000]
      [--reps 5]

Each run waits (up to 2 minutes) for the machine to be idle first. Prints a table (median
seconds, wall and CPU microseconds per process, ratios to direct) and exits 0.
"""
import argparse
import os
import sys
import tempfile

import bench_util

WRAPPER = r"""
import resource, subprocess, sys, time
result, count = sys.argv[1], sys.argv[2]
loop = f"for i in $(seq {count}); do /bin/true; done"
t0 = time.perf_counter()
subprocess.run(["/bin/sh", "-c", loop], check=True)
seconds = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(result, "w") as f:
    f.write(f"{seconds} {usage.ru_utime + usage.ru_stime}\n")
"""

CONDITIONS = ("direct", "agent inert", "agent", "traindoc run")


def clean_env():
    """The caller's environment without any agent settings."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TRAINDOC_RUN_DIR")}


def run_once(condition, traindoc, agent, workdir, count, rep):
    """One timed loop in `condition`: (seconds, CPU seconds of the loop's processes, slots
    claimed or None)."""
    result = os.path.join(workdir, "result")
    job = [sys.executable, "-c", WRAPPER, result, str(count)]
    env = clean_env()
    run_dir = os.path.join(workdir, f"run-{rep}")
    argv = job
    if condition == "agent inert":
        env["LD_PRELOAD"] = agent
    elif condition == "agent":
        # A run folder with a fresh slots file, as traindoc prepares it.
        bench_util.run_quietly([traindoc, "run", "--silent", "--out", run_dir, "--", "true"])
        env["LD_PRELOAD"] = agent
        env["TRAINDOC_RUN_DIR"] = run_dir
    elif condition == "traindoc run":
        argv = [traindoc, "run", "--silent", "--out", run_dir, "--", *job]
    bench_util.run_quietly(argv, env=env)
    with open(result, encoding="utf-8") as f:
        seconds, cpu = (float(v) for v in f.read().split())
    os.unlink(result)
    claimed = slots_claimed(run_dir) if condition in ("agent", "traindoc run") else None
    bench_util.remove_tree(run_dir)
    return seconds, cpu, claimed


def slots_claimed(run_dir):
    """How many agent slots were claimed in the run folder (a check that the agent ran)."""
    try:
        with open(os.path.join(run_dir, "agent", "slots"), "rb") as f:
            header = f.read(64)
    except OSError:
        return None
    # AgentHeader (src/common/layout.h): magic, version, slot_count, slot_size, then the
    # claimed counter: five little-endian u32, the counter at offset 16.
    return int.from_bytes(header[16:20], "little")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    parser.add_argument("--count", type=int, default=1000, help="processes per loop (1000)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (5)")
    args = parser.parse_args()
    bench_util.check_traindoc(args.traindoc)
    agent = bench_util.agent_beside(args.traindoc)
    if not os.path.exists(agent):
        raise SystemExit(f"{agent} is missing: build first")

    print(f"machine: {bench_util.machine()}; {bench_util.load_average()}")
    print(f"traindoc: {args.traindoc}; agent: {agent}")
    print(f"job: sh -c 'for i in $(seq {args.count}); do /bin/true; done', "
          f"{args.reps} repetitions, interleaved")
    print()
    times = {c: [] for c in CONDITIONS}
    cpus = {c: [] for c in CONDITIONS}
    claimed = {c: set() for c in CONDITIONS}
    busy_starts = 0
    with tempfile.TemporaryDirectory(prefix="traindoc-bench-") as workdir:
        for rep in range(args.reps):
            order = CONDITIONS[rep % 4:] + CONDITIONS[:rep % 4]
            for condition in order:
                busy_starts += not bench_util.wait_for_idle()
                seconds, cpu, slots = run_once(condition, args.traindoc, agent, workdir,
                                               args.count, rep)
                times[condition].append(seconds)
                cpus[condition].append(cpu)
                claimed[condition].add(slots)

    base = bench_util.median(times["direct"])
    base_cpu = bench_util.median(cpus["direct"])
    rows = []
    for condition in CONDITIONS:
        mid = bench_util.median(times[condition])
        cpu = bench_util.median(cpus[condition])
        slots = ",".join(str(s) for s in sorted(claimed[condition]) if s is not None) or "-"
        rows.append([condition, f"{mid:.3f}", f"{bench_util.spread(times[condition]):.1f}",
                     f"{1e6 * mid / args.count:.0f}", f"{1e6 * (mid - base) / args.count:+.0f}",
                     f"{mid / base:.3f}", f"{1e6 * cpu / args.count:.0f}",
                     f"{1e6 * (cpu - base_cpu) / args.count:+.0f}", f"{cpu / base_cpu:.3f}",
                     slots])
    bench_util.print_table(
        ["condition", "median s", "noise %", "us/process", "extra", "ratio", "cpu us/process",
         "extra cpu", "cpu ratio", "slots claimed"],
        rows)
    print()
    print("us/process: the loop's wall time over its iterations (a fork and an exec each); cpu:"
          " utime+stime of the shell and its children. extra: over direct, in microseconds."
          " slots claimed: by the whole job (the wrapper and the shells included).")
    print(f"runs started while the machine was busy: {busy_starts} of "
          f"{args.reps * len(CONDITIONS)}")
    print(f"after: {bench_util.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
