"""Access to the agent's C entry points (src/agent/python_abi.cpp and its siblings). The agent is
preloaded, so its exported functions are found in the process's global symbol scope."""
import ctypes
import os

ABI_VERSION = 1

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


def quietly(function, *args):
    """Calls `function(*args)`, where a failure of the hook must never reach the job: it is
    dropped (raised when TRAINDOC_HOOK_DEBUG is set)."""
    try:
        function(*args)
    except Exception:
        if os.environ.get("TRAINDOC_HOOK_DEBUG"):
            raise
