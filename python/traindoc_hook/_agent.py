"""Access to the agent's C entry points (src/agent/python_abi.cpp and its siblings). The agent is
preloaded, so its exported functions are found in the process's global symbol scope."""
import atexit
import ctypes
import functools
import os
import sys

ABI_VERSION = 2

_lib = None


def entry_points():
    """The process's global scope as a ctypes library, once the agent was found active; None
    otherwise."""
    return _lib


def available():
    global _lib
    if _lib is not None:
        return True
    try:
        scope = ctypes.CDLL(None)
        version = scope.traindoc_python_abi
    except (OSError, AttributeError):
        return False
    version.restype = ctypes.c_int
    version.argtypes = []
    if version() != ABI_VERSION:
        return False
    _lib = scope
    return True


def held(name):
    """The entry point `name`, of one pointer argument and no result, for the calls of a few
    nanoseconds made on every collective: called with the GIL held (ctypes.PyDLL rather than
    CDLL), where giving it up and taking it back would cost more than the call, and without
    declared argument types, whose conversion would too (bytes pass as a pointer to them).
    None where the agent lacks it."""
    try:
        entry = getattr(ctypes.PyDLL(None), name)
    except AttributeError:
        return None
    entry.restype = None
    return entry


def debugging():
    """Whether the hook's own failures are raised (TRAINDOC_HOOK_DEBUG set) rather than dropped."""
    return bool(os.environ.get("TRAINDOC_HOOK_DEBUG"))


def quietly(function, *args):
    """Calls `function(*args)`, where a failure of the hook must never reach the job: it is
    dropped (raised when debugging)."""
    try:
        function(*args)
    except Exception:
        if debugging():
            raise


def at_exit_with_error(report):
    """Calls `report(error)` as the program exits, with the exception that ended it, if one did:
    what Python keeps once it has printed the traceback (sys.last_exc from 3.12, sys.last_value
    before). At exit rather than in a sys.excepthook: losses.py says why."""

    def check():
        try:
            error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
            if error is not None:
                report(error)
        except BaseException:  # the job's error matters, not ours (nor an interrupt landing here)
            if os.environ.get("TRAINDOC_HOOK_DEBUG"):
                raise

    atexit.register(check)


def hide_own_frame(error):
    """Drops the calling wrapper's entry from `error`'s traceback, so that the job's traceback
    reads as it would without traindoc. The wrapper then re-raises with a bare `raise`, which
    keeps that traceback (Python 3.11 and later; older ones re-raise the one they saved)."""
    tb = error.__traceback__
    if tb is not None and tb.tb_frame is sys._getframe(1):
        error.__traceback__ = tb.tb_next


def tell_before(module, name, entry, argtypes, told):
    """Replaces `module.name` by a wrapper that first hands the agent's C entry point `entry` the
    values `told(*args, **kwargs)` returns, then calls the function as before. The library looks
    the function up in its module when it starts a process, and pickles it by name (which the
    wrapper keeps) for the spawn start method. Nothing where the agent lacks `entry`."""
    tell = getattr(_lib, entry, None) if _lib is not None else None
    original = getattr(module, name, None)
    if tell is None or original is None or hasattr(original, "__traindoc_recorded__"):
        return
    tell.restype = None
    tell.argtypes = argtypes

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        quietly(lambda: tell(*told(*args, **kwargs)))
        try:
            return original(*args, **kwargs)
        except BaseException as error:
            hide_own_frame(error)
            raise

    wrapper.__traindoc_recorded__ = True
    setattr(module, name, wrapper)
