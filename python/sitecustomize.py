"""traindoc's entry into every Python process of a job (the supervisor puts this folder first on
PYTHONPATH). It installs the hook, then runs the sitecustomize that would have run without
traindoc, so that a distribution's or a user's own one keeps working."""
import os
import sys


def _chain():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    # The chained one becomes `sitecustomize` for anything that imports it later.
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get("TRAINDOC_RUN_DIR"):
    try:
        import traindoc_hook

        traindoc_hook.install()
    except Exception:  # never let the hook stop the job
        if os.environ.get("TRAINDOC_HOOK_DEBUG"):
            raise
_chain()
