"""A day-long 8-rank job's run folder: the size of its run.db, the time `traindoc analyze` takes
on it and the size of the reports it writes (targets: analyze under 10 s, report.html under
5 MB).

The run.db is synthetic, of the real schema, written through the store's own StoreWriter as the
supervisor writes it (build/bench/day_run_db, bench/day_run_db.cpp): a launcher, 8 ranks and 4
DataLoader workers per rank started again each 30-minute epoch (1,536 in the day), each sampled
every second (86,400 rounds), every 5th round with the slow fields; the host and 8 GPUs (and
each rank's memory on its GPU) every second; the ranks' step counts (2 steps a second, three
kinds); a progress line of each rank every 10 s; the collective calls the supervisor keeps (the
first 200 and the last 64 of each rank); samples older than 10 minutes thinned each minute. The
day ends with one rank's exception and the launcher's teardown.

Usage:
  /usr/bin/python3 bench/day_run.py [--traindoc build/bin/traindoc] [--baseline OTHER/traindoc]
      [--generator build/bench/day_run_db] [--seconds 86400] [--reps 5]

With --baseline, each repetition runs `traindoc analyze` of both builds on the same run.db, one
after the other, so that a change is measured side by side. Prints the machine, the run.db's
size and the time to write it, one table (median wall and CPU seconds of analyze, with the
noise, its peak RSS and the reports' sizes), the verdict against the targets (on wall time; on a
busy machine, read the CPU seconds), and exits 0 (1 when an analyze failed).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_util

TARGET_ANALYZE_S = 10.0
TARGET_HTML_BYTES = 5_000_000


def analyze(traindoc, run_dir):
    """One `traindoc analyze --silent`: (wall seconds, CPU seconds, peak RSS in bytes,
    report.html bytes, report.json bytes), or None when it failed. The job's status (1: the day ended in a failure)
    is what analyze returns."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([traindoc, "analyze", "--silent", str(run_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    error = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode not in (0, 1) or error:
        print(f"{traindoc} analyze failed ({proc.returncode}): {error.strip()}", file=sys.stderr)
        return None
    return (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024,
            (run_dir / "report.html").stat().st_size, (run_dir / "report.json").stat().st_size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traindoc", default=bench_util.default_traindoc())
    parser.add_argument("--baseline", help="another build's traindoc, measured beside it")
    parser.add_argument("--generator", default=str(bench_util.ROOT / "build" / "bench" /
                                                   "day_run_db"))
    parser.add_argument("--seconds", type=int, default=86_400, help="the job's length")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    builds = [("this build", args.traindoc)]
    if args.baseline:
        builds.insert(0, ("baseline", args.baseline))
    for _, traindoc in builds:
        bench_util.check_traindoc(traindoc)
    bench_util.check_traindoc(args.generator)

    print(bench_util.machine())
    print(bench_util.load_average())
    failed = False
    with tempfile.TemporaryDirectory(prefix="traindoc-day-") as tmp:
        run_dir = Path(tmp) / "run"
        t0 = time.perf_counter()
        subprocess.run([args.generator, str(run_dir), "--seconds", str(args.seconds)], check=True)
        written_s = time.perf_counter() - t0
        db_bytes = sum(f.stat().st_size for f in run_dir.glob("run.db*"))
        print(f"run.db of {args.seconds} s: {db_bytes / 1e6:.1f} MB, written in {written_s:.0f} s")
        results = {name: [] for name, _ in builds}
        busy = 0
        for rep in range(args.reps):
            for name, traindoc in builds[rep % len(builds):] + builds[:rep % len(builds)]:
                busy += 0 if bench_util.wait_for_idle() else 1
                result = analyze(traindoc, run_dir)
                if result is None:
                    failed = True
                else:
                    results[name].append(result)
        if busy:
            print(f"{busy} run(s) started on a busy machine")
        rows = []
        for name, _ in builds:
            runs = results[name]
            if not runs:
                continue
            times = [r[0] for r in runs]
            cpu = [r[1] for r in runs]
            rows.append([name, f"{bench_util.median(times):.2f}",
                         f"{bench_util.spread(times):.0f}%", f"{bench_util.median(cpu):.2f}",
                         f"{bench_util.spread(cpu):.0f}%",
                         f"{max(r[2] for r in runs) / 2**20:.0f}",
                         f"{runs[-1][3] / 1e6:.2f}", f"{runs[-1][4] / 1e3:.0f}"])
        bench_util.print_table(["build", "analyze s", "noise", "CPU s", "noise", "peak RSS MiB",
                                "report.html MB", "report.json kB"], rows)
        mine = results["this build"]
        if mine:
            seconds = bench_util.median([r[0] for r in mine])
            html = mine[-1][3]
            ok = seconds < TARGET_ANALYZE_S and html < TARGET_HTML_BYTES
            print(f"targets (analyze < {TARGET_ANALYZE_S:.0f} s, report.html < "
                  f"{TARGET_HTML_BYTES / 1e6:.0f} MB): {'met' if ok else 'MISSED'}")
    print(bench_util.load_average())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
