"""Bad input gets a clear message and the exit status a shell would give; nothing is lost."""
import os
import subprocess
import time

from conftest import TRAINDOC


def traindoc_cli(*args, **kwargs):
    return subprocess.run([str(TRAINDOC), *map(str, args)], capture_output=True, timeout=60, **kwargs)


def test_no_command_prints_usage(tmp_path):
    proc = traindoc_cli("run", "--out", tmp_path / "r")
    assert proc.returncode == 2
    assert b"no command" in proc.stderr
    assert b"Usage" in proc.stderr or b"usage" in proc.stderr.lower()


def test_no_subcommand(tmp_path):
    assert traindoc_cli().returncode == 2


def test_command_not_found_is_127(tmp_path):
    proc = traindoc_cli("run", "--out", tmp_path / "r", "--", "no-such-command-xyz")
    assert proc.returncode == 127
    assert b"no-such-command-xyz: command not found" in proc.stderr
    report = (tmp_path / "r" / "report.json").read_text()
    assert "command not found" in report
    assert not (tmp_path / "r" / "agent" / "slots").exists()


def test_not_executable_is_126(tmp_path):
    script = tmp_path / "script.sh"
    script.write_text("echo hi\n")
    script.chmod(0o644)
    proc = traindoc_cli("run", "--out", tmp_path / "r", "--", script)
    assert proc.returncode == 126
    assert b"Permission denied" in proc.stderr


def test_unwritable_run_folder_fails_before_the_job(tmp_path):
    marker = tmp_path / "ran"
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = traindoc_cli("run", "--out", blocker / "run", "--", "touch", marker)
    assert proc.returncode == 125
    assert b"cannot create the run folder" in proc.stderr
    assert not marker.exists()


def test_existing_run_is_never_overwritten(tmp_path):
    run_dir = tmp_path / "r"
    assert traindoc_cli("run", "--out", run_dir, "--", "true").returncode == 0
    before = (run_dir / "report.json").read_bytes()
    proc = traindoc_cli("run", "--out", run_dir, "--", "true")
    assert proc.returncode == 125
    assert b"never overwritten" in proc.stderr
    assert (run_dir / "report.json").read_bytes() == before


def test_unknown_option_suggests_the_nearest(tmp_path):
    proc = traindoc_cli("run", "--ot", tmp_path / "r", "--", "true")
    assert proc.returncode == 2
    assert b"did you mean --out?" in proc.stderr
    proc = traindoc_cli("analyze", "--jsn", tmp_path)
    assert proc.returncode == 2
    assert b"did you mean --json?" in proc.stderr


def test_default_run_folder(tmp_path):
    proc = traindoc_cli("run", "--", "true", cwd=tmp_path)
    assert proc.returncode == 0
    runs = list((tmp_path / "traindoc-runs").iterdir())
    assert len(runs) == 1
    # The report at the end read run.db: no empty WAL or index of that read is left.
    assert sorted(p.name for p in runs[0].iterdir()) == ["agent", "logs", "report.html", "report.json", "run.db"]


def test_analyze_without_a_folder_takes_the_latest_run(tmp_path):
    proc = traindoc_cli("analyze", cwd=tmp_path)
    assert proc.returncode == 125
    assert b"no run folder given, and ./traindoc-runs holds none" in proc.stderr
    for code in (3, 4):
        traindoc_cli("run", "--", "sh", "-c", f"exit {code}", cwd=tmp_path)
        time.sleep(1.1)  # the folders' names tell their start to the second
    proc = traindoc_cli("analyze", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0
    assert b"exited with code 4" in proc.stdout, proc.stdout


def test_analyze_corrupt_run_folder(tmp_path):
    (tmp_path / "run.db").write_bytes(os.urandom(4096))
    proc = traindoc_cli("analyze", tmp_path)
    assert proc.returncode == 125
    assert b"run.db" in proc.stderr
    proc = traindoc_cli("analyze", tmp_path / "missing")
    assert proc.returncode == 125
    assert b"not a run folder" in proc.stderr


def test_the_summary_starts_on_a_line_of_its_own(tmp_path):
    """A job whose last words on stderr end without a newline: traindoc's own start below them
    (the job's bytes are kept as they are); stdout, another file here, is not stderr's line."""
    unfinished = traindoc_cli("run", "--quiet", "--out", tmp_path / "a", "--", "sh", "-c",
                              "printf job-out; printf 'no newline at end' >&2; exit 3")
    assert unfinished.stdout == b"job-out"
    assert unfinished.stderr.startswith(b"no newline at end\ntraindoc: "), unfinished.stderr
    ended = traindoc_cli("run", "--quiet", "--out", tmp_path / "b", "--", "sh", "-c",
                         "printf job-out; echo err >&2")
    assert ended.stderr.startswith(b"err\ntraindoc: "), ended.stderr
    assert (tmp_path / "a" / "logs" / "stderr.log").read_bytes() == b"no newline at end"


def test_output_modes(tmp_path):
    """Summary by default, --json, a one-line verdict with --quiet, nothing with --silent."""
    import json
    cmd = ["--", "sh", "-c", "echo job-out; exit 3"]
    summary = traindoc_cli("run", "--out", tmp_path / "a", *cmd)
    assert summary.returncode == 3 and summary.stdout == b"job-out\n"
    assert b"peak RSS by role" in summary.stderr and b"\x1b[" not in summary.stderr
    as_json = traindoc_cli("run", "--json", "--out", tmp_path / "b", *cmd)
    assert json.loads(as_json.stderr)["run"]["exit_code"] == 3
    verdict = traindoc_cli("run", "--quiet", "--out", tmp_path / "c", *cmd)
    assert verdict.stderr.count(b"\n") == 1 and b"exited with code 3" in verdict.stderr
    silent = traindoc_cli("run", "--silent", "--out", tmp_path / "d", *cmd)
    assert silent.stderr == b"" and silent.stdout == b"job-out\n"
    analyzed = traindoc_cli("analyze", "--json", tmp_path / "a")
    assert json.loads(analyzed.stdout)["run"]["exit_code"] == 3


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path):
    import os
    import pty
    assert traindoc_cli("run", "--silent", "--out", tmp_path / "r", "--", "true").returncode == 0
    for env, coloured in (({}, True), ({"NO_COLOR": "1"}, False)):
        pid, master = pty.fork()
        if pid == 0:
            os.environ.update(env)
            os.execv(str(TRAINDOC), [str(TRAINDOC), "analyze", str(tmp_path / "r")])
        data = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        os.waitpid(pid, 0)
        assert (b"\x1b[" in data) == coloured, data
