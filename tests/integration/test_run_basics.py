"""`traindoc run` passes the job's exit status, output and signals through unchanged."""
import json
import os
import re
import select
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import PYTHON, TRAINDOC, job_processes, nvml_env, python_job, torchrun_ranks


def test_exit_code_passes_through(traindoc):
    run = traindoc(["sh", "-c", "exit 7"])
    assert run.status == 7
    assert run.report["schema"] == "traindoc.report/1"
    assert run.report["run"]["exit_code"] == 7
    assert "exited with code 7" in run.stderr.decode()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGSEGV])
def test_death_by_signal_gives_128_plus_n(traindoc, sig):
    run = traindoc(python_job(f"import os; os.kill(os.getpid(), {int(sig)})"))
    assert run.status == 128 + sig
    report = run.report
    assert report["run"]["exit_signal"] == sig
    root = [p for p in report["processes"] if p["pid"] == report["run"]["root_pid"]][0]
    assert root["exit"]["how"] == "signaled"
    assert root["exit"]["signal"] == sig
    assert root["exit"]["source"] == "supervisor"


def test_native_segfault_exit_status(traindoc):
    run = traindoc(python_job("import ctypes; ctypes.string_at(0)"))
    assert run.status == 128 + signal.SIGSEGV


OUTPUT_JOB = r"""
import os, sys
out, err = sys.stdout.buffer, sys.stderr.buffer
out.write(bytes(range(256)) * 64)           # binary, NULs and invalid UTF-8 included
err.write(b"\xff\xfe not text\n" * 100)
for i in range(20000):
    out.write(b"line %d\n" % i)
    if i % 1000 == 0:
        out.flush(); err.write(b"err %d\n" % i); err.flush()
out.write(b"x" * (8 << 20) + b"\n")          # one long line
out.write(b"no newline at the end")
"""


def test_output_is_byte_identical(traindoc):
    direct = subprocess.run(python_job(OUTPUT_JOB), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run = traindoc(python_job(OUTPUT_JOB), "--silent")
    assert run.status == 0
    assert run.stdout == direct.stdout
    assert run.stderr == direct.stderr
    assert (run.run_dir / "logs" / "stdout.log").read_bytes() == direct.stdout
    assert (run.run_dir / "logs" / "stderr.log").read_bytes() == direct.stderr


def test_stdin_passes_through(traindoc):
    data = bytes(range(256)) * 1000
    run = traindoc(["cat"], "--silent", input=data)
    assert run.status == 0 and run.stdout == data


def test_job_sees_a_terminal_when_we_have_one(tmp_path):
    master, slave = os.openpty()
    code = "import sys; print('tty', sys.stdout.isatty(), sys.stderr.isatty())"
    proc = subprocess.Popen([str(TRAINDOC), "run", "--silent", "--out", str(tmp_path / "r"), "--",
                             PYTHON, "-c", code], stdout=slave, stderr=slave)
    os.close(slave)
    assert proc.wait(timeout=60) == 0
    data = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    assert b"tty True True" in data


TRAP_JOB = """
import signal, sys, time
def handler(sig, frame):
    print("job got", signal.Signals(sig).name, flush=True)
    sys.exit(3)
signal.signal(signal.SIGINT, handler)
signal.signal(signal.SIGTERM, handler)
print("ready", flush=True)
time.sleep(60)
"""

STUBBORN_JOB = """
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(60)
"""


def start(tmp_path, code, env=None):
    proc = subprocess.Popen([str(TRAINDOC), "run", "--out", str(tmp_path / "r"), "--",
                             PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    assert proc.stdout.readline() == b"ready\n"
    return proc


def stop_finding(tmp_path):
    """The report's root cause, which must be the stop that was asked for."""
    findings = json.loads((tmp_path / "r" / "report.json").read_text())["findings"]
    root = findings[0]
    assert root["kind"] == "stop-requested" and root["root_cause"], findings
    return root, [findings[i]["kind"] for i in root["consequences"]]


def test_a_child_signal_another_thread_took_still_ends_the_run(tmp_path):
    """NVML's thread unblocks SIGCHLD and takes the job's: the loop learns of the end anyway."""
    env = nvml_env(tmp_path, "thread takes SIGCHLD\n")
    for attempt in range(5):
        done = subprocess.run([str(TRAINDOC), "run", "--silent", "--out",
                               str(tmp_path / f"r{attempt}"), "--", "sh", "-c", "exit 2"],
                              env=env, timeout=30)
        assert done.returncode == 2


def test_a_stop_while_traindoc_starts_ends_it_before_the_job(tmp_path):
    """Ctrl-C while NVML starts (seconds without persistence mode): no job is started."""
    marker = tmp_path / "started"
    proc = subprocess.Popen([str(TRAINDOC), "run", "--out", str(tmp_path / "r"), "--", "touch",
                             str(marker)], env=nvml_env(tmp_path, "init 3000\n"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # NVML loaded: traindoc is in its 3 s start.
    maps = Path(f"/proc/{proc.pid}/maps")
    while "libnvidia-ml" not in maps.read_text():
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGINT
    assert not marker.exists()


# NVML starts a thread of its own when loaded (the stand-in too): a signal must not go there.
@pytest.mark.parametrize("nvml", [False, True], ids=["plain", "nvml"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_is_forwarded_to_the_job(tmp_path, sig, nvml):
    proc = start(tmp_path, TRAP_JOB, nvml_env(tmp_path) if nvml else None)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3
    assert f"job got {sig.name}".encode() in out
    # The job's own exit (code 3, on its way out) is the stop's consequence, not a failure.
    stop, consequences = stop_finding(tmp_path)
    assert stop["title"].startswith(f"the job was stopped by {sig.name} from pid {os.getpid()} ("), stop
    assert consequences == ["nonzero-exit"], stop
    # Its sender as the kernel told it (kill(): SI_USER), with its name: facts, not words.
    with sqlite3.connect(tmp_path / "r" / "run.db") as db:
        sender = db.execute("SELECT pid, a, c, name FROM events WHERE kind = 'signal-forwarded'"
                            ).fetchall()
    comm = Path("/proc/self/comm").read_text().strip()
    assert sender == [(os.getpid(), sig.value, 0, comm)], sender
    # Where it was when the stop came (a terminal's signal is not held back for the dump).
    if sig == signal.SIGTERM:
        assert any(" was in <string>:" in e for e in stop["evidence"]), stop


@pytest.mark.parametrize("reset", [False, True])
def test_a_signal_the_job_got_itself_is_not_sent_again(tmp_path, reset):
    """`timeout` signals its whole process group, traindoc and the job alike (so do schedulers,
    to every process of a job step): a second SIGTERM would interrupt the job's handler while it
    saves its checkpoint, or, once the handler set the default action back, kill it."""
    checkpoint = tmp_path / "last.pt"
    code = ("import signal, sys, time\n"
            "def on_term(sig, frame):\n"
            f"    {'signal.signal(signal.SIGTERM, signal.SIG_DFL)' if reset else 'pass'}\n"
            "    print('got SIGTERM', flush=True)\n"
            "    sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, on_term)\n"
            "try:\n"  # a stop that comes as it says so saves too
            "    print('ready', flush=True)\n"
            "    time.sleep(60)\n"
            "finally:\n"
            "    time.sleep(1)\n"
            f"    open({str(checkpoint)!r}, 'w').write('saved')\n")
    proc = subprocess.Popen(["timeout", "-s", "TERM", "60", str(TRAINDOC), "run", "--out",
                             str(tmp_path / "r"), "--", PYTHON, "-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    # Its limit runs out now (its alarm): it signals traindoc and then its whole process group.
    os.kill(proc.pid, signal.SIGALRM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 124, err
    assert out.count(b"got SIGTERM") == 1, out
    assert checkpoint.read_text() == "saved"
    with sqlite3.connect(tmp_path / "r" / "run.db") as db:
        (text,) = db.execute("SELECT text FROM events WHERE kind = 'signal-forwarded'").fetchone()
    assert text.endswith(", passed on to 0 process(es) (1 had it already)"), text


SLOW_TO_STOP = """
import signal, sys, time
def on_term(sig, frame):
    print("got SIGTERM", flush=True)
    time.sleep(1)  # saving: a second copy now would run this again
    sys.exit(3)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
time.sleep(60)
"""


def children(pid):
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@pytest.mark.parametrize("every_process", [False, True], ids=["traindoc", "every-process"])
def test_a_stop_from_outside_the_containers_pid_namespace(tmp_path, every_process):
    """traindoc as a container's first process, stopped from the host (docker stop, a pod's end)
    or with every process of the container (a scheduler): the kernel names no sender inside (pid
    0). The report says where it came from; a job that got it too is not sent a second copy."""
    container = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]
    probe = subprocess.run([*container, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no unprivileged pid namespaces here: {probe.stderr.decode()[-200:]}")
    proc = subprocess.Popen([*container, str(TRAINDOC), "run", "--out", str(tmp_path / "r"), "--",
                             PYTHON, "-c", SLOW_TO_STOP],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    (traindoc_pid,) = children(proc.pid)
    for pid in [*(children(traindoc_pid) if every_process else []), traindoc_pid]:
        os.kill(pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert out.count(b"got SIGTERM") == 1, out
    stop, _ = stop_finding(tmp_path)
    assert stop["title"] == ("the job was stopped by SIGTERM from a process outside traindoc's pid "
                             "namespace (its container's runtime or host: docker stop or a "
                             "Kubernetes pod's end)"), stop


def test_the_guard_is_no_process_of_the_job_where_traindoc_is_a_containers_first(tmp_path):
    """As the first process of a pid namespace, traindoc adopts every orphan there, the job's
    guard included: the guard is still not one of the job's processes."""
    container = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount-proc"]
    probe = subprocess.run([*container, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no unprivileged pid namespaces here: {probe.stderr.decode()[-200:]}")
    proc = subprocess.Popen([*container, str(TRAINDOC), "run", "--interval", "0.2", "--out",
                             str(tmp_path / "r"), "--", PYTHON, "-c",
                             "import time; print('ready', flush=True); time.sleep(1)"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    (traindoc_pid,) = children(proc.pid)
    comms = [Path(f"/proc/{pid}/comm").read_text().strip() for pid in children(traindoc_pid)]
    assert sorted(comms) == ["job-guard", "python3"], comms
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [p["cmdline"].split()[0] for p in report["processes"]] == [PYTHON], report["processes"]


def test_a_job_that_left_well_on_a_stop_is_told_it_was_asked(tmp_path):
    """A preempted job's handler saves and exits 0: the run did not fail, but its training may
    not have ended; the report and the one-line verdict say that a stop came, and from whom."""
    code = TRAP_JOB.replace("sys.exit(3)", "sys.exit(0)")
    proc = start(tmp_path, code)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    findings = json.loads((tmp_path / "r" / "report.json").read_text())["findings"]
    (stop,) = findings
    assert stop["kind"] == "stop-requested" and not stop["root_cause"], stop
    assert re.fullmatch(rf"the job exited with code 0 \d+\.\d s after SIGTERM from pid "
                        rf"{os.getpid()} \(.*\)", stop["title"]), stop["title"]
    quiet = subprocess.run([str(TRAINDOC), "analyze", "--quiet", str(tmp_path / "r")],
                           capture_output=True, text=True)
    assert "; info [stop-requested] the job exited with code 0 " in quiet.stdout, quiet


def test_a_stop_after_one_the_job_sent_itself_is_passed_on(tmp_path):
    """The job's own SIGTERM to itself, which its handler shrugs off, is not the copy of a
    later one sent to traindoc alone: that one reaches the job."""
    code = ("import os, signal, sys, time\n"
            "count = 0\n"
            "def on_term(sig, frame):\n"
            "    global count\n"
            "    count += 1\n"
            "    if count == 2:\n"
            "        print('stopped', flush=True)\n"
            "        sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, on_term)\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "print('ready', flush=True)\n"
            "time.sleep(20)\n")
    proc = start(tmp_path, code)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert b"stopped" in out


def test_sigterm_to_a_torchrun_job_is_a_requested_stop(tmp_path):
    """A scheduler's SIGTERM: torchrun raises SignalException and exits 1, the ranks die of
    SIGTERM. The stop is the root cause and the launcher's exit its consequence, not a failure."""
    script = tmp_path / "wait.py"
    script.write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([str(TRAINDOC), "run", "--out", str(tmp_path / "r"), "--",
                             *torchrun_ranks(2, script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ready = 0
    while ready < 2:
        line = proc.stdout.readline()
        assert line, proc.communicate(timeout=60)[1].decode()[-3000:]
        ready += line.count(b"ready")  # the launcher may join the ranks' lines
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 1
    stop, consequences = stop_finding(tmp_path)
    assert stop["title"].startswith("the job was stopped by SIGTERM from pid "), stop
    assert stop["ranks"] == [0, 1], stop
    assert consequences == ["killed-externally"], stop
    # Where it sleeps, or still on its way back from printing (a loaded machine) just before.
    for rank in (0, 1):
        assert any(re.match(rf"rank {rank} \(pid \d+\) was in {re.escape(str(script))}:[23] in "
                            "<module>", e) for e in stop["evidence"]), stop
    findings = json.loads((tmp_path / "r" / "report.json").read_text())["findings"]
    assert findings[stop["consequences"][0]]["title"].endswith("got SIGTERM and stopped its ranks")


def test_a_timeout_that_ran_out_is_the_jobs_time_limit(traindoc, tmp_path):
    """`timeout 5 torchrun ...`: coreutils' timeout sends torchrun SIGTERM at the limit, torchrun
    stops its ranks, and timeout exits 124. The limit is the root cause, not timeout's exit, with
    where each rank was a moment before it ran out."""
    script = tmp_path / "wait.py"
    script.write_text("import time\ntime.sleep(60)\n")
    run = traindoc(["timeout", "5", *torchrun_ranks(2, script)])
    assert run.status == 124, run.stderr
    root = run.report["findings"][0]
    assert root["kind"] == "stop-requested" and root["root_cause"], run.report["findings"]
    assert root["title"] == "the job was stopped by its time limit: `timeout 5` ran out after 5.0 s"
    assert root["ranks"] == [0, 1]
    for rank in (0, 1):
        assert any(e.startswith(f"rank {rank} (pid ") and f" was in {script}:2 in <module>" in e
                   for e in root["evidence"]), root
    assert "time limit ran out" in root["fix"]
    assert all(f["kind"] != "launcher-exit" for f in run.report["findings"]), run.report


def test_a_job_that_keeps_starting_short_processes_is_not_idle(traindoc):
    """A driver that runs one short program after another uses almost no CPU itself, and no walk
    sees its programs' CPU: the processes it starts are its activity."""
    code = ("import subprocess, time\nstart = time.time()\n"
            "while time.time() - start < 4: subprocess.run(['sleep', '0.05'])\n")
    run = traindoc(python_job(code), "--stall-seconds", "1.5", "--interval", "0.2")
    assert run.status == 0, run.stderr
    assert b"the job is idle" not in run.stderr, run.stderr
    assert all(f["kind"] != "job-idle" for f in run.report["findings"]), run.report


def test_an_idle_spell_is_told_with_where_the_job_waited(traindoc):
    """No CPU and no output for --stall-seconds: said on the terminal while it lasts, and in the
    report as a pause the job came out of, with the stack it waited in."""
    code = ("import time\nprint('start', flush=True)\n"
            "def wait_for_the_data():\n    time.sleep(4)\n"
            "wait_for_the_data()\nprint('working', flush=True)\n"
            "start = time.time()\nwhile time.time() - start < 1: pass\n")
    run = traindoc(python_job(code), "--stall-seconds", "1.5", "--interval", "0.2")
    assert run.status == 0, run.stderr
    assert b"traindoc: the job is idle: no process used CPU or printed for" in run.stderr
    (idle,) = [f for f in run.report["findings"] if f["kind"] == "job-idle"]
    assert idle["severity"] == "info" and idle["title"].startswith("the job paused at +"), idle
    assert any(e.startswith("rank 0 (pid ") and " was in <string>:4 in wait_for_the_data" in e
               for e in idle["evidence"]), idle


# A Pool whose worker crashes: its task is lost and the pool waits for it until the timeout.
POOL_LOSES_A_TASK = """
import ctypes, multiprocessing
def work(i):
    if i == 1:
        ctypes.string_at(0)
    return i
if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print(pool.map_async(work, range(4)).get(timeout=8))
"""


def test_an_idle_spell_after_a_failure_names_it(traindoc):
    """The terminal's idle line names the process that failed just before the job went quiet:
    what the job most likely waits for. The report makes the crash the root cause."""
    run = traindoc(python_job(POOL_LOSES_A_TASK), "--stall-seconds", "2", "--interval", "0.2")
    assert run.status == 1, run.stderr
    root = run.report["findings"][0]
    assert root["kind"] == "worker-crash" and root["root_cause"], root
    (worker,) = root["pids"]
    idle = re.search(rb"traindoc: the job is idle: .*; the last process to fail before it: pid "
                     rb"(\d+) \((.*)\), killed by SIGSEGV at \+\d+\.\d s", run.stderr)
    assert idle, run.stderr
    assert int(idle[1]) == worker and idle[2].startswith(PYTHON.encode() + b" -c "), idle[0]


STORE_CLIENT = """
import datetime, socket, threading
import torch.distributed as dist
if {thread}:
    threading.Thread(target=threading.Event().wait, daemon=True).start()
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
print("connecting", flush=True)
dist.TCPStore("127.0.0.1", port, 2, False, timeout=datetime.timedelta(seconds=5))
"""


@pytest.mark.parametrize("thread", [False, True])
def test_an_idle_spell_spares_a_wait_that_a_signal_would_cut_short(traindoc, thread):
    """A rank waits for a store nobody has started yet: PyTorch sleeps between its connect
    attempts in C++, which a signal handler's run would cut short for good ("Interrupted system
    call"). The stack request goes to another thread, or to none: the wait ends as it would
    without traindoc, at its own timeout."""
    run = traindoc(python_job(STORE_CLIENT.format(thread=thread)), "--stall-seconds", "1",
                   "--interval", "0.2")
    assert b"traindoc: the job is idle" in run.stderr, run.stderr
    assert b"Interrupted system call" not in run.stderr, run.stderr
    assert b"The client socket has timed out after 5s" in run.stderr, run.stderr
    (idle,) = [f for f in run.report["findings"] if f["kind"] == "job-idle"]
    where = "was in <string>:8 in <module>" if thread else (
        "was not asked for its stack: every thread waits in a system call that a signal would "
        "cut short, the main thread in clock_nanosleep, called from libtorch_cpu.so")
    assert any(e.startswith("rank 0 (pid ") and where in e for e in idle["evidence"]), idle


INIT_CAUGHT = """
import datetime, socket
import torch.distributed as dist
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
try:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=1, world_size=2,
                            timeout=datetime.timedelta(seconds=6))
except Exception as e:
    print("no store yet:", e, flush=True)
dist.TCPStore("127.0.0.1", port, 2, False, timeout=datetime.timedelta(seconds=3))
"""


def test_a_wait_after_a_caught_init_failure_is_not_told_as_joining(traindoc):
    """init_process_group raised and the program went on to wait elsewhere: the second idle
    spell is not put down to the rank joining its peers."""
    run = traindoc(python_job(INIT_CAUGHT), "--stall-seconds", "1", "--interval", "0.2")
    assert b"no store yet" in run.stdout, run.stderr
    spells = [f for f in run.report["findings"] if f["kind"] == "job-idle"]
    assert len(spells) == 2, spells
    # The first spell's stack is spared or taken (a thread seen between two connect attempts).
    assert "waits in init_process_group" in spells[0]["title"], spells[0]
    assert "init_process_group" not in spells[1]["title"], spells[1]
    assert not [e for e in spells[1]["evidence"] if "init_process_group" in e], spells[1]


def test_a_hang_stopped_by_an_interrupt_stays_the_root_cause(tmp_path):
    """The user gives up on a hung job with an interrupt: the KeyboardInterrupt traceback it
    prints on its way out is no recovery; the hang is why it was stopped."""
    code = "import queue\nprint('ready', flush=True)\nqueue.Queue().get()\n"
    proc = subprocess.Popen([str(TRAINDOC), "run", "--stall-seconds", "1", "--interval", "0.2",
                             "--out", str(tmp_path / "r"), "--", PYTHON, "-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    while b"traindoc: the job is idle" not in (line := proc.stderr.readline()):
        assert line, proc.communicate(timeout=30)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert b"KeyboardInterrupt" in err
    findings = json.loads((tmp_path / "r" / "report.json").read_text())["findings"]
    root = findings[0]
    assert root["kind"] == "job-idle" and root["root_cause"], findings
    assert "did not move again until it was stopped" in root["title"], root
    assert any(e.endswith("<string>:3 in <module>") for e in root["evidence"]), root
    assert [findings[i]["kind"] for i in root["consequences"]] == ["stop-requested"], findings


DEADLOCKED_WORKER = """
import threading, torch
from torch.utils.data import DataLoader, Dataset
lock = threading.Lock()
class Locked(Dataset):
    def __len__(self): return 64
    def __getitem__(self, i):
        if i == 9:
            lock.acquire(); lock.acquire()  # a lock taken twice: the worker waits forever
        return torch.zeros(4)
print("ready", flush=True)
for batch in DataLoader(Locked(), batch_size=4, num_workers=2):
    pass
"""


def stopped_when_idle(tmp_path, code, first_line):
    """Runs `code` under traindoc, stops it with SIGTERM once traindoc says it is idle, and
    returns the report's findings."""
    proc = subprocess.Popen([str(TRAINDOC), "run", "--out", str(tmp_path / "r"), "--stall-seconds",
                             "1", "--interval", "0.25", "--", PYTHON, "-c", code],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline() == first_line
    err = b""
    while b"the job is idle" not in err:
        line = proc.stderr.readline()
        assert line, err
        err += line
    time.sleep(0.5)  # the stacks asked for at the idle line
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    return json.loads((tmp_path / "r" / "report.json").read_text())["findings"]


def test_a_hang_its_user_stopped_is_the_root_cause(tmp_path):
    """A DataLoader worker deadlocks; the job sits idle until its user stops it. The hang is why
    it was stopped: the root cause, naming the worker stuck in the user's code that its rank
    waits for, and the DataLoader's timeout."""
    findings = stopped_when_idle(tmp_path, DEADLOCKED_WORKER, b"ready\n")
    root = findings[0]
    assert root["kind"] == "job-idle" and root["root_cause"], findings
    assert root["severity"] == "error"
    assert re.search(r"^the job hung at \+[0-9.]+ s and did not move again until it was stopped, "
                     r"[0-9.]+ s later: no process used CPU or printed anything; rank 0 \(pid \d+\) "
                     r"waits for a batch from worker [01] of rank 0 \(pid \d+\), which is at "
                     r"<string>:9 in __getitem__$", root["title"]), root
    assert "Pass timeout=SECONDS to the DataLoader" in root["fix"], root["fix"]
    assert [findings[i]["kind"] for i in root["consequences"]] == ["stop-requested"]


THREAD_DIES = """
import queue, threading
batches = queue.Queue()
def prefetch():
    batches.put(0)
    raise OSError("[Errno 5] Input/output error: '/data/shard-3.tar'")
threading.Thread(target=prefetch, name="prefetch", daemon=True).start()
while True:
    print("step", batches.get(), flush=True)
"""


def test_a_thread_that_died_before_a_hang_is_its_cause(tmp_path):
    """A prefetch thread dies of an exception; the main thread waits for its next batch until
    the user stops the job. The thread's exception is the root cause, the hang its consequence."""
    findings = stopped_when_idle(tmp_path, THREAD_DIES, b"step 0\n")
    root = findings[0]
    assert root["root_cause"] and root["kind"] == "python-exception", findings
    assert re.search(r"^thread prefetch of rank 0 \(pid \d+\) raised OSError: \[Errno 5\] "
                     r"Input/output error: '/data/shard-3.tar'; the job then hung$",
                     root["title"]), root
    assert "job-idle" in [findings[i]["kind"] for i in root["consequences"]], findings


def terminal_until(master, text, seen):
    """What a terminal showed until `text` (within 30 s), after `seen`."""
    deadline = time.time() + 30
    while text not in seen:
        ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.time()))
        assert ready, seen
        seen += os.read(master, 4096)
    return seen


def test_a_debugger_prompt_on_a_terminal_is_named_and_answered(tmp_path):
    """A breakpoint() on a terminal (Python's readline waits in pselect on it): the idle line names
    the process at the prompt; answered, the job goes on and the report has a pause with why."""
    master, slave = os.openpty()
    run_dir = tmp_path / "r"
    code = "x = 1\nbreakpoint()\nprint('after the prompt', flush=True)\n"
    proc = subprocess.Popen([str(TRAINDOC), "run", "--out", str(run_dir), "--stall-seconds", "1",
                             "--interval", "0.2", "--", PYTHON, "-c", code],
                            stdin=slave, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    seen = terminal_until(master, b"(Pdb)", b"")
    err = b""
    while b"the job is idle" not in err:
        line = proc.stderr.readline()
        assert line, err
        err += line
    if not re.search(rb"waits for input", err):
        proc.kill()
    assert re.search(rb"the job is idle: .*; pid \d+ \(python3\) waits for input on its standard "
                     rb"input \(a terminal, /dev/pts/\d+\)", err), err
    os.write(master, b"c\n")
    proc.communicate(timeout=60)
    terminal_until(master, b"after the prompt", seen)
    os.close(master)
    assert proc.returncode == 0
    report = json.loads((run_dir / "report.json").read_text())
    (idle,) = [f for f in report["findings"] if f["kind"] == "job-idle"]
    assert idle["severity"] == "info" and idle["title"].startswith("the job paused at +"), idle
    assert re.search(r": rank 0 \(pid \d+\) waits for input on its standard input \(a terminal, "
                     r"/dev/pts/\d+\)$", idle["title"]), idle
    assert "breakpoint()" in idle["fix"]


def test_second_interrupt_kills_the_job(tmp_path):
    proc = start(tmp_path, STUBBORN_JOB)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert proc.poll() is None  # the job ignores one interrupt
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGKILL
    assert b"second interrupt" in err
    stop, _ = stop_finding(tmp_path)
    assert stop["title"].endswith(", then killed at the second interrupt"), stop
    assert any(e.startswith("rank 0 (pid ") and "ended by SIGKILL" in e for e in stop["evidence"])


def test_traindoc_under_traindoc(traindoc, tmp_path):
    """A wrapper that adds its own traindoc run inside another: the inner traindoc's fork execs
    the job with the inner run's agent, not the outer's. The outer still reads the Python process
    as the rank that failed, not as a fork of the inner traindoc (a DataLoader worker)."""
    inner = tmp_path / "inner"
    code = "import sys, time; time.sleep(1.5); sys.exit(3)"
    run = traindoc([str(TRAINDOC), "run", "--out", str(inner), "--", PYTHON, "-c", code])
    assert run.status == 3, run.stderr
    outer = run.report
    reports = {"outer": outer, "inner": json.loads((inner / "report.json").read_text())}
    for name, report in reports.items():
        root = report["findings"][0]
        assert root["kind"] == "nonzero-exit", (name, root)
        ranks = [p for p in report["processes"] if p["role"] == "rank"]
        assert [p["cmdline"] for p in ranks] == [f"{PYTHON} -c {code}"], (name, report["processes"])
        assert root["pids"] == [ranks[0]["pid"]], (name, root)
    assert not any(p["role"] == "worker" for p in outer["processes"]), outer["processes"]


# A job and a daemon of its own that drops its environment and leaves its parent.
JOB_WITH_DAEMON = """
import os, subprocess, time
print(os.getpid(), flush=True)
subprocess.run(["sh", "-c", "env -i sleep 300 & echo $!"])
time.sleep(30)
"""


def gone(pid):
    """Whether the process ended (a zombie whose parent has not reaped it yet has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def test_run_db_readable_after_kill_9_of_traindoc(tmp_path):
    """After a kill -9 of traindoc, run.db is whole and the guard has ended the job: its processes
    found by their environment, and a daemon without it through run.db."""
    run_dir = tmp_path / "r"
    proc = subprocess.Popen([str(TRAINDOC), "run", "--interval", "0.2", "--out", str(run_dir), "--",
                             PYTHON, "-c", JOB_WITH_DAEMON],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    job_pid = int(proc.stdout.readline())
    daemon_pid = int(proc.stdout.readline())
    db = run_dir / "run.db"
    deadline = time.time() + 15
    samples, pids = 0, set()
    while time.time() < deadline and (samples < 3 or daemon_pid not in pids):
        time.sleep(0.3)
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                samples = con.execute("select count(*) from proc_samples").fetchone()[0]
                pids = {row[0] for row in con.execute("select pid from processes")}
        except sqlite3.Error:
            pass
    assert b"TRAINDOC_RUN_DIR" not in Path(f"/proc/{daemon_pid}/environ").read_bytes()
    proc.kill()
    _, err = proc.communicate(timeout=30)  # the guard holds stderr until it is done
    assert samples >= 3 and daemon_pid in pids, (samples, pids)
    assert job_processes(run_dir) == [], err.decode()
    assert gone(daemon_pid), err.decode()
    with sqlite3.connect(db) as con:
        assert job_pid in {row[0] for row in con.execute("select pid from processes")}
        assert con.execute("pragma integrity_check").fetchone()[0] == "ok"
    analyze = subprocess.run([str(TRAINDOC), "analyze", str(run_dir)], capture_output=True)
    assert analyze.returncode == 0, analyze.stderr
    assert re.search(rf"{job_pid}  rank 0 +ended by the guard", analyze.stdout.decode())
    assert re.search(rf"{daemon_pid}  .* +ended by the guard", analyze.stdout.decode())


HUNG_RANKS = """
import time
import torch
import torch.distributed as dist
dist.init_process_group("gloo")  # the default timeout: 30 minutes
if dist.get_rank() == 1:
    time.sleep(3600)
dist.all_reduce(torch.ones(4))
"""


def test_a_kill_9_of_traindoc_ends_the_hung_job_it_ran(tmp_path):
    """A harness that kills traindoc alone (kill -9) leaves no rank hung in a collective: the
    guard ends the job, and the report still names the hang that was seen."""
    run_dir = tmp_path / "r"
    script = tmp_path / "hang.py"
    script.write_text(HUNG_RANKS)
    proc = subprocess.Popen([str(TRAINDOC), "run", "--stall-seconds", "2", "--out", str(run_dir), "--",
                             *torchrun_ranks(2, script)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr))
    reader.start()
    deadline = time.time() + 90
    while time.time() < deadline and not any(l.startswith("traindoc: collective-missing") for l in lines):
        time.sleep(0.2)
    job = job_processes(run_dir)
    proc.kill()
    proc.wait()
    reader.join(timeout=60)
    text = "".join(lines)
    assert any(l.startswith("traindoc: collective-missing") for l in lines), text
    assert len(job) >= 3, job  # torchrun and its two ranks
    assert job_processes(run_dir) == [], text
    assert "traindoc: the supervisor ended before its job" in text
    assert re.search(r"traindoc: the job is over \(SIGTERM to \d+ processes", text), text
    report = json.loads((run_dir / "report.json").read_text())
    root = report["findings"][0]
    assert root["root_cause"] and root["kind"] == "collective-missing" and root["ranks"] == [1], root
    assert any("its guard then ended the job: SIGTERM to" in m for m in report["missing_evidence"])
    assert not (run_dir / "agent" / "slots").exists()  # the shared memory, a sparse GiB
    ends = [(p["role"], p["exit"]["source"]) for p in report["processes"]]
    assert ends == [("launcher", "guard"), ("rank", "guard"), ("rank", "guard")], ends


COUNTING_JOB = """
import signal, sys, time
count = 0
def handler(sig, frame):
    global count
    count += 1
signal.signal(signal.SIGINT, handler)
print("ready", flush=True)
deadline = time.time() + 30
while count == 0 and time.time() < deadline:
    time.sleep(0.05)
time.sleep(1.0)  # a second delivery, if any, would arrive now
print("interrupts", count, flush=True)
sys.exit(3)
"""


def read_until(fd, needle, timeout=30):
    data = b""
    deadline = time.time() + timeout
    while needle not in data and time.time() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def test_ctrl_c_on_a_terminal_reaches_the_job_once(tmp_path):
    import pty
    pid, master = pty.fork()
    if pid == 0:  # child: session leader on the pty, in its foreground process group
        os.execv(str(TRAINDOC), [str(TRAINDOC), "run", "--out", str(tmp_path / "r"), "--",
                                 PYTHON, "-c", COUNTING_JOB])
    assert b"ready" in read_until(master, b"ready")
    os.write(master, b"\x03")  # the terminal's interrupt character: SIGINT to the whole group
    output = read_until(master, b"run folder")
    _, status = os.waitpid(pid, 0)
    os.close(master)
    assert b"interrupts 1" in output, output
    assert os.waitstatus_to_exitcode(status) == 3
    stop, _ = stop_finding(tmp_path)
    assert stop["title"] == "the job was stopped by SIGINT from the terminal", stop


def test_kill_of_traindoc_reaches_the_job_once(tmp_path):
    proc = start(tmp_path, COUNTING_JOB)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert b"interrupts 1" in out
    assert proc.returncode == 3


def test_a_gigabyte_of_output_keeps_the_run_folder_bounded(traindoc):
    code = ("import sys\n"
            "block = (b'x' * 1023 + b'\\n') * 1024\n"
            "for i in range(1024): sys.stdout.buffer.write(block)\n"
            "sys.stdout.buffer.write(b'the end\\n')\n")
    run = traindoc(python_job(code), "--silent", stdout=subprocess.DEVNULL)
    assert run.status == 0
    logs = run.run_dir / "logs"
    kept = sorted(logs.glob("stdout*.log"))
    assert sum(f.stat().st_size for f in kept) <= 128 << 20
    with sqlite3.connect(run.run_dir / "run.db") as con:
        total, lines, dropped = con.execute(
            "select bytes, lines, bytes_not_kept from logs where name = 'stdout'").fetchone()
        files = [r[0] for r in con.execute(
            "select path from log_files where stream = 'stdout' order by position")]
    assert total == (1 << 30) + len(b"the end\n")
    assert lines == (1 << 20) + 1
    assert dropped == total - sum(f.stat().st_size for f in kept)
    # The head and the latest output are kept, in order.
    assert files[0] == "logs/stdout.log" and len(files) == 3
    tail = b"".join((run.run_dir / f).read_bytes() for f in files[1:])
    assert len(tail) > 32 << 20 and tail.endswith(b"x\nthe end\n")


def test_the_last_lines_are_kept_after_a_long_line(traindoc):
    # 150 lines (past the first ones always kept), a 3 MiB line, then plain last words: the
    # last lines are read back from the last MiB of the log file alone.
    code = ("import sys\n"
            "for i in range(150): print('line', i)\n"
            "sys.stdout.write('y' * (3 << 20) + '\\n')\n"
            "print('last words')\n")
    run = traindoc(python_job(code), "--silent", stdout=subprocess.DEVNULL)
    assert run.status == 0
    with sqlite3.connect(run.run_dir / "run.db") as con:
        kept = dict(con.execute(
            "select number, text from log_lines where stream = 'stdout' and number > 100"))
    assert kept[152] == "last words"
    assert kept[151] == "y" * 4096  # cut at 4 KiB
