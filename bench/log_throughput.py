"""Log tap cost: how much slower a job that prints a lot runs under `traindoc run`, and whether a
100 MB line and binary output pass unchanged (target: a job printing 100k lines per second is
slowed by at most 1 %).

Each scenario runs the same job twice per repetition, directly and under
`traindoc run --silent`, the order alternating between repetitions. Either way the job's (or
traindoc's) stdout and stderr are pipes that this script drains (to nothing, or into sha256).
The job times itself and writes its figures to a side file, so stdout and stderr carry only what
is being measured.

  paced      fixed work per 1 ms batch (a spin loop calibrated on this machine) then 100 lines
             of 67 bytes through sys.stdout, block-buffered as Python does on a pipe: 100k
             lines/s for about 3 s, 11 repetitions, as a training loop that logs a lot. The
             figure is the job's own time for the whole work; the ratio is the slowdown the
             target speaks of.
  paced, all cores busy
             the same while the rest of the job (one spinning process per other core) keeps
             the machine busy, as ranks and DataLoader workers do: the tap's CPU then comes out
             of the job's.
  paced, write per line
             the same, line-buffered (one write() per line), as Python writes to a terminal or
             with PYTHONUNBUFFERED=1.
  burst      the same lines with no work in between: as fast as Python can print them.
  raw        1 MiB os.write calls, 1 GiB in all: what the tap can carry.
  line       one 100 MB line (seeded random bytes, no newline until its end), then its newline.
  binary     32 MiB of seeded random bytes (NUL, CR, ESC, invalid UTF-8) to stdout and 8 MiB to
             stderr, in odd-sized writes.

Each run first waits (up to 60 s) for the machine to be idle. line and binary also compare
byte counts and sha256 of both streams, with and without traindoc.

With --baseline PATH, another traindoc build (say, of the previous commit) runs as a third
condition in every repetition, so that a change to the tap is measured side by side against the
build before it; a second table compares the two builds' own CPU and the job's time.

Usage:
  /usr/bin/python3 bench/log_throughput.py [--traindoc build/bin/traindoc] [--reps 5] [--quick]
      [--only paced,paced-loaded,paced-line,burst,raw,line,binary] [--pipe-size BYTES]
      [--baseline OTHER/bin/traindoc]

Prints a table and exits 0; exits 1 when traindoc changed a byte or a run failed.
"""
import argparse
import fcntl
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import bench_util

# The job. argv: result-file scenario [numbers...]. It writes "seconds cpu_seconds" to the file.
JOB = r"""
import os, random, resource, sys, time
result, scenario = sys.argv[1], sys.argv[2]
args = [int(a) for a in sys.argv[3:]]
t0 = time.perf_counter()
spinners = []
if scenario in ("paced", "burst"):
    batches, lines, spin, line_buffered, loaded = args
    if line_buffered:
        sys.stdout.reconfigure(line_buffering=True)  # a write() per line, as on a terminal
    for _ in range(os.cpu_count() - 1 if loaded else 0):
        # The rest of the job keeps every other core busy (ranks, DataLoader workers).
        pid = os.fork()
        if pid == 0:
            while True:
                pass
        spinners.append(pid)
    t0 = time.perf_counter()
    out = sys.stdout
    x = 0
    for b in range(batches):
        for _ in range(spin):
            x += 1
        for i in range(lines):
            out.write(f"step {b:7d} line {i:3d} loss {x % 9973 / 9973:.6f} lr 0.001000 "
                      f"speed 1234.5 img/s\n")
    out.flush()
elif scenario == "raw":
    block = b"0123456789abcde\n" * (1 << 16)
    for _ in range(args[0]):
        os.write(1, block)
elif scenario == "line":
    data = random.Random(1).randbytes(args[0]).translate(bytes.maketrans(b"\n", b" ")) + b"\n"
    view = memoryview(data)
    t0 = time.perf_counter()
    while view:
        view = view[os.write(1, view):]
elif scenario == "binary":
    rng = random.Random(2)
    for fd, size in ((1, args[0]), (2, args[1])):
        data = rng.randbytes(size)
        pos = 0
        while pos < size:
            step = rng.randrange(1, 70000)
            pos += os.write(fd, data[pos:pos + step])
seconds = time.perf_counter() - t0
for pid in spinners:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
usage = resource.getrusage(resource.RUSAGE_SELF)
with open(result, "w") as f:
    f.write(f"{seconds} {usage.ru_utime + usage.ru_stime}\n")
"""

CHUNK = 1 << 20
# Python buffers stdout by blocks when it is a pipe, unless told otherwise: the scenarios say
# which they want, whatever the caller's environment holds.
JOB_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ from Python 3.10 on
LINES_PER_BATCH = 100
BATCH_S = 0.001


class Drain(threading.Thread):
    """Reads a pipe to its end and counts the bytes; when asked, keeps them to hash once the
    job has ended, so that hashing never slows the reader down."""

    def __init__(self, fd, keep):
        super().__init__(daemon=True)
        self.fd = fd
        self.bytes = 0
        self.chunks = [] if keep else None

    def run(self):
        while True:
            data = os.read(self.fd, CHUNK)
            if not data:
                break
            self.bytes += len(data)
            if self.chunks is not None:
                self.chunks.append(data)
        os.close(self.fd)

    def digest(self):
        if self.chunks is None:
            return None
        sha = hashlib.sha256()
        for chunk in self.chunks:
            sha.update(chunk)
        self.chunks = None
        return sha.hexdigest()


def make_pipe(size):
    """A pipe whose buffer holds `size` bytes (0: the kernel's default, 64 KiB)."""
    read_fd, write_fd = os.pipe()
    if size:
        fcntl.fcntl(read_fd, F_SETPIPE_SZ, size)
    return read_fd, write_fd


def run_job(traindoc, workdir, job_args, digest, pipe_size):
    """Runs the job once (under traindoc when `traindoc` is set). Returns a dict."""
    result = os.path.join(workdir, "result")
    job = [sys.executable, "-c", JOB, result, *[str(a) for a in job_args]]
    run_dir = os.path.join(workdir, "run")
    argv = [traindoc, "run", "--silent", "--out", run_dir, "--", *job] if traindoc else job
    out_r, out_w = make_pipe(pipe_size)
    err_r, err_w = make_pipe(pipe_size)
    drains = [Drain(out_r, digest), Drain(err_r, digest)]
    for drain in drains:
        drain.start()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=out_w, stderr=err_w, env=JOB_ENV)
    os.close(out_w)
    os.close(err_w)
    # traindoc's own CPU time (its tap and main threads, not the job): read from the zombie
    # before it is reaped, so it holds everything up to the exit.
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    supervisor_cpu = bench_util.proc_cpu_seconds(proc.pid) if traindoc else None
    status = proc.wait()
    for drain in drains:
        drain.join()
    total = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"{' '.join(argv[:6])}...: exit status {status}")
    with open(result, encoding="utf-8") as f:
        seconds, cpu = (float(v) for v in f.read().split())
    os.unlink(result)
    bench_util.remove_tree(run_dir)
    return {"job": seconds, "cpu": cpu, "total": total, "supervisor_cpu": supervisor_cpu,
            "out": (drains[0].bytes, drains[0].digest()),
            "err": (drains[1].bytes, drains[1].digest())}


def calibrate_spin(workdir, pipe_size, line_buffered):
    """Spin iterations that, with 100 lines, make a batch last BATCH_S when run directly: a
    first guess from a run without spinning and one with, then two corrections."""
    batches = 2000

    def per_batch(spin):
        job = ["paced", batches, LINES_PER_BATCH, spin, line_buffered, 0]
        took = []
        for _ in range(3):
            bench_util.wait_for_idle(timeout_s=30.0)
            took.append(run_job(None, workdir, job, False, pipe_size)["job"])
        return min(took) / batches

    quiet = per_batch(0)
    if quiet >= BATCH_S:
        raise RuntimeError("printing 100 lines alone takes longer than 1 ms here")
    probe = 20000
    spin = int(probe * (BATCH_S - quiet) / max(1e-9, per_batch(probe) - quiet))
    for _ in range(2):
        took = per_batch(spin)
        spin = int(spin * (BATCH_S - quiet) / max(1e-9, took - quiet))
    return spin


def compare(binaries, workdir, name, job_args, reps, pipe_size, digest=False):
    """Interleaved runs, direct and under each of `binaries` ({"traindoc": path, and maybe
    "baseline": path}), the order rotating between repetitions. Returns a row dict."""
    conds = ["direct", *binaries]
    runs = {cond: [] for cond in conds}
    busy = 0
    for rep in range(reps):
        for cond in conds[rep % len(conds):] + conds[:rep % len(conds)]:
            busy += not bench_util.wait_for_idle(timeout_s=60.0)
            runs[cond].append(run_job(binaries.get(cond), workdir, job_args, digest, pipe_size))
    direct = [r["job"] for r in runs["direct"]]
    under = [r["job"] for r in runs["traindoc"]]
    streams = {(r["out"], r["err"]) for cond in conds for r in runs[cond]}
    lines = job_args[1] * job_args[2] if job_args[0] in ("paced", "burst") else None
    # Runs next to each other in time share the machine's state: the median of their ratios
    # shrugs off a slow spell better than a ratio of medians.
    pair_ratios = sorted(t / d for t, d in zip(under, direct))
    quartiles = statistics.quantiles(pair_ratios, n=4) if len(pair_ratios) > 1 else pair_ratios * 3
    baseline = runs.get("baseline")
    return {"name": name, "direct": direct, "traindoc": under, "lines": lines,
            "ratio": bench_util.median(pair_ratios), "iqr": (quartiles[0], quartiles[-1]),
            "busy": busy, "runs": len(conds) * reps,
            "direct_cpu": bench_util.median([r["cpu"] for r in runs["direct"]]),
            "traindoc_cpu": bench_util.median([r["cpu"] for r in runs["traindoc"]]),
            "direct_total": bench_util.median([r["total"] for r in runs["direct"]]),
            "traindoc_total": bench_util.median([r["total"] for r in runs["traindoc"]]),
            "supervisor_cpu": bench_util.median([r["supervisor_cpu"] for r in runs["traindoc"]]),
            "baseline_job": bench_util.median([r["job"] for r in baseline]) if baseline else None,
            "baseline_cpu": (bench_util.median([r["supervisor_cpu"] for r in baseline])
                             if baseline else None),
            "identical": len(streams) == 1,
            "streams": runs["direct"][0]["out"], "err_stream": runs["direct"][0]["err"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    parser.add_argument("--reps", type=int, default=5,
                        help="repetitions per scenario (5; the paced ones twice as many, the"
                             " 100 MB line and binary ones half)")
    parser.add_argument("--quick", action="store_true", help="smaller jobs, 2 repetitions")
    parser.add_argument("--pipe-size", type=int, default=1 << 20,
                        help="buffer of the pipes this script reads (default 1 MiB, as big as"
                             " the pipe traindoc gives the job; 0: the kernel's 64 KiB)")
    parser.add_argument("--baseline", default=None,
                        help="another traindoc build to run in the same repetitions")
    parser.add_argument("--only", default="",
                        help="comma-separated scenarios to run (paced, paced-loaded,"
                             " paced-line, burst, raw, line, binary); default all")
    args = parser.parse_args()
    binaries = bench_util.builds(args.traindoc, args.baseline)
    wanted = set(filter(None, args.only.split(","))) or {
        "paced", "paced-loaded", "paced-line", "burst", "raw", "line", "binary"}
    reps = 2 if args.quick else args.reps
    scale = 10 if args.quick else 1
    pipe = args.pipe_size

    print(f"machine: {bench_util.machine()}; {bench_util.load_average()}")
    print(f"traindoc: {args.traindoc}; baseline: {args.baseline}; python: {sys.executable}; "
          f"{reps} repetitions, "
          f"interleaved; reader pipes: {pipe or 'default'} bytes")
    rows = []
    with tempfile.TemporaryDirectory(prefix="traindoc-bench-") as workdir:
        paced_batches = 3000 // scale
        spins = {}
        for key, line_buffered, loaded, name in (
                ("paced", 0, 0, "paced 100k lines/s"),
                ("paced-loaded", 0, 1, "paced, all cores busy"),
                ("paced-line", 1, 0, "paced, write per line")):
            if key not in wanted:
                continue
            if line_buffered not in spins:
                spins[line_buffered] = calibrate_spin(workdir, pipe, line_buffered)
            spin = spins[line_buffered]
            print(f"{name}: {spin} spin iterations + {LINES_PER_BATCH} lines per batch, "
                  f"{paced_batches} batches")
            rows.append(compare(binaries, workdir, name,
                                ["paced", paced_batches, LINES_PER_BATCH, spin, line_buffered,
                                 loaded],
                                2 * reps + 1, pipe))
        print()
        if "burst" in wanted:
            rows.append(compare(binaries, workdir, "burst lines",
                                ["burst", 30000 // scale, LINES_PER_BATCH, 0, 0, 0], reps,
                                pipe))
        if "raw" in wanted:
            rows.append(compare(binaries, workdir, "raw 1 MiB writes",
                                ["raw", 1024 // scale], reps, pipe))
        if "line" in wanted:
            rows.append(compare(binaries, workdir, "one 100 MB line",
                                ["line", 100_000_000], max(2, reps // 2), pipe, digest=True))
        if "binary" in wanted:
            rows.append(compare(binaries, workdir, "binary 32+8 MiB",
                                ["binary", 32 << 20, 8 << 20], max(2, reps // 2), pipe,
                                digest=True))

    table = []
    failed = False
    for r in rows:
        d = bench_util.median(r["direct"])
        t = bench_util.median(r["traindoc"])
        out_bytes = r["streams"][0]
        if r["lines"]:
            rate = f"{r['lines'] / d / 1000:.0f}k lines/s"
        else:
            rate = f"{out_bytes / d / 1e6:.0f} MB/s"
        same = "identical" if r["identical"] else "DIFFERENT"
        failed |= not r["identical"]
        noise = (bench_util.spread(r["direct"]), bench_util.spread(r["traindoc"]))
        table.append([r["name"], f"{d:.3f}", f"{t:.3f}", f"{r['ratio']:.4f}",
                      f"{r['iqr'][0]:.3f}-{r['iqr'][1]:.3f}",
                      f"{noise[0]:.1f}/{noise[1]:.1f}",
                      f"{r['direct_cpu']:.2f}/{r['traindoc_cpu']:.2f}",
                      f"{r['direct_total']:.2f}/{r['traindoc_total']:.2f}",
                      f"{r['supervisor_cpu']:.2f}",
                      f"{100 * r['supervisor_cpu'] / r['traindoc_total']:.1f}%",
                      rate, out_bytes + r["err_stream"][0], same])
    bench_util.print_table(
        ["scenario", "direct s", "traindoc s", "ratio", "ratio IQR", "noise %", "job cpu s",
         "total s", "traindoc cpu s", "of a core", "direct rate", "bytes", "output"],
        table)
    print()
    print("direct s / traindoc s: median of the job's own time for its work. ratio: median over"
          " the repetitions of traindoc / direct (each pair run back to back); ratio IQR: their"
          " interquartile range. noise %: half the range over the median (direct/traindoc). job"
          " cpu s: the job's utime+stime. total s: from spawn to both pipes closed (traindoc's"
          " start-up and report included). traindoc cpu s: utime+stime of the traindoc process"
          " itself (tap, sampling, report), and as a share of one core over its total s. output:"
          " stdout and stderr bytes and sha256 (line, binary) or byte counts (others) across"
          " every run.")
    if args.baseline:
        print()
        bench_util.print_table(
            ["scenario", "baseline job s", "traindoc job s", "job ratio", "baseline cpu s",
             "traindoc cpu s", "cpu ratio"],
            [[r["name"], f"{r['baseline_job']:.3f}", f"{bench_util.median(r['traindoc']):.3f}",
              f"{bench_util.median(r['traindoc']) / r['baseline_job']:.3f}",
              f"{r['baseline_cpu']:.2f}", f"{r['supervisor_cpu']:.2f}",
              f"{r['supervisor_cpu'] / r['baseline_cpu']:.3f}"] for r in rows])
        print("baseline against traindoc, run in the same repetitions: medians of the job's own"
              " time and of the traindoc process's own CPU (utime+stime).")
    busy = sum(r["busy"] for r in rows)
    print(f"runs started while the machine was busy (after a 60 s wait): {busy} of "
          f"{sum(r['runs'] for r in rows)}")
    for r in rows:
        if r["name"].startswith("paced"):
            ratio = r["ratio"]
            print(f"target ({r['name']} slowed <= 1%): {'met' if ratio <= 1.01 else 'NOT met'} "
                  f"(median {100 * (ratio - 1):+.2f}%, interquartile "
                  f"{100 * (r['iqr'][0] - 1):+.2f}% to {100 * (r['iqr'][1] - 1):+.2f}%)")
    print(f"after: {bench_util.load_average()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
