"""The fault zoo (examples/faults/zoo.py): every CPU-runnable case of the catalog of real
failures, run under traindoc, must get the right root cause (kind, ranks, words and numbers),
and clean runs no error or warning finding."""
import sys

import pytest

from conftest import PYTHON, ROOT, TRAINDOC

sys.path.insert(0, str(ROOT / "examples" / "faults"))
import zoo  # noqa: E402


@pytest.mark.parametrize("case", zoo.CASES, ids=[c.id for c in zoo.CASES])
def test_zoo_case(case, tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINDOC_PYTHON", PYTHON)
    if not zoo.can_run(case):
        pytest.skip("needs a private mount namespace with its own /dev/shm (root)")
    status, report, stderr = zoo.run(case, str(TRAINDOC), str(tmp_path / "run"))
    assert zoo.problems(case, status, report) == [], stderr[-3000:]
