"""Every crashing process gets an explained crash record: the kind of fault, the process's
role, the blame frame and the fix, with the exit status exactly as without traindoc."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, PYTHON, python_job

CRASHERS = Path(os.environ.get("TRAINDOC_CRASHERS", BUILD / "tests" / "crashers"))

CASES = [
    # crasher, root-cause kind, blame function, words of the explanation
    ("null_deref", "native-crash", "traindoc_test_null_deref_here", "null pointer"),
    ("wild_write", "native-crash", "traindoc_test_wild_write_here", "wild pointer"),
    ("stack_overflow_main", "stack-overflow", "traindoc_test_recurse_main_here", "stack overflow"),
    ("stack_overflow_thread", "stack-overflow", "traindoc_test_recurse_thread_here",
     "stack overflow"),
    ("uncaught_exception", "abort", "traindoc_test_throw_here", "uncaught C++ exception"),
    ("double_free", "abort", "traindoc_test_double_free_here", "heap corruption"),
    ("div_zero", "fpe", "traindoc_test_divide_here", "integer division by zero"),
    ("illegal_instruction", "illegal-instruction", "traindoc_test_illegal_here", "ud2"),
    ("bus_error", "bus-error", "traindoc_test_bus_error_here", "truncated"),
    ("two_threads", "native-crash", "traindoc_test_thread_crash_here", "null pointer"),
]


def status_without_traindoc(cmd):
    return subprocess.run(cmd, capture_output=True, timeout=60).returncode


def root_cause(report):
    roots = [f for f in report["findings"] if f["root_cause"]]
    assert len(roots) == 1, report["findings"]
    return roots[0]


@pytest.mark.parametrize("name,kind,blame,words", CASES, ids=[c[0] for c in CASES])
def test_native_crash(traindoc, name, kind, blame, words):
    cmd = [str(CRASHERS / name)]
    direct = status_without_traindoc(cmd)
    assert direct < 0  # killed by a signal
    run = traindoc(cmd)
    assert run.status == 128 - direct
    root = root_cause(run.report)
    assert root["kind"] == kind, root
    assert words in root["title"], root
    evidence = "\n".join(root["evidence"])
    assert "blame frame" in evidence and blame in evidence, evidence
    assert root["pids"] == [run.report["run"]["root_pid"]]
    process = [p for p in run.report["processes"] if p["pid"] == root["pids"][0]][0]
    assert process["role"] == "rank" and root["title"].startswith("rank 0 (pid")
    assert root["fix"]


def test_abort_cites_the_exception_message(traindoc):
    run = traindoc([str(CRASHERS / "uncaught_exception")])
    root = root_cause(run.report)
    assert "shape mismatch" in root["title"] or "shape mismatch" in "\n".join(root["evidence"])


def test_a_static_program_a_rank_runs_crashes_as_its_program(traindoc):
    """A static program (LD_PRELOAD gives it no agent) that the rank runs dies at once, before a
    walk sees it: its parent's reap names it the rank's program, with no crash record, and the
    rank's failure is its consequence."""
    helper = str(CRASHERS / "null_deref_static")
    code = f"import subprocess, sys\nsys.exit(subprocess.run([{helper!r}]).returncode != 0)\n"
    run = traindoc(python_job(code))
    assert run.status == 1, run.stderr
    root = root_cause(run.report)
    assert root["kind"] == "native-crash", root
    assert re.match(r"program of rank 0 \(pid \d+\) died of SIGSEGV with no crash record",
                    root["title"]), root["title"]
    (process,) = [p for p in run.report["processes"] if p["pid"] == root["pids"][0]]
    (rank,) = [p for p in run.report["processes"] if p["role"] == "rank"]
    assert process["parent"] == rank["pid"] and not process["agent"], process


PY_SEGV = "import ctypes; ctypes.string_at(0)"
PY_FAULTHANDLER = "import faulthandler, ctypes; faulthandler.enable(); ctypes.string_at(0)"
PY_SIG_DFL = "import signal, ctypes; signal.signal(signal.SIGSEGV, signal.SIG_DFL); ctypes.string_at(0)"


@pytest.mark.parametrize("code", [PY_SEGV, PY_FAULTHANDLER, PY_SIG_DFL],
                         ids=["plain", "faulthandler", "sig_dfl"])
def test_python_native_crash(traindoc, code):
    direct = subprocess.run(python_job(code), capture_output=True, timeout=60)
    run = traindoc(python_job(code))
    assert run.status == 128 + abs(direct.returncode)
    root = root_cause(run.report)
    assert root["kind"] == "native-crash"
    assert root["title"].startswith("rank 0 (pid")
    evidence = "\n".join(root["evidence"])
    assert "Python frame that called into native code" in evidence
    assert "string_at" in evidence
    if "faulthandler" in code:  # the program's own handler still ran after ours
        assert b"Fatal Python error: Segmentation fault" in run.stderr


WORKER_SEGV = """
import ctypes, torch
from torch.utils.data import DataLoader, Dataset
class SegfaultDataset(Dataset):
    def __len__(self): return 10
    def __getitem__(self, i): return ctypes.string_at(0)
next(iter(DataLoader(SegfaultDataset(), batch_size=2, num_workers=2)))
"""


def test_dataloader_worker_segfault_is_the_root_cause(traindoc):
    run = traindoc(python_job(WORKER_SEGV))
    assert run.status == 1
    findings = run.report["findings"]
    root = root_cause(run.report)
    assert root["kind"] == "worker-crash"
    assert " of rank 0 " in root["title"] and "null pointer" in root["title"]
    assert "string_at" in "\n".join(root["evidence"])
    workers = {p["pid"]: p for p in run.report["processes"] if p["role"] == "worker"}
    assert root["pids"][0] in workers
    # Each worker that crashed dies of its SIGSEGV and prints PyTorch's message, as without
    # traindoc, rather than exiting 0 on its parent's SIGTERM while its crash is captured.
    crashed = set(root["pids"])
    for pid in crashed:
        assert workers[pid]["exit"].get("signal_name") == "SIGSEGV", workers[pid]
    assert run.stderr.count(b"Unexpected segmentation fault encountered in worker") == len(crashed)
    # The main process's RuntimeError is listed as the consequence, not as the cause.
    consequences = [findings[i] for i in root["consequences"]]
    rank_failure = [f for f in consequences if f["kind"] == "python-exception"]
    assert rank_failure and "DataLoader worker" in rank_failure[0]["title"]


def test_crash_record_is_on_disk_while_traindoc_still_runs(tmp_path):
    """The raw record is committed as soon as it is read, before the job ends."""
    import sqlite3
    import time
    from conftest import TRAINDOC
    code = ("import os, time, ctypes\n"
            "if os.fork() == 0: ctypes.string_at(0)\n"
            "os.wait(); time.sleep(5)\n")
    run_dir = tmp_path / "r"
    proc = subprocess.Popen([str(TRAINDOC), "run", "--out", str(run_dir), "--", PYTHON, "-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 4
    crashes = 0
    while time.time() < deadline and not crashes:
        time.sleep(0.2)
        try:
            with sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True) as con:
                crashes = con.execute("select count(*) from crashes").fetchone()[0]
        except sqlite3.Error:
            pass
    assert proc.poll() is None  # the job still runs
    proc.communicate(timeout=30)
    assert crashes == 1


# The SIGKILL of something outside the job (the OOM killer): sent to the worker's own thread, not
# through the kill() call the agent notes. Workers forked by the rank, or by a forkserver below it.
# Worker 0 dies on its first sample, once the rank waits for batches; the other makes its batch.
# A death makes the rank's SIGCHLD handler raise wherever the rank is: right after the rank took
# an index queue's lock (still handing out the first indices), the lock stays taken and the
# rank's exit hangs on it (a PyTorch race: 1 run in about 240 under load, workers dying at once).
WORKER_KILLED = """
import signal, threading, time, torch
from torch.utils.data import DataLoader, Dataset, get_worker_info
class Killed(Dataset):
    def __len__(self): return 10
    def __getitem__(self, i):
        if get_worker_info().id == 0:
            time.sleep(1)
            signal.pthread_kill(threading.get_ident(), signal.SIGKILL)
        return torch.zeros(1)
if __name__ == "__main__":
    next(iter(DataLoader(Killed(), batch_size=2, num_workers=2, multiprocessing_context=CONTEXT)))
"""


def worker_killed(tmp_path, signal, context):
    """A script file: a forkserver's workers import the main module to find the dataset."""
    script = tmp_path / "train.py"
    script.write_text(WORKER_KILLED.replace("SIGKILL", signal).replace("CONTEXT", repr(context)))
    return [PYTHON, str(script)]


def test_worker_killed_from_outside(traindoc, tmp_path):
    run = traindoc(worker_killed(tmp_path, "SIGKILL", "fork"))
    assert run.status == 1
    root = root_cause(run.report)
    # No OOM kill was counted here, so it is a SIGKILL from outside, with the OOM killer named
    # as the usual sender.
    assert root["kind"] == "worker-crash"
    assert "SIGKILL" in root["title"]
    assert "OOM killer" in root["fix"] and "Out of memory: Killed process" in root["fix"]


def test_a_process_that_killed_itself_is_named_as_its_own_sender(traindoc):
    """SIGKILL runs no handler; the agent noted the kill() call that sent it."""
    run = traindoc(python_job("import os, signal, time\ntime.sleep(0.3)\n"
                              "os.kill(os.getpid(), signal.SIGKILL)\n"))
    assert run.status == 128 + 9
    root = root_cause(run.report)
    assert root["title"].endswith(" killed itself with SIGKILL"), root
    assert "OOM killer" not in root["fix"]


@pytest.mark.parametrize("context", ["fork", "forkserver"])
def test_worker_stopped_alone_is_the_cause_of_its_ranks_failure(traindoc, tmp_path, context):
    run = traindoc(worker_killed(tmp_path, "SIGTERM", context))
    assert run.status == 1
    root = root_cause(run.report)
    assert root["kind"] == "killed-externally", run.report["findings"]
    assert re.fullmatch(r"worker \d of rank 0 \(pid \d+\) was stopped by SIGTERM, and rank 0 "
                        r"\(pid \d+\) failed for it", root["title"]), root["title"]
    (failed,) = [run.report["findings"][i] for i in root["consequences"]
                 if run.report["findings"][i]["kind"] == "python-exception"]
    assert failed["title"].startswith("rank 0 (pid "), failed


SHM_JOB = """
import torch
from torch.utils.data import DataLoader, Dataset
class Big(Dataset):
    def __len__(self): return 64
    def __getitem__(self, i): return torch.ones(256, 1024, 64)
for batch in DataLoader(Big(), batch_size=4, num_workers=2):
    pass
"""


def test_shm_exhaustion_in_a_small_dev_shm(tmp_path):
    """CASES.md T08: a 16 MiB /dev/shm in a private mount namespace."""
    from conftest import TRAINDOC
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=16m tmpfs /dev/shm"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode().strip()}")
    run_dir = tmp_path / "r"
    script = tmp_path / "job.py"
    script.write_text(SHM_JOB)
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c",
         'mount -t tmpfs -o size=16m tmpfs /dev/shm && exec "$0" run --out "$1" -- "$2" "$3"',
         str(TRAINDOC), str(run_dir), PYTHON, str(script)],
        capture_output=True, timeout=180)
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    import json
    report = json.loads((run_dir / "report.json").read_text())
    root = root_cause(report)
    assert root["kind"] == "shm-exhausted", root
    assert "/dev/shm" in root["title"]
    assert any("/dev/shm at that time" in e for e in root["evidence"])
    assert "--shm-size" in root["fix"]
