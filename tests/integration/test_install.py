"""traindoc as users get it: `cmake --install` into a prefix, and the CPack .tar.gz and .deb
unpacked and then moved, so that nothing points back into the build. Each runs a real job with
the checkout hidden under an empty folder (a mount namespace of its own, where this machine
allows one) from another folder: the agent's crash record and the hook's step counts in
report.json can only come from the installed tree."""
import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import BUILD, PYTHON, ROOT, free_port

# Each process prints where its hook and agent came from, takes two optimizer steps (counted by
# the hook), all-reducing its gradients where it is one of several ranks, then the rank named on
# the command line dies of a null pointer in native code (the agent's crash record).
JOB = textwrap.dedent("""
    import ctypes, os, sys
    import torch
    import traindoc_hook
    rank = int(os.environ.get("RANK", "0"))
    agent = [line.split()[-1] for line in open("/proc/self/maps") if "libtraindoc_agent" in line]
    print(f"rank {rank} hook {traindoc_hook.__file__} agent {agent[0]}", flush=True)
    several = "WORLD_SIZE" in os.environ
    if several:
        torch.distributed.init_process_group("gloo")
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        model(torch.ones(2, 4)).sum().backward()
        if several:
            torch.distributed.all_reduce(model.weight.grad)
        optimizer.step()
    if rank == int(sys.argv[1]):
        ctypes.string_at(0)
    if several:
        torch.distributed.barrier()
""")


def cpack(generator, out):
    """The package `generator` makes of the build, in `out` (the build folder stays as it was)."""
    subprocess.run(["cpack", "-G", generator, "--config", str(BUILD / "CPackConfig.cmake"),
                    "-B", str(out)], check=True, capture_output=True, cwd=out)
    (package,) = [p for p in out.iterdir() if p.is_file()]
    return package


def moved(tree, elsewhere):
    """`tree` renamed to `elsewhere`: any path into where it was made would now fail."""
    elsewhere.parent.mkdir(parents=True, exist_ok=True)
    tree.rename(elsewhere)
    return elsewhere


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    made = tmp_path_factory.mktemp("made") / "prefix"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(made)], check=True,
                   capture_output=True)
    return moved(made, tmp_path_factory.mktemp("moved") / "traindoc")


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory):
    archive = cpack("TGZ", tmp_path_factory.mktemp("tgz"))
    into = tmp_path_factory.mktemp("unpacked")
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(into)], check=True)
    (top,) = into.iterdir()
    assert top.name == archive.name.removesuffix(".tar.gz")
    return moved(top, tmp_path_factory.mktemp("elsewhere") / "opt" / "traindoc")


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    return cpack("DEB", tmp_path_factory.mktemp("deb"))


def can_hide_the_checkout():
    return shutil.which("unshare") and subprocess.run(
        ["unshare", "--mount", "mount", "-t", "tmpfs", "none", str(ROOT)],
        capture_output=True).returncode == 0


def run_installed(tree, tmp_path, job):
    """`tree`'s traindoc running `job` from `tmp_path`, with no variable pointing at the build and
    the checkout out of sight where it can be hidden."""
    (tmp_path / "job.py").write_text(JOB)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRAINDOC_AGENT", "TRAINDOC_PYTHON_HOOK", "PYTHONPATH")}
    command = [str(tree / "bin" / "traindoc"), "run", "--out", str(tmp_path / "run"), "--", *job]
    if ROOT not in tree.parents and ROOT not in tmp_path.parents and can_hide_the_checkout():
        command = ["unshare", "--mount", "sh", "-c",
                   'mount -t tmpfs -o size=1m,mode=0755 none "$0" && exec "$@"', str(ROOT),
                   *command]
    proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, timeout=180)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    return proc, report


def assert_from(tree, proc, ranks):
    """Each rank printed that its hook and agent are `tree`'s."""
    seen = re.findall(rb"rank (\d+) hook (\S+) agent (\S+)", proc.stdout)
    assert sorted(int(r) for r, _, _ in seen) == list(range(ranks)), proc.stdout
    for _, hook, agent in seen:
        assert Path(hook.decode()).is_relative_to(tree / "python"), hook
        assert Path(agent.decode()) == tree / "lib" / "libtraindoc_agent.so", agent


def assert_crash_of(report, rank):
    """The root cause is `rank`'s crash as the agent recorded it, and every rank counted optimizer
    steps through the hook (the crashed one may miss its last)."""
    (root,) = [f for f in report["findings"] if f["root_cause"]]
    assert root["kind"] == "native-crash", root
    assert root["title"].startswith(f"rank {rank} (pid"), root["title"]
    evidence = "\n".join(root["evidence"])
    assert "blame frame" in evidence and "string_at" in evidence, evidence
    ranks = [p for p in report["processes"] if p["role"] == "rank"]
    counted = [(p["agent"], p.get("steps", {}).get("optimizer", 0)) for p in ranks]
    assert counted and all(agent and steps >= 1 for agent, steps in counted), counted


def test_the_installed_tree_runs_from_its_prefix(prefix, tmp_path):
    assert sorted(p.name for p in prefix.iterdir()) == ["bin", "lib", "python", "share"]
    assert (prefix / "python" / "sitecustomize.py").is_file()
    assert (prefix / "share" / "doc" / "traindoc" / "docs" / "report-json.md").is_file()
    proc, report = run_installed(prefix, tmp_path, [PYTHON, "job.py", "0"])
    assert proc.returncode == 128 + 11, proc.stderr
    assert_from(prefix, proc, 1)
    assert_crash_of(report, 0)


def test_the_unpacked_archive_runs_a_torchrun_job(unpacked, tmp_path):
    job = [PYTHON, "-m", "torch.distributed.run", "--redirects", "2", "--tee", "2", "--nnodes",
           "1", "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           "--nproc_per_node", "2", "job.py", "1"]
    proc, report = run_installed(unpacked, tmp_path, job)
    assert proc.returncode == 1, proc.stderr
    assert_from(unpacked, proc, 2)
    assert_crash_of(report, 1)


def test_the_deb_holds_the_same_tree_under_opt(deb, unpacked, tmp_path):
    info = subprocess.run(["dpkg-deb", "--info", str(deb)], capture_output=True, text=True,
                          check=True).stdout
    assert re.search(r"^ Package: traindoc$", info, re.M), info
    assert "postinst" in info and "prerm" in info, info
    contents = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True,
                              text=True, check=True).stdout
    in_deb = {line.split()[-1].removeprefix("./") for line in contents.splitlines()
              if not line.startswith("d")}
    in_tgz = {str(Path("opt/traindoc") / p.relative_to(unpacked)) for p in unpacked.rglob("*")
              if not p.is_dir()}
    assert in_deb == in_tgz
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    version = [str(root / "opt" / "traindoc" / "bin" / "traindoc"), "--version"]
    built = subprocess.run([str(BUILD / "bin" / "traindoc"), "--version"], capture_output=True)
    assert subprocess.run(version, capture_output=True, cwd=tmp_path).stdout == built.stdout


def glibc_versions(binary):
    """The GLIBC_x.y versions of the symbols `binary` takes from glibc, and its needed libraries."""
    dynamic = subprocess.run(["objdump", "-T", "-p", str(binary)], capture_output=True, text=True,
                             check=True).stdout
    versions = {tuple(map(int, v.split("."))) for v in re.findall(r"\bGLIBC_(\d+\.\d+)", dynamic)}
    return versions, set(re.findall(r"NEEDED\s+(\S+)", dynamic))


def test_the_tree_needs_glibc_2_31_and_bundles_nothing(unpacked, deb):
    glibc = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "ld-linux-x86-64.so.2"}
    versions, needed = glibc_versions(unpacked / "bin" / "traindoc")
    assert max(versions) <= (2, 31) and needed == glibc | {"libgcc_s.so.1"}, (versions, needed)
    versions, needed = glibc_versions(unpacked / "lib" / "libtraindoc_agent.so")
    assert max(versions) <= (2, 31) and needed == glibc - {"libm.so.6"}, (versions, needed)
    # The audit library (LD_AUDIT) is freestanding: it takes nothing from any library.
    assert glibc_versions(unpacked / "lib" / "libtraindoc_nccl_audit.so") == (set(), set())
    assert sorted(p.name for p in (unpacked / "lib").iterdir()) == [
        "libtraindoc_agent.so", "libtraindoc_nccl_audit.so"]
    control = subprocess.run(["dpkg-deb", "--field", str(deb), "Depends"], capture_output=True,
                             text=True, check=True).stdout
    assert control.strip() == "libc6 (>= 2.31), libgcc-s1 (>= 4.2)"
