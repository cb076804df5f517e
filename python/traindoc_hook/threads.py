"""Tells the agent when an exception ends a thread (`traindoc_thread_died`,
src/agent/python_abi.cpp), with the thread's name, just before Python prints its traceback, so
that the traceback is tied to its process even where several processes write to one output
without a prefix."""
import _thread
import ctypes

from traindoc_hook import _agent, _imports


def _name_words(thread):
    """The first 16 bytes of the name Python prints ("Exception in thread NAME:"), as two
    little-endian words."""
    name = thread.name if thread is not None else str(_thread.get_ident())
    # Cut on a character's boundary: the store keeps it as text.
    data = name.encode(errors="replace")[:16].decode(errors="ignore").encode().ljust(16, b"\0")
    return int.from_bytes(data[:8], "little"), int.from_bytes(data[8:], "little")


def _patch(threading):
    died = getattr(_agent.entry_points(), "traindoc_thread_died", None)
    previous = getattr(threading, "excepthook", None)
    if died is None or previous is None or hasattr(previous, "__traindoc_recorded__"):
        return
    died.restype = None
    died.argtypes = [ctypes.c_uint64, ctypes.c_uint64]

    def excepthook(args):
        try:
            if args.exc_type is not SystemExit:  # which ends a thread quietly
                _agent.quietly(lambda: died(*_name_words(args.thread)))
        finally:
            previous(args)

    excepthook.__traindoc_recorded__ = True
    threading.excepthook = excepthook


def install():
    # Once the job imports threading (its threads come from there), never by ourselves: see
    # _imports._lock.
    _imports.when_imported("threading", _patch)
