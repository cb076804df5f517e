"""A crash in native code gets the Python traceback of the crashing thread on every CPython from
3.8 to 3.14: from the interpreter's own dumper where it exports one (3.8, 3.11, 3.12), else read
from its structures (3.9, 3.10, 3.13+). Each interpreter is looked for under pyenv (PYENV_ROOT,
else ~/.pyenv) and on PATH; a missing one skips its tests. None of them needs torch."""
import glob
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

VERSIONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"]


def interpreter(version):
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    builds = [p for p in glob.glob(str(root / "versions" / f"{version}.*" / "bin" / f"python{version}"))
              if not p.split("/")[-3].endswith("t")]  # a free-threaded build (3.13t) is not this one
    if builds:
        return max(builds, key=lambda p: [int(n) for n in p.split("/")[-3].split(".") if n.isdigit()])
    return shutil.which(f"python{version}")


# The line of each `ctypes.string_at(0)` is asserted: keep the call on the line that ends in
# "# crash here".
SCRIPTS = {
    "main_thread": """
import ctypes, threading
idle = threading.Event()
threading.Thread(target=idle.wait, daemon=True).start()

def crash():
    ctypes.string_at(0)  # crash here

crash()
""",
    "second_thread": """
import ctypes, threading, time

def crash():
    time.sleep(0.1)
    ctypes.string_at(0)  # crash here

worker = threading.Thread(target=crash)
worker.start()
worker.join()
""",
    "multiprocessing_worker": """
import ctypes, multiprocessing, sys

def crash():
    ctypes.string_at(0)  # crash here

if __name__ == "__main__":
    child = multiprocessing.Process(target=crash)
    child.start()
    child.join()
    sys.exit(3 if child.exitcode == -11 else 4)
""",
}


def line_of(code, text):
    return next(i for i, line in enumerate(code.split("\n"), 1) if text in line)


@pytest.mark.parametrize("where", list(SCRIPTS))
@pytest.mark.parametrize("version", VERSIONS)
def test_native_crash_names_the_users_python_line(traindoc, tmp_path, version, where):
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no CPython {version} here (pyenv or python{version} on PATH)")
    script = tmp_path / f"crash_{where}.py"
    script.write_text(SCRIPTS[where])
    line = line_of(SCRIPTS[where], "# crash here")

    run = traindoc([python, str(script)])
    stderr = run.stderr.decode(errors="replace")
    # The job's own status: a killed process, or the parent's own code for its worker's death.
    assert run.status == (3 if where == "multiprocessing_worker" else 128 + 11), stderr[-3000:]
    # The crash leads, a worker's before its parent's exit that it caused.
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == ("worker-crash" if where == "multiprocessing_worker" else "native-crash")
    evidence = "\n".join(root["evidence"])
    assert f'in your code: File "{script}", line {line} in crash' in evidence, evidence

    # The whole dump is stored: the crashing thread is the current one, and the main thread's
    # own stack is there too when another thread crashed.
    with sqlite3.connect(run.run_dir / "run.db") as db:
        (traceback,) = db.execute("SELECT python_traceback FROM crashes").fetchone()
    current = traceback[traceback.index("Current thread"):].split("\n\n")[0]
    assert f'File "{script}", line {line} in crash' in current, traceback
    if where == "second_thread":
        joining = f'File "{script}", line {line_of(SCRIPTS[where], "worker.join()")} in <module>'
        assert joining in traceback, traceback
        assert joining not in current, traceback


TORN = """
import ctypes, struct

def crash():
    ctypes.string_at(0)  # crash here

# As a corrupt heap would: the file name of crash()'s code object becomes a wild pointer.
code = crash.__code__
at = ctypes.string_at(id(code), 256).index(struct.pack("P", id(code.co_filename)))
ctypes.memmove(id(code) + at, struct.pack("P", 0x10000DEAD0), 8)
crash()
"""
# Those read by traindoc rather than by their own dumper, which stops at the torn pointer.
READ_BY_TRAINDOC = {"3.9", "3.10", "3.13", "3.14"}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_torn_code_object_gives_a_truncated_traceback_not_a_second_fault(traindoc, tmp_path,
                                                                          version):
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no CPython {version} here (pyenv or python{version} on PATH)")
    script = tmp_path / "torn.py"
    script.write_text(TORN)
    run = traindoc([python, str(script)])
    assert run.status == 128 + 11, run.stderr.decode(errors="replace")[-3000:]
    root = next(f for f in run.report["findings"] if f["root_cause"])
    assert root["kind"] == "native-crash"
    # The frames written before the torn one are kept.
    assert "line" in "\n".join(root["evidence"]) and "in string_at" in "\n".join(root["evidence"])
    if version in READ_BY_TRAINDOC:
        with sqlite3.connect(run.run_dir / "run.db") as db:
            (traceback,) = db.execute("SELECT python_traceback FROM crashes").fetchone()
        assert f"File ???, line {line_of(TORN, '# crash here')} in crash" in traceback, traceback
        call = len(TORN.rstrip("\n").split("\n"))  # the last line calls crash()
        assert f'File "{script}", line {call} in <module>' in traceback, traceback
