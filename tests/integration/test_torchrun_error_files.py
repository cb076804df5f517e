"""traindoc writes TORCHELASTIC_ERROR_FILE for a torchrun rank that fails without writing it, so
that torchrun's own summary tells what happened and its root cause is the first failure: a
DataLoader worker's segfault, a peer that died first, a rank that decorated its main with
@record (whose file is left as it wrote it), and --no-error-file. Debian's torchrun, gloo."""
import re

from conftest import JOBS, torchrun_ranks

SCRIPT = JOBS / "torchrun_failures.py"
ROOT_CAUSE = "Root Cause (first observed failure):"


def job(scenario):
    # Every second: both ranks have often ended by torchrun's first look after the failure.
    return torchrun_ranks(2, "--monitor_interval", 1, SCRIPT, scenario)


def summary(run):
    """torchrun's summary as {rank: its entry}, and the rank of its root cause block."""
    text = run.stderr.decode(errors="replace")
    assert ROOT_CAUSE in text, text[-4000:]
    text = text[text.rindex("Failures:"):]
    failures, cause = text.split(ROOT_CAUSE)
    cause = cause[:cause.index("=" * 20)]
    entries = {}
    root = None
    for part in (failures, cause):
        for entry in re.split(r"^\[\d+\]:$", part, flags=re.M)[1:]:
            root = int(re.search(r"^\s*rank\s*: (\d+) ", entry, re.M).group(1))
            entries[root] = entry
    return entries, root  # the last entry read: the root cause block's


def field(entry, name):
    return re.search(rf"^\s*{name}\s*: (.*)$", entry, re.M).group(1)


def same_status(run):
    end = run.report["run"]
    assert end["exit_code"] == 1, end  # torchrun's own, for its failed ranks
    assert run.status == end["exit_code"]


def pid_of(run, rank):
    return next(p["pid"] for p in run.processes("rank") if p["rank"] == rank)


def assert_root_is_rank_1(entries, root, own, named):
    """torchrun orders by whole seconds, then by rank: either rank 1's own record leads (`own` in
    it), or rank 0's, which then names rank 1 as the failure before it (`named` in it)."""
    assert field(entries[root], "error_file") != "<N/A>", entries[root]
    if root == 1:
        assert own in entries[1], entries[1]
    else:
        assert root == 0
        assert named in entries[0], entries[0]


def test_worker_segfault_gives_the_rank_its_traceback(traindoc):
    run = traindoc(job("worker_segfault"), timeout=180)
    same_status(run)
    entries, root = summary(run)
    # Rank 1's traceback, wherever torchrun lists it; rank 0, whose barrier failed once rank 1
    # had written its record, names it where it leads in the same second.
    crash = re.compile(r"DataLoader worker \(pid \d+\) is killed by signal: Segmentation fault")
    assert crash.search(entries[1]), entries[1]
    assert_root_is_rank_1(entries, root, "exited unexpectedly",
                          f"traindoc: rank 1 (pid {pid_of(run, 1)}) failed before this rank "
                          "(RuntimeError: DataLoader worker (pid(s) ")
    for entry in entries.values():
        assert field(entry, "error_file") != "<N/A>", entry
        assert "To enable traceback" not in entry


def test_peer_killed_first_is_the_root_cause(traindoc):
    run = traindoc(job("peer_killed"), timeout=180)
    same_status(run)
    entries, root = summary(run)
    pid = pid_of(run, 1)
    assert_root_is_rank_1(entries, root, f"traindoc: rank 1 (pid {pid}) killed by SIGKILL",
                          f"traindoc: rank 1 (pid {pid}) failed before this rank (killed by "
                          "SIGKILL): look there first")


def test_record_decorated_rank_keeps_its_own_file(traindoc):
    run = traindoc(job("recorded"), timeout=180)
    same_status(run)
    entries, root = summary(run)
    # torch's own account, as @record wrote it: no word of traindoc's in it.
    assert "ValueError: rank 1 recorded its own failure" in entries[1], entries[1]
    assert "traindoc:" not in entries[1]
    assert_root_is_rank_1(entries, root, "ValueError",
                          f"traindoc: rank 1 (pid {pid_of(run, 1)}) failed before this rank "
                          "(exited 1)")


def test_no_error_file_leaves_torchruns_summary_as_without_traindoc(traindoc):
    run = traindoc(job("peer_killed"), "--no-error-file", timeout=180)
    same_status(run)
    entries, root = summary(run)
    for entry in entries.values():
        assert "traindoc:" not in entry
        assert field(entry, "error_file") == "<N/A>"
