"""A stand-in for PyTorch's CUDA caching allocator, for test jobs on a machine without a GPU.

A job imports it and calls `install(capacity)`; it then allocates with `alloc(nbytes)` and frees
with `free(block)`. What traindoc's hook reads looks as it does on a GPU with PyTorch 2.1 and
later (torch/cuda/memory.py, torch/cuda/_memory_viz.py):

- torch.cuda.memory_stats(device): the flat dict, "allocated_bytes.all.current",
  "reserved_bytes.all.current", "active_bytes.all.current", "inactive_split_bytes.all.current",
  "num_alloc_retries", "num_ooms";
- torch.cuda.memory_snapshot() and torch.cuda.memory._snapshot(): segments {device, address,
  total_size, allocated_size, active_size, requested_size, stream, segment_type, is_expandable,
  frames, blocks}, each block {address, size, requested_size, state: active_allocated |
  active_pending_free | inactive, frames}, frames {filename, line, name} innermost first (only
  while history is recorded); _snapshot() adds device_traces, one list per device of {action,
  addr, size, stream, time_us, frames}, the last max_entries kept;
- torch.cuda.memory._record_memory_history(enabled, context, stacks, max_entries) and
  _dump_snapshot(filename), the pickle the memory viewer opens;
- torch._C._cuda_attach_out_of_memory_observer(observer): each observer is called with (device,
  the request, the bytes reserved, the driver's free bytes) before OutOfMemoryError is raised,
  with PyTorch 2.1's message.

The allocator itself is PyTorch's in miniature: one segment of the request's size per new
allocation, best-fit reuse of free blocks that splits them, freed blocks merged with their free
neighbours, and at a failure the cached segments that hold no live block released and the
allocation retried, before the error. CUDA "initializes" at the first allocation: the calls that
torch.cuda._lazy_call queued run then, as torch.cuda._lazy_init runs them."""
import collections
import pickle
import sys
import time
import traceback

import torch

_BLOCK_ROUND = 512  # PyTorch rounds every request up to 512 bytes
_device = None


def _format_size(size):
    # c10/cuda/CUDACachingAllocator.cpp format_size
    if size <= 1024:
        return "%d bytes" % size
    if size <= 1048576:
        return "%.2f KiB" % (size / 1024)
    if size <= 1073741824:
        return "%.2f MiB" % (size / 1048576)
    return "%.2f GiB" % (size / 1073741824)


class _Block:
    def __init__(self, segment, address, size, state, frames=()):
        self.segment = segment
        self.address = address
        self.size = size
        self.requested_size = size
        self.state = state
        self.frames = list(frames)


class _Device:
    def __init__(self, capacity, index):
        self.capacity = capacity
        self.index = index
        self.segments = []  # [address, [blocks in address order]]
        self.next_address = 0x7F0000000000
        self.retries = 0
        self.ooms = 0
        self.trace = None  # a deque of max_entries while history is recorded
        self.observers = []
        self.initialized = False

    def reserved(self):
        return sum(sum(b.size for b in blocks) for _, blocks in self.segments)

    def allocated(self):
        return sum(b.size for _, blocks in self.segments for b in blocks
                   if b.state == "active_allocated")

    def frames(self):
        if self.trace is None:
            return []
        stack = [f for f in traceback.extract_stack() if f.filename != __file__]
        return [{"filename": f.filename, "line": f.lineno, "name": f.name}
                for f in reversed(stack)]

    def note(self, action, address, size):
        if self.trace is not None:
            self.trace.append({"action": action, "addr": address, "size": size, "stream": 0,
                               "time_us": time.time_ns() // 1000, "frames": self.frames()})

    def best_fit(self, size):
        free = [b for _, blocks in self.segments for b in blocks
                if b.state == "inactive" and b.size >= size]
        return min(free, key=lambda b: b.size, default=None)

    def new_segment(self, size):
        if self.reserved() + size > self.capacity:
            return None
        address = self.next_address
        self.next_address += size
        block = _Block(None, address, size, "inactive")
        segment = [address, [block]]
        block.segment = segment
        self.segments.append(segment)
        self.note("segment_alloc", address, size)
        return block

    def release_cached(self):
        """What the allocator does before it gives up: segments that hold no live block go back
        to the driver."""
        kept = []
        for segment in self.segments:
            if all(b.state == "inactive" for b in segment[1]):
                self.note("segment_free", segment[0], sum(b.size for b in segment[1]))
            else:
                kept.append(segment)
        self.segments = kept

    def alloc(self, nbytes):
        if not self.initialized:
            self.initialized = True
            for call, _ in list(torch.cuda._queued_calls):
                call()
        size = -(-nbytes // _BLOCK_ROUND) * _BLOCK_ROUND
        block = self.best_fit(size) or self.new_segment(size)
        if block is None:
            self.retries += 1
            self.release_cached()
            block = self.new_segment(size)
        if block is None:
            self.ooms += 1
            reserved = self.reserved()
            for observer in self.observers:
                observer(self.index, size, reserved, self.capacity - reserved)
            raise torch.cuda.OutOfMemoryError(self.message(size))
        if block.size > size:  # split: the rest stays free in the same segment
            blocks = block.segment[1]
            rest = _Block(block.segment, block.address + size, block.size - size, "inactive")
            blocks.insert(blocks.index(block) + 1, rest)
            block.size = size
        block.state = "active_allocated"
        block.requested_size = nbytes
        block.frames = self.frames()
        self.note("alloc", block.address, size)
        return block

    def free(self, block):
        block.state = "inactive"
        block.frames = []
        self.note("free_completed", block.address, block.size)
        blocks = block.segment[1]
        merged = []
        for b in blocks:
            if merged and merged[-1].state == "inactive" and b.state == "inactive":
                merged[-1].size += b.size
            else:
                merged.append(b)
        block.segment[1] = merged

    def message(self, size):
        reserved = self.reserved()
        allocated = self.allocated()
        return ("CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of "
                "which %s is free. Including non-PyTorch memory, this process has %s memory in "
                "use. Of the allocated memory %s is allocated by PyTorch, and %s is reserved by "
                "PyTorch but unallocated. If reserved but unallocated memory is large try "
                "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                "fragmentation.  See documentation for Memory Management  "
                "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)" % (
                    _format_size(size), self.index, _format_size(self.capacity),
                    _format_size(self.capacity - reserved), _format_size(reserved),
                    _format_size(allocated), _format_size(reserved - allocated)))

    def segment_dicts(self):
        out = []
        for address, blocks in self.segments:
            total = sum(b.size for b in blocks)
            active = sum(b.size for b in blocks if b.state != "inactive")
            out.append({
                "device": self.index, "address": address, "total_size": total,
                "allocated_size": sum(b.size for b in blocks if b.state == "active_allocated"),
                "active_size": active,
                "requested_size": sum(b.requested_size for b in blocks if b.state != "inactive"),
                "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                "is_expandable": False, "frames": [],
                "blocks": [{"address": b.address, "size": b.size,
                            "requested_size": b.requested_size, "state": b.state,
                            "frames": b.frames} for b in blocks]})
        return out

    def stats(self):
        split_free = sum(b.size for _, blocks in self.segments if len(blocks) > 1
                         for b in blocks if b.state == "inactive")
        active = sum(b.size for _, blocks in self.segments for b in blocks
                     if b.state != "inactive")
        return {"allocated_bytes.all.current": self.allocated(),
                "reserved_bytes.all.current": self.reserved(),
                "active_bytes.all.current": active,
                "inactive_split_bytes.all.current": split_free,
                "num_alloc_retries": self.retries, "num_ooms": self.ooms}


def memory_stats(device=None):
    return _device.stats()


def memory_snapshot():
    return _device.segment_dicts()


def _snapshot(device=None):
    traces = list(_device.trace) if _device.trace is not None else []
    return {"segments": _device.segment_dicts(), "device_traces": [traces]}


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None):
    _device.trace = None if enabled is None else collections.deque(maxlen=max_entries)


def _dump_snapshot(filename="dump_snapshot.pickle"):
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


def _attach_observer(observer):
    _device.observers.append(observer)


def install(capacity, index=0):
    """Makes torch.cuda's memory functions this stand-in's, for a GPU of `capacity` bytes."""
    global _device
    _device = _Device(capacity, index)
    for name, value in (("memory_stats", memory_stats), ("memory_snapshot", memory_snapshot)):
        setattr(torch.cuda, name, value)
        setattr(torch.cuda.memory, name, value)
    for value in (_snapshot, _record_memory_history, _dump_snapshot):
        setattr(torch.cuda.memory, value.__name__, value)
    torch._C._cuda_attach_out_of_memory_observer = _attach_observer


def alloc(nbytes):
    return _device.alloc(nbytes)


def free(block):
    _device.free(block)
