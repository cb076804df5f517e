"""TensorFlow's and JAX's failure texts end to end: a job replays a recorded transcript of the
framework's real output (tests/fixtures/transcripts/, with its timing and its exit status or
signal, as two ranks where the failure takes two) under `traindoc run`, and the report must name
the same root cause, with the same numbers and the same key advice, as for the PyTorch job that
failed the same way (its transcript beside it)."""
import re

import pytest

from conftest import ROOT, job_script

TRANSCRIPTS = ROOT / "tests" / "fixtures" / "transcripts"

# The numbers a finding cites: the request of an OOM, the label a loss refused, the line of
# the user's script it names.
NUMBERS = re.compile(r"requested [0-9.]+ [KMGT]iB|requested [0-9]+ bytes|label -?[0-9]+"
                     r"|proj/train\.py:[0-9]+")

# (TensorFlow or JAX transcript, PyTorch transcript, root cause kind, the numbers both cite,
# words of the fix both give)
CASES = [
    ("tf_oom.txt", "torch_oom_256m.txt", "gpu-oom", {"requested 256 MiB"},
     "reduce the batch size"),
    ("jax_oom.txt", "torch_oom_16g.txt", "gpu-oom", {"requested 16.0 GiB"},
     "reduce the batch size"),
    ("tf_label_255.txt", "torch_label_255.txt", "label-out-of-range",
     {"label 255", "proj/train.py:67"},
     "The dataset's void label 255 is not ignored"),
    ("jax_nan.txt", "torch_nan.txt", "python-exception", {"proj/train.py:40"},
     "lower the learning rate or clip gradients"),
    ("tf_collective_timeout.txt", "torch_collective_timeout.txt", "collective-missing",
     {"proj/train.py:95"},
     "make the collective unconditional or decide skips collectively"),
]


def root_cause(run):
    roots = [f for f in run.report["findings"] if f["root_cause"]]
    assert roots, [(f["kind"], f["title"]) for f in run.report["findings"]]
    return roots[0]


def numbers(finding):
    return set(NUMBERS.findall("\n".join([finding["title"], *finding["evidence"]])))


def replay(traindoc, name):
    run = traindoc(job_script("replay.py", TRANSCRIPTS / name), "--interval", "0.2")
    assert run.status == 1, run.stderr.decode()[-2000:]  # the job's status, untouched
    return run


@pytest.mark.parametrize("framework, pytorch, kind, cited, advice", CASES,
                         ids=[case[0].removesuffix(".txt") for case in CASES])
def test_the_same_failure_gets_the_same_diagnosis(traindoc, framework, pytorch, kind, cited,
                                                  advice):
    ranks = []
    for name in (framework, pytorch):
        root = root_cause(replay(traindoc, name))
        assert root["kind"] == kind, (name, root)
        assert cited <= numbers(root), (name, root)
        assert advice in root["fix"], (name, root["fix"])
        ranks.append(root["ranks"])
    assert ranks[0] == ranks[1], ranks  # the rank the finding blames


def test_tensorflow_names_the_class_count_pytorch_cannot(traindoc):
    root = root_cause(replay(traindoc, "tf_label_255.txt"))
    assert "target label 255 is outside [0, 19)" in root["title"], root
    assert "SparseCategoricalCrossentropy(ignore_class=255)" in root["fix"]


def test_a_worker_killed_under_nccl_is_the_cause_not_the_survivors_nccl_error(traindoc):
    """Worker 1 is killed; worker 0's NCCL call fails with NCCL's remote-error text. In both
    frameworks worker 0's failure is a consequence (peer-exited), never the root cause."""
    causes = []
    for name in ("tf_nccl_peer.txt", "torch_nccl_peer.txt"):
        run = replay(traindoc, name)
        findings = run.report["findings"]
        peer = [f for f in findings if f["kind"] == "peer-exited"]
        assert peer and not peer[0]["root_cause"], (name, findings)
        # The rank that lost its connection, then the peer it lost (as for PyTorch's gloo).
        assert peer[0]["ranks"] == [0, 1], peer[0]
        assert "lost its connection to rank 1" in peer[0]["title"], peer[0]
        root = root_cause(run)
        assert root["ranks"] == [1], (name, root)
        assert findings.index(peer[0]) in root["consequences"], (name, root)
        causes.append(root["kind"])
    assert causes[0] == causes[1], causes
