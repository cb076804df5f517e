"""Helpers shared by the benchmark scripts in bench/: where traindoc is, what machine this is,
statistics and a plain-text table.

The scripts run with Debian's /usr/bin/python3 and need nothing outside the standard library.
"""
import datetime
import os
import platform
import shutil
import socket
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def default_traindoc():
    """$TRAINDOC_BIN, else build/bin/traindoc of this checkout."""
    return os.environ.get("TRAINDOC_BIN", str(ROOT / "build" / "bin" / "traindoc"))


def agent_beside(traindoc):
    """The agent library that `traindoc` injects: lib/ beside its bin/ folder."""
    return str(Path(traindoc).resolve().parents[1] / "lib" / "libtraindoc_agent.so")


def check_traindoc(traindoc):
    """Exits with a clear message when the binary is missing (build first)."""
    if not os.access(traindoc, os.X_OK):
        raise SystemExit(f"{traindoc} is missing: build first "
                         "(cmake --preset default && cmake --build --preset default)")


def builds(traindoc, baseline=None):
    """The builds a benchmark compares, by name: "traindoc", and "baseline" when another build's
    bin/traindoc is given; exits with a clear message when one is missing."""
    named = {"traindoc": traindoc}
    if baseline:
        named["baseline"] = baseline
    for path in named.values():
        check_traindoc(path)
    return named


def machine():
    """One line naming the machine: cores, CPU model, kernel, date."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (f"{os.cpu_count()} cores, {model}, Linux {platform.release()}, "
            f"{date}")


def load_average():
    """The 1, 5 and 15 minute load averages as text: what else was running."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def _cpu_times():
    """(idle, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat", encoding="utf-8") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields[:8])  # idle + iowait; steal included in total


def wait_for_idle(min_idle=0.9, window_s=1.0, timeout_s=120.0):
    """Waits until the CPUs were at least `min_idle` idle over `window_s` (nothing else is
    running), or `timeout_s` passed. True when the machine was found idle."""
    deadline = time.monotonic() + timeout_s
    while True:
        idle0, total0 = _cpu_times()
        time.sleep(window_s)
        idle1, total1 = _cpu_times()
        if total1 > total0 and (idle1 - idle0) / (total1 - total0) >= min_idle:
            return True
        if time.monotonic() >= deadline:
            return False


def proc_cpu_seconds(pid):
    """utime + stime of process `pid` itself (all its threads, not its children), in seconds;
    also readable while it is a zombie not yet reaped. None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            text = stat.read()
    except OSError:
        return None
    # Fields after the ')' that closes the command name: state is field 3, utime 14, stime 15.
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def free_port():
    """A TCP port of 127.0.0.1 free at this moment, for a job's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_quietly(argv, **kwargs):
    """Runs argv to its end with its output discarded; raises on a non-zero status."""
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   **kwargs)


def median(values):
    return statistics.median(values)


def spread(values):
    """Half the range relative to the median, in percent: a rough noise figure."""
    mid = statistics.median(values)
    return 0.0 if mid == 0 else 50.0 * (max(values) - min(values)) / mid


def print_table(headers, rows):
    """Prints rows under headers, columns aligned; numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def fmt(row):
        parts = []
        for i, cell in enumerate(row):
            numeric = cell.lstrip("+-").replace(".", "", 1).replace("%", "").isdigit()
            parts.append(cell.rjust(widths[i]) if numeric else cell.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    print(fmt(cells[0]))
    print("  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print(fmt(row))


def remove_tree(path):
    shutil.rmtree(path, ignore_errors=True)
