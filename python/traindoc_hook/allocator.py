"""PyTorch's caching allocator at an out-of-memory error: when an allocation on a GPU fails, the
allocator calls its out-of-memory observers before it raises torch.cuda.OutOfMemoryError (caught
by the job or not). The hook's observer, attached as CUDA initializes (torch.cuda._lazy_call),
writes what the allocator held then to the run folder: memory_stats and the sums of the segment
list's blocks by state (torch.cuda.memory_snapshot), and tells the agent
(`traindoc_allocator_state`, src/agent/python_abi.cpp). Nothing runs before an error.

Under `traindoc run --memory-history` (TRAINDOC_MEMORY_HISTORY: the entries to keep), it also
turns on the allocator's history as CUDA initializes, and at the first error saves the snapshot
as the pickle PyTorch's memory viewer opens, with the sites of the live allocations."""
import ctypes
import os
import pickle
import sys

from traindoc_hook import _agent, _imports

_MAX_STATES = 8  # per process: a search for the batch that fits raises many
_MAX_SITES = 10
_STATE_FILE = "agent/allocator-%d-%d.tsv"  # layout.h kAllocatorStateFile
_SNAPSHOT_FILE = "allocator/oom-%d-%d.pickle"  # layout.h kAllocatorSnapshotFile
_HISTORY_ENV = "TRAINDOC_MEMORY_HISTORY"  # layout.h kMemoryHistoryEnv

_tell = None
_count = 0  # the errors of this process so far


def _history_entries():
    try:
        return max(0, int(os.environ.get(_HISTORY_ENV, "0")))
    except ValueError:
        return 0


def _site(frames, torch_dir):
    """The job's line that allocated a block: the innermost Python frame outside torch, else the
    innermost Python frame (frames come innermost first)."""
    python = [f for f in frames if str(f.get("filename", "")).endswith(".py")]
    own = [f for f in python if not str(f["filename"]).startswith(torch_dir)]
    frame = (own or python or [None])[0]
    if frame is None:
        return None
    return (str(frame["filename"]), int(frame.get("line", 0)), str(frame.get("name", "")))


def _clean(text):
    return text.replace("\t", " ").replace("\n", " ")


def _summary(segments, device, torch_dir):
    """Lines for the block sums of `device`'s segments and the sites of its live blocks."""
    sums = {"active_allocated": 0, "active_pending_free": 0, "inactive": 0}
    largest_free = 0
    count = 0
    sites = {}
    for segment in segments:
        if segment.get("device", device) != device:
            continue
        count += 1
        for block in segment.get("blocks", ()):
            size = int(block.get("size", 0))
            state = block.get("state")
            if state in sums:
                sums[state] += size
            if state == "inactive":
                largest_free = max(largest_free, size)
            site = _site(block.get("frames") or (), torch_dir) if state == "active_allocated" else None
            if site is not None:
                total, blocks, largest, smallest = sites.get(site, (0, 0, 0, size))
                sites[site] = (total + size, blocks + 1, max(largest, size), min(smallest, size))
    lines = ["segments\t%d" % count,
             "active_allocated\t%d" % sums["active_allocated"],
             "pending_free\t%d" % sums["active_pending_free"],
             "inactive\t%d" % sums["inactive"],
             "largest_free\t%d" % largest_free]
    top = sorted(sites.items(), key=lambda item: -item[1][0])[:_MAX_SITES]
    for (filename, line, name), (total, blocks, largest, smallest) in top:
        lines.append("site\t%d\t%d\t%d\t%d\t%d\t%s\t%s" % (total, blocks, largest, smallest, line,
                                                         _clean(name), _clean(filename)))
    return lines


def _write(run_dir, name, write, mode):
    path = os.path.join(run_dir, name)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), mode) as f:
        write(f)


def _record(device, requested, device_free):
    global _count
    run_dir = os.environ.get("TRAINDOC_RUN_DIR")
    if _count >= _MAX_STATES or not run_dir:
        return
    number = _count
    _count += 1
    torch = sys.modules["torch"]
    stats = torch.cuda.memory_stats(device)
    history = _history_entries() > 0
    if history:
        snapshot = torch.cuda.memory._snapshot()
        segments = snapshot.get("segments", [])
    else:
        snapshot = None
        segments = torch.cuda.memory_snapshot()
    lines = ["device\t%d" % device, "requested\t%d" % requested, "device_free\t%d" % device_free,
             "history\t%d" % history]
    for name, key in (("allocated", "allocated_bytes.all.current"),
                      ("reserved", "reserved_bytes.all.current"),
                      ("inactive_split", "inactive_split_bytes.all.current"),
                      ("alloc_retries", "num_alloc_retries"), ("ooms", "num_ooms")):
        if key in stats:
            lines.append("%s\t%d" % (name, int(stats[key])))
    torch_dir = os.path.dirname(torch.__file__) + os.sep
    lines += _summary(segments, device, torch_dir)
    pid = os.getpid()
    if snapshot is not None and number == 0:
        _write(run_dir, _SNAPSHOT_FILE % (pid, number), lambda f: pickle.dump(snapshot, f), "wb")
    _write(run_dir, _STATE_FILE % (pid, number), lambda f: f.write("\n".join(lines) + "\n"), "w")
    _tell(number)


def _observer(device, requested, device_allocated, device_free):
    """Called by the allocator, with its lock released, before it raises the error. Whatever
    fails here must not replace the job's OutOfMemoryError."""
    _agent.quietly(_record, int(device), int(requested), int(device_free))


def _at_cuda_init():
    torch = sys.modules["torch"]
    attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
    if attach is None:  # PyTorch 1.13 has no observers
        return
    attach(_observer)
    entries = _history_entries()
    if entries > 0:
        # PyTorch 2.1's form. Python stacks only: C++ ones cost an unwind per allocation.
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=entries)


def _patch(cuda):
    # Queued until CUDA initializes, which precedes the first allocation (at once if it already
    # did). A job that never uses CUDA never runs it.
    cuda._lazy_call(lambda: _agent.quietly(_at_cuda_init))


def install():
    global _tell
    try:
        _tell = _agent.entry_points().traindoc_allocator_state
    except AttributeError:  # an agent from before the allocator's state
        return
    _tell.restype = None
    _tell.argtypes = [ctypes.c_int]
    _imports.when_imported("torch.cuda", _patch)
