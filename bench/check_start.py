"""The preflight checks' cost (docs/BENCHMARKS.md section 10): the wall time of `traindoc check`
beside `traindoc --version` (the process's own start), on the machine alone, for a torchrun
command (its #! line, torch's version.py, the rendezvous port), with the stand-in NVML of 8
GPUs, and from a second node (the connect to the first node's port: refused, as before the first
node starts, and unanswered, a listener whose backlog is full). Medians, 90th percentiles and
maxima of 30 runs each, in ms.

  bench/check_start.py [BUILD]    (default: build)"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
import time

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build"
T = str(BUILD / "bin" / "traindoc")
FAKE = str(BUILD / "tests" / "fakes" / "nvml" / "libnvidia-ml.so.1")


def main():
    scenario = Path(tempfile.mkdtemp()) / "nvml.txt"
    scenario.write_text("".join(f"device GPU-{i}aaa 00000000:0{i + 1}:00.0 81920 0 NVIDIA H100\n"
                                for i in range(8)))
    cmd = ["torchrun", "--nproc_per_node", "8", "--redirects", "2",
           str(ROOT / "tests" / "integration" / "jobs" / "loader.py"), "--workers", "8"]
    nvml = {"TRAINDOC_NVML_LIBRARY": FAKE, "TRAINDOC_FAKE_NVML_SCRIPT": str(scenario)}
    # A port nothing listens on, and one whose backlog of 0 a first connection fills, so that
    # the kernel drops the next handshake.
    closed = socket.socket()
    closed.bind(("127.0.0.2", 0))
    full = socket.socket()
    full.bind(("127.0.0.2", 0))
    full.listen(0)
    filler = socket.create_connection(full.getsockname())

    def second_node(port):
        return [T, "check", "--", "torchrun", "--nnodes", "2", "--node_rank", "1",
                "--master_addr", "127.0.0.2", "--master_port", str(port), *cmd[1:]]
    cases = {
        "traindoc --version": ([T, "--version"], {}),
        "check (no NVML)": ([T, "check"], {}),
        "check -- torchrun ... (no NVML)": ([T, "check", "--", *cmd], {}),
        "check -- torchrun ... (stand-in NVML, 8 GPUs)": ([T, "check", "--", *cmd], nvml),
        "check -- torchrun --node_rank 1 ... (port refused)":
            (second_node(closed.getsockname()[1]), {}),
        "check -- torchrun --node_rank 1 ... (no answer)": (second_node(full.getsockname()[1]), {}),
    }
    print("| case | median | p90 | max |")
    print("|---|---|---|---|")
    for name, (argv, extra) in cases.items():
        env = {**os.environ, **extra}
        times = []
        for _ in range(30):
            start = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        print(f"| {name} | {statistics.median(times):.1f} | {times[len(times) * 9 // 10]:.1f} | "
              f"{times[-1]:.1f} |")
    filler.close()


if __name__ == "__main__":
    main()
