#!/usr/bin/env python3
"""How long after a process dies its crash record is on disk in run.db.

The job forks a child that dereferences NULL. The parent notes when waitpid says the child is
dead, then polls <run>/run.db (TRAINDOC_RUN_DIR) every millisecond until the crash row is there,
and reports both delays: from the handler's own timestamp (the record's time_ns) and from the
death. Repeated N times; prints the median and the worst.

    /usr/bin/python3 bench/crash_latency.py [--runs 20] [--traindoc build/bin/traindoc]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile

JOB = r"""
import ctypes, os, sqlite3, sys, time
db = os.path.join(os.environ["TRAINDOC_RUN_DIR"], "run.db")
child = os.fork()
if child == 0:
    ctypes.string_at(0)
os.waitpid(child, 0)
dead_ns = time.time_ns()
while True:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            row = con.execute("select time_ns from crashes where pid = ?", (child,)).fetchone()
    except sqlite3.Error:
        row = None
    if row:
        seen_ns = time.time_ns()
        print(f"LATENCY {seen_ns - row[0]} {seen_ns - dead_ns}", file=sys.stderr)
        break
    if time.time_ns() - dead_ns > 10e9:
        print("LATENCY none", file=sys.stderr)
        break
    time.sleep(0.001)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--traindoc", default="build/bin/traindoc")
    args = parser.parse_args()
    from_handler, from_death = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            out = subprocess.run([args.traindoc, "run", "--quiet", "--out", f"{tmp}/r{i}", "--",
                                  "/usr/bin/python3", "-c", JOB], capture_output=True, text=True)
            line = [l for l in out.stderr.splitlines() if l.startswith("LATENCY")][-1]
            if line == "LATENCY none":
                print(f"run {i}: no crash record within 10 s", file=sys.stderr)
                return 1
            handler_ns, death_ns = map(int, line.split()[1:])
            from_handler.append(handler_ns / 1e6)
            from_death.append(death_ns / 1e6)
    result = {
        "runs": args.runs,
        "from_handler_ms": {"median": statistics.median(from_handler), "max": max(from_handler)},
        "from_death_ms": {"median": statistics.median(from_death), "max": max(from_death)},
    }
    print(f"{'crash record on disk':<28}{'median':>10}{'worst':>10}")
    for key, label in (("from_handler_ms", "after the handler ran"), ("from_death_ms", "after the death")):
        print(f"{label:<28}{result[key]['median']:>8.1f}ms{result[key]['max']:>8.1f}ms")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
