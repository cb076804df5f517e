"""The batch size a process trains with: the `batch_size` of the DataLoader it iterated last,
handed to the agent (`traindoc_batch_size`, src/agent/python_abi.cpp) at an optimizer step when it
differs from the one told before, and as the loader is iterated until the first step (most
out-of-memory errors of a batch too large come in the first one). An out-of-memory finding then
says what memory a sample takes and which smaller batch fits. Noted once per epoch
(DataLoader.__iter__) and compared once per optimizer step: nothing runs per batch."""
import ctypes
import functools
import os

from traindoc_hook import _agent, _imports

_iterated = None  # the batch size of the DataLoader iterated last (None: none, or no int)
_told = None  # the one the agent has
_stepping = False  # the process has stepped its optimizer
_tell = None


def _batch_size(loader):
    """A DataLoader's batch size: its `batch_size`, else its batch_sampler's (a sampler of its
    own that makes the batches); None where neither is a positive int (the dataset batches)."""
    size = loader.batch_size
    if size is None:
        size = getattr(loader.batch_sampler, "batch_size", None)
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        return size
    return None


def _tell_if_new():
    global _told
    if _iterated is not None and _iterated != _told and _tell is not None:
        _told = _iterated
        _agent.quietly(_tell, _iterated)


def stepped():
    """The process stepped its optimizer: its batches are those of the DataLoader it iterated
    last (an evaluation loader iterated in the middle of a training epoch takes its place until
    the next epoch begins)."""
    global _stepping
    _stepping = True
    _tell_if_new()


def _forget():
    """In the child of a fork: the agent's record of the batch size is its parent's."""
    global _iterated, _told, _stepping
    _iterated = None
    _told = None
    _stepping = False


def _noting(iterate):
    @functools.wraps(iterate)
    def noted(loader):
        global _iterated
        try:
            _iterated = _batch_size(loader)
        except Exception:  # a subclass without the attributes: nothing to tell
            _iterated = None
        # Before any step, the loader iterated is the one the first step will use (a sanity
        # check's validation loader first, then the training one); after, an evaluation
        # loader's batches take no step, and wait for one.
        if not _stepping:
            _tell_if_new()
        try:
            return iterate(loader)
        except BaseException as error:
            _agent.hide_own_frame(error)
            raise

    return noted


def _patch(module):
    # Every epoch begins with DataLoader.__iter__ (persistent workers too), in 1.13 and 2.x.
    module.DataLoader.__iter__ = _noting(module.DataLoader.__iter__)


def install():
    global _tell
    try:
        _tell = _agent.entry_points().traindoc_batch_size
    except AttributeError:  # an agent from before the batch size
        return
    _tell.restype = None
    _tell.argtypes = [ctypes.c_int64]
    os.register_at_fork(after_in_child=_forget)
    _imports.when_imported("torch.utils.data.dataloader", _patch)
