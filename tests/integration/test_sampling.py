"""Processes and the host are sampled into run.db while the job runs."""
import sqlite3

from conftest import python_job

HOLDER = """
import os, time
data = bytearray(64 << 20)          # 64 MiB, touched so that it is resident
for i in range(0, len(data), 4096): data[i] = 1
files = [open('/dev/null') for _ in range(50)]
time.sleep(2.5)
"""


def test_process_and_host_samples(traindoc):
    run = traindoc(python_job(HOLDER), "--interval", "0.2")
    assert run.status == 0
    root = run.report["run"]["root_pid"]
    with sqlite3.connect(run.run_dir / "run.db") as con:
        rss, pss, uss, fds, limit, threads = con.execute(
            "select max(rss), max(pss), max(uss), max(fds), max(fd_limit), max(threads) "
            "from proc_samples where pid = ?", (root,)).fetchone()
        hosts = con.execute("select mem_total, mem_available, cgroup_version, cgroup_current, "
                            "shm_total from host_samples").fetchall()
    assert rss >= 64 << 20
    assert uss >= 60 << 20 and pss >= uss
    assert fds >= 50 and limit >= fds
    assert threads >= 1
    assert len(hosts) >= 5
    mem_total, mem_available, cgroup_version, cgroup_current, shm_total = hosts[-1]
    assert 0 < mem_available <= mem_total
    assert cgroup_version in (1, 2)
    assert cgroup_current > 0
    assert shm_total > 0
    memory = [p for p in run.report["processes"] if p["pid"] == root][0]["memory"]
    assert memory["peak_rss"] == rss
