"""Whatever a job prints or is named, and whatever is planted in its run folder, the report is
written and is safe to read: bytes that are not UTF-8 reach report.json and report.html as U+FFFD,
escape sequences reach the terminal written out rather than obeyed, links planted in the run
folder make traindoc write no other file, and times at the limits of int64 in run.db print no
absurd duration. The job's own output stays exactly as it was."""
import json
import os
import re
import sqlite3
import subprocess

from conftest import TRAINDOC, python_job

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# A title change (OSC), a screen clear, and a C1 control sequence introducer as UTF-8.
HOSTILE = "\x1b]0;owned\x07 \x1b[2J \u009b31m"


def traindoc_cli(*args):
    return subprocess.run([str(TRAINDOC), *map(os.fsencode, args)], capture_output=True,
                          timeout=60)


def obeyed(output):
    """What in traindoc's own output a terminal would act on, beyond its newlines and tabs: C0
    controls, DEL, C1 controls (as UTF-8 and as lone bytes), and bytes that are not UTF-8."""
    text = output.decode("utf-8", errors="surrogateescape")
    return re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\udc80-\udcff]", text)


def summary_of(stderr):
    """traindoc's summary: what follows the job's own stderr on traindoc's stderr."""
    return stderr[stderr.index(b"traindoc: the job"):]


def test_bytes_that_are_not_utf8_still_make_a_report(traindoc):
    run = traindoc(["/bin/echo", b"caf\xe9"])
    assert run.status == 0, run.stderr
    assert run.stdout == b"caf\xe9\n"  # the job's bytes, untouched
    assert run.report["run"]["command"] == ["/bin/echo", "caf\ufffd"]
    html = (run.run_dir / "report.html").read_bytes().decode("utf-8")  # strictly UTF-8
    assert "/bin/echo caf\ufffd" in html
    assert not obeyed(summary_of(run.stderr))
    analyzed = traindoc_cli("analyze", run.run_dir)
    assert analyzed.returncode == 0, analyzed.stderr
    assert not obeyed(analyzed.stdout)
    as_json = traindoc_cli("analyze", "--json", run.run_dir)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["run"]["command"] == ["/bin/echo", "caf\ufffd"]


def test_escape_sequences_of_the_job_are_shown_not_obeyed(traindoc):
    message = HOSTILE + " boom"
    run = traindoc(python_job(f"raise RuntimeError({message!r})"))
    assert run.status == 1
    assert message.encode() in run.stderr  # the job's own stderr, as it printed it
    summary = summary_of(run.stderr)
    assert not obeyed(summary), summary
    assert b"\\x1b]0;owned\\x07 \\x1b[2J \\u009b31m boom" in summary, summary
    assert run.report["findings"][0]["title"].endswith("RuntimeError: " + message)

    for options in ([], ["--quiet"]):
        analyzed = traindoc_cli("analyze", *options, run.run_dir)
        assert analyzed.returncode == 0, analyzed.stderr
        assert not obeyed(analyzed.stdout), analyzed.stdout
        assert b"\\x1b]0;owned\\x07" in analyzed.stdout
    as_json = traindoc_cli("analyze", "--json", run.run_dir)
    assert not obeyed(as_json.stdout)
    assert json.loads(as_json.stdout)["findings"] == run.report["findings"]


def test_a_command_named_with_escape_sequences(traindoc):
    name = b"no-such-\x1b]0;owned\x07\x9b2J"
    run = traindoc([name])
    assert run.status == 127
    analyzed = traindoc_cli("analyze", run.run_dir)
    assert not obeyed(analyzed.stdout), analyzed.stdout
    assert b"could not start: no-such-\\x1b]0;owned\\x07\\x9b2J: command not found" in analyzed.stdout
    quiet = traindoc_cli("analyze", "--quiet", run.run_dir)
    assert not obeyed(quiet.stdout), quiet.stdout
    assert run.report["run"]["exec_error"] == "no-such-\x1b]0;owned\x07\ufffd2J: command not found"


def test_links_planted_in_the_run_folder_write_no_other_file(traindoc, tmp_path):
    run = traindoc(["true"])
    assert run.status == 0
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    planted = []
    for report in ("report.json", "report.html"):
        for name in (f"{report}.tmp", f".{report}.tmp", f"{report}~", f"{report}.new"):
            (run.run_dir / name).symlink_to(victim)
            planted.append(name)
        # A link to a file that does not exist yet: following it would create it.
        (run.run_dir / f"{report}.part").symlink_to(tmp_path / f"created-{report}")
        planted.append(f"{report}.part")
    os.unlink(run.run_dir / "report.json")
    (run.run_dir / "report.json").symlink_to(victim)

    analyzed = traindoc_cli("analyze", "--quiet", run.run_dir)
    assert analyzed.returncode == 0, analyzed.stderr
    assert victim.read_text() == "precious\n"
    assert not list(tmp_path.glob("created-*"))
    for report in ("report.json", "report.html"):
        path = run.run_dir / report
        assert path.is_file() and not path.is_symlink()
        assert path.stat().st_mode & 0o777 == 0o600
    assert run.report["run"]["command"] == ["true"]
    # Nothing is left beside the reports but what was planted.
    names = {p.name for p in run.run_dir.iterdir()}
    assert names == {"agent", "logs", "run.db", "report.json", "report.html", *planted}


def test_times_at_the_limits_of_int64_print_no_absurd_duration(traindoc):
    run = traindoc(["sh", "-c", "exit 3"])
    assert run.status == 3
    with sqlite3.connect(run.run_dir / "run.db") as db:
        db.execute("UPDATE run SET start_ns = ?, end_ns = ?", (INT64_MIN, INT64_MAX))
        db.execute("UPDATE processes SET start_ns = ?", (INT64_MIN,))
        db.execute("UPDATE proc_samples SET t_ns = ?", (INT64_MAX,))
    db.close()
    for options in ([], ["--quiet"]):
        analyzed = traindoc_cli("analyze", *options, run.run_dir)
        assert analyzed.returncode == 0, analyzed.stderr
        first = analyzed.stdout.splitlines()[0]
        assert first.startswith(b"traindoc: the job exited with code 3"), first
        assert b" after " not in first and b"-0.0 s" not in analyzed.stdout, first
    report = run.report["run"]
    assert (report["start_ns"], report["end_ns"]) == (INT64_MIN, INT64_MAX)
    assert "duration_s" not in report
    html = (run.run_dir / "report.html").read_text()
    assert "started at an unknown time" in html
