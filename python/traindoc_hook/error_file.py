"""Writes TORCHELASTIC_ERROR_FILE for a torchrun rank that an uncaught exception ends and that did
not write it itself (`@record` writes it before the exception leaves the program), in the format
torch.distributed.elastic reads, so that torchrun's summary shows the traceback. The supervisor
writes it for ranks that a signal or an exit code ends (docs/crashes.md). The time of the failure
and the sibling ranks already ended then, which the supervisor names in the record, are taken as
the exception reaches the top of the program (sys.excepthook): by exit, the job's own exit
handlers may have taken seconds, and its peers ended in consequence."""
import json
import os
import sys
import time
import traceback

from traindoc_hook import _agent

_VARIABLE = "TORCHELASTIC_ERROR_FILE"
_OFF = "TRAINDOC_NO_ERROR_FILE"  # --no-error-file (src/supervisor/launcher.cpp)


def _environ_value(pid, name):
    """The value of `name` in another process's environment as it started; None when unset or
    unreadable."""
    prefix = name.encode() + b"="
    with open("/proc/%d/environ" % pid, "rb") as f:
        for entry in f.read().split(b"\0"):
            if entry.startswith(prefix):
                return entry[len(prefix):].decode(errors="replace")
    return None


def _failed_sibling(pid):
    """Whether the sibling rank `pid` has failed already: it has ended and waits for its parent to
    collect its status (torchrun reaps a rank only as it reads its file), or its error file is
    there (@record wrote it as its exception left the program, which may close its connections
    long before it ends)."""
    try:
        with open("/proc/%d/stat" % pid) as stat:
            if stat.read().rpartition(")")[2].split()[0] == "Z":
                return True
        path = _environ_value(pid, _VARIABLE)
        return path is not None and os.path.exists(path)
    except OSError:  # reaped meanwhile
        return False


def _ended_siblings(parent):
    """The other children of `parent` that failed before this one."""
    ended = []
    for task in os.listdir("/proc/%d/task" % parent):
        with open("/proc/%d/task/%s/children" % (parent, task)) as f:
            ended += [pid for pid in map(int, f.read().split())
                      if pid != os.getpid() and _failed_sibling(pid)]
    return ended


_raised = {}  # as the exception reached the top: time_ns, ended_before


def _stamp():
    _raised.update(time_ns=time.time_ns(), ended_before=[])
    _raised["ended_before"] = _ended_siblings(os.getppid())


def _write(error):
    path = os.environ.get(_VARIABLE)
    parent = os.getppid()
    # A DataLoader worker or other child of the rank inherits the rank's path: the rank's alone.
    if not path or os.environ.get(_OFF) or _environ_value(parent, _VARIABLE) == path:
        return
    if not _raised:  # an excepthook of the job's own replaced ours
        _stamp()
    now_ns = _raised["time_ns"]
    data = {
        "message": {
            "message": "%s: %s" % (type(error).__name__, error),
            "extraInfo": {
                "py_callstack": "".join(
                    traceback.format_exception(type(error), error, error.__traceback__)),
                "timestamp": str(now_ns // 1_000_000_000),
            },
        },
        "traindoc": {"pid": os.getpid(), "time_ns": now_ns,
                     "ended_before": _raised["ended_before"]},
    }
    # Never over a file the job wrote: created only where there is none.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)


def install():
    if not os.environ.get(_VARIABLE) or os.environ.get(_OFF):
        return
    previous = sys.excepthook

    def excepthook(*args):
        try:
            _agent.quietly(_stamp)
        finally:
            previous(*args)

    sys.excepthook = excepthook
    _agent.at_exit_with_error(_write)
