"""Out of memory in a memory cgroup that is not traindoc's own (issue 33, part 1): a job that
moves itself into a child cgroup with a 64 MiB limit, a job started inside one, and the control
where traindoc itself runs inside the limited cgroup. The root cause is host-oom-killed, with
evidence naming the cgroup the job was in, its limit and the growth before the kill, and the
kernel's own account where /dev/kmsg is readable. Real cgroups: v1 on the test machines, v2
where the machine delegates the memory controller; skipped where no memory cgroup is writable."""
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import job_script

LIMIT = 64 << 20


def own_memory_cgroup():
    """(version, directory) of this process's memory cgroup, or a reason there is none."""
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
def limited_cgroup():
    """A new child memory cgroup of this process's own, limited to 64 MiB; removed after."""
    found = own_memory_cgroup()
    if found is None:
        pytest.skip("no memory cgroup (v1 memory hierarchy or cgroup2 with memory) here")
    version, own = found
    child = own / f"traindoc_test_{os.getpid()}_{time.monotonic_ns()}"
    try:
        if version == 2:
            # The memory controller for the children; refused where this cgroup holds processes.
            (own / "cgroup.subtree_control").write_text("+memory")
        child.mkdir()
        (child / ("memory.max" if version == 2 else "memory.limit_in_bytes")).write_text(str(LIMIT))
        if version == 1 and (child / "memory.memsw.limit_in_bytes").exists():
            (child / "memory.memsw.limit_in_bytes").write_text(str(LIMIT))
    except OSError as error:
        if child.exists():
            child.rmdir()
        pytest.skip(f"no writable memory cgroup: {own}: {error}")
    yield version, child
    for _ in range(50):  # the killed job's last pages go a moment after its end
        try:
            child.rmdir()
            break
        except OSError:
            time.sleep(0.1)


def root_cause(run):
    roots = [f for f in run.report["findings"] if f["root_cause"]]
    assert len(roots) == 1, run.report["findings"]
    return roots[0]


def check_oom_in(run, child):
    """The root cause names the job's cgroup, its limit and the growth before the kill."""
    assert run.status == 128 + 9, run.stderr.decode()[-3000:]
    root = root_cause(run)
    assert root["kind"] == "host-oom-killed", root
    assert "at its memory cgroup's 64.0 MiB limit" in root["title"], (
        root, memberships(run, root["pids"][0]))
    evidence = "\n".join(root["evidence"])
    assert f"its memory cgroup {child} " in evidence, evidence
    assert re.search(rf"its memory cgroup {re.escape(str(child))} grew from [0-9.]+ [KM]iB to "
                     r"[0-9.]+ MiB in the [0-9.]+ s before the kill \(its limit: 64.0 MiB\)",
                     evidence), evidence
    assert "SIGKILL from outside" not in root["title"]
    assert str(child) in root["fix"], root["fix"]
    if os.access("/dev/kmsg", os.R_OK):
        (pid,) = root["pids"]
        assert f'Memory cgroup out of memory: Killed process {pid} (python' in evidence, evidence
    return root


def memberships(run, pid):
    with sqlite3.connect(run.run_dir / "run.db") as db:
        return db.execute("SELECT path, dir FROM process_cgroups WHERE pid = ? ORDER BY t_ns",
                          (pid,)).fetchall()


def test_a_job_that_moves_itself_into_a_limited_cgroup(traindoc, limited_cgroup):
    _, child = limited_cgroup
    run = traindoc(job_script("cgroup_oom.py", child), "--interval", "0.2")
    root = check_oom_in(run, child)
    # First seen in traindoc's cgroup, then in the child it moved to: both recorded.
    rows = memberships(run, root["pids"][0])
    assert len(rows) == 2 and rows[1][1] == str(child) and rows[0][1] == str(child.parent), rows


def test_a_job_started_inside_a_limited_cgroup(traindoc, limited_cgroup):
    _, child = limited_cgroup
    cmd = ["sh", "-c", f'echo $$ > {child}/cgroup.procs && exec "$@"', "sh",
           *job_script("cgroup_oom.py")]
    run = traindoc(cmd, "--interval", "0.2")
    root = check_oom_in(run, child)
    assert [dir for _, dir in memberships(run, root["pids"][0])] == [str(child)]


def test_traindoc_itself_inside_the_limited_cgroup(traindoc, limited_cgroup):
    """The control: traindoc's own cgroup is the job's, as before this change."""
    _, child = limited_cgroup
    run = traindoc(job_script("cgroup_oom.py"), "--interval", "0.2",
                   preexec_fn=lambda: (child / "cgroup.procs").write_text(str(os.getpid())))
    root = check_oom_in(run, child)
    assert [dir for _, dir in memberships(run, root["pids"][0])] == [str(child)]
