"""Agent start-up cost per process: a fork without exec, an exec, and a shell loop of both, with
and without the injected agent, and under `traindoc run`; optionally against another build.

Three jobs, each a Python wrapper that times its own loop of N processes (perf_counter, and the
CPU time of itself and its children), so that the wrapper's start and traindoc's start-up and
report stay out of the per-process figure:

  fork    os.fork() N times; each child os._exit(0)s at once, the parent waits for it: the
          agent's fork handler (no exec)
  exec    os.posix_spawn of /bin/true N times (glibc spawns with a vfork-like clone, which runs
          no fork handler): the agent's start-up in a fresh program
  shell   sh -c 'for i in $(seq N); do /bin/true; done': dash forks, the child execs, both

Conditions, the same job each time, repetitions interleaved (the order rotates):

  direct          no LD_PRELOAD: the baseline
  agent inert     LD_PRELOAD of libtraindoc_agent.so, TRAINDOC_RUN_DIR unset: loading it
  agent           LD_PRELOAD and TRAINDOC_RUN_DIR of a folder holding a fresh agent/slots (a copy
                  of the one a `traindoc run` made), no supervisor
  traindoc run    the job under `traindoc run --silent`: the agent plus the supervisor
  ... (baseline)  the last two with the build given by --baseline

For `traindoc run` the wall time of the whole command (its start-up, the job, its report) is
given as well ("whole s"), against the wrapper's own whole time run directly.

Usage:
  /usr/bin/python3 bench/agent_startup.py [--traindoc build/bin/traindoc]
      [--baseline OTHER/bin/traindoc] [--count 2000] [--reps 5] [--jobs fork,exec,shell]
      [--idle-timeout 120]

Each run waits (up to --idle-timeout seconds) for the machine to be idle first. Prints what a page
fault and a system call cost on this machine (most of a process's start-up), then a table
per job (median seconds, wall and CPU microseconds per process over direct, ratios) and the
verdict against the target (under 100 us per fork and per exec with the agent active; a
fork-heavy job under `traindoc run` within 1.2x), and exits 0.
"""
import argparse
import mmap
import os
import subprocess
import sys
import tempfile
import time

import bench_util

WRAPPER = r"""
import os, resource, sys, time
result, job, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
if job == "shell":
    import subprocess  # which imports threading: not in the fork job, whose forks it slows

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

t0, c0 = time.perf_counter(), cpu()
if job == "fork":
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
elif job == "exec":
    for _ in range(count):
        os.waitpid(os.posix_spawn("/bin/true", ["/bin/true"], os.environ), 0)
else:
    subprocess.run(["/bin/sh", "-c", f"for i in $(seq {count}); do /bin/true; done"], check=True)
seconds, cpu_seconds = time.perf_counter() - t0, cpu() - c0
with open(result, "w") as f:
    f.write(f"{seconds} {cpu_seconds}\n")
"""

JOBS = ("fork", "exec", "shell")
TARGET_US = 100.0
TARGET_RATIO = 1.2


def machine_costs(pages=20000, calls=200000):
    """Microseconds of a page fault (the first write to an anonymous page) and of a system call
    (getppid) on this machine, each with a Python loop's step around it: what a process's
    start-up is made of, and how far this machine is from bare metal."""
    area = mmap.mmap(-1, pages * mmap.PAGESIZE)
    t0 = time.perf_counter()
    for offset in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
        area[offset] = 1
    fault_us = (time.perf_counter() - t0) / pages * 1e6
    area.close()
    t0 = time.perf_counter()
    for _ in range(calls):
        os.getppid()
    return fault_us, (time.perf_counter() - t0) / calls * 1e6


def clean_env():
    """The caller's environment without any agent settings."""
    return {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "TRAINDOC_RUN_DIR", "TRAINDOC_AGENT")}


def conditions(baseline):
    """(name, traindoc binary or None, how) for every condition of this run."""
    out = [("direct", None, "direct"), ("agent inert", "new", "inert"),
           ("agent", "new", "agent"), ("traindoc run", "new", "run")]
    if baseline:
        out += [("agent (baseline)", "base", "agent"), ("traindoc run (baseline)", "base", "run")]
    return out


_templates = {}


def slots_template(traindoc, workdir):
    """A fresh slots file as `traindoc` prepares it for a job, made once per build (traindoc
    removes its own at the end of the run, so the job copies it). The copying process holds
    slot 0."""
    if traindoc not in _templates:
        path = os.path.join(workdir, f"slots-{len(_templates)}")
        made = os.path.join(workdir, "made")
        bench_util.run_quietly([traindoc, "run", "--silent", "--out", made, "--", "/bin/sh", "-c",
                                f'cp --sparse=always "$TRAINDOC_RUN_DIR/agent/slots" {path}'])
        bench_util.remove_tree(made)
        _templates[traindoc] = path
    return _templates[traindoc]


def run_once(how, traindoc, workdir, job, count, rep):
    """One timed loop: (seconds, CPU seconds, whole seconds of the command, slots claimed)."""
    result = os.path.join(workdir, "result")
    wrapper = [sys.executable, "-c", WRAPPER, result, job, str(count)]
    env = clean_env()
    run_dir = os.path.join(workdir, f"run-{rep}")
    argv = wrapper
    if how in ("inert", "agent"):
        env["LD_PRELOAD"] = bench_util.agent_beside(traindoc)
    if how == "agent":
        os.makedirs(os.path.join(run_dir, "agent"))
        subprocess.run(["cp", "--sparse=always", slots_template(traindoc, workdir),
                        os.path.join(run_dir, "agent", "slots")], check=True)
        env["TRAINDOC_RUN_DIR"] = run_dir
    elif how == "run":
        argv = [traindoc, "run", "--silent", "--out", run_dir, "--", *wrapper]
    t0 = time.perf_counter()
    bench_util.run_quietly(argv, env=env)
    whole = time.perf_counter() - t0
    with open(result, encoding="utf-8") as f:
        seconds, cpu = (float(v) for v in f.read().split())
    os.unlink(result)
    claimed = slots_claimed(run_dir) if how in ("agent", "run") else None
    bench_util.remove_tree(run_dir)
    return seconds, cpu, whole, claimed


def slots_claimed(run_dir):
    """How many agent slots were claimed in the run folder (a check that the agent ran); None
    once traindoc has removed the file at the end of its run."""
    try:
        with open(os.path.join(run_dir, "agent", "slots"), "rb") as f:
            header = f.read(64)
    except OSError:
        return None
    # AgentHeader (src/common/layout.h): magic, version, slot_count, slot_size, then the
    # claimed counter: five little-endian u32, the counter at offset 16.
    return int.from_bytes(header[16:20], "little")


def job_table(job, names, results, count):
    """Prints one job's table; returns {condition: (extra wall us, extra cpu us, ratio,
    whole ratio)}."""
    med = {n: [bench_util.median([r[i] for r in results[n]]) for i in range(3)] for n in names}
    base_s, base_cpu, base_whole = med["direct"][:3]
    rows, summary = [], {}
    for name in names:
        seconds, cpu, whole = med[name][:3]
        extra = 1e6 * (seconds - base_s) / count
        extra_cpu = 1e6 * (cpu - base_cpu) / count
        whole_ratio = whole / base_whole
        summary[name] = (extra, extra_cpu, seconds / base_s, whole_ratio)
        slots = ",".join(str(s) for s in sorted({r[3] for r in results[name]} - {None})) or "-"
        rows.append([name, f"{seconds:.3f}",
                     f"{bench_util.spread([r[0] for r in results[name]]):.1f}",
                     f"{1e6 * seconds / count:.0f}", f"{extra:+.0f}", f"{seconds / base_s:.3f}",
                     f"{1e6 * cpu / count:.0f}", f"{extra_cpu:+.0f}", f"{cpu / base_cpu:.3f}",
                     f"{whole:.2f}", f"{whole_ratio:.3f}", slots])
    print(f"job: {job}, {count} processes")
    bench_util.print_table(
        ["condition", "median s", "noise %", "us/process", "extra", "ratio", "cpu us/process",
         "extra cpu", "cpu ratio", "whole s", "whole ratio", "slots"],
        rows)
    print()
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    parser.add_argument("--baseline", help="another build's bin/traindoc, run side by side")
    parser.add_argument("--count", type=int, default=2000, help="processes per loop (2000)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (5)")
    parser.add_argument("--jobs", default=",".join(JOBS), help="fork,exec,shell")
    parser.add_argument("--idle-timeout", type=float, default=120.0,
                        help="seconds to wait for an idle machine before each run (120)")
    args = parser.parse_args()
    jobs = [j for j in args.jobs.split(",") if j]
    if not set(jobs) <= set(JOBS):
        raise SystemExit(f"--jobs: one or more of {','.join(JOBS)}")
    builds = {"new": args.traindoc, "base": args.baseline}
    for traindoc in filter(None, builds.values()):
        bench_util.check_traindoc(traindoc)
        if not os.path.exists(bench_util.agent_beside(traindoc)):
            raise SystemExit(f"{bench_util.agent_beside(traindoc)} is missing: build first")
    conds = conditions(args.baseline)
    names = [c[0] for c in conds]

    print(f"machine: {bench_util.machine()}; {bench_util.load_average()}")
    fault_us, call_us = machine_costs()
    print(f"a page fault: {fault_us:.2f} us, a system call: {call_us:.2f} us")
    print(f"traindoc: {args.traindoc}; baseline: {args.baseline or '-'}")
    print(f"{args.count} processes per loop, {args.reps} repetitions, interleaved")
    print()
    results = {job: {n: [] for n in names} for job in jobs}
    busy_starts = runs = 0
    with tempfile.TemporaryDirectory(prefix="traindoc-bench-") as workdir:
        for rep in range(args.reps):
            shift = rep % len(conds)
            for job in jobs:
                for name, build, how in conds[shift:] + conds[:shift]:
                    busy_starts += not bench_util.wait_for_idle(timeout_s=args.idle_timeout)
                    runs += 1
                    result = run_once(how, builds.get(build) or args.traindoc, workdir, job,
                                      args.count, rep)
                    results[job][name].append(result)
                    print(f"  rep {rep + 1} {job} {name}: {result[0]:.3f} s, cpu {result[1]:.3f} s,"
                          f" whole {result[2]:.2f} s", flush=True)

    summaries = {job: job_table(job, names, results[job], args.count) for job in jobs}
    print("extra: microseconds per process over direct (wall, then CPU of the wrapper and its"
          " children). whole: the command's own wall time, traindoc's start-up and report"
          " included. slots: claimed by the whole job (the wrapper included).")
    for job in ("fork", "exec"):
        if job in summaries:
            extra, extra_cpu = summaries[job]["agent"][:2]
            print(f"verdict, {job}: agent active +{extra:.0f} us wall, +{extra_cpu:.0f} us CPU"
                  f" per process: {'met' if max(extra, extra_cpu) < TARGET_US else 'NOT met'}"
                  f" (target under {TARGET_US:.0f} us)")
    for job in ("fork", "shell"):
        if job in summaries:
            ratio, whole = summaries[job]["traindoc run"][2:]
            print(f"verdict, {job} job under traindoc run: {ratio:.3f}x (whole command"
                  f" {whole:.3f}x): {'met' if ratio <= TARGET_RATIO else 'NOT met'}"
                  f" (target within {TARGET_RATIO}x)")
    print(f"runs started while the machine was busy: {busy_starts} of {runs}")
    print(f"after: {bench_util.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
