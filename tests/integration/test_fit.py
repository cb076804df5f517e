"""traindoc fit: each trial a real supervised run of real PyTorch, the answer checked against a
sweep of direct runs measured by the kernel (wait4's peak RSS), several ranks under torchrun, and
the ends that are not an answer (another failure, --min out of memory, memory that does not grow,
a budget below the fixed cost, a command without the placeholder)."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import JOBS, PYTHON, ROOT, TRAINDOC, job_script, torchrun_ranks

MIB = 2**20
DEMO = [PYTHON, str(ROOT / "examples" / "demo" / "train.py"), "--image-size", "48x96",
        "--workers", "0", "--log-every", "100"]


def fit(tmp_path, *options, cmd, timeout=300):
    out = tmp_path / "fit"
    argv = [str(TRAINDOC), "fit", "--out", str(out), *map(str, options), "--", *map(str, cmd)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    result = json.loads((out / "fit.json").read_text()) if (out / "fit.json").exists() else None
    return proc, result


def direct_peak(cmd):
    """The kernel's peak RSS of a run of `cmd` without traindoc, and its exit status."""
    child = subprocess.Popen(list(map(str, cmd)), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss * 1024, child.returncode


# How near the truth the answer must be here. The search aims within 10 % (docs/BENCHMARKS.md,
# section 9, on an idle machine); beside the other tests, the peaks of fit's trials and of the
# sweep's direct runs both move by up to 55 MiB, some 7 samples of the demo, and answers of 43 for
# a truth of 48 and 39 for 43 were seen there.
WITHIN = 0.85


def test_the_demo_under_a_memory_budget_gets_the_batch_a_sweep_finds(tmp_path):
    # The same batch peaks up to 17 MiB apart from run to run on an idle machine (the allocator,
    # the pages the interpreter touches), and up to 55 MiB on a busy one (865 to 920 MiB at batch
    # 57): fit keeps 5 % (41 MiB) of the budget free, and the sweep below holds each direct run
    # to the whole budget. The usable memory lies below the step of about 50 MiB that the demo's
    # peaks take between batches 48 and 50 (near 855 MiB), where any search takes a trial more.
    budget = 820 * MIB
    proc, result = fit(tmp_path, "--param", "batch", "--min", 2, "--memory-budget", "820MiB",
                       "--headroom", 5, "--json",
                       cmd=[*DEMO, "--steps", 30, "--batch-size", "{batch}"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == result
    answer = result["recommended_batch"]
    assert len(result["trials"]) <= 5, result["trials"]
    assert result["model"]["meter"] == "rank 0 memory"
    assert 5 * MIB < result["model"]["per_sample_bytes"] < 12 * MIB  # the demo at 48x96
    fitted = [t for t in result["trials"] if t["batch"] == answer]
    assert fitted and fitted[0]["outcome"] == "fits"
    assert fitted[0]["peaks"]["rank 0 memory"] <= 0.95 * budget
    # The truth, swept with direct runs of the same steps (1 + 3): the answer fits the budget,
    # and the first batch above it whose peak goes over what fit may use (the budget less its
    # headroom, the question fit answers) leaves the answer within WITHIN of the truth.
    usable = 0.95 * budget
    peak, status = direct_peak([*DEMO, "--steps", 4, "--batch-size", answer])
    assert status == 0 and peak <= budget, (answer, peak / MIB)
    stride = max(1, answer // 20)
    batch = answer + stride
    while True:
        peak, status = direct_peak([*DEMO, "--steps", 4, "--batch-size", batch])
        assert status == 0
        if peak > usable:
            break
        assert batch < answer / WITHIN, f"{batch} fits too: {answer} is too far below the truth"
        batch += stride
    assert answer >= WITHIN * (batch - 1), (answer, batch)
    # Each trial is a run folder of its own, whose report says traindoc fit ended it.
    for trial in result["trials"]:
        report = json.loads((Path(trial["run_dir"]) / "report.json").read_text())
        assert report["findings"][0]["kind"] == "stop-requested", report["findings"][0]
        assert "traindoc fit" in report["findings"][0]["title"]


def test_under_torchrun_the_rank_that_holds_most_limits_the_batch(tmp_path):
    cmd = torchrun_ranks(2, JOBS / "fit_job.py", "--batch-size", "{batch}")
    # Two optimizer steps a trial: rank 0 keeps its samples at the first.
    proc, result = fit(tmp_path, "--param", "batch", "--memory-budget", "600MiB", "--headroom", 0,
                       "--target-batch", 256, "--steps", 1, cmd=cmd)
    assert proc.returncode == 0, proc.stderr
    answer = result["recommended_batch"]
    # Rank 0's peaks rise in steps (its kept tensor and the allocator's blocks): a trial or two
    # more than the demo's smooth curve.
    assert len(result["trials"]) <= 6, result["trials"]
    assert result["world_size"] == 2
    assert result["model"]["meter"] == "rank 0 memory"  # rank 0 keeps 6 MiB more per sample
    last = [t for t in result["trials"] if t["batch"] == answer][0]
    assert last["peaks"]["rank 0 memory"] <= 600 * MIB < last["peaks"]["rank 0 memory"] + 8 * MIB * 3
    assert last["peaks"]["rank 1 memory"] < last["peaks"]["rank 0 memory"] - 100 * MIB
    plan = result["accumulation"]
    assert plan["batch"] * plan["steps"] * 2 == plan["effective_batch"] == 256
    assert plan["batch"] <= answer and plan["command"][-1] == str(plan["batch"])
    # The table, for people.
    assert f"recommended batch: {answer}" in proc.stdout
    assert "rank 0 memory" in proc.stdout and "accumulate gradients over" in proc.stdout
    assert proc.stdout.count("fits") + proc.stdout.count("over budget") >= len(result["trials"])


def test_a_trial_that_fails_for_another_reason_stops_with_its_root_cause(tmp_path):
    proc, result = fit(tmp_path, "--param", "bs", "--memory-budget", "2GiB",
                       cmd=job_script("fit_job.py", "--mode", "fails-from", "--limit", 8,
                                      "--batch-size", "{bs}"))
    assert proc.returncode == 125, proc.stderr
    assert [t["outcome"] for t in result["trials"]] == ["fits", "failed"]
    assert result["recommended_batch"] is None
    assert "failed for a reason other than memory" in result["error"]
    # The trial's own report, as traindoc run prints it.
    assert "ValueError: the augmentation cannot crop 8 samples at once" in proc.stderr


def test_a_min_already_out_of_gpu_memory_is_said_so(tmp_path):
    proc, result = fit(tmp_path, "--param", "batch", "--min", 20,
                       cmd=job_script("fit_job.py", "--mode", "gpu-oom-from", "--limit", 16,
                                      "--batch-size", "{batch}"))
    assert proc.returncode == 125, proc.stderr
    assert [t["outcome"] for t in result["trials"]] == ["out of memory"]
    assert result["error"].startswith("batch 20 (--min) does not fit:")
    assert "out of GPU memory" in result["error"] or "CUDA" in result["error"], result["error"]


def test_memory_that_does_not_grow_with_the_parameter_gets_no_model(tmp_path):
    proc, result = fit(tmp_path, "--param", "batch", "--memory-budget", "1GiB",
                       cmd=job_script("fit_job.py", "--mode", "plain", "--fixed-mib", 50,
                                      "--batch-size", "{batch}"))
    assert proc.returncode == 125, proc.stderr
    assert "memory does not grow with {batch}" in result["error"]
    assert result["recommended_batch"] is None and len(result["trials"]) == 2
    # With --max, the largest batch allowed, where it fits.
    (tmp_path / "fit").rename(tmp_path / "first")
    proc, result = fit(tmp_path, "--param", "batch", "--memory-budget", "1GiB", "--max", 300,
                       cmd=job_script("fit_job.py", "--mode", "plain", "--fixed-mib", 50,
                                      "--batch-size", "{batch}"))
    assert proc.returncode == 0, proc.stderr
    assert result["recommended_batch"] == 300


def test_a_job_that_counts_no_steps_is_ended_once_its_memory_stays_flat(tmp_path):
    """A program without PyTorch (no steps counted) holding 50 MiB and 3 MiB per sample, then
    working for a minute: each trial ends once its memory stayed flat for --flat-seconds while
    it worked, not after the minute, and the answer fits the budget."""
    proc, result = fit(tmp_path, "--param", "batch", "--memory-budget", "400MiB",
                       "--flat-seconds", 1.5, timeout=150,
                       cmd=job_script("fit_job.py", "--mode", "working", "--fixed-mib", 50,
                                      "--per-sample-mib", 3, "--batch-size", "{batch}"))
    assert proc.returncode == 0, proc.stderr
    assert result["flat_seconds"] == 1.5
    answer = result["recommended_batch"]
    assert 2.5 < result["model"]["per_sample_bytes"] / MIB < 3.5, result["model"]
    assert len(result["trials"]) <= 5, result["trials"]
    for trial in result["trials"]:
        assert trial["seconds"] < 15, trial
        report = json.loads((Path(trial["run_dir"]) / "report.json").read_text())
        assert "memory had stayed flat for 1.5 s" in report["findings"][0]["title"], report
    # 360 MiB usable (10 % headroom): 50 MiB, the interpreter's 10 or so, 3 MiB a sample.
    assert 90 <= answer <= 100, answer
    # A PyTorch job counts steps from `import torch` on: 4 s of preparation with flat memory
    # before its first step do not end its trial.
    (tmp_path / "fit").rename(tmp_path / "first")
    proc, result = fit(tmp_path, "--param", "batch", "--min", 8, "--max", 8, "--memory-budget",
                       "2GiB", "--flat-seconds", 1.5,
                       cmd=job_script("fit_job.py", "--prepare-s", 4, "--batch-size", "{batch}"))
    assert proc.returncode == 0, proc.stderr
    (trial,) = result["trials"]
    report = json.loads((Path(trial["run_dir"]) / "report.json").read_text())
    assert "had run its 4 optimizer steps" in report["findings"][0]["title"], report


def test_a_budget_below_the_fixed_cost_says_the_fixed_cost(tmp_path):
    # The batch from a variable, as some jobs take it.
    proc, result = fit(tmp_path, "--param", "batch", "--env", "FIT_BATCH", "--memory-budget",
                       "150MiB", cmd=job_script("fit_job.py", "--mode", "plain", "--fixed-mib",
                                                200, "--per-sample-mib", 2))
    assert proc.returncode == 125, proc.stderr
    assert [t["outcome"] for t in result["trials"]] == ["over budget", "over budget"]
    assert [t["batch"] for t in result["trials"]] == [1, 2]
    fixed = result["model"]["fixed_bytes"] / MIB
    assert 200 <= fixed < 230, fixed  # 200 MiB and the interpreter's own
    assert 1.5 < result["model"]["per_sample_bytes"] / MIB < 2.5
    assert result["error"].startswith("no batch fits: rank 0 memory holds about")


@pytest.mark.parametrize("delay", [0, 0.6])  # as trial 2 starts, and while its job runs
def test_a_stop_ends_the_fit_with_what_it_found(tmp_path, delay):
    """A Ctrl-C (SIGINT to traindoc) during a trial, or between two, ends the fit as a shell tells
    an interrupted command (130), with fit.json saying so and the largest batch that fit."""
    out = tmp_path / "fit"
    argv = [str(TRAINDOC), "fit", "--out", str(out), "--param", "batch", "--memory-budget", "1GiB",
            "--", *job_script("fit_job.py", "--mode", "plain", "--fixed-mib", 20,
                              "--per-sample-mib", 1, "--batch-size", "{batch}")]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        deadline = time.monotonic() + 60
        while not (out / "trial-02-batch-8").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130
    result = json.loads((out / "fit.json").read_text())
    assert result["error"].startswith("stopped by SIGINT"), result["error"]
    assert result["error"].endswith("the largest batch that fit so far: 1"), result["error"]
    assert result["recommended_batch"] is None


def test_bad_input_is_a_usage_error_before_any_trial(tmp_path):
    proc, _ = fit(tmp_path, "--param", "batch", cmd=job_script("fit_job.py", "--batch-size", 4))
    assert proc.returncode == 2
    assert "the command holds no {batch}" in proc.stderr
    assert not (tmp_path / "fit").exists()
    for options, words in ((("--memory-budget", "NaNMiB"), "not a size"),
                           (("--memory-budget", "12 parsecs"), "not a size"),
                           (("--min", 8, "--max", 4), "--max is below --min"),
                           (("--headroom", "nan"), "finite"),
                           (("--steps", 0), "--steps")):
        proc, _ = fit(tmp_path, "--param", "batch", *options,
                      cmd=job_script("fit_job.py", "--batch-size", "{batch}"))
        assert proc.returncode == 2, (options, proc.stderr)
        assert words in proc.stderr, (options, proc.stderr)
    proc, _ = fit(tmp_path, cmd=job_script("fit_job.py", "--batch-size", "{batch}"))
    assert proc.returncode == 2 and "--param" in proc.stderr
