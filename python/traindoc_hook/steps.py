"""The step counter: counts, in every process that trains, its optimizer steps, backward calls and
DDP forwards, and hands each running total to the agent (`traindoc_step`, src/agent/step_abi.cpp),
which records it with its time. The supervisor turns the records into step samples: how many steps
each rank ran, and memory growth per step."""
import atexit
import ctypes
import functools
import os
import time

from traindoc_hook import _agent, _imports, batches

# common::StepKind in src/common/layout.h (checked by tests/integration/test_hook_layout.py).
OPTIMIZER = 1
BACKWARD = 2
DDP_FORWARD = 3

# The agent's ring holds 120 records and is read every 100 ms; a toy model can step thousands of
# times a second. At most one record per kind this often keeps the ring for the other records
# (a reaped child) while the totals stay exact: the last one is sent at exit.
_MIN_INTERVAL_S = 0.01

# By kind; once installed, the agent's own totals (traindoc_step_counts), which it reads as the
# step of every collective record.
_counts = [0, 0, 0, 0]
_sent = [0, 0, 0, 0]  # the totals the agent has
_sent_at = [0.0, 0.0, 0.0, 0.0]
_step = None


def _forget():
    """Starts the counts from zero in the child of a fork (a DataLoader worker): its steps are
    its own. An at-fork handler, which runs only in children that Python's os.fork makes (not in
    those of subprocess), rather than a check of the pid on every count and every collective,
    where getpid alone would cost more than the rest of the count."""
    _counts[:] = [0, 0, 0, 0]
    _sent[:] = [0, 0, 0, 0]
    _sent_at[:] = [0.0, 0.0, 0.0, 0.0]


def count(kind):
    """One more step of `kind` in this process."""
    _counts[kind] += 1
    now = time.monotonic()
    if now - _sent_at[kind] >= _MIN_INTERVAL_S:
        _sent_at[kind] = now
        _send(kind)
        # The other kinds' totals held back since their last record go along (each still at
        # most one record per interval): the last training step of a fast loop is then known
        # when the evaluation after it begins, not only at exit.
        for other, total in enumerate(_counts):
            if total != _sent[other] and now - _sent_at[other] >= _MIN_INTERVAL_S:
                _sent_at[other] = now
                _send(other)


def current():
    """This process's training step so far: its optimizer steps, else its backward calls (what
    the collective records carry as their step)."""
    return _counts[OPTIMIZER] or _counts[BACKWARD]


def _send(kind):
    _sent[kind] = _counts[kind]
    _step(kind, _sent[kind])


def _flush():
    for kind, total in enumerate(_counts):
        if total != _sent[kind]:
            _send(kind)


def _optimizer_stepped():
    count(OPTIMIZER)
    batches.stepped()


def _counting(function, note):
    # Counted when it begins: a rank stuck in its 4th backward (waiting for a peer's gradients)
    # has begun 4, which is what tells it apart from a peer that skipped one.
    @functools.wraps(function)
    def counted(*args, **kwargs):
        note()
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            _agent.hide_own_frame(error)
            raise

    return counted


def _patch_optimizer(module):
    # PyTorch 2.x: a hook after every optimizer's step, subclasses included.
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is not None:
        register(lambda optimizer, args, kwargs: _optimizer_stepped())
    else:
        # PyTorch 1.13: Optimizer.__init__ wraps each class's step once (_hook_for_profile), and
        # the wrapper calls _optimizer_step_code after every step of every subclass.
        optimizer = module.Optimizer
        optimizer._optimizer_step_code = _counting(optimizer._optimizer_step_code,
                                                   _optimizer_stepped)
    # A count of 0: this process's steps are counted from now on (traindoc fit then waits for
    # them rather than for its memory to stop growing).
    _step(OPTIMIZER, 0)


def _patch_autograd(module):
    # Tensor.backward calls torch.autograd.backward through the module attribute.
    module.backward = _counting(module.backward, functools.partial(count, BACKWARD))


def _patch_ddp(module):
    ddp = module.DistributedDataParallel
    ddp.forward = _counting(ddp.forward, functools.partial(count, DDP_FORWARD))


def install():
    global _step, _counts
    try:
        _step = _agent.entry_points().traindoc_step
        totals = _agent.entry_points().traindoc_step_counts
    except AttributeError:  # an agent without the step counter
        return
    _step.restype = None
    _step.argtypes = [ctypes.c_int, ctypes.c_int64]
    totals.restype = ctypes.c_void_p
    totals.argtypes = []
    _counts = (ctypes.c_int64 * len(_counts)).from_address(totals())
    os.register_at_fork(after_in_child=_forget)
    atexit.register(_flush)
    _imports.when_imported("torch.optim.optimizer", _patch_optimizer)
    _imports.when_imported("torch.autograd", _patch_autograd)
    _imports.when_imported("torch.nn.parallel.distributed", _patch_ddp)
