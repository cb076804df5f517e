"""Checks of the GPU evidence that need a real GPU (not run on the test machines): a real CUDA
OOM from the demo's batch size, the label-255 device-side assert, a second process holding
memory on the same GPU, and NVML sampling against nvidia-smi. Each check runs `traindoc run`
and asserts on report.json and run.db; prints one PASS/FAIL line per check. With --keep (default
$OUT when set), what each check saw is kept there to become fixtures: the job's output (the real
error texts), traindoc's report.json and terminal report, NVML's readings from run.db and
nvidia-smi's.

Usage: python3 tests/gpu/check_gpu.py [--traindoc build/bin/traindoc] [--keep DIR] [check ...]
"""
import argparse
import json
import os
import pickle
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = [sys.executable, str(ROOT / "examples" / "demo" / "train.py"), "--device", "cuda",
        "--workers", "0", "--steps", "2"]
# Cityscapes' full size with a batch no GPU holds: a real OOM in the first forward pass.
TOO_BIG = ["--image-size", "1024x2048", "--batch-size", "64"]
HOLD = ("import torch, time; x = torch.empty({gib} << 30, dtype=torch.uint8, device='cuda'); "
        "print('holding', flush=True); time.sleep({seconds})")
# Rank 1 waits seconds for a kernel of its own in torch.cuda.synchronize(), which CUDA's default
# schedule spins in, while rank 0 waits in the next all_reduce: a full core, yet no work of its own.
SYNC_WAIT = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(4)
dist.all_reduce(t)
if dist.get_rank() == 1:
    torch.cuda._sleep(int(3e10))  # some seconds of GPU clock cycles
    torch.cuda.synchronize()  # waits on the GPU
dist.all_reduce(t)
dist.destroy_process_group()
"""
# A real OOM, caught and then uncaught, on PyTorch's own caching allocator: a search for the batch
# that fits catches the first, then a request larger than the GPU ends the process. The weights'
# line is named by its comment.
ALLOCATOR_OOM = """import torch
free, total = torch.cuda.mem_get_info()
weights = [torch.empty(64 << 20, dtype=torch.uint8, device="cuda") for _ in range(8)]  # weights
try:
    torch.empty(total, dtype=torch.uint8, device="cuda")
except torch.cuda.OutOfMemoryError:
    print("caught", flush=True)
torch.empty(2 * total, dtype=torch.uint8, device="cuda")
"""

# CUDA cannot start where the driver's unified-memory device is not usable (the nvidia_uvm module
# gone after a suspend): PyTorch warns and sees no GPU.
NO_UVM = ["unshare", "--mount", "sh", "-c", 'mount --bind /dev/null /dev/nvidia-uvm && exec "$@"',
          "sh", sys.executable, "-c", "import torch; print(torch.cuda.is_available())"]


# The lines of a job's output worth a fixture: the frameworks' GPU error texts.
ERROR_TEXT = re.compile(r"CUDA out of memory|out of memory|device-side assert|Assertion `|"
                        r"CUDA error|RESOURCE_EXHAUSTED|OutOfMemoryError")
GPU_TABLES = ["gpu_devices", "gpu_samples", "gpu_process_samples", "gpu_processes", "gpu_events",
              "cuda_env"]


class Keeper:
    """Copies what a check saw into <keep>/<check>/; does nothing without a folder."""

    def __init__(self, folder):
        self.folder = Path(folder) if folder else None

    def run(self, name, run_dir, stdout=b"", stderr=b""):
        """The run folder's report.json and logs, traindoc's own output, the GPU error lines
        the job printed, and NVML's readings from run.db (every GPU table, as JSON)."""
        if self.folder is None or not run_dir.exists():
            return
        out = self.folder / name
        out.mkdir(parents=True, exist_ok=True)
        for item in ["report.json", "logs"]:
            source = run_dir / item
            if source.is_dir():
                shutil.copytree(source, out / item, dirs_exist_ok=True)
            elif source.exists():
                shutil.copy(source, out / item)
        (out / "traindoc.stdout").write_bytes(stdout or b"")
        (out / "traindoc.stderr").write_bytes(stderr or b"")
        lines = []
        for log in sorted((run_dir / "logs").glob("*")):
            text = log.read_text(errors="replace")
            lines += [f"{log.name}: {l}" for l in text.splitlines() if ERROR_TEXT.search(l)]
        (out / "error-texts.txt").write_text("\n".join(lines) + "\n")
        if (run_dir / "run.db").exists():
            db = sqlite3.connect(run_dir / "run.db")
            db.row_factory = sqlite3.Row
            nvml = {"meta": {k: v for k, v in db.execute(
                "SELECT key, value FROM meta WHERE key LIKE 'gpu_%'")}}
            for table in GPU_TABLES:
                nvml[table] = [dict(r) for r in db.execute(f"SELECT * FROM {table}")]
            (out / "nvml.json").write_text(json.dumps(nvml, indent=1) + "\n")

    def smi(self, name, label):
        """nvidia-smi's view now: the devices and the processes, as CSV and in full."""
        if self.folder is None:
            return
        out = self.folder / name
        out.mkdir(parents=True, exist_ok=True)
        queries = [["--query-gpu=index,pci.bus_id,uuid,name,memory.total,memory.used",
                    "--format=csv"],
                   ["--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv"], ["-q"]]
        text = []
        for query in queries:
            try:
                result = subprocess.run(["nvidia-smi", *query], capture_output=True, text=True)
                text.append(f"$ nvidia-smi {' '.join(query)}\n{result.stdout}{result.stderr}")
            except OSError as error:  # kept, not fatal: the check itself says what failed
                text.append(f"$ nvidia-smi {' '.join(query)}\n{error}\n")
        (out / f"nvidia-smi-{label}.txt").write_text("\n".join(text))


KEEP = Keeper(None)


def torchrun(ranks):
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks)]


# Each job here ends within a minute: one still running then is a hang, kept as such.
RUN_LIMIT_S = 120


def finish(job, name, out):
    """Waits for a `traindoc run` started with start_new_session; past RUN_LIMIT_S it is asked to
    stop (it stops the job and writes its report), then killed with all it started. Keeps what it
    wrote either way; raises TimeoutExpired for a hang."""
    try:
        stdout, stderr = job.communicate(timeout=RUN_LIMIT_S)
    except subprocess.TimeoutExpired:
        job.terminate()
        try:
            stdout, stderr = job.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            stdout, stderr = job.communicate()
        KEEP.run(name, out, stdout, stderr)
        raise
    KEEP.run(name, out, stdout, stderr)


def start(traindoc, out, cmd, options=("--interval", "0.2")):
    """`traindoc run` in a session of its own, for finish()."""
    return subprocess.Popen([traindoc, "run", "--out", str(out), *options, "--", *cmd],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def traindoc_run(traindoc, out, cmd, name=None, options=("--interval", "0.2")):
    finish(start(traindoc, out, cmd, options), name or out.name, out)
    return json.loads((out / "report.json").read_text())


def root(report):
    roots = [f for f in report["findings"] if f["root_cause"]]
    assert roots, [f["kind"] for f in report["findings"]]
    return roots[0]


def check_real_oom(traindoc, work):
    KEEP.smi("real-oom", "before")
    report = traindoc_run(traindoc, work / "oom", DEMO + TOO_BIG, "real-oom")
    f = root(report)
    assert f["kind"] in ("gpu-oom", "gpu-fragmentation"), f
    evidence = "\n".join(f["evidence"])
    assert "requested" in evidence and "capacity" in evidence, evidence
    assert "at that moment (NVML): rank 0" in evidence, evidence
    assert report["gpus"] and report["gpus"][0]["peak_used"] > 0


def check_allocator_oom(traindoc, work):
    """The hook's observer on a real GPU: both errors read, the second with history, its snapshot
    a pickle with memory_viz's keys, and the weights' line named among the live sites."""
    out = work / "allocator"
    job = work / "allocator_oom.py"  # a file: the sites are Python files' lines
    job.write_text(ALLOCATOR_OOM)
    report = traindoc_run(traindoc, out, [sys.executable, str(job)], "allocator-oom",
                          options=("--interval", "0.2", "--memory-history"))
    with sqlite3.connect(out / "run.db") as db:
        states = db.execute("SELECT number, requested, allocated, history, snapshot FROM "
                            "allocator_states ORDER BY number").fetchall()
        sites = db.execute("SELECT line, bytes FROM allocation_sites WHERE number = 0").fetchall()
    assert [s[0] for s in states] == [0, 1], states
    assert all(s[3] == 1 for s in states) and states[0][2] >= 8 * (64 << 20), states
    with open(out / states[0][4], "rb") as f:
        snapshot = pickle.load(f)
    assert {"segments", "device_traces"} <= set(snapshot), list(snapshot)
    assert (3, 8 * (64 << 20)) in sites, sites  # line 3 of the job: the weights
    kinds = [f["kind"] for f in report["findings"]]
    assert "gpu-oom" in kinds or "gpu-fragmentation" in kinds, kinds
    evidence = "\n".join(e for f in report["findings"] for e in f["evidence"])
    assert "PyTorch's allocator on" in evidence and "live allocations by site" in evidence, evidence


def check_label_255(traindoc, work):
    f = root(traindoc_run(traindoc, work / "label", DEMO + ["--fault", "label-255",
                                                          "--fault-step", "1"], "label-255"))
    assert f["kind"] == "label-out-of-range", f
    assert "t >= 0 && t < n_classes" in f["title"], f["title"]
    assert "ignore_index=255" in f["fix"]


def check_second_process(traindoc, work):
    free_gib = int(subprocess.check_output(
        ["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits", "-i", "0"],
        text=True).split()[0]) // 1024
    holder = subprocess.Popen([sys.executable, "-c", HOLD.format(gib=free_gib - 4, seconds=300)],
                              stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()  # "holding": the memory is taken
        KEEP.smi("second-process", "holding")
        f = root(traindoc_run(traindoc, work / "second", DEMO + ["--image-size", "512x1024",
                                                                 "--batch-size", "16"],
                              "second-process"))
    finally:
        holder.kill()
        holder.wait()
    assert f["kind"] == "gpu-oom", f
    assert f"pid {holder.pid} outside the job" in "\n".join(f["evidence"]), f["evidence"]
    assert "outside the job" in f["fix"]


def check_nvml_vs_smi(traindoc, work):
    out = work / "smi"
    job = start(traindoc, out, [sys.executable, "-c", HOLD.format(gib=2, seconds=8)])
    time.sleep(6)
    smi = subprocess.check_output(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                   "--format=csv,noheader,nounits"], text=True)
    gpus = subprocess.check_output(["nvidia-smi", "--query-gpu=index,pci.bus_id,uuid",
                                    "--format=csv,noheader"], text=True)
    KEEP.smi("nvml-vs-smi", "holding")
    finish(job, "nvml-vs-smi", out)
    used = {int(p): int(m) << 20 for p, m in (l.split(",") for l in smi.strip().splitlines())}
    db = sqlite3.connect(out / "run.db")
    devices = db.execute("SELECT nvml_index, pci_bus_id, uuid FROM gpu_devices").fetchall()
    peaks = dict(db.execute("SELECT nvml_pid, max(used_bytes) FROM gpu_process_samples "
                            "GROUP BY nvml_pid").fetchall())
    for line, (index, pci, uuid) in zip(gpus.strip().splitlines(), devices):
        smi_index, smi_pci, smi_uuid = (x.strip() for x in line.split(","))
        assert (int(smi_index), smi_pci.lower(), smi_uuid) == (index, pci.lower(), uuid), line
    both = set(used) & set(peaks)
    assert both, (used, peaks)
    for pid in both:
        assert abs(peaks[pid] - used[pid]) <= 0.05 * used[pid], (pid, peaks[pid], used[pid])
    status = db.execute("SELECT value FROM meta WHERE key = 'gpu_nvml_status'").fetchone()[0]
    print(f"  {status}")


def check_more_ranks_than_gpus(traindoc, work):
    """torchrun starts a rank per GPU asked for, and this machine has fewer: the rank past the
    last GPU fails in torch.cuda.set_device(local_rank)."""
    count = int(subprocess.check_output([sys.executable, "-c",
                                         "import torch; print(torch.cuda.device_count())"]))
    report = traindoc_run(traindoc, work / "ranks", torchrun(count + 1) + DEMO[1:], "more-ranks")
    f = root(report)
    assert f["kind"] == "cuda-unavailable", f
    assert "invalid device ordinal" in f["title"] and count in f["ranks"], f


def check_sync_wait(traindoc, work):
    script = work / "sync_wait.py"
    script.write_text(SYNC_WAIT)
    report = traindoc_run(traindoc, work / "sync", torchrun(2) + [str(script)], "sync-wait",
                          ("--stall-seconds", "3"))
    # The job finishes once rank 1's kernel does: a straggler, told as a warning.
    (f,) = [f for f in report["findings"] if f["kind"] == "collective-missing"]
    assert f["ranks"] == [1] and "a straggler" in f["title"], f
    assert "is busy" not in f["title"], f["title"]


def check_cuda_init(traindoc, work):
    f = [f for f in traindoc_run(traindoc, work / "init", NO_UVM, "cuda-init")["findings"]
         if f["title"].startswith("CUDA failed to start")]
    assert f, "no finding of CUDA's start"
    assert "/dev/nvidia-uvm" in f[0]["fix"], f[0]["fix"]


# The demo at half Cityscapes' size, the batch left to traindoc fit.
FIT_DEMO = [sys.executable, str(ROOT / "examples" / "demo" / "train.py"), "--device", "cuda",
            "--workers", "0", "--image-size", "512x1024"]
FIT_LIMIT_S = 900


def rank0_gpu_peak(report):
    """Rank 0's peak on its GPU as NVML saw it, from report.json; 0 where none was seen."""
    return max((p["peak"] for g in report.get("gpus", []) for p in g["processes"]
                if p["in_job"] and p["who"] == "rank 0"), default=0)


def check_fit(traindoc, work):
    """traindoc fit against the GPU's own memory, then the truth swept by direct runs under
    `traindoc run` (1 + 3 steps, as a trial): the answer runs without running out of memory, and
    the first batch 10 % above it runs out or goes over what fit may use."""
    out = work / "fit"
    proc = subprocess.run([traindoc, "fit", "--out", str(out), "--param", "batch", "--min", "2",
                           "--json", "--", *FIT_DEMO, "--steps", "30", "--batch-size", "{batch}"],
                          capture_output=True, timeout=FIT_LIMIT_S)
    if KEEP.folder is not None:
        (KEEP.folder / "fit").mkdir(parents=True, exist_ok=True)
        (KEEP.folder / "fit" / "fit.json").write_bytes(proc.stdout)
        (KEEP.folder / "fit" / "stderr.txt").write_bytes(proc.stderr)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    result = json.loads(proc.stdout)
    answer = result["recommended_batch"]
    assert result["model"]["meter"] == "rank 0 GPU", result["model"]
    assert len(result["trials"]) <= 5, [(t["batch"], t["outcome"]) for t in result["trials"]]
    usable = result["meters"]["rank 0 GPU"]["usable_bytes"]
    report = traindoc_run(traindoc, work / "fit-answer",
                          FIT_DEMO + ["--steps", "4", "--batch-size", str(answer)], "fit-answer")
    assert report["run"]["status"] == 0, root(report)
    assert rank0_gpu_peak(report) <= usable, (rank0_gpu_peak(report), usable)
    above = answer * 10 // 9 + 1
    report = traindoc_run(traindoc, work / "fit-above",
                          FIT_DEMO + ["--steps", "4", "--batch-size", str(above)], "fit-above")
    out_of_memory = report["run"]["status"] != 0 and root(report)["kind"] in (
        "gpu-oom", "gpu-fragmentation")
    assert out_of_memory or rank0_gpu_peak(report) > usable, (above, rank0_gpu_peak(report))
    print(f"fit: batch {answer} in {len(result['trials'])} trials, "
          f"{sum(t['seconds'] for t in result['trials']):.0f} s; {above} does not fit")


CHECKS = {"real-oom": check_real_oom, "allocator-oom": check_allocator_oom, "label-255": check_label_255,
          "second-process": check_second_process, "nvml-vs-smi": check_nvml_vs_smi,
          "more-ranks": check_more_ranks_than_gpus, "sync-wait": check_sync_wait,
          "cuda-init": check_cuda_init, "fit": check_fit}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traindoc", default=str(ROOT / "build" / "bin" / "traindoc"))
    parser.add_argument("--keep", default=os.environ.get("OUT"),
                        help="folder to keep what each check saw in (default: $OUT when set)")
    parser.add_argument("checks", nargs="*", default=list(CHECKS))
    args = parser.parse_args()
    global KEEP
    KEEP = Keeper(args.keep)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="traindoc-gpu-") as work:
        for name in args.checks:
            try:
                CHECKS[name](args.traindoc, Path(work))
                print(f"PASS {name}")
                verdict = "PASS"
            except Exception as error:  # one failed check must not hide the others
                failed += 1
                print(f"FAIL {name}: {error!r}")
                verdict = f"FAIL {error!r}"
            if KEEP.folder is not None:
                (KEEP.folder / name).mkdir(parents=True, exist_ok=True)
                (KEEP.folder / name / "verdict.txt").write_text(verdict + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
