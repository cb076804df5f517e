"""The batch-size advice of out-of-memory findings (issue 35): a real DataLoader of batch size N,
whose size the Python hook tells (a batch-size event in run.db), and a job that fails for memory
at it: GPU memory as the stand-in NVML plays it with PyTorch 1.13's CUDA out-of-memory error, and
host memory in a real memory cgroup whose OOM killer ends it. The finding's fix names the batch,
its peak, the memory a sample takes and the `traindoc fit` command line that confirms a smaller
batch."""
import re
import sqlite3

from conftest import FAKE_NVML, job_script, nvml_env

BATCH = 8


def batch_events(run):
    with sqlite3.connect(run.run_dir / "run.db") as db:
        return db.execute(
            "SELECT pid, a FROM events WHERE kind = 'batch-size' ORDER BY id").fetchall()


def finding(run, kind):
    found = [f for f in run.report["findings"] if f["kind"] == kind]
    assert found, [(f["kind"], f["title"]) for f in run.report["findings"]]
    return found[0]


def test_a_gpu_oom_names_the_batch_the_memory_a_sample_takes_and_a_batch_that_fits(
        traindoc, tmp_path):
    assert FAKE_NVML.exists(), f"build first: {FAKE_NVML} is missing"
    played = tmp_path / "gpu-mib"
    # A 16000 MiB GPU; the rank holds 1000 MiB until its step plays 15000.
    scenario = (f"device GPU-5f1c0000-aaaa 00000000:06:00.0 16000 400 NVIDIA A4000\n"
                f"process 0 rank=0 1000 @{played}\n")
    cmd = job_script("batch_oom.py", "--batch-size", BATCH, "gpu", played)
    run = traindoc(cmd, "--interval", "0.2",
                   env=nvml_env(tmp_path, scenario, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1"))
    assert run.status == 1, run.stderr.decode()[-3000:]
    (rank,) = run.processes("rank")
    # Told once, as the training loader was first iterated: the evaluation loader's batch of 3,
    # iterated between two steps, took no step.
    assert batch_events(run) == [(rank["pid"], BATCH)]
    oom = finding(run, "gpu-oom")
    assert oom["root_cause"], oom
    # (15000 - 1000) MiB / 8 = 1750 MiB a sample; 90% of 15.62 GiB holds 1000 MiB and 7 samples.
    assert ("At batch 8 (its DataLoader's batch_size) it peaked at 14.6 GiB of GPU memory, 1000 "
            "MiB before its first training step: about 1.7 GiB a sample. By that estimate batch 7 "
            "fits in 90% of the GPU's 15.6 GiB: with 2 gradient accumulation steps of batch 4, "
            "the effective batch stays 8.") in oom["fix"], oom["fix"]
    assert (f"`traindoc fit --param batch --target-batch 8 -- {cmd[0]} {cmd[1]} --batch-size "
            f"{{batch}} gpu {played}`.") in oom["fix"], oom["fix"]


def test_a_host_oom_kill_names_the_batch_its_peak_and_the_fit_command(traindoc, memory_cgroup):
    _, cgroup = memory_cgroup(None)
    job = job_script("batch_oom.py", "--batch-size", BATCH, "host", cgroup)
    cmd = ["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh", *job]
    run = traindoc(cmd, "--interval", "0.2")
    assert run.status == 128 + 9, run.stderr.decode()[-3000:]
    oom = finding(run, "host-oom-killed")
    assert batch_events(run) == [(oom["pids"][0], BATCH)]
    assert "at its memory cgroup's" in oom["title"], oom
    fix = oom["fix"]
    # The limit it set, its usage then plus 64 MiB: what a sample takes depends on what the
    # cgroup already held (the page cache of torch's files).
    assert re.search(r"At batch 8 \(its DataLoader's batch_size\) it peaked at [0-9.]+ MiB of "
                     r"host memory \(RSS without mapped files\), [0-9.]+ MiB before its first "
                     r"training step: about [0-9.]+ MiB a sample\. By that estimate batch ",
                     fix), fix
    assert "its memory cgroup's" in fix, fix
    # The command as the shell will read it back: the shell's own string quoted.
    assert (f"`traindoc fit --param batch --target-batch 8 -- sh -c 'echo $$ > "
            f"{cgroup}/cgroup.procs && exec \"$@\"' sh {job[0]} {job[1]} --batch-size {{batch}} "
            f"host {cgroup}`.") in fix, fix
