"""Supervisor CPU cost: how much of one core `traindoc run` itself uses while it watches a job
of 8 processes (target: at most 1 %).

The job is a Python parent that forks 7 children; each of the 8 processes holds some memory
(touched, so it is resident) and sleeps, or busy-loops, for the same number of seconds. traindoc
runs it with `--silent`, its output to /dev/null.

Rows: the default --interval 1 and --interval 0.2, a busy job (8 busy processes on the cores
traindoc needs too), and a job whose processes hold 1 GiB each (--big-mib), in one buffer and
in small Python objects, since the slow sample (smaps_rollup) walks every resident page. With --nvml LIB (the stand-in libnvidia-ml of
tests/fakes/nvml), the first two rows again with GPU sampling: 8 fake GPUs, each job process
holding memory on one of them; compare with the rows without (where no NVML loads).

What is measured is the CPU time of the traindoc process alone: utime + stime of all its threads
(main loop and log tap) from /proc/<pid>/stat, never its children's. The script waits for
traindoc to exit without reaping it (waitid WNOWAIT), so the last reading, taken from the
zombie, holds everything up to the exit, the final report included. Two figures per run:

  whole run     CPU time over wall time from start to exit (start-up, sampling, report)
  steady        CPU time over wall time between 3 s after the start and 1 s before the job's
                end, from readings every 0.2 s: the cost of watching, per second

With --baseline BIN (another build of traindoc), every configuration runs under both, one
after the other, and a last column gives the ratio of their whole-run CPU.

Usage:
  /usr/bin/python3 bench/supervisor_overhead.py [--traindoc build/bin/traindoc] [--seconds 30]
      [--procs 8] [--mib 64] [--big-mib 1024] [--torch] [--quick] [--baseline BIN]
      [--nvml build/tests/fakes/nvml/libnvidia-ml.so.1 [--only-nvml]]

Prints one row per configuration and exits 0; exits 1 only when a run fails.
"""
import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

import bench_util

# The job. argv: seconds procs mib mode(sleep|busy|objects) import(- or a module name).
# "objects" sleeps too, holding its memory in small Python objects (4 KiB pages, as a dataset or
# an interpreter's heap) rather than one large buffer (which the kernel may back with huge pages).
JOB = r"""
import os, sys, time
seconds, procs, mib, mode, module = (float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                     sys.argv[4], sys.argv[5])
if module != "-":
    __import__(module)
deadline = time.monotonic() + seconds

def work():
    if mode == "objects":
        hold = list(range((mib << 20) // 36))  # a 28-byte int and an 8-byte slot each
    else:
        hold = b"x" * (mib << 20)  # written, so resident
    if module == "torch":
        # An intra-op pool of 16 threads in every process, as a rank on a 16-core node has.
        torch = sys.modules["torch"]
        torch.set_num_threads(16)
        torch.mm(torch.ones(512, 512), torch.ones(512, 512))
    if mode == "busy":
        while time.monotonic() < deadline:
            pass
    else:
        time.sleep(max(0.0, deadline - time.monotonic()))
    return len(hold)

children = []
for _ in range(procs - 1):
    pid = os.fork()
    if pid == 0:
        work()
        os._exit(0)
    children.append(pid)
work()
for pid in children:
    os.waitpid(pid, 0)
"""

POLL_S = 0.2
STEADY_SKIP_S = 3.0
STEADY_TAIL_S = 1.0


def vm_hwm_kib(pid):
    """Peak resident set of `pid` in KiB, or None."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def host_available_mib():
    """MemAvailable of /proc/meminfo in MiB, or None."""
    try:
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def run_db_counts(run_dir):
    """(sample rounds, process samples, of them slow ones (with USS), processes seen) from
    run.db."""
    db = sqlite3.connect(f"file:{run_dir}/run.db?mode=ro", uri=True)
    try:
        rounds = db.execute("SELECT count(DISTINCT t_ns) FROM proc_samples").fetchone()[0]
        samples = db.execute("SELECT count(*) FROM proc_samples").fetchone()[0]
        slow = db.execute("SELECT count(*) FROM proc_samples WHERE uss IS NOT NULL").fetchone()[0]
        procs = db.execute("SELECT count(*) FROM processes").fetchone()[0]
    finally:
        db.close()
    return rounds, samples, slow, procs


def fake_gpus(workdir, procs, nvml):
    """Environment that makes traindoc load the stand-in NVML with `procs` GPUs, one job process
    on each (the fake finds them in /proc), or None without --nvml."""
    if not nvml:
        return None
    script = os.path.join(workdir, "nvml.txt")
    with open(script, "w", encoding="utf-8") as out:
        for i in range(procs):
            out.write(f"device GPU-bench{i:04d} 00000000:{0x10 + i:02x}:00.0 81559 400 H100\n")
            out.write(f"process {i} job={i} {1000 + i}\n")
    return dict(os.environ, TRAINDOC_NVML_LIBRARY=nvml, TRAINDOC_FAKE_NVML_SCRIPT=script)


def measure(traindoc, workdir, label, interval, seconds, procs, mib, mode, module, env=None):
    """Runs one job under traindoc and returns a dict of figures."""
    run_dir = os.path.join(workdir, label.replace(" ", "_").replace("/", "_").replace(",", ""))
    argv = [traindoc, "run", "--silent", "--out", run_dir, "--interval", str(interval), "--",
            sys.executable, "-c", JOB, str(seconds), str(procs), str(mib), mode, module]
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    readings = []  # (seconds since start, cpu seconds)
    hwm = None
    while True:
        done = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        now = time.monotonic() - start
        if done is not None:
            break
        cpu = bench_util.proc_cpu_seconds(proc.pid)
        hwm = vm_hwm_kib(proc.pid) or hwm
        if cpu is not None:
            readings.append((now, cpu))
        time.sleep(POLL_S)
    wall = time.monotonic() - start
    cpu_total = bench_util.proc_cpu_seconds(proc.pid)  # the zombie's final times
    status = proc.wait()
    if status != 0:
        raise RuntimeError(f"{label}: traindoc exited with {status}")

    # The job ends about `seconds` after its start; the window leaves its start-up and end out.
    window = [(t, c) for t, c in readings
              if STEADY_SKIP_S <= t <= seconds - STEADY_TAIL_S]
    steady = None
    if len(window) >= 2:
        (t0, c0), (t1, c1) = window[0], window[-1]
        steady = (c1 - c0) / (t1 - t0)
    rounds, samples, slow, seen = run_db_counts(run_dir)
    if env is not None:
        db = sqlite3.connect(f"file:{run_dir}/run.db?mode=ro", uri=True)
        gpu_rows = db.execute("SELECT count(*) FROM gpu_process_samples").fetchone()[0]
        db.close()
        if gpu_rows == 0:
            raise RuntimeError(f"{label}: no GPU samples: the stand-in NVML did not load")
    bench_util.remove_tree(run_dir)
    return {
        "label": label,
        "wall": wall,
        "cpu": cpu_total,
        "whole": cpu_total / wall,
        "steady": steady,
        "rounds": rounds,
        "samples": samples,
        "slow": slow,
        "seen": seen,
        "hwm": hwm,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    parser.add_argument("--seconds", type=float, default=30.0, help="job length (default 30)")
    parser.add_argument("--procs", type=int, default=8, help="job processes (default 8)")
    parser.add_argument("--mib", type=int, default=64, help="MiB each process holds (64)")
    parser.add_argument("--big-mib", type=int, default=1024,
                        help="also a run whose processes hold this many MiB each (default"
                             " 1024; 0: none): smaps_rollup's cost grows with resident memory")
    parser.add_argument("--torch", action="store_true",
                        help="also a run whose processes import torch (many mappings)")
    parser.add_argument("--quick", action="store_true", help="10 s jobs, to try the script")
    parser.add_argument("--nvml", default="",
                        help="the stand-in libnvidia-ml.so.1: also rows with GPU sampling")
    parser.add_argument("--baseline", default="",
                        help="another traindoc build, run for every configuration as well")
    parser.add_argument("--only-nvml", action="store_true",
                        help="only the rows with and without GPU sampling, at --interval 1 and 0.2")
    args = parser.parse_args()
    bench_util.check_traindoc(args.traindoc)
    builds = [("", args.traindoc)]
    if args.baseline:
        bench_util.check_traindoc(args.baseline)
        builds.insert(0, ("baseline: ", args.baseline))
    seconds = 10.0 if args.quick else args.seconds

    mib = args.mib
    configs = [
        ("sleep, --interval 1", 1, "sleep", "-", mib, False),
        ("sleep, --interval 0.2", 0.2, "sleep", "-", mib, False),
    ]
    if not args.only_nvml:
        configs.append(("busy, --interval 1", 1, "busy", "-", mib, False))
    if args.nvml:
        configs += [(f"sleep, {args.procs} fake GPUs, --interval 1", 1, "sleep", "-", mib, True),
                    (f"sleep, {args.procs} fake GPUs, --interval 0.2", 0.2, "sleep", "-", mib,
                     True)]
    if args.big_mib and not args.only_nvml:
        available = host_available_mib()
        if available is not None and available < 1.5 * args.procs * args.big_mib:
            print(f"skipping the {args.big_mib} MiB run: only {available} MiB available")
        else:
            configs.append((f"sleep, {args.big_mib} MiB each, --interval 1", 1, "sleep", "-",
                            args.big_mib, False))
            configs.append((f"sleep, {args.big_mib} MiB of Python objects each, --interval 1", 1,
                            "objects", "-", args.big_mib, False))
    if args.torch and not args.only_nvml:
        configs.append(("sleep, torch + 16 threads, --interval 1", 1, "sleep", "torch", mib,
                        False))

    print(f"machine: {bench_util.machine()}; {bench_util.load_average()}")
    print(f"traindoc: {args.traindoc}" + (f"; baseline: {args.baseline}" if args.baseline else ""))
    print(f"job: {args.procs} processes x {args.mib} MiB resident (unless said), {seconds:g} s; "
          f"python: {sys.executable}")
    print()
    results = []
    with tempfile.TemporaryDirectory(prefix="traindoc-bench-") as workdir:
        for label, interval, mode, module, held, gpus in configs:
            for prefix, traindoc in builds:
                if not bench_util.wait_for_idle():
                    print(f"{prefix}{label}: started while the machine was busy")
                env = fake_gpus(workdir, args.procs, args.nvml) if gpus else None
                results.append(measure(traindoc, workdir, prefix + label, interval, seconds,
                                       args.procs, held, mode, module, env))

    rows = []
    for i, r in enumerate(results):
        steady = "-" if r["steady"] is None else f"{100 * r['steady']:.3f}%"
        per_round = 1000 * r["cpu"] / r["rounds"] if r["rounds"] else 0.0
        verdict = "met" if r["whole"] <= 0.01 else "NOT met"
        # A build's row follows the baseline's row of the same configuration.
        ratio = "-"
        if args.baseline and i % 2 == 1 and results[i - 1]["whole"] > 0:
            ratio = f"{r['whole'] / results[i - 1]['whole']:.2f}"
        rows.append([r["label"], f"{r['wall']:.1f}", f"{r['cpu']:.2f}",
                     f"{100 * r['whole']:.3f}%", steady, r["rounds"], r["samples"], r["slow"],
                     r["seen"], f"{per_round:.2f}", f"{(r['hwm'] or 0) / 1024:.1f}", verdict,
                     ratio])
    bench_util.print_table(
        ["configuration", "wall s", "cpu s", "whole run", "steady", "rounds", "proc samples",
         "slow samples", "procs", "cpu ms/round", "peak RSS MiB", "<= 1% of a core",
         "cpu / baseline"],
        rows)
    print()
    print("cpu s: utime+stime of the traindoc process alone (its threads, not the job); the"
          " verdict judges the whole run. rounds: walks stored in run.db. slow samples: those"
          " with smaps_rollup's figures.")
    print(f"after: {bench_util.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
