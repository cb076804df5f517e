"""Tells the agent of each log file the program opens through logging.FileHandler (and what is
built on it: `basicConfig(filename=...)`, the rotating handlers) with
`traindoc_log_file_opened` (src/agent/python_abi.cpp), so that what a program logs only there
(`logger.exception(...)` and then `sys.exit(1)`) is read as its output."""
import ctypes

from traindoc_hook import _agent, _imports


def _patch(logging):
    opened = getattr(_agent.entry_points(), "traindoc_log_file_opened", None)
    handler = getattr(logging, "FileHandler", None)
    original = getattr(handler, "_open", None)
    if opened is None or original is None or hasattr(original, "__traindoc_recorded__"):
        return
    opened.restype = None
    opened.argtypes = [ctypes.c_int]

    def _open(self):
        stream = original(self)
        _agent.quietly(lambda: opened(stream.fileno()))
        return stream

    _open.__traindoc_recorded__ = True
    handler._open = _open


def install():
    _imports.when_imported("logging", _patch)
