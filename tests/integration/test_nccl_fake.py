"""The NCCL interposers without a GPU: N processes call the stand-in libnccl (tests/fakes/nccl)
under traindoc; the agent's records in run.db and the checker's findings in report.json. Where a
CUDA toolkit's real libnccl is installed but no driver, the same program meets the real NCCL."""
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import BUILD, PYTHON, ROOT

FAKES = BUILD / "tests" / "fakes" / "nccl"
JOB = FAKES / "nccl_job"
# The same job in a module opened RTLD_LOCAL, with NCCL as its dependency: PyTorch's layout.
LOCAL_JOB = [FAKES / "nccl_job_loader", FAKES / "libnccl_job_module.so"]
# PyTorch's layout beside a framework that bundles a copy of NCCL and exports it, in one process.
TWO_NCCLS = [FAKES / "nccl_job_loader",
             f"{FAKES / 'libnccl_job_module.so'},{FAKES / 'libnccl_job_bundled.so'}"]
# NCCL opened with dlopen and its functions taken with dlsym (JAX's and TensorFlow's way), from
# a C program and from Python's ctypes.
DLSYM_JOB = [FAKES / "nccl_job_dlsym", FAKES / "libnccl.so.2"]
CTYPES_JOB = [PYTHON, ROOT / "tests" / "fakes" / "nccl" / "nccl_ctypes_job.py",
              FAKES / "libnccl.so.2"]
AGENT = BUILD / "lib" / "libtraindoc_agent.so"


@pytest.fixture(autouse=True)
def audit_library(monkeypatch):
    """NCCL taken by name is seen only with the audit library, which is off unless asked for."""
    monkeypatch.setenv("TRAINDOC_NCCL_AUDIT", "1")


def ranks(tmp_path, count, fault, job=(JOB,)):
    """A shell that starts `count` ranks (RANK and WORLD_SIZE as a launcher sets them)."""
    id_file = tmp_path / "nccl.id"
    program = " ".join(map(str, job))
    starts = " ".join(f"RANK={r} WORLD_SIZE={count} {program} {r} {count} {id_file} {fault} & "
                      f'pids="$pids $!";' for r in range(count))
    # Exits 1 when a rank failed.
    return ["sh", "-c", f'{starts} for p in $pids; do wait $p || exit 1; done']


def calls(run):
    db = sqlite3.connect(run.run_dir / "run.db")
    db.row_factory = sqlite3.Row
    return db.execute("SELECT * FROM collectives WHERE source = 'nccl' ORDER BY pid, number, id"
                      ).fetchall()


def test_clean_calls_are_recorded_once_each(traindoc, tmp_path):
    run = traindoc(ranks(tmp_path, 2, "none"))
    assert run.status == 0, run.stderr
    assert run.report["findings"] == []
    rows = calls(run)
    by_op = {}
    for row in rows:
        by_op.setdefault(row["op"], []).append(row)
    # ncclBcast goes through ncclBroadcast inside NCCL: one record, not two.
    assert [(r["number"], r["count"], r["dtype"], r["peer"]) for r in by_op["broadcast"]] == [
        (1, 1024, "float32", 0)] * 2
    assert [(r["number"], r["redop"]) for r in by_op["all_reduce"]] == [(2, "sum")] * 2
    # The communicator's identity (the unique id's hash) is the same on both ranks.
    assert len({r["group_id"] for r in by_op["all_reduce"]}) == 1
    assert sorted(r["group_rank"] for r in by_op["all_reduce"]) == [0, 1]
    # The splits are numbered in the parent; each child has an identity of its own, shared.
    assert [r["number"] for r in by_op["comm_split"]] == [3, 4, 3, 4]
    world = by_op["all_reduce"][0]["group_id"]
    children = set()
    # The child of a blocking split; of a nonblocking one (its rank and size asked only once it
    # is ready: NCCL warns about a communicator used before); one made by ncclCommInitRankScalable.
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        rows = by_op[op]
        assert sorted((r["group_rank"], r["group_size"]) for r in rows) == [(0, 2), (1, 2)], op
        assert len({r["group_id"] for r in rows}) == 1 and rows[0]["group_id"] != world, op
        children.add(rows[0]["group_id"])
    assert len(children) == 3
    # A shrink that dropped rank 1 (NCCL 2.27+): rank 0 goes on alone in a child of its own.
    assert [(r["group_rank"], r["group_size"], r["count"]) for r in by_op["reduce"]] == [(0, 1, 3)]
    assert by_op["reduce"][0]["group_id"] not in children | {world}
    assert "Attempt to use communicator" not in run.stderr.decode()
    # Send and receive pair up on the pair group of sender and receiver.
    sends = {(r["pid"], r["peer"]): r["group_id"] for r in by_op["send"]}
    recvs = {(r["pid"], r["peer"]): r["group_id"] for r in by_op["recv"]}
    assert len(sends) == 2 and sorted(sends.values()) == sorted(recvs.values())


def test_nccl_out_of_the_global_scope_is_found(traindoc, tmp_path):
    """NCCL loaded as a dependency of a module opened RTLD_LOCAL (as Python opens PyTorch's):
    the interposers still reach it, the calls succeed and are recorded, the mismatch is named."""
    run = traindoc(ranks(tmp_path, 2, "count", LOCAL_JOB))
    assert run.status == 0, run.stderr
    assert sorted(r["count"] for r in calls(run) if r["op"] == "all_reduce") == [1024, 2048]
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "collective-mismatch" and "different count" in root["title"], root


def test_each_caller_reaches_its_own_nccl(traindoc, tmp_path):
    """Two NCCLs out of the global scope in one process: each module's calls go to the NCCL it
    would reach without traindoc (each job asks its own stand-in how many calls it served)."""
    run = traindoc(ranks(tmp_path, 2, "none", TWO_NCCLS))
    assert run.status == 0, run.stderr
    assert b"another NCCL library" not in run.stderr
    assert run.report["findings"] == []
    all_reduces = [r for r in calls(run) if r["op"] == "all_reduce"]
    # Per rank, one all_reduce through each NCCL, on two communicators each rank shares.
    assert len(all_reduces) == 4 and len({r["group_id"] for r in all_reduces}) == 2
    assert len({r["pid"] for r in all_reduces}) == 2


def test_nccl_taken_by_name_is_recorded_as_if_linked(traindoc, tmp_path):
    """dlopen and dlsym: the audit library binds the agent's hooks in place of the functions the
    program took, which reach the very NCCL it opened (the stand-in counts what it served)."""
    (tmp_path / "linked").mkdir()
    (tmp_path / "by-name").mkdir()
    linked = traindoc(ranks(tmp_path / "linked", 2, "none"))
    by_name = traindoc(ranks(tmp_path / "by-name", 2, "none", DLSYM_JOB))
    assert by_name.status == 0, by_name.stderr
    assert by_name.report["findings"] == []

    def shape(run):
        return sorted((r["op"], r["number"], r["count"], r["dtype"], r["redop"], r["peer"],
                       r["group_rank"], r["group_size"]) for r in calls(run))
    assert shape(by_name) == shape(linked) and shape(linked)
    assert not any("collectives not visible" in note
                   for note in by_name.report["missing_evidence"])


MISMATCHES = [
    ("count", "count", ["1024", "2048"]),
    ("dtype", "dtype", ["float32", "int32"]),
    ("redop", "reduce op", ["sum", "max"]),
    ("root", "root", ["0", "1"]),
]


@pytest.mark.parametrize("job", [(JOB,), DLSYM_JOB, CTYPES_JOB], ids=["linked", "dlsym", "ctypes"])
@pytest.mark.parametrize("fault,field,values", MISMATCHES)
def test_mismatches_are_named(traindoc, tmp_path, fault, field, values, job):
    run = traindoc(ranks(tmp_path, 2, fault, job))
    assert run.status == 0, run.stderr
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "collective-mismatch"
    assert f"different {field}" in root["title"]
    assert sorted(root["ranks"]) == [0, 1]
    evidence = "\n".join(root["evidence"])
    for value in values:
        assert f"{field} {value}" in evidence, evidence
    assert "traindoc: collective-mismatch: " in run.stderr.decode()


@pytest.mark.parametrize("job", [DLSYM_JOB, CTYPES_JOB], ids=["dlsym", "ctypes"])
def test_nccl_by_name_without_the_audit_library_is_named(traindoc, tmp_path, job):
    """The audit library left out: the program's calls go straight to NCCL, unchanged and
    unrecorded, and the report names each rank whose collectives it could not see."""
    env = {**os.environ, "TRAINDOC_NCCL_AUDIT": ""}
    run = traindoc(ranks(tmp_path, 2, "count", job), env=env)
    assert run.status == 0, run.stderr
    assert calls(run) == []
    assert not any(f["kind"] == "collective-mismatch" for f in run.report["findings"])
    notes = [n for n in run.report["missing_evidence"] if n.startswith("collectives not visible")]
    ranks_named = sorted(int(n.split("(rank ")[1].split(")")[0]) for n in notes)
    assert ranks_named == [0, 1], run.report["missing_evidence"]
    assert "NCCL resolved by dlsym" in notes[0] and "LD_AUDIT" in notes[0], notes


def test_a_missing_audit_library_is_refused(traindoc, tmp_path):
    """A path that names no file would make the dynamic linker complain in every process's
    output: traindoc says so and starts nothing."""
    env = {**os.environ, "TRAINDOC_NCCL_AUDIT": str(tmp_path / "none.so")}
    run = traindoc(["true"], env=env)
    assert run.status != 0
    assert b"TRAINDOC_NCCL_AUDIT names" in run.stderr


def test_a_skipped_call_is_missing_with_stacks(traindoc, tmp_path):
    run = traindoc(ranks(tmp_path, 3, "skip"), "--stall-seconds", "2")
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "collective-missing"
    assert "rank 2 never made all_reduce #2" in root["title"]
    assert root["ranks"] == [2]  # the missing one; those that waited are in the evidence
    evidence = "\n".join(root["evidence"])
    assert "never called it" in evidence
    # Native stacks of the stalled ranks (no Python here), taken while they slept.
    assert "native (main thread)" in evidence and "nccl_job" in evidence


def real_nccl():
    """The folder of a CUDA toolkit's real libnccl.so.2, where no NVIDIA driver is loaded."""
    if Path("/proc/driver/nvidia/version").exists():
        return None  # NCCL would start: tests/gpu/ checks it there
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and (Path(home) / "lib64" / "libnccl.so.2").exists():
            return Path(home) / "lib64"
    return None


@pytest.mark.skipif(real_nccl() is None, reason="no real libnccl.so.2, or a driver is loaded")
def test_the_real_nccl_without_a_driver_is_named(traindoc, tmp_path):
    """The real NCCL through the interposers: its error comes back unchanged (the program exits 1
    only when a call fails), and its warning, as NCCL 2.28 prints it with the time first, names
    the cause of a program that prints no traceback."""
    env = {**os.environ, "NCCL_DEBUG": "WARN", "LD_LIBRARY_PATH": str(real_nccl()),
           "RANK": "0", "WORLD_SIZE": "1"}
    run = traindoc([str(JOB), "0", "1", str(tmp_path / "nccl.id"), "none"], env=env)
    assert run.status == 1, run.stderr
    assert b"ncclCommInitRank(&comm, nranks, id, rank) failed" in run.stderr
    root = next(f for f in run.report["findings"] if f["root_cause"])
    rank = run.processes("rank")[0]["pid"]
    assert root["kind"] == "cuda-unavailable", root
    assert root["pids"] == [rank]
    evidence = "\n".join(root["evidence"])
    assert "NCCL WARN Cuda failure" in evidence
    assert f"known error cuda.driver-too-old: gpu 0, host {os.uname().nodename.split('.')[0]}, " \
        f"pid {rank}" in evidence
    assert calls(run) == []  # no communicator was made


# Exports of a real libnccl that issue no communication: queries, errors, memory and buffer
# registration, the device API's setup, and lifetime calls after which destroy or abort comes.
NOT_COMMUNICATION = {
    "ncclGetVersion", "ncclGetErrorString", "ncclGetLastError", "ncclResetDebugInit",
    "ncclResetDebugInitInternal", "ncclCommCount", "ncclCommCuDevice", "ncclCommUserRank",
    "ncclCommGetAsyncError", "ncclCommRegister", "ncclCommDeregister", "ncclCommWindowRegister",
    "ncclCommWindowDeregister", "ncclMemAlloc", "ncclMemFree", "ncclRedOpCreatePreMulSum",
    "ncclRedOpDestroy", "ncclGroupSimulateEnd", "ncclCommFinalize", "ncclCommRevoke",
    "ncclDevCommCreate", "ncclDevCommDestroy", "ncclTeamWorld", "ncclTeamLsa", "ncclTeamRail",
    "ncclTeamRankToWorld", "ncclTeamRankToLsa", "ncclLsaBarrierCreateRequirement",
    "ncclGinBarrierCreateRequirement", "ncclLLA2ACreateRequirement", "ncclLLA2ACalcSlots",
}


def exported(library, prefix="nccl"):
    out = subprocess.run(["nm", "-D", "--defined-only", str(library)], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-1].startswith(prefix)}


# The libc entry points the agent interposes: the stop, exit and wait calls and thread starts.
LIBC_HOOKS = {
    "_Exit", "_exit", "__sigaction", "__sysv_signal", "bsd_signal", "kill", "killpg",
    "pthread_create", "sigaction", "sigignore", "signal", "sigset", "ssignal", "sysv_signal",
    "wait", "wait3", "wait4", "waitid", "waitpid",
}


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm")
def test_the_agent_exports_its_entry_points_alone():
    """Preloaded, anything else the agent exported would take the place of the job's own: its
    static C++ runtime's __cxa_throw or _Unwind_* broke every C++ exception (gloo's, when a peer
    left: the rank aborted)."""
    others = {name for name in exported(AGENT, "") if not name.startswith(("nccl", "traindoc_"))}
    assert others == LIBC_HOOKS


@pytest.mark.skipif(real_nccl() is None or shutil.which("nm") is None,
                    reason="no real libnccl.so.2, or no nm")
def test_every_communication_call_of_the_real_nccl_is_interposed():
    """A collective, point-to-point, group or communicator call of this NCCL that the agent does
    not interpose would go unrecorded: a newer NCCL's new call fails this until it is handled."""
    missing = exported(real_nccl() / "libnccl.so.2") - NOT_COMMUNICATION - exported(AGENT)
    assert missing == set()
