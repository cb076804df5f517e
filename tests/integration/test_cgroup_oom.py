"""Out of memory in a memory cgroup that is not traindoc's own (issue 33, part 1): a job that
moves itself into a child cgroup with a 64 MiB limit, a job started inside one, and the control
where traindoc itself runs inside the limited cgroup. The root cause is host-oom-killed, with
evidence naming the cgroup the job was in, its limit and the growth before the kill, and the
kernel's own account where /dev/kmsg is readable. Real cgroups: v1 on the test machines, v2
where the machine delegates the memory controller; skipped where no memory cgroup is writable."""
import os
import re
import sqlite3

import pytest

from conftest import job_script

LIMIT = 64 << 20


@pytest.fixture
def limited_cgroup(memory_cgroup):
    """A new child memory cgroup of this process's own, limited to 64 MiB; removed after."""
    return memory_cgroup(LIMIT)


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
