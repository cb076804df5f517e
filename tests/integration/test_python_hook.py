"""The Python hook: every Python process of the job loads it through traindoc's sitecustomize,
which still runs the one that would have run without traindoc; patches wait for the job's own
imports."""
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import types

from conftest import BUILD, PYTHON, ROOT, free_port, python_job

HOOK_DIR = BUILD / "python"

REPORT_HOOK = """
import sys
hook = sys.modules.get("traindoc_hook")
print("hook", hook is not None and hook._agent.entry_points() is not None, flush=True)
import sitecustomize
print("sitecustomize", getattr(sitecustomize, "MARK", "system"), flush=True)
"""


def lines(text):
    return text.decode().splitlines()


def test_hook_loads_in_every_python_process(traindoc):
    child = "import traindoc_hook; print('child hook', traindoc_hook._agent.entry_points() is not None)"
    code = REPORT_HOOK + f"import subprocess; subprocess.run([sys.executable, '-c', {child!r}])\n"
    run = traindoc(python_job(code))
    assert run.status == 0, run.stderr
    assert lines(run.stdout) == ["hook True", "sitecustomize system", "child hook True"]


def test_users_sitecustomize_still_runs(traindoc, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("MARK = 'theirs'\nimport builtins\nbuiltins.MARKED = 1\n")
    env = dict(os.environ, PYTHONPATH=str(theirs))
    code = REPORT_HOOK + "print('ran', MARKED)\n"
    run = traindoc(python_job(code), env=env)
    assert run.status == 0, run.stderr
    assert lines(run.stdout) == ["hook True", "sitecustomize theirs", "ran 1"]


def test_the_hook_leaves_threading_to_the_job(traindoc):
    """Importing threading (or random) makes every os.fork() of the process run its after-fork
    work: the hook must not import them in a job that does not; once the job imports threading,
    its threads' deaths are noted (threading.excepthook)."""
    code = REPORT_HOOK + textwrap.dedent("""
        print("threading", "threading" in sys.modules, "random" in sys.modules, flush=True)
        import threading
        print("excepthook", hasattr(threading.excepthook, "__traindoc_recorded__"), flush=True)
    """)
    run = traindoc(python_job(code))
    assert run.status == 0, run.stderr
    assert lines(run.stdout) == ["hook True", "sitecustomize system", "threading False False",
                                 "excepthook True"]


def test_without_the_agent_nothing_is_patched(tmp_path):
    """TRAINDOC_RUN_DIR without the preloaded agent (a process that escaped LD_PRELOAD): the hook
    finds no agent and installs nothing, and the program runs as without traindoc."""
    env = dict(os.environ, PYTHONPATH=str(HOOK_DIR), TRAINDOC_RUN_DIR=str(tmp_path))
    env.pop("LD_PRELOAD", None)
    code = "import sys; print(any(type(f).__module__.startswith('traindoc_hook') for f in sys.meta_path))"
    out = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, check=True)
    assert lines(out.stdout) == ["False"]


def test_post_import_hooks(tmp_path):
    """A callback runs right after the job imports the module, not before, and the module keeps
    its own loader."""
    (tmp_path / "slowmod.py").write_text("VALUE = 41\n")
    code = textwrap.dedent(
        """
        import sys
        from traindoc_hook import _imports
        seen = []
        _imports.install()
        _imports.when_imported("slowmod", lambda m: seen.append(m.VALUE + 1))
        print("before", "slowmod" in sys.modules, seen)
        import slowmod
        print("after", seen, type(slowmod.__loader__).__name__)
        _imports.when_imported("slowmod", lambda m: seen.append("again"))
        print("already imported", seen)
        """
    )
    env = dict(os.environ, PYTHONPATH=f"{HOOK_DIR}:{tmp_path}")
    env.pop("TRAINDOC_RUN_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)
    assert lines(out.stdout) == [
        "before False []",
        "after [42] SourceFileLoader",
        "already imported [42, 'again']",
    ]


def test_destroyed_process_group_is_freed(traindoc, tmp_path):
    """The collective recorder keeps no process group alive: one that lives past
    destroy_process_group is torn down with the interpreter, where gloo can abort the process."""
    code = textwrap.dedent(
        f"""
        import gc, weakref
        import torch, torch.distributed as dist
        dist.init_process_group("gloo", init_method="file://{tmp_path}/store", rank=0, world_size=1)
        print("recorded", getattr(dist.all_reduce, "__traindoc_recorded__", False))
        dist.all_reduce(torch.ones(2))
        group = weakref.ref(dist.distributed_c10d._get_default_group())
        dist.destroy_process_group()
        gc.collect()
        print("freed", group() is None)
        """)
    # The hook's debug switch: a call the recorder fails to describe raises instead of running.
    run = traindoc(python_job(code), env=dict(os.environ, TRAINDOC_HOOK_DEBUG="1"))
    assert run.status == 0, run.stderr
    assert lines(run.stdout) == ["recorded True", "freed True"]


def hook_module():
    """The hook's collectives module itself, for calls described without a process group."""
    sys.path.insert(0, str(ROOT / "python"))
    from traindoc_hook import collectives

    return collectives


def fake_c10d(world, **functions):
    """What the hook asks of torch.distributed.distributed_c10d, for a world of 2 on gloo."""
    base = dict(GroupMember=types.SimpleNamespace(WORLD=world, NON_GROUP_MEMBER=object()),
                ReduceOp=types.SimpleNamespace(SUM="ReduceOp.SUM"), _pg_names={world: "0"},
                _get_default_group=lambda: world, get_backend=lambda group: "gloo",
                get_rank=lambda group=None: 0, get_world_size=lambda group=None: 2)
    return types.SimpleNamespace(**dict(base, **functions))


def built(hook, c10d, name, arguments):
    """The call as the recorder describes it, read back field by field; None if unrecorded."""
    call = hook._build(c10d, hook._SPECS[name], arguments)
    return None if call is None else hook._Call.from_buffer_copy(call)


def test_roots_and_peers_given_by_group_rank_are_recorded_as_global_ranks():
    """PyTorch 2.6+ names a root or peer by its rank in the group (group_src, group_dst): the
    record holds its global rank, as for src and dst, so that both forms pair up."""
    import torch

    hook = hook_module()
    world, pair = object(), object()  # pair: global ranks 2 and 3; this process is rank 2
    c10d = fake_c10d(
        world, _pg_names={world: "0", pair: "1"},
        get_rank=lambda group=None: 0 if group is pair else 2,
        get_world_size=lambda group=None: 2 if group is pair else 4,
        get_global_rank=lambda group, rank: {world: rank, pair: rank + 2}[group])
    tensor = torch.ones(3)
    by_group_rank = built(hook, c10d, "broadcast",
                          {"tensor": tensor, "group": pair, "group_src": 1})
    by_global_rank = built(hook, c10d, "broadcast", {"tensor": tensor, "group": pair, "src": 3})
    assert by_group_rank.peer == by_global_rank.peer == 3
    assert built(hook, c10d, "broadcast", {"tensor": tensor}).peer == 0
    send = built(hook, c10d, "send", {"tensor": tensor, "group": pair, "group_dst": 1})
    recv_any = built(hook, c10d, "irecv", {"tensor": tensor, "group": pair})
    assert send.peer == 3 and recv_any is None
    pair_id = hook._group_info(c10d, pair)[0]
    assert send.group == hook._stable_hash("%d:2>3" % pair_id)  # the pair group 2 -> 3
    gather = built(hook, c10d, "gather_object", {"obj": 1, "group_dst": 0})
    assert gather.peer == 0 and gather.group_size == 4


def test_the_rank_and_world_size_a_call_of_init_process_group_passes():
    """Read from the real init_process_group's signature: by keyword, by position, or left to
    the launcher's variables (-1)."""
    import torch.distributed as dist

    hook = hook_module()
    init = dist.init_process_group
    assert hook._asked(init, ("gloo",), {"rank": 1, "world_size": 4}) == (1, 4)
    assert hook._asked(init, ("gloo", None, None, 8, 3), {}) == (3, 8)
    assert hook._asked(init, ("gloo",), {}) == (-1, -1)
    assert hook._asked(init, (), {"backend": "gloo", "world_size": 2}) == (-1, 2)


def test_the_number_a_dataloader_gives_its_worker():
    """Read from the real _worker_loop's signature, as the DataLoader calls it (by position)."""
    import inspect

    from torch.utils.data._utils import worker

    sys.path.insert(0, str(ROOT / "python"))
    from traindoc_hook import workers

    names = list(inspect.signature(worker._worker_loop).parameters)
    args = [None] * len(names)
    args[names.index("worker_id")] = 3
    assert workers._worker_id(worker._worker_loop, args, {}) == 3


def test_the_batch_size_of_a_dataloader():
    """Its batch_size, else its batch_sampler's (a sampler of its own that makes the batches);
    none where neither says (a list of index lists, a dataset that makes its own batches)."""
    import torch
    from torch.utils.data import (BatchSampler, DataLoader, IterableDataset, SequentialSampler,
                                  TensorDataset)

    sys.path.insert(0, str(ROOT / "python"))
    from traindoc_hook import batches

    class Batches(IterableDataset):
        def __iter__(self):
            yield torch.zeros(3, 2)

    data = TensorDataset(torch.zeros(10, 2))
    assert batches._batch_size(DataLoader(data, batch_size=4)) == 4
    sampler = BatchSampler(SequentialSampler(data), batch_size=5, drop_last=False)
    assert batches._batch_size(DataLoader(data, batch_sampler=sampler)) == 5
    assert batches._batch_size(DataLoader(data, batch_sampler=[[0, 1], [2]])) is None
    assert batches._batch_size(DataLoader(Batches(), batch_size=None)) is None


def test_a_cuda_tensor_is_recorded_with_its_device_and_as_queued():
    """Without a GPU: a stand-in tensor that says it lives on CUDA. The record names its device
    (a CPU tensor on another rank is a mismatch) and says the call returns once queued."""
    import torch

    hook = hook_module()

    class CudaTensor:
        shape, dtype, is_cuda = (8,), "torch.float16", True
        device = types.SimpleNamespace(type="cuda")

        def numel(self):
            return 8

    c10d = fake_c10d(object())
    call = built(hook, c10d, "all_reduce", {"tensor": CudaTensor()})
    assert (call.tensor_devices[0], call.tensor_dtypes[0], call.count) == (2, 6, 8)
    assert call.flags & hook._QUEUED
    cpu = built(hook, c10d, "all_reduce", {"tensor": torch.ones(2)})
    assert cpu.tensor_devices[0] == 1 and not cpu.flags & hook._QUEUED
    nccl = fake_c10d(object(), get_backend=lambda group: "nccl")
    assert built(hook, nccl, "barrier", {}).flags & hook._QUEUED  # every op


RAISING_WRAPPED_CALLS = """
import os, traceback, torch, torch.distributed as dist
x = torch.ones(2, requires_grad=True)
loss = (x * 2).sum()
loss.backward()
try:
    loss.backward()  # a second time: torch.autograd.backward raises
except RuntimeError:
    traceback.print_exc()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="FREE_PORT")
dist.init_process_group("gloo", rank=0, world_size=1)
try:
    dist.init_process_group("gloo", rank=0, world_size=1)  # twice
except RuntimeError:
    traceback.print_exc()
try:
    dist.broadcast(torch.ones(2), src=5)  # recorded, then raises: no rank 5
except RuntimeError:
    traceback.print_exc()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
model(torch.ones(3, 5))  # uncaught: shapes that cannot be multiplied, in DDP's forward
"""


def without_log_records(stderr):
    return re.sub(rb"(?m)^[WIEF]\d{4,8} [^\n]*\n", b"", stderr)


def test_a_wrapped_call_that_raises_prints_the_traceback_it_prints_without_traindoc(traindoc,
                                                                                    tmp_path):
    """backward, init_process_group, a collective and DDP's forward go through the hook's
    wrappers: the job's tracebacks are byte for byte those of the same job without traindoc."""
    script = tmp_path / "train.py"
    script.write_text(RAISING_WRAPPED_CALLS.replace("FREE_PORT", str(free_port())))
    plain = subprocess.run([PYTHON, str(script)], capture_output=True)
    script.write_text(RAISING_WRAPPED_CALLS.replace("FREE_PORT", str(free_port())))
    run = traindoc([PYTHON, str(script)], "--silent")
    assert plain.returncode == run.status == 1
    assert plain.stderr.count(b"Traceback (most recent call last)") == 4, plain.stderr.decode()
    assert b"in counted" not in run.stderr and b"traindoc_hook" not in run.stderr, run.stderr.decode()
    # A logging library's record carries its time and pid (gloo's glog warning where the host
    # name does not resolve): the same line, not the same bytes, in two runs.
    assert without_log_records(run.stderr) == without_log_records(plain.stderr)
    with sqlite3.connect(run.run_dir / "run.db") as db:  # the broadcast was recorded all the same
        calls = db.execute("SELECT op, raised FROM collectives ORDER BY number").fetchall()
    # Then DDP's own broadcast of the model's state, as it was built.
    assert calls == [("broadcast", 1), ("broadcast_coalesced", 0)], calls


LABEL_AND_KILL = """
import os, signal, subprocess, sys, torch
# A child this job kills itself: its end names the sender, from the kill() its agent noted.
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
os.kill(child.pid, signal.SIGKILL)
child.wait()
torch.nn.functional.cross_entropy(torch.zeros(4, 3), torch.tensor([0, 5, 9, 1]))
"""


def test_the_numbers_of_a_label_and_a_kill_are_stored_as_numbers(traindoc):
    """The hook's record of the rejected label and the agent's of a kill() reach run.db as
    numbers (events.a, b, c), and the report reads them: the class count and the targets' largest
    label complete the title and the fix, the kill names its sender."""
    run = traindoc(python_job(LABEL_AND_KILL))
    assert run.status == 1, run.stderr.decode()[-2000:]
    with sqlite3.connect(run.run_dir / "run.db") as db:
        rows = db.execute("SELECT kind, a, b, c FROM events WHERE kind IN "
                          "('label-out-of-range', 'kill-sent') ORDER BY id").fetchall()
    (rank,) = run.processes("rank")
    child = [p for p in run.report["processes"] if p["pid"] != rank["pid"]]
    # The error names the first label it met (5); the batch's go up to 9.
    assert rows == [("kill-sent", child[0]["pid"], None, None),
                    ("label-out-of-range", 5, 3, 9)], rows
    root = run.report["findings"][0]
    assert root["kind"] == "label-out-of-range", root
    assert root["title"].endswith("the loss's input has 3 classes"), root
    # Label 5 is a class beyond the model's 3, not one to ignore: the fix says the numbers, and
    # the classes the batch's largest label needs.
    assert root["fix"].startswith("Label 5 is beyond the model's 3 classes (0..2), and the "
                                  "batch's labels go up to 9"), root
    assert "to at least 10" in root["fix"] and "ignore_index" not in root["fix"], root
    assert "its targets' largest label is 9" in " ".join(root["evidence"]), root
    # Killed before its agent started (just after its fork): still the rank's kill.
    (killed,) = [f for f in run.report["findings"] if child[0]["pid"] in f["pids"]]
    assert killed["severity"] == "info" and "from rank 0" in killed["title"], killed
