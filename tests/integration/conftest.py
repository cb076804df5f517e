"""Shared helpers for the integration tests: they run the real traindoc binary on real
processes and real PyTorch, then read report.json, run.db and the exit status."""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "faults"))
from zoo import free_port  # noqa: E402  (a port for a job's store, shared with the fault zoo)
TRAINDOC = Path(os.environ.get("TRAINDOC_BIN", ROOT / "build" / "bin" / "traindoc"))
# The build folder of the traindoc under test (TRAINDOC_BIN may name another build, such as a
# sanitizer build): its agent, hook, crashers and stand-in libraries go with it.
BUILD = TRAINDOC.parents[1]
JOBS = Path(__file__).resolve().parent / "jobs"
# The interpreter that has torch: the one running these tests (scripts/test picks it).
PYTHON = os.environ.get("TRAINDOC_PYTHON", sys.executable)

# The stand-in libnvidia-ml of tests/fakes/nvml.
FAKE_NVML = BUILD / "tests" / "fakes" / "nvml" / "libnvidia-ml.so.1"


def nvml_env(tmp_path, scenario=None, **extra):
    """The environment in which traindoc loads the stand-in NVML, playing `scenario` if given."""
    env = {**os.environ, "TRAINDOC_NVML_LIBRARY": str(FAKE_NVML), **extra}
    if scenario is not None:
        script = tmp_path / f"nvml-{time.monotonic_ns()}.txt"
        script.write_text(scenario)
        env["TRAINDOC_FAKE_NVML_SCRIPT"] = str(script)
    return env


# Tests interrupt traindoc as a terminal would. A harness that started this run in the background
# left SIGINT ignored, which traindoc and its jobs would inherit: they get Python's default instead.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


class Run:
    """One finished `traindoc run`."""

    def __init__(self, proc, run_dir):
        self.proc = proc
        self.run_dir = Path(run_dir)
        self.status = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def report(self):
        return json.loads((self.run_dir / "report.json").read_text())

    def processes(self, role=None):
        procs = self.report["processes"]
        return [p for p in procs if role is None or p["role"] == role]


@pytest.fixture
def traindoc(tmp_path):
    """Runs `traindoc run [options] -- cmd` in a fresh run folder and returns a Run. Several
    threads may run at once (each run gets a folder of its own)."""
    assert TRAINDOC.exists(), f"build first: {TRAINDOC} is missing"
    counter = [0]
    numbering = threading.Lock()

    def run(cmd, *options, timeout=120, **kwargs):
        with numbering:
            counter[0] += 1
            run_dir = tmp_path / f"run{counter[0]}"
        argv = [str(TRAINDOC), "run", "--out", str(run_dir), *options, "--", *cmd]
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        data = kwargs.pop("input", None)
        if data is not None:
            kwargs["stdin"] = subprocess.PIPE
        hung = None
        with subprocess.Popen(argv, **kwargs) as popen:
            try:
                stdout, stderr = popen.communicate(data, timeout=timeout)
            except subprocess.TimeoutExpired:
                hung = describe_hang(popen.pid, run_dir)
                popen.kill()
                stdout, stderr = popen.communicate()
        if hung is not None:
            tail = (stderr or b"")[-4000:]
            if isinstance(tail, bytes):
                tail = tail.decode(errors="replace")
            pytest.fail(f"traindoc run did not end in {timeout} s: {argv}\n{hung}\n"
                        f"its stderr:\n{tail}", pytrace=False)
        proc = subprocess.CompletedProcess(argv, popen.returncode, stdout, stderr)
        return Run(proc, run_dir)

    return run


def job_processes(run_dir):
    """The live processes whose environment names `run_dir` as their run folder."""
    entry = f"TRAINDOC_RUN_DIR={Path(run_dir).resolve()}".encode()
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and entry in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                found.append(int(name))
        except OSError:
            pass  # gone (a zombie's reads fail too), or not ours to read
    return found


def describe_hang(traindoc_pid, run_dir):
    """What a run that did not end was doing: traindoc and each process of its job, each thread's
    state and kernel wait, and its native stacks where gdb is installed."""
    lines = []
    for pid in [traindoc_pid, *job_processes(run_dir)]:
        proc = Path(f"/proc/{pid}")
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (proc / "stat").read_text()
            threads = []
            for task in sorted((proc / "task").iterdir(), key=lambda t: int(t.name)):
                task_stat = (task / "stat").read_text()
                state = task_stat[task_stat.rindex(")") + 2]
                threads.append(f"{task.name}:{state}:{(task / 'wchan').read_text() or '-'}")
        except OSError as error:
            lines.append(f"pid {pid}: {error}")
            continue
        ppid = stat[stat.rindex(")") + 2:].split()[1]
        lines.append(f"pid {pid} ppid {ppid}: {cmdline}\n  threads {' '.join(threads)}")
        if have("gdb"):
            stacks = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex",
                                     "thread apply all bt 30"], capture_output=True, text=True,
                                    timeout=60)
            lines.append("  " + "\n  ".join(l for l in stacks.stdout.splitlines()
                                             if l.startswith(("#", "Thread"))))
    return "\n".join(lines)


def python_job(code):
    """A command that runs `code` with the interpreter that has torch."""
    return [PYTHON, "-c", code]


def job_script(name, *args):
    return [PYTHON, str(JOBS / name), *map(str, args)]


def fault_script(name, *args):
    """A script of the fault zoo (examples/faults/)."""
    return [PYTHON, str(ROOT / "examples" / "faults" / name), *map(str, args)]


def torchrun(*args, redirects=2, tee=2):
    """torchrun of Debian's PyTorch, with the redirects that its Python 3.11 build needs (any
    but 0): by default the ranks' stderr, printed with a prefix."""
    return [PYTHON, "-m", "torch.distributed.run", "--redirects", str(redirects), "--tee", str(tee),
            *map(str, args)]


def torchrun_ranks(count, *args, **kwargs):
    """torchrun of `count` ranks on one node, its store on a free port: --standalone's fixed
    port 29400 collides with any other job on the machine, a test running beside this one too."""
    return torchrun("--nnodes", 1, "--master_addr", "127.0.0.1", "--master_port", free_port(),
                    "--nproc_per_node", count, *args, **kwargs)


def own_memory_cgroup():
    """(version, directory) of this process's memory cgroup, or None where there is none."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    mounts = [line.split(" - ") for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            for head, tail in mounts:
                fields, (fs_type, _, options) = head.split(), tail.split()[:3]
                if fs_type == "cgroup" and "memory" in options.split(",") and fields[3] == "/":
                    return 1, Path(fields[4] + path)
    for line in lines:
        if line.startswith("0::"):
            for head, tail in mounts:
                fields = head.split()
                if tail.split()[0] == "cgroup2" and fields[3] == "/":
                    own = Path(fields[4] + line[3:])
                    controllers = own / "cgroup.controllers"
                    if controllers.exists() and "memory" in controllers.read_text().split():
                        return 2, own
    return None


@pytest.fixture
def memory_cgroup():
    """Makes a new child memory cgroup of this process's own: `memory_cgroup(limit)` gives its
    (version, directory), limited to `limit` bytes (None: unlimited), swap included; each is
    removed after. Skips the test where no memory cgroup is writable."""
    made = []

    def make(limit):
        found = own_memory_cgroup()
        if found is None:
            pytest.skip("no memory cgroup (v1 memory hierarchy or cgroup2 with memory) here")
        version, own = found
        child = own / f"traindoc_test_{os.getpid()}_{time.monotonic_ns()}"
        try:
            if version == 2:
                # The memory controller for the children; refused where this cgroup holds
                # processes.
                (own / "cgroup.subtree_control").write_text("+memory")
            child.mkdir()
            made.append(child)
            if limit is not None:
                (child / ("memory.max" if version == 2 else "memory.limit_in_bytes")).write_text(
                    str(limit))
                if version == 1 and (child / "memory.memsw.limit_in_bytes").exists():
                    (child / "memory.memsw.limit_in_bytes").write_text(str(limit))
        except OSError as error:
            pytest.skip(f"no writable memory cgroup: {own}: {error}")
        return version, child

    yield make
    for child in made:
        for _ in range(50):  # a killed job's last pages go a moment after its end
            try:
                child.rmdir()
                break
            except OSError:
                if not child.exists():
                    break
                time.sleep(0.1)


def have(tool):
    return shutil.which(tool) is not None
