"""The number torch.multiprocessing.spawn gave each process it started, handed to the agent
(`traindoc_spawned`, src/agent/python_abi.cpp). Spawn passes it as the function's first argument,
by convention the rank: it names the process before init_process_group does, and where the
process fails before it gets that far."""
import ctypes
import functools

from traindoc_hook import _agent, _imports


def _patch(module):
    spawned = getattr(_agent.entry_points(), "traindoc_spawned", None)
    original = getattr(module, "_wrap", None)
    if spawned is None or original is None or hasattr(original, "__traindoc_recorded__"):
        return
    spawned.restype = None
    spawned.argtypes = [ctypes.c_int]

    # Every process spawn starts runs `_wrap(fn, i, ...)` first. Spawn looks it up in the module
    # when it starts a process and pickles it by name, so the child unpickles this wrapper.
    @functools.wraps(original)
    def _wrap(fn, i, *args, **kwargs):
        _agent.quietly(spawned, i)
        return original(fn, i, *args, **kwargs)

    _wrap.__traindoc_recorded__ = True
    module._wrap = _wrap


def install():
    _imports.when_imported("torch.multiprocessing.spawn", _patch)
