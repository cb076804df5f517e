"""traindoc is never the reason a job fails: a full disk, a second traindoc on the same folder,
odd option values, other users' folders. The job keeps its status and its output; the report
says what is missing."""
import json
import os
import stat
import subprocess

import pytest

from conftest import PYTHON, TRAINDOC

# 4 MB on stdout, then a last word on stderr.
LOUD_JOB = ("import sys\n"
            "for _ in range(40000):\n"
            "    sys.stdout.write('x' * 99 + '\\n')\n"
            "sys.stdout.flush()\n"
            "sys.stderr.write('the end\\n')\n")


def traindoc_cli(*args, timeout=120, **kwargs):
    return subprocess.run([str(TRAINDOC), *map(str, args)], capture_output=True, timeout=timeout,
                          **kwargs)


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs: a disk that fills up while the job runs."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root and CAP_SYS_ADMIN needed): "
                    f"{made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_never_ends_the_job_nor_takes_its_status(small_disk):
    run_dir = small_disk / "run"
    proc = traindoc_cli("run", "--out", run_dir, "--", PYTHON, "-c", LOUD_JOB + "sys.exit(3)")
    # The job's status and every byte of its output, though run.db and logs/ filled the disk.
    assert proc.returncode == 3, proc.stderr.decode()[-3000:]
    assert proc.stdout == (b"x" * 99 + b"\n") * 40000
    assert b"the end" in proc.stderr
    assert b"SIGTERM" not in proc.stderr, proc.stderr.decode()[-3000:]
    # The report says what is missing: run.db stopped, and where report.json could not be
    # written, the summary says so.
    text = proc.stderr.decode()
    assert "run.db could not be written" in text, text[-3000:]
    if (run_dir / "report.json").exists():
        report = json.loads((run_dir / "report.json").read_text())
        assert report["run"]["exit_code"] == 3, report["run"]
        assert any("run.db could not be written" in n for n in report["missing_evidence"])
    assert not (run_dir / "reserve").exists()


def test_processes_started_on_a_full_disk_run_as_ever(small_disk):
    """The agent's shared file is sparse: a page the full disk cannot back would be SIGBUS at
    its first touch, in a job process or in traindoc. Both leave such pages alone."""
    filler = small_disk / "filler"
    script = (f"head -c 4000000 /dev/zero > {filler} 2>/dev/null; "
              f"{PYTHON} -c 'print(6 * 7)' && sh -c 'echo started' && echo done")
    proc = traindoc_cli("run", "--out", small_disk / "run", "--", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert proc.stdout.split() == [b"42", b"started", b"done"], proc.stdout


def test_two_traindocs_given_one_folder_at_once(tmp_path):
    """One claims the folder and runs its job to the end; the other stops before its job with a
    clear message, and no guard ends the other's job."""
    for round_ in range(4):
        run_dir = tmp_path / f"same-{round_}"
        marker = tmp_path / f"ran-{round_}"
        job = [PYTHON, "-c", f"import time; open('{marker}', 'a').write('x'); time.sleep(1.5)"]
        procs = [subprocess.Popen([str(TRAINDOC), "run", "-q", "--out", str(run_dir), "--", *job],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in range(2)]
        results = [(p.wait(timeout=60), p.stderr.read().decode()) for p in procs]
        statuses = sorted(status for status, _ in results)
        assert statuses == [0, 125], results
        loser = next(err for status, err in results if status == 125)
        assert "run folder" in loser and ("another traindoc" in loser or "holds files" in loser)
        assert marker.read_text() == "x", results  # one job ran, once
        report = json.loads((run_dir / "report.json").read_text())
        assert report["run"]["exit_code"] == 0, report["run"]


@pytest.mark.parametrize("option", ["--interval", "--stall-seconds"])
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
def test_non_finite_numbers_are_refused(tmp_path, option, value):
    proc = traindoc_cli("run", "--out", tmp_path / "r", option, value, "--", "true")
    assert proc.returncode == 2, proc.stderr
    assert option.encode() in proc.stderr
    assert not (tmp_path / "r").exists()


def test_the_run_folder_is_private_and_the_job_keeps_its_umask(tmp_path):
    run_dir = tmp_path / "runs" / "r"
    made = tmp_path / "made-by-the-job"
    proc = traindoc_cli("run", "--out", run_dir, "--", "sh", "-c", f"umask; touch {made}",
                        preexec_fn=lambda: os.umask(0o022))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == b"0022"
    assert stat.S_IMODE(made.stat().st_mode) == 0o644
    for path in [run_dir, *run_dir.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, (path, oct(mode))


def test_folders_that_others_can_write_or_own_are_refused(tmp_path):
    everyone = tmp_path / "everyone"
    everyone.mkdir()
    everyone.chmod(0o777)
    proc = traindoc_cli("run", "--out", everyone, "--", "true")
    assert proc.returncode == 125
    assert b"writable by every user" in proc.stderr
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    proc = traindoc_cli("run", "--out", theirs, "--", "true")
    assert proc.returncode == 125
    assert b"owned by another user" in proc.stderr
    assert list(theirs.iterdir()) == []


def test_an_agent_path_that_the_environment_would_split_is_refused(tmp_path):
    agent = TRAINDOC.parent.parent / "lib" / "libtraindoc_agent.so"
    for name in ["with space", "with:colon"]:
        folder = tmp_path / name
        folder.mkdir()
        copy = folder / "libtraindoc_agent.so"
        copy.write_bytes(agent.read_bytes())
        proc = traindoc_cli("run", "--out", tmp_path / "r", "--", "true",
                            env={**os.environ, "TRAINDOC_AGENT": str(copy)})
        assert proc.returncode == 125, proc.stderr
        assert b"space or colon" in proc.stderr and b"TRAINDOC_AGENT" in proc.stderr
        assert not (tmp_path / "r").exists()


def test_a_relative_agent_path_is_made_absolute(tmp_path):
    """The job changes its folder and starts a program: the agent still loads in it."""
    lib = TRAINDOC.parent.parent / "lib"
    proc = traindoc_cli("run", "--json", "--out", tmp_path / "r", "--", "sh", "-c",
                        "cd / && sh -c true", cwd=lib.parent,
                        env={**os.environ, "TRAINDOC_AGENT": "lib/libtraindoc_agent.so"})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stderr[proc.stderr.index(b"{"):])
    assert not any("without the agent" in note for note in report["missing_evidence"]), report


def test_secrets_in_arguments_are_written_nowhere(tmp_path):
    """The values of --api-key, --token=, --password and a URL's password reach the job, and
    nothing traindoc writes (run.db with its WAL, report.json, report.html) nor prints."""
    secrets = ["sk-SECRET1", "SECRET2", "SECRET3", "SECRET4"]
    job = [PYTHON, "-c", "import sys, time; print(len(sys.argv)); time.sleep(1.2)",
           "--api-key", secrets[0], f"--token={secrets[1]}", "--password", secrets[2],
           f"--url=https://me:{secrets[3]}@example.com/x"]
    run_dir = tmp_path / "r"
    proc = traindoc_cli("run", "--out", run_dir, "--interval", "0.2", "--", *job)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == b"7"  # the job got every argument ("-c" and six)
    report = json.loads((run_dir / "report.json").read_text())
    assert report["run"]["command"][3:5] == ["--api-key", "***"], report["run"]["command"]
    assert not (run_dir / "agent" / "slots").exists()  # in run.db now; it held them raw
    for path in [*run_dir.rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, (path, secret)
    for secret in secrets:
        assert secret.encode() not in proc.stderr
