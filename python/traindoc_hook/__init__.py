"""The Python side of traindoc's agent: patches libraries when the job imports them and hands
what it sees to the agent (libtraindoc_agent.so, already loaded through LD_PRELOAD) through its C
entry points. It never imports a library the job does not import itself, and never raises into
the job."""
import atexit
import sys

from traindoc_hook import (_agent, _imports, allocator, batches, collectives, ddp_gradients,
                           ddp_parameters, error_file, logfiles, losses, spawn, steps, threads,
                           workers)

# Patches to apply when a module is imported: module name -> [callable(module)]. Each feature
# module registers its own with `_imports.when_imported` from `install`.
_FEATURES = (steps, batches, collectives, ddp_gradients, losses, ddp_parameters, spawn, threads,
             workers, logfiles, error_file, allocator)


def _when_finished(mark):
    # An uncaught exception also runs the exit handlers, after its traceback is printed (which
    # sets sys.last_value): the program failed, it did not finish.
    if not hasattr(sys, "last_value"):
        mark()


def install():
    """Called once per process by sitecustomize. Does nothing unless the agent is active."""
    if not _agent.available():
        return
    # Registered first, so it runs last: the program and its own exit handlers are done, and a
    # crash after this is teardown (the job's work was complete).
    finished = getattr(_agent.entry_points(), "traindoc_script_finished", None)
    if finished is not None:
        finished.restype = None
        finished.argtypes = []
        atexit.register(_when_finished, finished)
    for feature in _FEATURES:
        feature.install()
    _imports.install()
