"""The number torch.multiprocessing.spawn gave each process it started, handed to the agent
(`traindoc_spawned`, src/agent/python_abi.cpp). Spawn passes it as the function's first argument,
by convention the rank: it names the process before init_process_group does, and where the
process fails before it gets that far."""
import ctypes

from traindoc_hook import _agent, _imports


def _patch(module):
    # Every process spawn starts runs `_wrap(fn, i, ...)` first.
    _agent.tell_before(module, "_wrap", "traindoc_spawned", [ctypes.c_int],
                       lambda fn, i, *args, **kwargs: (i,))


def install():
    _imports.when_imported("torch.multiprocessing.spawn", _patch)
