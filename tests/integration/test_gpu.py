"""GPU evidence with the stand-in libnvidia-ml of tests/fakes/nvml: real job processes (a
launcher and its ranks, processes outside the job) reported on fake GPUs, and the frameworks'
real GPU error texts printed by those processes. report.json must name the cause."""
import json
import sqlite3
import subprocess

import pytest

from conftest import (FAKE_NVML, JOBS, ROOT, TRAINDOC, Run, job_script, nvml_env, python_job,
                      torchrun_ranks)


FOUR_GPUS = """
device GPU-5f1c0000-aaaa 00000000:06:00.0 81559 400 NVIDIA H100 80GB HBM3
device GPU-5f1c1111-bbbb 00000000:07:00.0 81559 400 NVIDIA H100 80GB HBM3
device GPU-5f1c2222-cccc 00000000:08:00.0 81559 400 NVIDIA H100 80GB HBM3
device GPU-5f1c3333-dddd 00000000:09:00.0 81559 400 NVIDIA H100 80GB HBM3
"""

# Rank 0 on GPU 0; ranks 1 to 3 on their own GPUs and also on GPU 0 (no set_device).
FOREIGN = FOUR_GPUS + """
process 0 rank=0 30000
process 0 rank=1 700
process 0 rank=2 700
process 0 rank=3 700
process 1 rank=1 20000
process 2 rank=2 20000
process 3 rank=3 20000
"""

TRACEBACK = """Traceback (most recent call last):
  File "/home/user/proj/train.py", line 88, in <module>
    loss = criterion(model(images), target)
"""

# PyTorch 2.x (c10/cuda/CUDACachingAllocator.cpp), one line.
OOM_2X = TRACEBACK + (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 57.90 GiB memory in use. Process 4242 has 20.00 GiB memory in use. Of the allocated "
    "memory 55.20 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
    "documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n")

FRAGMENTED_2X = TRACEBACK + (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
    "capacity of 79.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 78.50 GiB memory in use. Of the allocated memory 60.20 GiB is allocated by PyTorch, and "
    "17.30 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
    "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
    "fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n")

# PyTorch 1.13 / 2.0: "(GPU 0; ... reserved in total by PyTorch)".
FRAGMENTED_113 = TRACEBACK + (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 22.20 "
    "GiB total capacity; 12.00 GiB already allocated; 1.10 GiB free; 20.50 GiB reserved in total "
    "by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to "
    "avoid fragmentation.  See documentation for Memory Management and "
    "PYTORCH_CUDA_ALLOC_CONF\n")

OOM_113 = TRACEBACK + (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 22.20 "
    "GiB total capacity; 20.92 GiB already allocated; 4.12 MiB free; 20.93 GiB reserved in total "
    "by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to "
    "avoid fragmentation.  See documentation for Memory Management and "
    "PYTORCH_CUDA_ALLOC_CONF\n")

TF_OOM = (
    "2024-05-02 10:11:12.345678: W tensorflow/tsl/framework/bfc_allocator.cc:485] Allocator "
    "(GPU_0_bfc) ran out of memory trying to allocate 256.00MiB (rounded to 268435456)requested "
    "by op Conv2D\n" + TRACEBACK +
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
    "with shape[32,512,64,64] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
    "allocator GPU_0_bfc\n")

JAX_OOM = TRACEBACK + (
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
    "allocate 17179869184 bytes.\n")

# Cityscapes' void label 255 reaching the loss kernel on the GPU (PyTorch 2.x).
LABEL_255 = "".join(
    "/opt/pytorch/aten/src/ATen/native/cuda/NLLLoss2d.cu:104: nll_loss2d_forward_kernel: "
    f"block: [0,0,0], thread: [{t},0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
    for t in (5, 6, 7)) + TRACEBACK + (
    "RuntimeError: CUDA error: device-side assert triggered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")

ILLEGAL = TRACEBACK + "RuntimeError: CUDA error: an illegal memory access was encountered\n"


@pytest.fixture
def gpu_run(traindoc, tmp_path):
    """Runs a job under traindoc with the fake NVML playing `scenario`."""
    assert FAKE_NVML.exists(), f"build first: {FAKE_NVML} is missing"

    def run(cmd, scenario, *options, env_extra=None):
        env = nvml_env(tmp_path, scenario, **(env_extra or {}))
        return traindoc(cmd, "--interval", "0.2", *options, env=env)

    return run


def ranks_job(tmp_path, ranks, seconds, failing=None, text=None):
    """gpu_ranks.py: `ranks` processes with RANK set; `failing` prints `text` and exits 1."""
    if failing is None:
        return job_script("gpu_ranks.py", ranks, seconds)
    path = tmp_path / "error.txt"
    path.write_text(text)
    return job_script("gpu_ranks.py", ranks, seconds, failing, path)


def single_job(tmp_path, text, seconds=1.0):
    """One training process (rank 0 of a job of one) that prints `text` and exits 1."""
    path = tmp_path / "error.txt"
    path.write_text(text)
    code = (f"import sys, time; time.sleep({seconds}); "
            f"sys.stderr.write(open({str(path)!r}).read()); sys.exit(1)")
    return python_job(code)


def finding(run, kind):
    found = [f for f in run.report["findings"] if f["kind"] == kind]
    assert found, [(f["kind"], f["title"]) for f in run.report["findings"]]
    return found[0]


def test_other_ranks_on_gpu0_are_foreign_contexts_and_imbalance(gpu_run, tmp_path):
    run = gpu_run(ranks_job(tmp_path, 4, 2.0), FOREIGN)
    assert run.status == 0
    foreign = finding(run, "foreign-gpu-context")
    assert foreign["ranks"] == [1, 2, 3]
    assert "GPU 0 (00000000:06:00.0)" in foreign["title"]
    evidence = "\n".join(foreign["evidence"])
    assert evidence.count("700 MiB on GPU 0") == 3
    assert "its own GPU is GPU 3 (00000000:09:00.0)" in evidence
    assert "torch.cuda.set_device(local_rank)" in foreign["fix"]
    assert "map_location" in foreign["fix"]
    ranks = {p["pid"]: p["rank"] for p in run.processes("rank")}
    assert sorted(ranks[pid] for pid in foreign["pids"]) == [1, 2, 3]

    imbalance = finding(run, "gpu-imbalance")
    assert imbalance["ranks"] == [1, 2, 3]
    assert "GPU 0 (00000000:06:00.0) peaked at" in imbalance["title"]
    table = [e for e in imbalance["evidence"] if e.startswith("GPU ")]
    assert len(table) == 4, imbalance["evidence"]
    assert "rank 1 (pid" in table[0] and "700 MiB" in table[0]
    assert any("likely cause: other ranks (1, 2 and 3)" in e for e in imbalance["evidence"])

    gpus = run.report["gpus"]
    assert [g["pci_bus_id"] for g in gpus] == [f"00000000:0{i}:00.0" for i in range(6, 10)]
    assert [h["who"] for h in gpus[0]["processes"]] == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert gpus[0]["processes"][1]["peak"] == 700 << 20
    assert "GPU 0 00000000:06:00.0: peak 31.7 GiB of 79.6 GiB (rank 0 29.3 GiB, rank 1 700 MiB" \
        in run.stderr.decode()


def test_torchrun_ranks_on_gpu0(gpu_run):
    """The same with real torchrun: its ranks, found by their RANK, hold contexts on GPU 0."""
    cmd = torchrun_ranks(4, JOBS / "gpu_ranks.py", "--rank", 6)
    run = gpu_run(cmd, FOREIGN)
    assert run.status == 0, run.stderr.decode()[-2000:]
    foreign = finding(run, "foreign-gpu-context")
    assert foreign["ranks"] == [1, 2, 3]
    assert finding(run, "gpu-imbalance")["ranks"] == [1, 2, 3]
    launcher = [p for p in run.processes("launcher")]
    assert launcher and all(p["pid"] not in foreign["pids"] for p in launcher)


def test_the_stand_in_reads_as_a_real_h100_did(gpu_run, tmp_path):
    """tests/fixtures/gpu/h100-nvml.json: what traindoc read from a real H100's NVML (driver
    580.159.04) while a process held 2 GiB. The stand-in playing those numbers reads the same."""
    seen = json.loads((ROOT / "tests" / "fixtures" / "gpu" / "h100-nvml.json").read_text())
    gpu = seen["gpus"][0]
    held = gpu["processes"][0]["peak"] >> 20
    driver = seen["gpu_nvml_status"].split()[3]
    scenario = (f"driver {driver}\nstruct 24\n"
                f"device {gpu['uuid']} {gpu['pci_bus_id']} {gpu['memory_total'] >> 20} "
                f"{seen['idle_memory_used'] >> 20} {gpu['name']}\nprocess 0 rank=0 {held}\n")
    run = gpu_run(ranks_job(tmp_path, 1, 1.5), scenario)
    assert run.status == 0, run.stderr.decode()[-2000:]
    got = run.report["gpus"][0]
    for key in ("index", "uuid", "pci_bus_id", "name", "memory_total"):
        assert got[key] == gpu[key], key
    assert [{k: p[k] for k in ("who", "in_job", "peak")} for p in got["processes"]] == \
        gpu["processes"]
    status = sqlite3.connect(run.run_dir / "run.db").execute(
        "SELECT value FROM meta WHERE key = 'gpu_nvml_status'").fetchone()[0]
    assert status == seen["gpu_nvml_status"].replace("libnvidia-ml.so.1", str(FAKE_NVML))


def test_balanced_gpus_give_no_placement_finding(gpu_run, tmp_path):
    balanced = FOUR_GPUS + "".join(f"process {r} rank={r} 20000\n" for r in range(4))
    run = gpu_run(ranks_job(tmp_path, 4, 1.5), balanced)
    assert run.status == 0
    assert run.report["findings"] == []


def test_oom_on_a_gpu_full_of_other_ranks(gpu_run, tmp_path):
    run = gpu_run(ranks_job(tmp_path, 4, 2.0, failing=0, text=OOM_2X), FOREIGN)
    assert run.status == 1
    root = [f for f in run.report["findings"] if f["root_cause"]][0]
    assert root["kind"] == "foreign-gpu-context"
    assert "ran out of memory" in root["title"]
    oom = finding(run, "gpu-oom")
    assert oom["ranks"] == [0]
    assert "ranks 1, 2, 3" in oom["fix"].lower() or "Ranks 1, 2, 3" in oom["fix"]


# traindoc in a container: the driver gives host pids, which traindoc's pid namespace lacks. Above
# pid_max (4194304 at most) they can be no process here.
HOST_OFFSET = 5000000


def test_host_pids_without_the_hosts_proc_are_said_to_be_unknown(gpu_run, tmp_path):
    scenario = f"hostpids {HOST_OFFSET}\n" + FOREIGN
    run = gpu_run(ranks_job(tmp_path, 4, 2.0, failing=0, text=OOM_2X), scenario,
                  env_extra={"TRAINDOC_HOST_PROC": str(tmp_path / "no-host-proc")})
    assert run.status == 1
    ranks = {p["rank"]: p["pid"] for p in run.processes("rank")}
    notes = [n for n in run.report["missing_evidence"] if "not identified" in n]
    assert len(notes) == 1, run.report["missing_evidence"]
    assert "NVML listed 4 process(es)" in notes[0], notes[0]
    assert all(str(pid + HOST_OFFSET) in notes[0] for pid in ranks.values()), notes[0]
    assert "another pid namespace" in notes[0] and "/host/proc" in notes[0]
    kinds = [f["kind"] for f in run.report["findings"]]
    assert "foreign-gpu-context" not in kinds and "gpu-imbalance" not in kinds, kinds
    oom = finding(run, "gpu-oom")
    assert oom["ranks"] == [0]
    evidence = "\n".join(oom["evidence"])
    assert f"pid {ranks[0] + HOST_OFFSET} (a pid of another pid namespace: maybe one of the " \
        "job's own processes) 29.3 GiB" in evidence, evidence
    assert "likely the host's pids of this container's processes" in evidence
    assert "stop them" not in oom["fix"] and "outside the job" not in oom["fix"]


def test_host_pids_are_mapped_through_the_hosts_proc(gpu_run, tmp_path):
    host_proc = tmp_path / "host-proc"
    scenario = f"hostpids {HOST_OFFSET} {host_proc}\n" + FOREIGN
    run = gpu_run(ranks_job(tmp_path, 4, 2.0), scenario,
                  env_extra={"TRAINDOC_HOST_PROC": str(host_proc)})
    assert run.status == 0
    assert not [n for n in run.report["missing_evidence"] if "not identified" in n]
    foreign = finding(run, "foreign-gpu-context")
    assert foreign["ranks"] == [1, 2, 3]
    assert finding(run, "gpu-imbalance")["ranks"] == [1, 2, 3]
    assert [h["who"] for h in run.report["gpus"][0]["processes"]] == \
        ["rank 0", "rank 1", "rank 2", "rank 3"]


def as_in_a_container(host_proc, argv):
    """`argv` as a container runs it: in a pid namespace of its own (user namespaces need no
    privilege), with its own /proc, and the outer /proc mounted at `host_proc` as
    `-v /proc:/host/proc` does."""
    return ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount", "sh", "-c",
            'mount --rbind /proc "$0" && mount -t proc proc /proc && exec "$@"', str(host_proc),
            *map(str, argv)]


@pytest.mark.parametrize("mapped", [True, False])
def test_a_real_pid_namespace(tmp_path, mapped):
    """traindoc in a real pid namespace, the stand-in giving the outer namespace's pids as a
    driver does: mapped through the outer /proc when traindoc is given it, else said unknown."""
    host_proc = tmp_path / "host-proc"
    host_proc.mkdir()
    probe = subprocess.run(as_in_a_container(host_proc, ["true"]), capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no unprivileged pid namespaces here: {probe.stderr.decode()[-200:]}")
    env = nvml_env(tmp_path, f"hostpids proc {host_proc}\n" + FOREIGN,
                   TRAINDOC_HOST_PROC=str(host_proc if mapped else tmp_path / "none"))
    run_dir = tmp_path / "run"
    argv = [TRAINDOC, "run", "--out", run_dir, "--interval", "0.2", "--",
            *ranks_job(tmp_path, 4, 2.0)]
    run = Run(subprocess.run(as_in_a_container(host_proc, argv), env=env, capture_output=True,
                             timeout=120), run_dir)
    assert run.status == 0, run.stderr.decode()[-2000:]
    kinds = [f["kind"] for f in run.report["findings"]]
    notes = [n for n in run.report["missing_evidence"] if "not identified" in n]
    if mapped:
        assert finding(run, "foreign-gpu-context")["ranks"] == [1, 2, 3]
        assert not notes, notes
    else:
        assert "foreign-gpu-context" not in kinds and "gpu-imbalance" not in kinds, kinds
        assert len(notes) == 1 and "NVML listed 4 process(es)" in notes[0], \
            run.report["missing_evidence"]


def test_xid_79_is_a_hardware_fault(gpu_run, tmp_path):
    scenario = FOUR_GPUS + "".join(f"process {r} rank={r} 20000\n" for r in range(4)) + \
        "xid 2 79 600\n"
    run = gpu_run(ranks_job(tmp_path, 4, 2.0), scenario)
    fault = finding(run, "hardware-fault")
    assert "Xid 79" in fault["title"]
    assert "GPU has fallen off the bus" in fault["title"]
    assert "00000000:08:00.0" in fault["title"]
    assert "GPU-5f1c2222-cccc" in fault["title"]
    assert fault["ranks"] == [2]
    assert "reboot" in fault["fix"]
    assert any("NVML event Xid 79" in e for e in fault["evidence"])
    assert fault["root_cause"]


def test_oom_names_the_numbers_and_a_process_outside_the_job(gpu_run, tmp_path):
    outside = subprocess.Popen(["sleep", "60"])
    try:
        scenario = FOUR_GPUS + f"process 0 job=0 56000\nprocess 0 pid={outside.pid} 20480\n"
        run = gpu_run(single_job(tmp_path, OOM_2X, 1.5), scenario)
    finally:
        outside.kill()
        outside.wait()
    assert run.status == 1
    oom = finding(run, "gpu-oom")
    assert oom["root_cause"]
    assert oom["title"].startswith("rank 0 (pid ")
    assert "GPU 0 (00000000:06:00.0)" in oom["title"]
    evidence = "\n".join(oom["evidence"])
    assert "requested 2.0 GiB, capacity 79.7 GiB, free 1.1 GiB" in evidence
    assert "allocated by PyTorch 55.2 GiB" in evidence
    assert f"pid {outside.pid} outside the job (sleep 60) 20.0 GiB" in evidence
    assert f"pid {outside.pid} outside the job" in oom["fix"]
    # The memory the process outside held before the job started, which the check at the start
    # warned of, is the cause it cites.
    assert (f"the cause, which traindoc's check found as the run started: GPU 0 already holds "
            f"20.0 GiB of 79.6 GiB for processes outside the job (pid {outside.pid}: sleep 60)"
            in evidence), evidence
    # One finding for the process, not a second one from its exit; and the check's warning.
    assert [f["kind"] for f in run.report["findings"]] == ["gpu-oom", "preflight-gpu-memory-taken"]


@pytest.mark.parametrize("text, numbers, advice", [
    (FRAGMENTED_2X, [
        "GPU 0 (00000000:06:00.0): requested 4.0 GiB, capacity 79.7 GiB, free 1.1 GiB",
        "this process: in use 78.5 GiB, allocated by PyTorch 60.2 GiB, "
        "reserved but unallocated 17.3 GiB",
    ], "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
    # 1.13 prints reserved and allocated: the 8.5 GiB unusable is their difference.
    (FRAGMENTED_113, [
        "GPU 0 (00000000:06:00.0): requested 1.5 GiB, capacity 22.2 GiB, free 1.1 GiB",
        "this process: allocated by PyTorch 12.0 GiB, reserved by PyTorch 20.5 GiB, "
        "reserved but unallocated 8.5 GiB",
    ], "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128"),
])
def test_fragmentation(gpu_run, tmp_path, text, numbers, advice):
    run = gpu_run(single_job(tmp_path, text), FOUR_GPUS + "process 0 job=0 60000\n")
    frag = finding(run, "gpu-fragmentation")
    assert advice in frag["fix"]
    for line in numbers:
        assert line in frag["evidence"], frag["evidence"]
    assert "GPU 0 (00000000:06:00.0)" in frag["title"]


def test_fragmentation_with_expandable_segments_already_set(gpu_run, tmp_path):
    """The job started with expandable segments on: traindoc records the setting and advises
    what helps then, not the setting again."""
    run = gpu_run(single_job(tmp_path, FRAGMENTED_2X), FOUR_GPUS + "process 0 job=0 60000\n",
                  env_extra={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    frag = finding(run, "gpu-fragmentation")
    assert "PyTorch allocator settings as the process started: expandable_segments:True" \
        in frag["evidence"]
    assert "Set PYTORCH_CUDA_ALLOC_CONF" not in frag["fix"]
    assert "already set" in frag["fix"] and "reduce the batch size" in frag["fix"]


# TensorFlow's and JAX's texts give no capacity: NVML's is named.
@pytest.mark.parametrize("text, numbers, advice", [
    (OOM_113, "GPU 0 (00000000:06:00.0): requested 2.0 MiB, capacity 22.2 GiB, free 4.1 MiB",
     "batch size"),
    (TF_OOM, "GPU 0 (00000000:06:00.0): requested 256 MiB, capacity 79.6 GiB (NVML)",
     "set_memory_growth"),
    (JAX_OOM, "GPU 0 (00000000:06:00.0): requested 16.0 GiB, capacity 79.6 GiB (NVML)",
     "XLA_PYTHON_CLIENT_PREALLOCATE=false"),
])
def test_oom_texts_of_each_framework(gpu_run, tmp_path, text, numbers, advice):
    run = gpu_run(single_job(tmp_path, text), FOUR_GPUS + "process 0 job=0 60000\n")
    oom = finding(run, "gpu-oom")
    assert numbers in oom["evidence"], oom["evidence"]
    assert advice in oom["fix"]
    assert any("at that moment (NVML): rank 0" in e for e in oom["evidence"])


def test_cityscapes_label_255_on_the_gpu(gpu_run, tmp_path):
    run = gpu_run(single_job(tmp_path, LABEL_255), FOUR_GPUS)
    root = [f for f in run.report["findings"] if f["root_cause"]][0]
    assert root["kind"] == "label-out-of-range"
    assert "`t >= 0 && t < n_classes`" in root["title"]
    assert "NLLLoss2d.cu:104" in root["title"]
    assert "3 GPU threads printed this assertion" in root["evidence"]
    assert "ignore_index=255" in root["fix"]


def test_illegal_access_asks_for_launch_blocking(gpu_run, tmp_path):
    run = gpu_run(single_job(tmp_path, ILLEGAL), FOUR_GPUS)
    root = [f for f in run.report["findings"] if f["root_cause"]][0]
    assert root["kind"] == "cuda-illegal-access"
    assert "CUDA_LAUNCH_BLOCKING=1" in root["fix"]


# A real PyTorch training loop (CPU) at a steady pace; the stand-in NVML makes its GPU memory
# grow 40 MiB a second, so the leak per step is 40 MiB over the steps it ran each second. It
# starts low: the growth is counted from NVML's start, and on a busy machine `import torch` took
# 16 s, after which a start of 2000 MiB had grown to a level the 8 s of steps did not add 10 % to.
STEADY_TRAINING = """
import time, torch
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
start, steps = time.monotonic(), 0
while time.monotonic() - start < 8:
    optimizer.zero_grad()
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    steps += 1
    time.sleep(0.02)
print("STEPS PER SECOND", steps / (time.monotonic() - start))
"""


def test_gpu_memory_growing_with_the_steps_is_a_leak(gpu_run):
    run = gpu_run(python_job(STEADY_TRAINING), FOUR_GPUS + "process 0 job=0 200 +40\n")
    assert run.status == 0, run.stderr.decode()[-2000:]
    rate = float(run.stdout.decode().split("STEPS PER SECOND")[1])
    leaks = [f for f in run.report["findings"] if f["kind"] == "memory-leak"]
    assert len(leaks) == 1, leaks  # the host memory stayed flat
    title = leaks[0]["title"]
    assert "GPU memory grows" in title and "MiB per step" in title, title
    found = float(title.split("grows ")[1].split(" MiB")[0])
    assert found == pytest.approx(40 / rate, rel=0.2), (found, 40 / rate)
    assert any("free on GPU 0 runs out after about" in e for e in leaks[0]["evidence"]), leaks[0]


def test_without_nvml_a_gpu_job_is_told_its_gpu_evidence_is_missing(traindoc, tmp_path):
    env = dict(__import__("os").environ, TRAINDOC_NVML_LIBRARY=str(tmp_path / "none.so.1"),
               CUDA_VISIBLE_DEVICES="0")
    # Long enough for the process walk to read its environment.
    job = python_job("import time; time.sleep(0.6)")
    run = traindoc(job, "--interval", "0.2", env=env)
    assert run.status == 0
    notes = [n for n in run.report["missing_evidence"] if n.startswith("no GPU evidence")]
    assert len(notes) == 1 and "none.so.1" in notes[0], run.report["missing_evidence"]

    env.pop("CUDA_VISIBLE_DEVICES")
    cpu_run = traindoc(job, "--interval", "0.2", env=env)
    assert not [n for n in cpu_run.report["missing_evidence"] if "GPU" in n]


def test_an_oom_the_job_caught_and_survived_is_no_failure(traindoc, tmp_path):
    """A search for the batch that fits: the first batch runs out of memory, the job logs the
    exception, halves its batch and finishes. Told as information, never as the root cause."""
    message = OOM_113.splitlines()[-1].split(": ", 1)[1]
    path = tmp_path / "message.txt"
    path.write_text(message)
    code = ("import logging\n"
            "for batch in (64, 32):\n"
            "    try:\n"
            "        if batch == 64:\n"
            f"            raise RuntimeError(open({str(path)!r}).read())\n"
            "        print('batch', batch, 'fits')\n"
            "        break\n"
            "    except RuntimeError:\n"
            "        logging.exception('batch %d does not fit, halving it', batch)\n")
    run = traindoc(python_job(code))
    assert run.status == 0, run.stderr
    assert b"batch 32 fits" in run.stdout
    (oom,) = run.report["findings"]
    assert oom["kind"] == "gpu-oom" and oom["severity"] == "info" and not oom["root_cause"], oom
    assert oom["title"].endswith("and went on: it handled the error and exited with code 0"), oom
    assert b"ROOT CAUSE" not in run.stderr
