"""The caching allocator's state at an out-of-memory error: real Python jobs with real PyTorch
under `traindoc run`, on the stand-in allocator of tests/fakes/torch_cuda (PyTorch 2.1's shapes),
whose observer call and OutOfMemoryError are those of a GPU. report.json, run.db and the
snapshot pickle must say what filled the memory."""
import os
import pickle
import sqlite3

from conftest import job_script

MiB = 1 << 20


def oom_findings(run):
    return [f for f in run.report["findings"] if f["kind"] in ("gpu-oom", "gpu-fragmentation")]


def states(run):
    with sqlite3.connect(run.run_dir / "run.db") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM allocator_states ORDER BY t_ns")]


def test_live_tensors_that_fill_the_gpu_are_gpu_oom_with_a_smaller_batch(traindoc):
    run = traindoc(job_script("allocator_oom.py", "live"))
    assert run.status == 1
    [state] = states(run)
    assert (state["requested"], state["allocated"], state["reserved"]) == (
        200 * MiB, 900 * MiB, 900 * MiB)
    assert (state["inactive"], state["largest_free"], state["segments"], state["ooms"]) == (
        0, 0, 9, 1)
    assert state["history"] == 0 and state["snapshot"] == ""
    [finding] = oom_findings(run)
    assert finding["kind"] == "gpu-oom" and finding["severity"] == "error"
    evidence = "\n".join(finding["evidence"])
    assert "live tensors 900 MiB (100%)" in evidence, evidence
    assert "live tensors filled it" in evidence
    assert "reduce the batch size" in finding["fix"]
    assert "expandable_segments" not in finding["fix"]


def test_free_blocks_too_small_for_the_request_are_gpu_fragmentation(traindoc):
    run = traindoc(job_script("allocator_oom.py", "fragmented"))
    assert run.status == 1
    [state] = states(run)
    assert (state["allocated"], state["reserved"], state["inactive"], state["largest_free"]) == (
        540 * MiB, 900 * MiB, 360 * MiB, 40 * MiB)
    assert state["inactive_split"] == 360 * MiB
    [finding] = oom_findings(run)
    assert finding["kind"] == "gpu-fragmentation"
    evidence = "\n".join(finding["evidence"])
    assert "free cached blocks 360 MiB (40%)" in evidence, evidence
    assert "the largest free block 40.0 MiB for a request of 200 MiB" in evidence
    assert "expandable_segments:True" in finding["fix"]
    assert "torch.cuda.empty_cache() between them" in finding["fix"]


def test_an_error_the_job_caught_without_a_word_is_told(traindoc):
    run = traindoc(job_script("allocator_oom.py", "caught"))
    assert run.status == 0, run.stderr
    assert b"trained on batches of 32" in run.stdout
    [state] = states(run)
    assert (state["requested"], state["allocated"]) == (1280 * MiB, 300 * MiB)
    [finding] = oom_findings(run)
    assert finding["kind"] == "gpu-oom" and finding["severity"] == "info"
    assert "an error it caught" in finding["title"]
    assert "went on" in finding["title"]
    assert "reduce the batch size" in finding["fix"]


def test_memory_history_saves_the_snapshot_and_names_the_sites(traindoc):
    run = traindoc(job_script("allocator_oom.py", "live"), "--memory-history")
    assert run.status == 1
    [state] = states(run)
    assert state["history"] == 1
    assert state["snapshot"] == f"allocator/oom-{state['pid']}-0.pickle"
    with open(run.run_dir / state["snapshot"], "rb") as f:
        snapshot = pickle.load(f)
    # What torch.cuda._memory_viz reads: the segments, with their blocks, and each device's trace.
    assert set(snapshot) >= {"segments", "device_traces"}
    assert all("blocks" in s and "total_size" in s for s in snapshot["segments"])
    assert [e["action"] for e in snapshot["device_traces"][0]].count("alloc") == 9
    with sqlite3.connect(run.run_dir / "run.db") as db:
        sites = db.execute("SELECT file, line, function, bytes, blocks, largest FROM "
                           "allocation_sites ORDER BY position").fetchall()
    [(file, line, function, total, blocks, largest)] = sites
    assert file.endswith("allocator_oom.py") and function == "build_model"
    source = open(file).read().splitlines()
    assert "the weights' line" in source[line - 1]
    assert (total, blocks, largest) == (900 * MiB, 9, 100 * MiB)
    [finding] = oom_findings(run)
    evidence = "\n".join(finding["evidence"])
    assert f"allocator_oom.py:{line} in build_model 900 MiB in 9 blocks of 100 MiB" in evidence
    assert state["snapshot"] in evidence


def test_without_the_flag_no_history_is_recorded(traindoc):
    # A variable inherited from elsewhere does not turn history on: only the flag does.
    env = {**os.environ, "TRAINDOC_MEMORY_HISTORY": "1000"}
    run = traindoc(job_script("allocator_oom.py", "live"), env=env)
    [state] = states(run)
    assert state["history"] == 0
    assert not (run.run_dir / "allocator").exists()
