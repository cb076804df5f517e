"""Tells the agent when an exception ends a thread (`traindoc_thread_died`,
src/agent/python_abi.cpp), just before Python prints its traceback, so that the traceback is tied
to its process even where several processes write to one output without a prefix."""
import threading

from traindoc_hook import _agent


def install():
    died = getattr(_agent.entry_points(), "traindoc_thread_died", None)
    previous = getattr(threading, "excepthook", None)
    if died is None or previous is None or hasattr(previous, "__traindoc_recorded__"):
        return
    died.restype = None
    died.argtypes = []

    def excepthook(args):
        try:
            if args.exc_type is not SystemExit:  # which ends a thread quietly
                _agent.quietly(died)
        finally:
            previous(args)

    excepthook.__traindoc_recorded__ = True
    threading.excepthook = excepthook
