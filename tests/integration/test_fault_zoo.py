"""The fault zoo (examples/faults/zoo.py): every CPU-runnable case of the catalog of real
failures, run under traindoc, must get the right root cause (kind, ranks, words and numbers),
and clean runs no error or warning finding."""
import sys

import pytest

from conftest import PYTHON, ROOT, TRAINDOC

sys.path.insert(0, str(ROOT / "examples" / "faults"))
import zoo  # noqa: E402


# Cases that another test runs with the same command and options, asserting more.
ELSEWHERE = {"H01": "test_memory.py::test_workers_copying_a_python_list_are_reported"}
CASES = [c for c in zoo.CASES if c.id not in ELSEWHERE]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_zoo_case(case, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINDOC_PYTHON", PYTHON)
    if not zoo.can_run(case):
        pytest.skip("needs a private mount namespace with its own /dev/shm (root)")
    status, report, stderr = zoo.run(case, str(TRAINDOC), str(tmp_path / "run"))
    assert zoo.problems(case, status, report) == [], stderr[-3000:]
