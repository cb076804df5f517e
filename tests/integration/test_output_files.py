"""Output the job writes to files instead of its pipes (a shell's `2> err.log`, torchrun's
--redirects): traindoc reads it from where each process started writing, ties it to the processes
that wrote it, and diagnoses it like the job's own output."""
import sqlite3

from conftest import PYTHON, free_port

FAILS_AT_ONCE = "import sys; print('loading config'); sys.exit('no such config: run.yaml')"


def shell(command):
    return ["sh", "-c", command]


def writers(run):
    db = sqlite3.connect(run.run_dir / "run.db")
    return db.execute("SELECT stream, pid, fd FROM log_writers ORDER BY fd").fetchall()


def test_a_process_that_ended_before_any_sample_is_read_from_its_file(traindoc, tmp_path):
    """A Python that fails in a few milliseconds, both streams to one file: its words are the
    root cause, the file is named, and the run folder keeps a copy."""
    log = tmp_path / "job.log"
    run = traindoc(shell(f'{PYTHON} -S -c "{FAILS_AT_ONCE}" > {log} 2>&1'))
    assert run.status == 1, run.stderr
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "nonzero-exit" and root["title"].endswith(
        ": no such config: run.yaml"), root
    assert f"the last line it printed, {log} line 2" in "\n".join(root["evidence"]), root
    assert root["fix"] == f"See the process's last output in {log} (kept in logs/file-1.log)."
    rank = run.processes("rank")[0]
    assert [(s, p, fd) for s, p, fd in writers(run)] == [(str(log), rank["pid"], 1),
                                                         (str(log), rank["pid"], 2)]
    assert (run.run_dir / "logs" / "file-1.log").read_bytes() == log.read_bytes()


def test_an_appended_file_is_read_from_where_the_job_began(traindoc, tmp_path):
    """`2>> err.log` over an earlier run's traceback: only what this job wrote is its output."""
    log = tmp_path / "err.log"
    log.write_text("Traceback (most recent call last):\n  File \"old.py\", line 1, in <module>\n"
                   "RuntimeError: an earlier run's failure\n")
    code = "import time; time.sleep(1.5); raise KeyError('missing_column')"
    run = traindoc(shell(f'{PYTHON} -c "{code}" 2>> {log}'))
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "python-exception", root
    assert root["title"].endswith("raised KeyError: 'missing_column'"), root
    assert "earlier run" not in (run.run_dir / "logs" / "file-1.log").read_text()
    assert "earlier run" not in run.stderr.decode()


RANK_1_FAILS = """import os, time
time.sleep(0.5)
if os.environ["RANK"] == "1":
    raise ValueError("rank 1 failed on purpose")
time.sleep(5)
"""


def test_torchrun_redirects_each_rank_to_its_file(traindoc, tmp_path):
    """torchrun --redirects 2 --tee 1: the ranks' stderr goes to files in the log folder and
    nowhere else; the failing rank's exception is still the root cause, read from its file."""
    script = tmp_path / "train.py"
    script.write_text(RANK_1_FAILS)
    run = traindoc([PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                    "--master_port", str(free_port()), "--redirects", "2", "--tee", "1",
                    "--log_dir", str(tmp_path / "torchrun-logs"), str(script)])
    assert run.status == 1, run.stderr
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "python-exception", root
    assert root["ranks"] == [1], root
    assert "ValueError: rank 1 failed on purpose" in root["title"], root
    evidence = "\n".join(root["evidence"])
    assert f"{tmp_path}/torchrun-logs/" in evidence and "/attempt_0/1/stderr.log" in evidence
    # On the terminal only torchrun's own summary, which shows the traceback of the rank's error
    # file (traindoc wrote it): the rank's own output was never printed there.
    before_summary = run.stderr.split(b"ChildFailedError")[0]
    assert b"ValueError: rank 1 failed on purpose" not in before_summary, run.stderr
    assert b"ValueError: rank 1 failed on purpose" in run.stderr.split(b"Root Cause")[1]
    streams = {s for s, _, fd in writers(run) if fd == 2}
    assert len(streams) == 2 and all(s.endswith("/stderr.log") for s in streams), streams



LOGS_AND_EXITS = """import logging, logging.handlers, sys, time
handler = {handler}
handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
logging.basicConfig(level=logging.INFO, handlers=[handler])
log = logging.getLogger("train")


def train():
    for step in range(20):
        log.info("step %d loss 0.5", step)
    raise ValueError("learning rate must be positive, got -0.1")


time.sleep(0.5)
try:
    train()
except Exception:
    log.exception("training failed")
    sys.exit(1)
"""


def logged_only(traindoc, tmp_path, handler):
    log = tmp_path / "train.log"
    log.write_text("ERROR an earlier run's failure\nRuntimeError: an earlier run's failure\n")
    script = tmp_path / "train.py"
    script.write_text(LOGS_AND_EXITS.format(handler=handler.format(log=str(log))))
    run = traindoc([PYTHON, str(script)])
    assert run.status == 1, run.stderr
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "python-exception", root
    assert root["title"].endswith(
        "raised ValueError: learning rate must be positive, got -0.1"), root
    assert f"{log} lines " in "\n".join(root["evidence"]), root
    assert root["fix"] == (f"Your code raised it at {script}:11: fix it there. The whole "
                           f"traceback is in {log}."), root
    rank = run.processes("rank")[0]
    assert [(s, p) for s, p, fd in writers(run) if fd > 2] == [(str(log), rank["pid"])]
    return run


def test_an_exception_logged_only_to_a_log_file_is_the_root_cause(traindoc, tmp_path):
    """logging.FileHandler, then `logger.exception(...)` and `sys.exit(1)`: the terminal shows
    nothing of it, yet its exception is the root cause, read from where this run began."""
    run = logged_only(traindoc, tmp_path, "logging.FileHandler({log!r})")
    assert b"learning rate" not in run.stderr.split(b"traindoc:")[0]
    assert "earlier run" not in (run.run_dir / "logs" / "file-1.log").read_text()


def test_a_rotated_log_is_read_on_in_the_file_opened_in_its_place(traindoc, tmp_path):
    """RotatingFileHandler renames train.log every few lines and opens a new one: the exception
    logged after the rotations is read all the same."""
    logged_only(traindoc, tmp_path,
                "logging.handlers.RotatingFileHandler({log!r}, maxBytes=300, backupCount=2)")
    assert (tmp_path / "train.log.2").exists()


def test_an_exception_logged_and_printed_is_cited_from_the_terminal(traindoc, tmp_path):
    """Logged to the console and to a file, then raised: the copy on stderr is the one cited."""
    log = tmp_path / "train.log"
    code = ("import logging; logging.basicConfig(level=logging.INFO, handlers=["
            f"logging.StreamHandler(), logging.FileHandler({str(log)!r})]); "
            "log = logging.getLogger('train'); log.info('step 0')\n"
            "try:\n    {}['optimizer']\n"
            "except KeyError:\n    log.exception('no optimizer'); raise")
    run = traindoc([PYTHON, "-c", code])
    assert run.status == 1, run.stderr
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "python-exception", root
    assert root["title"].endswith("raised KeyError: 'optimizer'"), root
    evidence = "\n".join(root["evidence"])
    assert "stderr lines " in evidence and str(log) not in evidence, root
