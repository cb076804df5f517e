"""traindoc writes TORCHELASTIC_ERROR_FILE for a torchrun rank that fails without writing it, so
that torchrun's own summary tells what happened and its root cause is the first failure: a
DataLoader worker's segfault, a peer that died first, a rank that decorated its main with
@record (whose file is left as it wrote it), and --no-error-file. Debian's torchrun, gloo."""
import re

from conftest import JOBS, torchrun_ranks

SCRIPT = JOBS / "torchrun_failures.py"


def job(scenario):
    # Every second: both ranks have usually ended by torchrun's first look after the failure.
    return torchrun_ranks(2, "--monitor_interval", 1, SCRIPT, scenario)


def summary(run):
    """torchrun's summary: its failures, then its root cause block."""
    text = run.stderr.decode(errors="replace")
    assert "Root Cause (first observed failure):" in text, text[-4000:]
    failures, root = text.split("Root Cause (first observed failure):", 1)
    failures = failures[failures.rindex("Failures:"):]
    return failures, root[:root.index("=" * 20)]


def field(block, name):
    return re.search(rf"^\s*{name}\s*: (.*)$", block, re.M).group(1)


def same_status(run):
    end = run.report["run"]
    assert end["exit_code"] == 1, end  # torchrun's own, for its failed ranks
    assert run.status == end["exit_code"]


def test_worker_segfault_gives_the_rank_its_traceback(traindoc):
    run = traindoc(job("worker_segfault"), timeout=180)
    same_status(run)
    _, root = summary(run)
    assert field(root, "rank").startswith("1 ")
    assert field(root, "error_file") != "<N/A>"
    assert "DataLoader worker" in root and "Segmentation fault" in root, root
    assert "To enable traceback" not in root


def test_peer_killed_first_is_the_root_cause(traindoc):
    run = traindoc(job("peer_killed"), timeout=180)
    same_status(run)
    failures, root = summary(run)
    killed = next(p for p in run.processes("rank") if p["rank"] == 1)
    # torchrun orders by whole seconds, then by rank: either rank 1's own record leads, or rank
    # 0's, which then names rank 1 as the failure before it.
    if field(root, "rank").startswith("1 "):
        assert f"traindoc: rank 1 (pid {killed['pid']}) killed by SIGKILL" in root, root
    else:
        assert field(root, "rank").startswith("0 ")
        assert (f"traindoc: rank 1 (pid {killed['pid']}) failed before this rank "
                "(killed by SIGKILL): look there first") in root, root
    assert field(root, "error_file") != "<N/A>"


def test_record_decorated_rank_keeps_its_own_file(traindoc):
    run = traindoc(job("recorded"), timeout=180)
    same_status(run)
    failures, root = summary(run)
    text = failures + root
    assert "ValueError: rank 1 recorded its own failure" in text
    # Its block is torch's own account: no word of traindoc's in it.
    block = root if field(root, "rank").startswith("1 ") else failures
    own = block[block.index("ValueError") - 2000:block.index("ValueError")]
    assert "traindoc:" not in own


def test_no_error_file_leaves_torchruns_summary_as_without_traindoc(traindoc):
    run = traindoc(job("peer_killed"), "--no-error-file", timeout=180)
    same_status(run)
    failures, root = summary(run)
    assert "traindoc:" not in failures + root
    assert field(root, "error_file") == "<N/A>"
    for line in re.findall(r"error_file: (.*)", failures):
        assert line == "<N/A>"
