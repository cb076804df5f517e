"""`traindoc export RUN --perfetto FILE` on a real 2-rank gloo job under torchrun: the trace
follows the Chrome trace-event format, names each process by its role, shows the straggler's
all_reduce shifted on the one clock, its memory, steps and end, and the root cause; bad input
gets a clear error and leaves no file."""
import json
import sqlite3
import subprocess

import pytest

from conftest import TRAINDOC, job_script, torchrun_ranks


def export(*args):
    return subprocess.run([str(TRAINDOC), "export", *map(str, args)], capture_output=True,
                          timeout=120)


def checked(trace):
    """The events of `trace`, each checked against what the format requires: a phase, a time, a
    process and a thread; slices of a thread that nest; counters of numbers."""
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    events = trace["traceEvents"]
    slices = {}
    for event in events:
        assert event["ph"] in ("M", "X", "i", "C"), event
        assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0, event
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int), event
        if event["ph"] == "X":
            assert event["dur"] >= 0, event
            slices.setdefault((event["pid"], event["tid"]), []).append(
                (event["ts"], event["ts"] + event["dur"]))
        if event["ph"] == "C":
            assert event["args"] and all(isinstance(v, (int, float)) for v in event["args"].values())
        if event["ph"] == "i":
            assert event["s"] in ("t", "p", "g"), event
    for spans in slices.values():
        open_ends = []
        for begin, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            # Whole nanoseconds in microseconds: an end that meets the next begin may differ from
            # it by float rounding alone.
            while open_ends and open_ends[-1] <= begin + 1e-4:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1], (begin, end, open_ends)
            open_ends.append(end)
    return events


@pytest.fixture(scope="module")
def straggler(tmp_path_factory):
    """The run folder of the straggler job, run once for the module's tests."""
    run_dir = tmp_path_factory.mktemp("export") / "run"
    proc = subprocess.run([str(TRAINDOC), "run", "--silent", "--out", str(run_dir), "--",
                           *torchrun_ranks(2, *job_script("straggler.py")[1:])],
                          capture_output=True, timeout=180)
    assert proc.returncode == 1, proc.stderr[-3000:]
    return run_dir


def test_the_trace_of_a_straggler(straggler, tmp_path):
    out = tmp_path / "trace.json"
    proc = export(straggler, "--perfetto", out)
    assert proc.returncode == 0, proc.stderr
    assert b"wrote" in proc.stderr
    events = checked(json.loads(out.read_text()))
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    pid = {name.split(" (pid")[0]: p for p, name in names.items()}
    assert {"launcher", "rank 0", "rank 1", "worker 0 of rank 1"} <= set(pid), names
    report = json.loads((straggler / "report.json").read_text())
    for p in report["processes"]:
        assert any(name == f"{p['role_text']} (pid {p['pid']})" for name in names.values())

    def on(process, name=None, cat=None):
        return [e for e in events if e["pid"] == pid[process] and
                (name is None or e["name"] == name) and (cat is None or e.get("cat") == cat)]

    calls = {r: {e["args"]["sequence"]: e for e in on(f"rank {r}", "all_reduce")} for r in (0, 1)}
    both = sorted(set(calls[0]) & set(calls[1]))
    assert len(both) >= 3, calls
    for number in both[1:]:
        late, early = calls[1][number], calls[0][number]
        assert early["args"]["shape"] == "[20, 10] float32" and early["args"]["dtype"] == "float32"
        assert early["args"]["group"] == late["args"]["group"]
        # Rank 1 comes 0.3 s late; rank 0 waits for it in its call, which returns as rank 1's
        # data comes: at the moment rank 1's hook timed its call, to within the hooks' timing
        # (rank 0's end was seen 10 ns before rank 1's start).
        assert late["ts"] - early["ts"] >= 250_000, (early, late)
        assert early["ts"] + early["dur"] >= late["ts"] - 1000, (early, late)
    steps = on("rank 0", cat="step")
    assert steps and steps[-1]["args"]["kind"] == "optimizer"
    assert any("rss" in e["args"] for e in on("rank 1", "memory"))
    assert any(e["name"].startswith("end: exit 1") for e in on("rank 1", cat="process-end"))
    findings = [e for e in events if e.get("cat") == "finding"]
    assert len(findings) == len(report["findings"])
    root = [f for f in findings if f["args"]["root_cause"]]
    assert len(root) == 1 and root[0]["name"].startswith("ROOT CAUSE: "), findings
    assert root[0]["args"]["title"] == report["findings"][0]["title"]


def test_to_standard_output(straggler, tmp_path):
    out = tmp_path / "trace.json"
    assert export(straggler, "--perfetto", out).returncode == 0
    proc = export(straggler, "--perfetto", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(out.read_text())
    assert proc.stderr == b""


def test_bad_run_folders_and_files(straggler, tmp_path):
    out = tmp_path / "trace.json"
    proc = export(tmp_path / "missing", "--perfetto", out)
    assert proc.returncode == 125 and b"is not a run folder" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = export(tmp_path / "empty", "--perfetto", out)
    assert proc.returncode == 125 and b"holds no run.db" in proc.stderr
    assert not out.exists()
    # A run.db that is not one: the trace already there stays as it was.
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "run.db").write_bytes(b"\0garbage" * 512)
    out.write_text("old")
    proc = export(corrupt, "--perfetto", out)
    assert proc.returncode == 125 and b"run.db" in proc.stderr, proc.stderr
    assert out.read_text() == "old"
    # A SQLite file of another program.
    other = tmp_path / "other"
    other.mkdir()
    with sqlite3.connect(other / "run.db") as db:
        db.execute("CREATE TABLE t (x)")
    proc = export(other, "--perfetto", out)
    assert proc.returncode == 125 and b"run.db" in proc.stderr, proc.stderr
    assert out.read_text() == "old"
    # Files that cannot be written: nothing half-written left beside them.
    for bad, why in ((tmp_path / "no" / "such" / "folder.json", b"cannot write"),
                     (tmp_path, b"cannot write"), (f"{tmp_path}/corrupt/", b"names a folder")):
        before = sorted(p.name for p in tmp_path.rglob("*"))
        proc = export(straggler, "--perfetto", bad)
        assert proc.returncode == 125, (bad, proc.stderr)
        assert proc.stderr.startswith(b"traindoc: ") and why in proc.stderr, proc.stderr
        assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert export(straggler).returncode == 2  # --perfetto is required
    assert export("--perfetto", out).returncode == 2
