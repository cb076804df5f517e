"""The class count of a rejected label: when a classification loss raises "Target N is out of
bounds", the error says the first label it met but not how many classes the model has, nor how
far the labels go. When such an error ends the process, the hook reads the count from the loss's
input in the traceback's frames, and the largest label from its targets (leaving out the label
the loss ignores), and hands them to the agent (`traindoc_label_out_of_range`, src/agent/label_abi.cpp). Nothing wraps
the loss functions, so the job's tracebacks and speed stay as they are. It reads the error at
exit, from what Python keeps of the exception that ended the program (sys.last_value), not in a
sys.excepthook: a second interrupt (Ctrl-C reaches torchrun and its ranks, then torchrun passes
one on) lands in the first Python code after the traceback, and in an excepthook Python would
blame the hook for it."""
import ctypes
import re

from traindoc_hook import _agent

_TARGET = re.compile(r"Target (-?\d+) is out of bounds")
_LOSSES = {"cross_entropy", "nll_loss"}
_NO_VALUE = -(2**63)  # the agent's "unknown" (src/common/layout.h kNoValue)
_record = None


def _largest_label(target, ignored):
    """The largest class label of `target` other than the one the loss ignores, or None."""
    if target is None or not hasattr(target, "dtype") or target.dtype.is_floating_point:
        return None  # class probabilities, not labels
    labels = target[target != ignored] if isinstance(ignored, int) else target.reshape(-1)
    return int(labels.max()) if labels.numel() > 0 else None


def _loss_input(traceback):
    """The class dimension of the innermost loss call's input, (N, C, ...) or unbatched (C,), and
    the largest label of its targets: (None, None) where no loss frame says."""
    found = (None, None)
    while traceback is not None:
        frame = traceback.tb_frame
        if frame.f_code.co_name in _LOSSES and "torch" in frame.f_code.co_filename:
            input = frame.f_locals.get("input")
            if input is not None and hasattr(input, "dim"):
                count = int(input.shape[1] if input.dim() > 1 else input.shape[0])
                found = (count, _largest_label(frame.f_locals.get("target"),
                                               frame.f_locals.get("ignore_index")))
        traceback = traceback.tb_next
    return found


def _report(error):
    match = _TARGET.search(str(error))
    if not isinstance(error, IndexError) or match is None:
        return
    classes, largest = _loss_input(error.__traceback__)
    if classes is not None:
        _record(int(match.group(1)), classes, _NO_VALUE if largest is None else largest)


def install():
    global _record
    try:
        _record = _agent.entry_points().traindoc_label_out_of_range
    except AttributeError:
        return
    _record.restype = None
    _record.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    _agent.at_exit_with_error(_report)
