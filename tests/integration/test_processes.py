"""traindoc knows every process of the job, its role and how it ended, and names the limit on
processes and threads when the job reaches it."""
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import (JOBS, PYTHON, TRAINDOC, free_port, job_script, python_job,
                      torchrun_ranks)


def test_torchrun_two_ranks_two_workers_roles(traindoc):
    run = traindoc(torchrun_ranks(2, JOBS / "ddp_workers.py"), timeout=240)
    assert run.status == 0, run.stderr.decode()[-3000:]
    procs = run.report["processes"]
    launchers = [p for p in procs if p["role"] == "launcher"]
    ranks = sorted((p for p in procs if p["role"] == "rank"), key=lambda p: p["rank"])
    workers = [p for p in procs if p["role"] == "worker"]
    assert len(launchers) == 1
    assert "torch.distributed.run" in launchers[0]["cmdline"]
    assert [p["rank"] for p in ranks] == [0, 1]
    assert [p["local_rank"] for p in ranks] == [0, 1]
    assert all(p["world_size"] == 2 for p in ranks)
    # The pids the ranks printed are the ones traindoc calls rank 0 and rank 1.
    printed = dict(re.findall(rb"rank (\d) pid (\d+) done", run.stdout))
    assert {p["rank"]: p["pid"] for p in ranks} == {int(k): int(v) for k, v in printed.items()}
    for rank in ranks:
        mine = [w for w in workers if w["parent"] == rank["pid"]]
        assert len(mine) == 2, procs
        assert sorted(w["worker"] for w in mine) == [0, 1]
        assert all(w["rank"] == rank["rank"] for w in mine)
    # Every process's end is known exactly: ranks reaped by torchrun, workers by their rank.
    for p in launchers + ranks + workers:
        assert p["exit"]["how"] == "exited", p
        assert p["exit"]["code"] == 0, p
    assert {w["exit"]["source"] for w in workers} <= {"parent", "zombie"}
    assert {r["exit"]["source"] for r in ranks} <= {"parent", "zombie"}
    assert run.report["findings"] == []  # a clean run says nothing is wrong


def test_ranks_that_torch_multiprocessing_spawn_started(traindoc):
    """No launcher variables: the ranks are known from init_process_group (before it, from
    spawn's index), the parent that spawned them is the launcher, and the exception it prints for
    rank 1 is rank 1's."""
    port = str(free_port())
    run = traindoc(job_script("spawn_ranks.py", port, "clean"), timeout=180)
    assert run.status == 0, run.stderr.decode()[-3000:]
    ranks = sorted(run.processes("rank"), key=lambda p: p["rank"])
    printed = dict(re.findall(rb"rank (\d) pid (\d+) done", run.stdout))
    assert {p["rank"]: p["pid"] for p in ranks} == {int(k): int(v) for k, v in printed.items()}
    (launcher,) = run.processes("launcher")
    assert all(p["parent"] == launcher["pid"] and p["world_size"] == 2 for p in ranks)
    for rank in ranks:
        (worker,) = [w for w in run.processes("worker") if w["parent"] == rank["pid"]]
        assert worker["rank"] == rank["rank"] and worker["worker"] == 0
    assert run.report["findings"] == []

    run = traindoc(job_script("spawn_ranks.py", port, "raise"), timeout=180)
    assert run.status == 1
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "python-exception", root
    (rank1,) = [p for p in run.processes("rank") if p["rank"] == 1]
    assert root["title"] == f"rank 1 (pid {rank1['pid']}) raised RuntimeError: bad batch on rank 1"
    assert any("spawn_ranks.py:24 in run" in e for e in root["evidence"]), root["evidence"]

    # Rank 1 fails before init_process_group: spawn's index names it, and rank 0, which spawn
    # stopped while it waited for rank 1 to join, is rank 0.
    run = traindoc(job_script("spawn_ranks.py", port, "early"), timeout=180)
    assert run.status == 1
    root = next(f for f in run.report["findings"] if f["root_cause"])
    (rank1,) = [p for p in run.processes("rank") if p["rank"] == 1]
    assert root["title"] == (f"rank 1 (pid {rank1['pid']}) raised FileNotFoundError: [Errno 2] No "
                             "such file or directory: '/nonexistent/shard-1.bin'"), root
    (rank0,) = [p for p in run.processes("rank") if p["rank"] == 0]
    assert rank0["exit"].get("signal_name") == "SIGTERM", rank0
    (launcher,) = run.processes("launcher")
    assert rank0["parent"] == rank1["parent"] == launcher["pid"]

    # Rank 1 is spawn's process 0: the "Process 0" whose exception the parent prints.
    run = traindoc(job_script("spawn_ranks.py", port, "reversed"), timeout=180)
    assert run.status == 1
    root = next(f for f in run.report["findings"] if f["root_cause"])
    (rank1,) = [p for p in run.processes("rank") if p["rank"] == 1]
    assert root["title"] == f"rank 1 (pid {rank1['pid']}) raised RuntimeError: bad batch on rank 1"


TWO_DATALOADERS = """
import torch
from torch.utils.data import DataLoader
train = DataLoader(torch.zeros(64, 4), batch_size=8, num_workers=2, persistent_workers=True)
val = DataLoader(torch.zeros(16, 4), batch_size=8, num_workers=2,
                 multiprocessing_context=\"spawn\")
if __name__ == "__main__":
    for epoch in range(2):
        for batch in train: pass
        for batch in val: pass
"""


def test_two_dataloaders_number_their_workers_each_from_0(traindoc):
    """Persistent training workers live on while validation's start, forked and spawned: each
    DataLoader's workers are 0 and 1, as PyTorch numbers them in its errors."""
    run = traindoc(python_job(TWO_DATALOADERS))
    assert run.status == 0, run.stderr.decode()[-2000:]
    # Training's 2 and each epoch's validation 2 (spawn's resource tracker is no worker); start
    # order would number validation's 2 and 3.
    workers = [p for p in run.report["processes"] if p["role"] == "worker"]
    assert sorted(p["worker"] for p in workers) == [0, 0, 0, 1, 1, 1], workers


def test_single_process_is_rank_0(traindoc):
    run = traindoc(python_job("print('hi')"))
    assert run.status == 0
    ranks = run.processes("rank")
    assert len(ranks) == 1 and ranks[0]["rank"] == 0
    assert run.report["findings"] == []


def test_a_script_that_checks_then_trains_names_the_python_that_failed(traindoc):
    """A shell script runs one Python to print the versions, then another that trains and fails:
    the one that failed is the training process, and its exception the root cause."""
    script = (f"set -e\n{PYTHON} -c 'import sys; print(sys.version)'\n"
              f"{PYTHON} -c 'import time; time.sleep(0.5); raise ValueError(\"bad sample 7\")'\n")
    run = traindoc(["bash", "-c", script])
    assert run.status == 1
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "python-exception", root
    assert root["title"].startswith("rank 0 (pid ") and "ValueError: bad sample 7" in root["title"]


def test_double_forked_process_is_seen_and_reaped(traindoc):
    run = traindoc(job_script("double_fork.py"))
    assert run.status == 0
    grandchild = int(re.search(rb"grandchild (\d+)", run.stdout).group(1))
    procs = {p["pid"]: p for p in run.report["processes"]}
    assert grandchild in procs
    # Adopted by traindoc as subreaper once its parent exited, so its exit code is exact.
    assert procs[grandchild]["exit"]["code"] == 5
    assert procs[grandchild]["exit"]["source"] in ("supervisor", "parent")


def test_thousands_of_forks(traindoc):
    code = ("import os\n"
            "for i in range(3000):\n"
            "    pid = os.fork()\n"
            "    if pid == 0: os._exit(i % 3)\n"
            "    os.waitpid(pid, 0)\n")
    run = traindoc(python_job(code), timeout=180)
    assert run.status == 0
    procs = run.report["processes"]
    assert len(procs) >= 3000
    codes = [p["exit"].get("code") for p in procs if p["role"] == "worker"]
    assert codes.count(2) == 1000


def test_process_outliving_the_job_is_still_running(traindoc):
    import os
    import signal
    run = traindoc(["sh", "-c", "sleep 30 & echo $!"], timeout=60)
    daemon = int(run.stdout.split()[0])
    try:
        assert run.status == 0
        procs = {p["pid"]: p for p in run.report["processes"]}
        assert procs[daemon]["exit"]["how"] == "running"
    finally:
        os.kill(daemon, signal.SIGKILL)


def test_own_exit_without_a_seen_reap(traindoc):
    """A process that leaves with exit() or _exit() records its status in its own slot, so its
    end is exact even when no reap is seen (a parent's records lost to an overflowing ring); one
    that crashes after exit() began is not taken for a clean exit."""
    run = traindoc(job_script("unseen_reaps.py"))
    assert run.status == 0, run.stderr.decode()
    children = {what: (int(pid), int(status))
                for what, pid, status in (line.split() for line in run.stdout.decode().splitlines())}
    assert {what: status for what, (_, status) in children.items()} == {
        "fork": 7 << 8, "exit": 3 << 8, "abort": 6}
    procs = {p["pid"]: p["exit"] for p in run.report["processes"]}
    assert procs[children["fork"][0]] == {**procs[children["fork"][0]], "how": "exited",
                                          "code": 7, "source": "agent-exit"}
    assert procs[children["exit"][0]] == {**procs[children["exit"][0]], "how": "exited",
                                          "code": 3, "source": "agent-exit"}
    assert procs[children["abort"][0]]["how"] != "exited"
    # A Python program the job ran (not a DataLoader worker): its own crash, named as such.
    crash = next(f for f in run.report["findings"] if f["pids"] == [children["abort"][0]])
    assert crash["kind"] == "abort", crash
    assert "program of rank 0" in crash["title"] and "SIGABRT" in crash["title"], crash


def test_program_a_rank_ran_is_not_the_root_cause(traindoc):
    """A command the job runs and checks itself (wandb's `git rev-parse` outside a repository)
    exits non-zero first; the job's own error later is the root cause."""
    code = ("import subprocess\n"
            "subprocess.run(['sh', '-c', 'exit 128'])\n"
            "raise ValueError('bad config')\n")
    run = traindoc(python_job(code))
    assert run.status == 1
    sh = next(p for p in run.report["processes"] if p["cmdline"].startswith("sh "))
    assert sh["exit"]["code"] == 128
    assert (sh["role"], sh["role_text"]) == ("other", "program of rank 0")
    assert [(f["kind"], f["root_cause"]) for f in run.report["findings"]] == [
        ("python-exception", True)]
    assert len(run.report["processes"]) == 2


# 30 threads, long enough to be sampled, then more than the limit allows.
STARTS_200_THREADS = """
import threading, time
for i in range(200):
    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
    if i == 30:
        time.sleep(1.5)
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="ulimit -u binds only an unprivileged user, which root can become")
def test_threads_refused_by_the_limit_on_processes():
    """traindoc and its job run as nobody under `ulimit -u 60`: Python's `can't start new
    thread` is the limit, with the most threads the job held."""
    work = Path(tempfile.mkdtemp())
    try:
        work.chmod(0o777)
        out = work / "run"
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c",
             'ulimit -u 60 && exec "$0" run --out "$1" -- "$2" -c "$3"', str(TRAINDOC), str(out),
             PYTHON, STARTS_200_THREADS], capture_output=True, timeout=120)
        assert proc.returncode == 1, proc.stderr.decode()[-2000:]
        root = json.loads((out / "report.json").read_text())["findings"][0]
        assert root["kind"] == "process-limit", root
        assert root["title"].endswith(": could not start a thread: the limit on processes and "
                                      "threads, or memory for its stack"), root["title"]
        peak = [e for e in root["evidence"] if e.startswith("the job's processes held ")]
        assert peak and int(peak[0].split()[4]) > 30, root["evidence"]
        assert "ulimit -u" in root["fix"], root["fix"]
    finally:
        shutil.rmtree(work)
