"""Everyday errors of a training loop with real PyTorch: a batch of samples of unequal shapes, raised
in a DataLoader worker and re-raised in its rank; a layer fed another number of features or another
dtype than it was built for; a checkpoint of a DDP-wrapped model loaded into the bare model, or one
that loading with weights_only refuses; autograd's in-place, second-backward and NaN errors; the
--local_rank flag the old launcher passes; NCCL asked of a CPU-only build; a multiprocessing.Pool
worker's exception; grayscale images for an RGB model; a dataset that holds an open file, given to
workers that spawn starts; torch.multiprocessing.spawn called outside `if __name__ == "__main__":`;
an error printed after a progress bar's redraws; a script written for torchrun started without it;
a dataset file that is no image; a loss that broadcasts its targets and softmax without dim, which
only warn; DDP's needless search for unused parameters; a last batch of one sample; a sample of
None; the threads of two processes that die one after the other; a __getattr__ that calls itself
without end; init_process_group given a world or rank the launch does not match; a class that
spawned workers or torch.load cannot find; float16 on the CPU; backward() on a loss not reduced;
pretrained weights downloaded where no name resolves. The title says what happened and the fix names the sizes, types or keys."""
import re
import shutil
import sqlite3
import subprocess

import pytest
from PIL import Image

from conftest import PYTHON, free_port, python_job, torchrun_ranks

UNEQUAL_SAMPLES = """
import torch
from torch.utils.data import DataLoader, Dataset
class Crops(Dataset):
    def __len__(self): return 16
    def __getitem__(self, i): return torch.zeros(3, 32 + i % 3, 32)
for batch in DataLoader(Crops(), batch_size=4, num_workers=2): pass
"""

WRONG_FEATURES = """
import torch
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.Linear(8 * 30 * 30, 10))
model(torch.randn(4, 3, 64, 64))
"""

FLOAT64_FROM_NUMPY = """
import numpy, torch
model = torch.nn.Linear(8, 2)
model(torch.from_numpy(numpy.random.rand(4, 8)))
"""

# DistributedDataParallel's state_dict, saved as is, then loaded into the bare model.
DDP_CHECKPOINT = """
import os, sys, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1])
dist.init_process_group("gloo", rank=0, world_size=1)
def build(): return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
path = sys.argv[2]
torch.save(DistributedDataParallel(build()).state_dict(), path)
build().load_state_dict(torch.load(path))
"""

# A checkpoint with the run's arguments in it, loaded the way PyTorch 2.6+ loads by default.
ARGS_IN_CHECKPOINT = """
import argparse, sys, torch
torch.save({"model": {}, "args": argparse.Namespace(lr=0.1)}, sys.argv[1])
torch.load(sys.argv[1], weights_only=True)
"""

INPLACE_AFTER_SIGMOID = """
import torch
model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Sigmoid(), torch.nn.ReLU(inplace=True))
model(torch.randn(2, 8)).sum().backward()
"""

SCRIPT_WITH_ARGS = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.parse_args()
"""

POOL_WORKER_RAISES = """
from multiprocessing import Pool
def tokenize(line):
    return len(line.split()) // (len(line) - 5)
if __name__ == "__main__":
    with Pool(2) as pool:
        print(sum(pool.map(tokenize, ["hello world", "abcde"])))
"""

GRAYSCALE_FOR_RGB = """
import torch
from torch.utils.data import DataLoader, Dataset
class Scans(Dataset):  # single-channel images, as a grayscale folder gives them
    def __len__(self): return 8
    def __getitem__(self, i): return torch.rand(1, 32, 32)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU())
for batch in DataLoader(Scans(), batch_size=4):
    model(batch)
"""

# A square root of zero, whose gradient is NaN, caught by anomaly detection.
NAN_GRADIENT = """
import torch
torch.autograd.set_detect_anomaly(True)
weights = torch.zeros(3, requires_grad=True)
loss = (torch.sqrt(weights) * 0).sum()
loss.backward()
"""

# An RNN's hidden state carried from one step to the next without detach().
HIDDEN_STATE_KEPT = """
import torch
rnn = torch.nn.RNN(4, 8)
hidden = torch.zeros(1, 2, 8)
for step in range(3):
    out, hidden = rnn(torch.randn(5, 2, 4), hidden)
    out.sum().backward()
"""

# The spawn start method pickles the dataset for each worker; an open file cannot be pickled.
DATASET_WITH_OPEN_FILE = """
import sys, torch
from torch.utils.data import DataLoader, Dataset
class Records(Dataset):
    def __init__(self): self.file = open(sys.argv[0], "rb")
    def __len__(self): return 8
    def __getitem__(self, i): return torch.ones(2)
if __name__ == "__main__":
    for batch in DataLoader(Records(), batch_size=2, num_workers=2, multiprocessing_context="spawn"):
        pass
"""

# spawn imports the main script again in each process it starts, which starts processes again.
SPAWN_WITHOUT_MAIN_GUARD = """
import torch.multiprocessing as mp
def work(rank):
    print("rank", rank)
mp.spawn(work, nprocs=2)
"""

# A progress bar redrawn on one line (tqdm's way) for more than a kept line, then an error.
PROGRESS_BAR_THEN_ERROR = """
import sys
for i in range(300):
    sys.stderr.write("\\rEpoch 1: %d/300 [00:01<00:02, 12.3it/s, loss=0.4321]" % i)
    sys.stderr.flush()
{"image": 0}["label"]
"""

# A dataset with a file that is no image (an HTML page saved as .jpg), read in a worker.
NOT_AN_IMAGE = """
import sys, torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
class Images(Dataset):
    def __len__(self): return len(sys.argv) - 1
    def __getitem__(self, i): return torch.tensor(list(Image.open(sys.argv[i + 1]).size))
for batch in DataLoader(Images(), batch_size=2, num_workers=2): pass
"""

# Trains without an error, and learns the wrong thing: the loss broadcasts [64] targets against
# [64, 1] predictions, and softmax normalizes a [8, 5, 3] tensor across its first dimension.
SILENTLY_WRONG = """
import torch
model = torch.nn.Linear(4, 1)
x = torch.randn(64, 4)
for step in range(3):
    loss = torch.nn.functional.mse_loss(model(x), x.sum(1))
    probs = torch.nn.functional.softmax(torch.randn(8, 5, 3))
"""

# DDP told to look for unused parameters in a model that uses them all.
NEEDLESS_UNUSED_SEARCH = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
dist.init_process_group("gloo")
model = DistributedDataParallel(torch.nn.Linear(4, 2), find_unused_parameters=True)
for step in range(2):
    model(torch.randn(8, 4)).sum().backward()
"""

# Rank 1's loader thread dies; both ranks finish. Their output has no prefix.
SPAWNED_THREAD_DIES = """
import os, threading, torch.multiprocessing as mp
def load():
    raise OSError("[Errno 5] Input/output error")
def work(rank):
    if rank == 1:
        thread = threading.Thread(target=load, name="loader")
        thread.start()
        thread.join()
    print(f"rank {rank} pid {os.getpid()}", flush=True)  # one write: print's parts interleave
if __name__ == "__main__":
    mp.spawn(work, nprocs=2)
"""

# Nine samples in batches of four: the last batch has one sample, which BatchNorm cannot train on.
LAST_BATCH_OF_ONE = """
import torch
from torch.utils.data import DataLoader
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 2))
for batch in DataLoader(torch.randn(9, 8), batch_size=4):
    model(batch).sum().backward()
"""

# A dataset that skips a bad sample by returning None.
SAMPLE_OF_NONE = """
import torch
from torch.utils.data import DataLoader, Dataset
class Samples(Dataset):
    def __len__(self): return 8
    def __getitem__(self, i):
        if i == 5:
            return None
        return torch.ones(2)
for batch in DataLoader(Samples(), batch_size=4): pass
"""

# The processes torch.multiprocessing.spawn starts read env:// that nobody set.
SPAWN_WITHOUT_MASTER_ADDR = """
import torch.distributed as dist, torch.multiprocessing as mp
def work(rank):
    dist.init_process_group("gloo", rank=rank, world_size=2)
if __name__ == "__main__":
    mp.spawn(work, nprocs=2)
"""


def root_cause(run):
    return next(f for f in run.report["findings"] if f["root_cause"])


def failed_root(run):
    """The root cause of a job that must have exited with code 1."""
    assert run.status == 1, run.stderr.decode()[-2000:]
    return root_cause(run)


def test_a_batch_of_unequal_samples_in_a_worker(traindoc):
    run = traindoc(python_job(UNEQUAL_SAMPLES))
    root = failed_root(run)
    assert root["kind"] == "python-exception", root
    assert "in the worker: RuntimeError: stack expects each tensor to be equal size" in \
        "\n".join(root["evidence"])
    assert "([3, 32, 32] at entry 0, [3, 33, 32] at entry 1), so the default collate cannot " \
           "stack them" in root["fix"], root["fix"]


LOGGED_THEN_TRAINED = """
import logging, sys, time, torch
model = torch.nn.Linear(4, 1)
try:
    model.load_state_dict(torch.load("pretrained/backbone.pt"))
except FileNotFoundError:
    logging.exception("no pretrained weights, training from scratch")
start = time.time()
while time.time() - start < 2.5:
    model(torch.randn(8, 4)).sum().backward()
sys.exit("FAILED: val_acc below 0.50 threshold")
"""


def test_an_exception_logged_before_training_on_is_not_the_end(traindoc):
    """A missing checkpoint, logged and caught; the job trains on and ends with a message of its
    own, which is what it ended with."""
    run = traindoc(python_job(LOGGED_THEN_TRAINED), "--interval", "0.2")
    root = failed_root(run)
    assert root["kind"] == "nonzero-exit", root
    assert root["title"].endswith("exited with code 1: FAILED: val_acc below 0.50 threshold"), root
    assert "backbone.pt" not in root["fix"]


def test_a_layer_fed_another_number_of_features(traindoc):
    run = traindoc(python_job(WRONG_FEATURES))
    root = failed_root(run)
    assert root["title"].endswith("mat1 and mat2 shapes cannot be multiplied (4x30752 and 7200x10)")
    assert root["fix"].startswith("A layer built for 7200 input features got 30752"), root["fix"]


def test_float64_from_numpy_into_a_float32_layer(traindoc):
    run = traindoc(python_job(FLOAT64_FROM_NUMPY))
    assert "NumPy arrays are float64" in failed_root(run)["fix"]


def test_a_checkpoint_of_a_ddp_model_loaded_into_the_bare_model(traindoc, tmp_path):
    run = traindoc(python_job(DDP_CHECKPOINT) + [str(free_port()), str(tmp_path / "ckpt.pt")])
    root = failed_root(run)
    assert root["title"].endswith(
        ": the checkpoint's keys start with 'module.', the model's do not: it was saved from a "
        "model wrapped in DistributedDataParallel or DataParallel"), root["title"]
    assert "k.removeprefix('module.')" in root["fix"]
    assert any("known error torch.state-dict-mismatch: missing_keys" in e for e in root["evidence"])


def test_a_checkpoint_that_weights_only_loading_refuses(traindoc, tmp_path):
    run = traindoc(python_job(ARGS_IN_CHECKPOINT) + [str(tmp_path / "ckpt.pt")])
    root = failed_root(run)
    assert root["title"].endswith(": torch.load refused the checkpoint: it holds "
                                  "argparse.Namespace, which loading with weights_only does not "
                                  "allow"), root["title"]
    assert "add_safe_globals([argparse.Namespace])" in root["fix"]


def test_an_inplace_op_on_a_tensor_autograd_saved(traindoc):
    run = traindoc(python_job(INPLACE_AFTER_SIGMOID))
    root = failed_root(run)
    assert root["title"].endswith(": output 0 of SigmoidBackward0 [2, 4], saved for the backward "
                                  "pass, was changed in place before backward()"), root["title"]


def test_a_hidden_state_kept_across_steps(traindoc):
    run = traindoc(python_job(HIDDEN_STATE_KEPT))
    root = failed_root(run)
    assert root["title"].endswith(
        ": backward() ran a second time through a graph whose saved tensors were freed")
    assert "an RNN's hidden state" in root["fix"]


def test_a_nan_gradient_cites_the_forward_call(traindoc):
    run = traindoc(python_job(NAN_GRADIENT))
    root = failed_root(run)
    assert root["title"].endswith(": the backward of SqrtBackward0 returned NaN (anomaly "
                                  "detection)"), root["title"]
    assert "the forward call that made it, at <string>:5 in <module>" in root["evidence"], \
        root["evidence"]


def test_the_local_rank_flag_of_the_old_launcher(traindoc, tmp_path):
    """torch.distributed.launch passes --local_rank to a script written for torchrun."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT_WITH_ARGS)
    run = traindoc([PYTHON, "-m", "torch.distributed.launch", "--nproc_per_node", "2",
                    "--master_port", str(free_port()), "--redirects", "2", "--tee", "2",
                    str(script)])
    root = failed_root(run)
    assert root["kind"] == "bad-arguments", root
    assert "which torch.distributed.launch passes to every rank" in root["title"], root["title"]
    assert sorted(root["ranks"]) == [0, 1]  # both ranks' errors are one finding
    assert "LOCAL_RANK" in root["fix"]


def test_nccl_asked_of_a_cpu_only_build(traindoc, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch.distributed as dist\ndist.init_process_group('nccl')\n")
    # Both ranks fail within the launcher's first look, however loaded the machine: it stops none.
    run = traindoc(torchrun_ranks(2, "--monitor_interval", 8, script))
    root = failed_root(run)
    assert root["kind"] == "cuda-unavailable", root
    assert sorted(root["ranks"]) == [0, 1]
    assert "gloo backend" in root["fix"]


def test_a_pool_workers_exception_cites_the_workers_line(traindoc, tmp_path):
    script = tmp_path / "prepare.py"
    script.write_text(POOL_WORKER_RAISES)
    run = traindoc([PYTHON, str(script)])
    root = failed_root(run)
    assert f"the exception it was raised from, at {script}:4 in tokenize: return len(line.split())" \
        " // (len(line) - 5)" in root["evidence"], root["evidence"]
    assert root["fix"].startswith(f"Your code raised it at {script}:4: fix it there."), root["fix"]


def test_grayscale_images_for_a_model_built_for_rgb(traindoc):
    run = traindoc(python_job(GRAYSCALE_FOR_RGB))
    root = failed_root(run)
    assert root["title"].endswith(": a convolution built for 3 input channels got 1 (input [4, 1, "
                                  "32, 32], weight [16, 3, 3, 3])"), root["title"]
    assert root["fix"].startswith("Grayscale images for a model built for RGB"), root["fix"]


def test_a_dataset_holding_an_open_file_for_spawned_workers(traindoc, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(DATASET_WITH_OPEN_FILE)
    run = traindoc([PYTHON, str(script)])
    root = failed_root(run)
    assert root["title"].endswith(": a _io.BufferedReader object cannot be pickled"), root["title"]
    assert "open files and connections in each worker on first use" in root["fix"], root["fix"]
    assert any(e.startswith(f"at {script}:9 in <module>") for e in root["evidence"]), root["evidence"]


def test_spawn_outside_the_main_guard(traindoc, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SPAWN_WITHOUT_MAIN_GUARD)
    run = traindoc([PYTHON, str(script)])
    root = failed_root(run)
    # The process that spawn started raised at its start; spawn's parent only saw it end.
    spawned = [p for p in run.report["processes"] if "spawn_main" in p["cmdline"]]
    assert root["pids"][0] in [p["pid"] for p in spawned], (root, spawned)
    assert "re-ran the main script's code that starts processes" in root["title"], root["title"]
    assert "if __name__ == '__main__':" in root["fix"], root["fix"]
    # spawn's resource tracker is no worker: the spawned processes are workers 0 and 1.
    assert sorted(p.get("worker") for p in spawned) == [0, 1], spawned


def test_an_error_after_a_progress_bar(traindoc):
    run = traindoc(python_job(PROGRESS_BAR_THEN_ERROR))
    root = failed_root(run)
    assert root["title"].endswith("raised KeyError: 'label'"), root["title"]
    # The traceback starts on the bar's line, after its last redraw: it is whole.
    assert "stderr lines 1-3 at" in root["evidence"][1], root["evidence"]
    assert "(lines of this traceback were not kept" not in "\n".join(root["evidence"])


def test_a_script_for_torchrun_started_without_it(traindoc):
    run = traindoc(python_job("import os, torch.distributed as dist\n"
                              "dist.init_process_group('gloo')\n"))
    root = failed_root(run)
    assert root["title"].endswith(": RANK, which torchrun sets, is not set: no launcher of "
                                  "torch.distributed started this process"), root["title"]
    assert "torchrun --nproc_per_node N" in root["fix"], root["fix"]


def test_a_file_that_is_no_image_in_a_worker(traindoc, tmp_path):
    good, bad = tmp_path / "good.png", tmp_path / "bad.jpg"
    Image.new("RGB", (8, 8)).save(good)
    bad.write_text("<html>403 Forbidden</html>")
    run = traindoc(python_job(NOT_AN_IMAGE) + [str(good)] * 3 + [str(bad)])
    root = failed_root(run)
    assert root["title"].endswith(f": PIL cannot read the image file {bad}"), root["title"]
    assert any(e.startswith("in the worker: PIL.UnidentifiedImageError") for e in
               root["evidence"]), root["evidence"]
    assert ".verify()" in root["fix"], root["fix"]


def test_warnings_of_silently_wrong_results(traindoc):
    run = traindoc(python_job(SILENTLY_WRONG))
    assert run.status == 0, run.stderr.decode()[-2000:]
    titles = [f["title"] for f in run.report["findings"] if f["kind"] == "framework-warning"]
    assert titles == [
        "a loss compares targets of shape [64] with predictions of shape [64, 1] at <string>:6: "
        "broadcasting pairs each prediction with every target",
        "softmax without dim at <string>:7: it picks dimension 0, the batch, for 0-, 1- and "
        "3-dimensional inputs"], run.report["findings"]
    assert all(f["severity"] == "warning" and not f["root_cause"] for f in run.report["findings"])


def test_a_needless_search_for_unused_parameters(traindoc, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(NEEDLESS_UNUSED_SEARCH)
    run = traindoc(torchrun_ranks(2, script))
    assert run.status == 0, run.stderr.decode()[-2000:]
    (hint,) = run.report["findings"]
    assert hint["kind"] == "framework-warning" and hint["severity"] == "info", hint
    assert sorted(hint["ranks"]) == [0, 1], hint
    assert hint["title"].startswith("DDP looks for unused parameters every step"), hint


def test_a_thread_that_died_in_a_spawned_rank(traindoc, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SPAWNED_THREAD_DIES)
    run = traindoc([PYTHON, str(script)])
    assert run.status == 0, run.stderr.decode()[-2000:]
    pid = int(re.search(rb"rank 1 pid (\d+)", run.stdout).group(1))
    (thread,) = [f for f in run.report["findings"] if f["title"].startswith("thread loader of ")]
    assert thread["pids"] == [pid], thread
    assert thread["severity"] == "warning"


THREADS_DIE_ONE_AFTER_THE_OTHER = """
import multiprocessing as mp, os, threading, time
def child(index, name, barrier):
    os.write(1, f"{os.getpid()} {name}\\n".encode())  # one write: print's parts interleave
    def load():
        barrier.wait()
        time.sleep(0.5 * index)  # one traceback after the other: lines that do not interleave
        raise KeyError(name)
    thread = threading.Thread(target=load, name=name)
    thread.start()
    thread.join()
if __name__ == "__main__":
    barrier = mp.Barrier(2)
    names = ("shard-reader of a long name", "prefetch")
    children = [mp.Process(target=child, args=(i, n, barrier)) for i, n in enumerate(names)]
    for c in children: c.start()
    for c in children: c.join()
"""


def test_the_threads_of_two_processes_are_marked_by_name(traindoc):
    """Two processes' threads die within a second, their tracebacks unprefixed on one output: the
    hook marks each death with the thread's name (its first 16 bytes), and each traceback is the
    process's that marked a thread of its name."""
    run = traindoc(python_job(THREADS_DIE_ONE_AFTER_THE_OTHER))
    assert run.status == 0, run.stderr.decode()[-2000:]
    pids = {name: int(pid) for pid, name in
            re.findall(r"(\d+) (shard-reader of a long name|prefetch)\n", run.stdout.decode())}
    with sqlite3.connect(run.run_dir / "run.db") as db:
        marks = db.execute("SELECT pid, text FROM events WHERE kind = 'thread-died'").fetchall()
    assert sorted(marks) == sorted([(pids["shard-reader of a long name"], "shard-reader of "),
                                    (pids["prefetch"], "prefetch")]), marks
    for name, pid in pids.items():
        (thread,) = [f for f in run.report["findings"] if f["title"].startswith(f"thread {name} of ")]
        assert thread["pids"] == [pid], thread


def test_a_last_batch_of_one_sample_for_batch_norm(traindoc):
    run = traindoc(python_job(LAST_BATCH_OF_ONE))
    root = failed_root(run)
    assert root["title"].endswith(": batch normalization got one sample per channel in training "
                                  "(input [1, 16])"), root["title"]
    assert "drop_last=True" in root["fix"], root["fix"]


def test_a_sample_of_none(traindoc):
    run = traindoc(python_job(SAMPLE_OF_NONE))
    root = failed_root(run)
    assert root["title"].endswith(": the dataset returned None for a sample, which the default "
                                  "collate cannot batch"), root["title"]
    assert "s is not None" in root["fix"], root["fix"]


# init_process_group given a world size or a rank in code, against torchrun's two ranks.
INIT_ARGUMENTS = """
import datetime, os, sys, torch.distributed as dist
rank = int(os.environ["RANK"])
world_size, rank = {"world-4": (4, rank), "world-1": (1, rank), "rank-0": (2, 0)}[sys.argv[1]]
dist.init_process_group("gloo", rank=rank, world_size=world_size,
                        timeout=datetime.timedelta(seconds=3))
"""

# torch.multiprocessing.spawn starts two processes for a world of four.
SPAWN_WORLD_OF_FOUR = """
import datetime, sys, torch.distributed as dist, torch.multiprocessing as mp
def run(rank):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[1], rank=rank,
                            world_size=4, timeout=datetime.timedelta(seconds=3))
if __name__ == "__main__":
    mp.spawn(run, nprocs=2)
"""


@pytest.mark.parametrize("case, kind, title", [
    ("world-4", "rendezvous-timeout",
     "init_process_group was asked for a world of 4 ranks, but the launcher set WORLD_SIZE=2"),
    ("world-1", "python-exception",
     "init_process_group was asked for a world of 1 rank, but the launcher set WORLD_SIZE=2"),
    ("rank-0", "rendezvous-timeout", "more than one process passed rank=0 to init_process_group"),
])
def test_init_process_group_arguments_against_the_launch(traindoc, tmp_path, case, kind, title):
    """A world size or rank written in code that torchrun's launch does not match: the ranks
    wait for ranks never started (or gloo refuses a rank beyond the world), and the report says
    why, with each rank's call beside what torchrun set."""
    script = tmp_path / "train.py"
    script.write_text(INIT_ARGUMENTS)
    run = traindoc(torchrun_ranks(2, script, case))
    root = failed_root(run)
    assert root["kind"] == kind, root
    assert root["title"].endswith(": " + title), root["title"]
    calls = [line for line in root["evidence"] if " called init_process_group(rank=" in line]
    assert len(calls) == 2, root["evidence"]  # both ranks' calls say it
    assert "os.environ[\"RANK\"]" in root["fix"], root["fix"]


def test_spawn_for_a_world_larger_than_it_started(traindoc, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SPAWN_WORLD_OF_FOUR)
    run = traindoc([PYTHON, str(script), str(free_port())])
    root = failed_root(run)
    assert root["kind"] == "rendezvous-timeout", root
    assert root["title"].endswith(": init_process_group was asked for a world of 4 ranks, but "
                                  "torch.multiprocessing.spawn started 2 processes on this "
                                  "machine"), root["title"]
    assert "nprocs=world_size" in root["fix"], root["fix"]


def test_a_function_that_calls_itself_without_end(traindoc):
    run = traindoc(python_job("class Config:\n"
                              "    def __getattr__(self, name):\n"
                              "        return self.defaults[name]\n"
                              "Config().lr\n"))
    root = failed_root(run)
    assert root["title"].endswith(": calls nested past Python's recursion limit"), root["title"]
    assert "[Previous line repeated N more times]" in root["fix"], root["fix"]


def test_spawned_ranks_without_master_addr(traindoc, tmp_path, monkeypatch):
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    script = tmp_path / "train.py"
    script.write_text(SPAWN_WITHOUT_MASTER_ADDR)
    run = traindoc([PYTHON, str(script)])
    root = failed_root(run)
    assert root["title"].endswith(": MASTER_ADDR is not set in the process "
                                  "torch.multiprocessing.spawn started, and init_process_group's "
                                  "env:// reads it"), root["title"]
    assert "before mp.spawn" in root["fix"], root["fix"]


# A dataset class defined under the main guard, for workers that spawn starts: each imports the
# script as __mp_main__ without running that block.
DATASET_UNDER_MAIN_GUARD = """
import torch
from torch.utils.data import DataLoader, Dataset
if __name__ == "__main__":
    class Squares(Dataset):
        def __len__(self): return 8
        def __getitem__(self, i): return torch.tensor([float(i * i)])
    for x in DataLoader(Squares(), batch_size=2, num_workers=2, multiprocessing_context="spawn"):
        pass
"""

# A whole model saved by a script whose own class it is, loaded by another script.
SAVE_WHOLE_MODEL = """
import sys, torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)
torch.save(Net(), sys.argv[1])
"""


def test_a_class_that_spawned_workers_cannot_find(traindoc, tmp_path):
    """One worker: two that fail at once may interleave their tracebacks within lines, which
    test_workers_that_cannot_find_a_class_of_python_c allows for."""
    script = tmp_path / "train.py"
    script.write_text(DATASET_UNDER_MAIN_GUARD.replace("num_workers=2", "num_workers=1"))
    root = failed_root(traindoc([PYTHON, str(script)]))
    assert root["title"].endswith(": a process that spawn started could not find Squares in the "
                                  "main script"), root["title"]
    assert "define Squares at the main script's top level" in root["fix"], root["fix"]
    assert not any("<string>" in e for e in root["evidence"]), root["evidence"]  # spawn's


def test_workers_that_cannot_find_a_class_of_python_c(traindoc):
    """Both forkserver workers print the same traceback as each dies: each is its own."""
    code = DATASET_UNDER_MAIN_GUARD.replace('if __name__ == "__main__":\n', "if True:\n")
    run = traindoc(python_job(code.replace('"spawn"', '"forkserver"')))
    root = failed_root(run)
    explained = r"worker \d of rank 0 \(pid \d+\): unpickling could not find Squares in " \
                r"the main module, which is no file \(.*\)"
    # On a loaded machine the two workers' writes can interleave within lines (a frame indented
    # by the other's spaces, carets amid text): no text tells whose each piece is, and only one
    # traceback may be whole. The finding must still explain the failure.
    lines = (run.run_dir / "logs" / "stderr.log").read_text().splitlines()
    interleaved = any((line.lstrip().startswith("File ") and not line.startswith('  File "'))
                      or ("^" in line and line.strip(" ^")) for line in lines)
    if interleaved:
        assert any(re.fullmatch(explained, f["title"]) for f in run.report["findings"]), \
            run.report["findings"]
        return
    assert re.fullmatch(explained, root["title"]), root["title"]
    kinds = [f["kind"] for f in run.report["findings"]]
    assert "worker-exit" not in kinds, run.report["findings"]


def test_a_whole_model_loaded_by_another_script(traindoc, tmp_path):
    saver, loader, path = tmp_path / "train.py", tmp_path / "evaluate.py", tmp_path / "model.pt"
    saver.write_text(SAVE_WHOLE_MODEL)
    assert subprocess.run([PYTHON, str(saver), str(path)]).returncode == 0
    loader.write_text(f"import torch\ntorch.load({str(path)!r}, weights_only=False)\n")
    root = failed_root(traindoc([PYTHON, str(loader)]))
    assert root["title"].endswith(": the file names Net of the main script that saved it, which "
                                  "the loading program's main script lacks"), root["title"]
    assert "`from <its module> import Net`" in root["fix"], root["fix"]


# The texts of Debian's PyTorch 1.13: later versions have a float16 addmm on the CPU.
@pytest.mark.parametrize("code, title, fix", [
    ("torch.nn.Linear(3, 2).half()(torch.randn(4, 3).half())",
     "the operation addmm_impl_cpu_ does not take Half tensors", "model.float()"),
    ("torch.nn.functional.softmax(torch.tensor([1, 2]), 0)",
     "the operation softmax_lastdim_kernel_impl does not take Long tensors", ".float() / 255"),
    ("torch.nn.functional.cross_entropy(torch.nn.Linear(2, 3)(torch.randn(4, 2)), "
     "torch.tensor([0, 1, 2, 1]), reduction='none').backward()",
     "backward() on a loss of more than one value", "reduction='none'"),
    ("w = torch.zeros(3, requires_grad=True)\nw -= 0.1",
     "was changed in place while autograd recorded", "`with torch.no_grad():`"),
    ("torch.nn.functional.cross_entropy(torch.randn(4, 3), torch.tensor([[0], [1], [2], [1]]))",
     "cross_entropy or nll_loss got a target with more than one value per sample",
     "target.squeeze(1)"),
    ("torch.nn.functional.mse_loss(torch.nn.Linear(2, 1)(torch.randn(4, 2)).squeeze(1), "
     "torch.tensor([1, 0, 1, 0])).backward()",
     "a tensor of type Long where Float is expected", "mse_loss"),
    ("torch.nn.Linear(2, 2)(torch.randn(3, 2)).numpy()",
     "numpy() on a tensor that autograd records (it requires grad)", ".detach().cpu().numpy()"),
    # The meta device takes the path of a GPU tensor's numpy().
    ("torch.empty(2, device='meta').numpy()",
     "numpy() on a tensor on meta: NumPy reads host memory only", ".detach().cpu().numpy()"),
    ("class Net(torch.nn.Module):\n"
     "    def __init__(self):\n"
     "        super().__init__()\n"
     "        self.fc = torch.nn.Linear(2, 2)\n"
     "torch.nn.DataParallel(Net()).fc",
     "the model is wrapped in DataParallel, which does not pass on `fc`", "model.module.fc"),
])
def test_types_losses_and_conversions_torch_rejects(traindoc, code, title, fix):
    root = failed_root(traindoc(python_job("import torch\n" + code + "\n")))
    assert root["title"].endswith(title), root["title"]
    assert fix in root["fix"], root["fix"]


def test_native_modules_that_do_not_load(traindoc, tmp_path):
    """Extension modules built here as a package builds them: one whose library was removed
    since, and one built against a PyTorch symbol that the loaded libraries lack."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    suffix = subprocess.run([PYTHON, "-c", "import sysconfig; "
                             "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    sources = {
        "fastdep": "int fast_value(void) { return 1; }",
        "fastops": "extern int fast_value(void);\n"
                   "void* PyInit_fastops(void) { return (void*)(long)fast_value(); }",
        "oldops": "extern int _ZN3c1015SmallVectorBase8grow_podEPvmm(void);\n"
                  "void* PyInit_oldops(void) { return (void*)(long)"
                  "_ZN3c1015SmallVectorBase8grow_podEPvmm(); }",
    }
    for name, source in sources.items():
        (tmp_path / f"{name}.c").write_text(source + "\n")
    build = [compiler, "-shared", "-fPIC"]
    subprocess.run(build + ["fastdep.c", "-o", "libfastdep.so"], cwd=tmp_path, check=True)
    subprocess.run(build + ["fastops.c", "-L.", "-lfastdep", "-o", "fastops" + suffix],
                   cwd=tmp_path, check=True)
    subprocess.run(build + ["oldops.c", "-o", "oldops" + suffix], cwd=tmp_path, check=True)
    (tmp_path / "libfastdep.so").unlink()
    for module, title in [
        ("fastops", ": the native library libfastdep.so could not be loaded: it is not "
                    "installed, or not on the loader's path"),
        ("oldops", f": the compiled module {tmp_path.name}/oldops{suffix} was built against "
                   "another PyTorch: it needs c10::SmallVectorBase::grow_pod(void*, unsigned "
                   "long, unsigned long), which the loaded libraries lack"),
    ]:
        root = failed_root(traindoc(python_job(f"import sys\nsys.path.insert(0, "
                                               f"{str(tmp_path)!r})\nimport {module}\n")))
        assert root["title"].endswith(title), root["title"]


def test_weights_downloaded_where_no_name_resolves(traindoc, monkeypatch):
    """torch.hub's download from a host that cannot resolve (.invalid never does), as on a
    compute node without the network: the download, why, and how to work from the cache."""
    for proxy in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                  "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    run = traindoc(python_job("import torch\n"
                              "torch.hub.load_state_dict_from_url('http://weights.invalid/r.pth')\n"))
    root = failed_root(run)
    assert root["kind"] == "network-unreachable", root
    # "Name or service not known", or without a name server "Temporary failure in name
    # resolution".
    assert ": a download failed: the host name could not be resolved (" in root["title"], root
    assert "$TORCH_HOME/hub/checkpoints" in root["fix"], root["fix"]


LOGGED_AND_RAISED = """import logging, os, time
import torch.distributed as dist
logging.basicConfig(level=logging.INFO)
dist.init_process_group("gloo")
time.sleep(1)
try:
    if os.environ["RANK"] == "1":
        {}["optimizer"]
    time.sleep(30)
except Exception:
    logging.getLogger("train").exception("training failed")
    raise
"""


def test_ranks_printing_without_a_prefix_are_told_apart(traindoc, tmp_path):
    """torchrun's stderr without --tee, as torchrun 2.x prints by default: rank 1 logs its
    exception and raises it again, rank 0 is stopped, and torchrun's error summary heads the
    failure with a bare "[0]:". Rank 1 raised, and rank 0 printed none of it."""
    script = tmp_path / "train.py"
    script.write_text(LOGGED_AND_RAISED)
    # Only stdout goes through torchrun's files, and gets a prefix.
    run = traindoc(torchrun_ranks(2, script, redirects=1, tee=1))
    root = failed_root(run)
    assert root["kind"] == "python-exception", root
    assert root["ranks"] == [1] and root["title"].endswith("raised KeyError: 'optimizer'"), root
    assert f"at {script}:8 in <module>" in "\n".join(root["evidence"]), root
    assert not [f for f in run.report["findings"] if 0 in f["ranks"] and "KeyError" in f["title"]]
