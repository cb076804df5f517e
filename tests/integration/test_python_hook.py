"""The Python hook: every Python process of the job loads it through traindoc's sitecustomize,
which still runs the one that would have run without traindoc; patches wait for the job's own
imports."""
import os
import subprocess
import sys
import textwrap

from conftest import PYTHON, ROOT, python_job

HOOK_DIR = ROOT / "build" / "python"

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
