"""The number a DataLoader gave each worker it started, handed to the agent
(`traindoc_worker_started`, src/agent/python_abi.cpp). It is the number the worker's errors print
("Caught ValueError in DataLoader worker process 1"); each DataLoader counts its own from 0, so two
alive at once (training and validation) both have a worker 0, which start order cannot tell."""
import ctypes
import inspect

from traindoc_hook import _agent, _imports


def _worker_id(function, args, kwargs):
    return int(inspect.signature(function).bind(*args, **kwargs).arguments["worker_id"])


def _patch(module):
    # Every worker runs `_worker_loop(..., worker_id, num_workers, ...)` first.
    original = getattr(module, "_worker_loop", None)
    _agent.tell_before(module, "_worker_loop", "traindoc_worker_started", [ctypes.c_int],
                       lambda *args, **kwargs: (_worker_id(original, args, kwargs),))


def install():
    _imports.when_imported("torch.utils.data._utils.worker", _patch)
