"""Children reaped behind the agent's back (the raw wait4 system call, which no libc hook sees):
only each child's own agent can tell how it ended. Prints `<what> <pid> <wait status>` per child:
one leaves with os._exit(7), one with sys.exit(3), one aborts in a C exit handler that runs
after Python has finished."""
import ctypes
import os
import platform
import subprocess
import sys

WAIT4 = {"x86_64": 61, "aarch64": 260}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)


def reap(pid):
    status = ctypes.c_int()
    libc.syscall(WAIT4, pid, ctypes.byref(status), 0, None)
    return status.value


def run(what, code):
    child = subprocess.Popen([sys.executable, "-c", code])
    print(what, child.pid, reap(child.pid), flush=True)
    child.returncode = 0  # reaped already: Popen must not wait for it again


pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", pid, reap(pid), flush=True)
run("exit", "import sys; sys.exit(3)")
run("abort", "import ctypes; libc = ctypes.CDLL('libc.so.6'); "
    "libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)")
