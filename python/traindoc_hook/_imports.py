"""Post-import hooks: run a callable right after a module has been imported by the job, without
importing it ourselves (an `import torch` costs seconds)."""
import _thread
import sys

from traindoc_hook import _agent

_pending = {}  # module name -> [callable(module)]
# Not threading's: importing threading makes every os.fork() of the job run its after-fork work
# (2 to 3 times the cost of a plain fork in Python 3.11) in a job that never imported it.
_lock = _thread.allocate_lock()


def when_imported(name, callback):
    """Calls `callback(module)` once `name` is imported (at once if it already is)."""
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            _pending.setdefault(name, []).append(callback)
            return
    _agent.quietly(callback, module)  # a failed patch leaves the library as it was


def _after_exec(loader):
    """Makes `loader` (a per-module object) run the pending callbacks after the module body. The
    loader itself stays in place, so `module.__loader__` and resource readers are unchanged."""
    exec_module = loader.exec_module

    def exec_then_patch(module):
        exec_module(module)
        with _lock:
            callbacks = _pending.pop(module.__name__, [])
        for callback in callbacks:
            _agent.quietly(callback, module)  # a failed patch leaves the library as it was

    loader.exec_module = exec_then_patch


# Not importlib.abc's MetaPathFinder, which imports importlib.resources, tempfile and random:
# random reseeds itself in every os.fork() child.
class _Finder:
    def find_spec(self, name, path, target=None):
        if name not in _pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    _after_exec(spec.loader)
                return spec
        return None


_finder = _Finder()


def install():
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
