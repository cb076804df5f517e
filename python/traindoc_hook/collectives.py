"""Records every torch.distributed collective and point-to-point call of the process into the
agent (src/agent/collective_abi.cpp): its process group, op, tensors, reduce op, root or peer,
call site and step, before the call, and its return after it. The supervisor compares the ranks'
calls as they come (docs/collectives.md). Any backend; PyTorch 1.13 and 2.x."""
import _thread
import ctypes
import functools
import inspect
import os
import sys
import weakref

from traindoc_hook import _agent, _imports

# Copies of src/common/layout.h, checked against it by tests/integration/test_hook_layout.py.
_TENSORS = 4  # layout.h kCollectiveTensors
_DIMS = 6  # kCollectiveDims
_SITE = 68  # kCallSiteSize
_NO_PEER = -1
_NO_REDOP = 255
_UNKNOWN_DTYPE = 255
_MAX_DIM = 2**32 - 1
_ASYNC = 1
_TRUNCATED = 4
_QUEUED = 8
_RAISED = 16
_DEFAULT_GROUP = 32
_ALWAYS_ASYNC = ("isend", "irecv")  # they return a Work, and have no async_op to say so


class _Call(ctypes.Structure):
    """layout.h CollectiveCall, field for field (240 bytes)."""

    _fields_ = [
        ("group", ctypes.c_uint64),
        ("number", ctypes.c_uint64),
        ("time_ns", ctypes.c_int64),
        ("count", ctypes.c_uint64),
        ("step", ctypes.c_uint64),
        ("group_rank", ctypes.c_int32),
        ("group_size", ctypes.c_int32),
        ("peer", ctypes.c_int32),
        ("line", ctypes.c_int32),
        ("op", ctypes.c_uint16),
        ("event", ctypes.c_uint8),
        ("source", ctypes.c_uint8),
        ("dtype", ctypes.c_uint8),
        ("redop", ctypes.c_uint8),
        ("tensor_count", ctypes.c_uint8),
        ("flags", ctypes.c_uint8),
        ("ndims", ctypes.c_uint8 * _TENSORS),
        ("tensor_dtypes", ctypes.c_uint8 * _TENSORS),
        ("tensor_devices", ctypes.c_uint8 * _TENSORS),
        ("dims", (ctypes.c_uint32 * _DIMS) * _TENSORS),
        ("site", ctypes.c_char * _SITE),
    ]


assert ctypes.sizeof(_Call) == 240

# layout.h CollectiveOp.
ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL = 1, 2, 3, 4, 5, 6
GATHER, SCATTER, BARRIER, MONITORED_BARRIER, SEND, RECV = 7, 8, 9, 10, 11, 12
ALL_GATHER_OBJECT, BROADCAST_OBJECT, GATHER_OBJECT, SCATTER_OBJECT = 13, 14, 15, 16
ALL_REDUCE_COALESCED = 17

# function name -> (op, tensor arguments (inputs first), reduce-op argument, root/peer argument)
_SPECS = {
    "all_reduce": (ALL_REDUCE, ("tensor",), "op", None),
    "all_reduce_coalesced": (ALL_REDUCE_COALESCED, ("tensors",), "op", None),
    "broadcast": (BROADCAST, ("tensor",), None, "src"),
    "reduce": (REDUCE, ("tensor",), "op", "dst"),
    "all_gather": (ALL_GATHER, ("tensor", "tensor_list"), None, None),
    "all_gather_into_tensor": (ALL_GATHER, ("input_tensor", "output_tensor"), None, None),
    "_all_gather_base": (ALL_GATHER, ("input_tensor", "output_tensor"), None, None),
    "all_gather_coalesced": (ALL_GATHER, ("input_tensor_list", "output_tensor_lists"), None, None),
    "reduce_scatter": (REDUCE_SCATTER, ("input_list", "output"), "op", None),
    "reduce_scatter_tensor": (REDUCE_SCATTER, ("input", "output"), "op", None),
    "_reduce_scatter_base": (REDUCE_SCATTER, ("input", "output"), "op", None),
    "all_to_all": (ALL_TO_ALL, ("input_tensor_list", "output_tensor_list"), None, None),
    "all_to_all_single": (ALL_TO_ALL, ("input", "output"), None, None),
    "gather": (GATHER, ("tensor",), None, "dst"),
    "scatter": (SCATTER, ("tensor",), None, "src"),
    "barrier": (BARRIER, (), None, None),
    "monitored_barrier": (MONITORED_BARRIER, (), None, None),
    "send": (SEND, ("tensor",), None, "dst"),
    "isend": (SEND, ("tensor",), None, "dst"),
    "recv": (RECV, ("tensor",), None, "src"),
    "irecv": (RECV, ("tensor",), None, "src"),
    "all_gather_object": (ALL_GATHER_OBJECT, (), None, None),
    "broadcast_object_list": (BROADCAST_OBJECT, (), None, "src"),
    "gather_object": (GATHER_OBJECT, (), None, "dst"),
    "scatter_object_list": (SCATTER_OBJECT, (), None, "src"),
}

# ncclDataType_t numbering, then the types NCCL lacks (layout.h).
_DTYPES = {
    "int8": 0, "uint8": 1, "int32": 2, "int64": 4, "float16": 6, "float32": 7, "float64": 8,
    "bfloat16": 9, "float8_e4m3fn": 10, "float8_e5m2": 11, "bool": 20, "complex64": 21,
    "complex128": 22, "int16": 23, "complex32": 24,
}
_DEVICES = {"cpu": 1, "cuda": 2}  # layout.h CollectiveDevice; 3: any other
_OTHER_DEVICE = 3
_REDOPS = {"SUM": 0, "PRODUCT": 1, "MAX": 2, "MIN": 3, "AVG": 4, "PREMUL_SUM": 5, "BAND": 6,
           "BOR": 7, "BXOR": 8}

_state = _thread._local()  # depth: calls made inside a recorded one (object variants) are not
# process group -> (64-bit identity, whether its backend queues ops); weak, so that
# destroy_process_group still frees the group (a group kept alive until the interpreter ends can
# abort the process as it goes)
_groups = weakref.WeakKeyDictionary()
_skip_dirs = ()  # frames in these folders are not the call site


def _depth():
    return getattr(_state, "depth", 0)


def _stable_hash(text):
    """64-bit FNV-1a, the agent's identity_hash: equal on every rank for the same text."""
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def _group_info(c10d, group):
    """The group's identity, the same on every rank (PyTorch names groups in creation order,
    which every rank follows: new_group must be called by all), and whether its backend returns
    once an op is queued (NCCL: the wait is on the GPU stream, not in the call)."""
    try:
        return _groups[group]
    except (KeyError, TypeError):
        pass
    name = getattr(c10d, "_pg_names", {}).get(group)
    if name is None:
        name = getattr(group, "group_name", None) or ""
    try:
        queued = "nccl" in str(c10d.get_backend(group)).lower()
    except Exception:  # a backend that cannot say: its calls are taken as blocking
        queued = False
    info = (_stable_hash("torch-pg:%s:%d" % (name, c10d.get_world_size(group))), queued)
    try:
        _groups[group] = info
    except TypeError:
        pass
    return info


def _call_site():
    frame = sys._getframe(3)
    while frame is not None and frame.f_code.co_filename.startswith(_skip_dirs):
        frame = frame.f_back
    if frame is None:
        return b"", 0
    return frame.f_code.co_filename.encode(errors="replace"), frame.f_lineno


def _tensors_of(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            out.extend(_tensors_of(item))
        return out
    return [value] if hasattr(value, "shape") and hasattr(value, "dtype") else []


def _describe(call, tensors):
    for index, tensor in enumerate(tensors[:_TENSORS]):
        shape = tuple(tensor.shape)
        if len(shape) > _DIMS:
            call.flags |= _TRUNCATED
        call.ndims[index] = min(len(shape), 255)
        call.tensor_dtypes[index] = _DTYPES.get(str(tensor.dtype).replace("torch.", ""),
                                                _UNKNOWN_DTYPE)
        call.tensor_devices[index] = _DEVICES.get(getattr(tensor.device, "type", None),
                                                  _OTHER_DEVICE)
        for d, size in enumerate(shape[:_DIMS]):
            call.dims[index][d] = min(int(size), _MAX_DIM)
    if len(tensors) > _TENSORS:
        call.flags |= _TRUNCATED
    call.tensor_count = min(len(tensors), _TENSORS)
    if tensors:
        call.dtype = call.tensor_dtypes[0]
        call.count = tensors[0].numel()


def _redop_code(op):
    name = str(getattr(op, "op", op)).rsplit(".", 1)[-1]
    return _REDOPS.get(name, _NO_REDOP)


def _current_step():
    steps = sys.modules.get("traindoc_hook.steps")
    current = getattr(steps, "current", None)
    return current() if current is not None else 0


def _peer_of(c10d, group, arguments, peer_arg, op):
    """The root or peer as a global rank: given as one (src, dst; roots default to rank 0, and a
    receive without a source takes any), or, from PyTorch 2.6, as a rank of the group
    (group_src, group_dst)."""
    group_peer = arguments.get("group_" + peer_arg)
    if group_peer is None:
        return arguments.get(peer_arg, None if op == RECV else 0)
    return c10d.get_global_rank(group, group_peer)


def _build(c10d, spec, arguments):
    op, tensor_args, redop_arg, peer_arg = spec
    group = arguments.get("group")
    if group is None or group is c10d.GroupMember.WORLD:
        group = c10d._get_default_group()
    if group is c10d.GroupMember.NON_GROUP_MEMBER:
        return None
    call = _Call()
    call.op = op
    call.peer = _NO_PEER
    call.redop = _NO_REDOP
    call.dtype = _UNKNOWN_DTYPE
    group_id, queued = _group_info(c10d, group)
    peer = _peer_of(c10d, group, arguments, peer_arg, op) if peer_arg else None
    if op in (SEND, RECV):
        if peer is None:  # a receive from any source pairs with nothing known in advance
            return None
        me = c10d.get_rank()
        sender, receiver = (me, peer) if op == SEND else (peer, me)
        call.group = _stable_hash("%d:%d>%d" % (group_id, sender, receiver))
        call.group_rank, call.group_size = (0, 2) if op == SEND else (1, 2)
    else:
        call.group = group_id
        call.group_rank = c10d.get_rank(group)
        call.group_size = c10d.get_world_size(group)
        if group is c10d._get_default_group():
            call.flags |= _DEFAULT_GROUP
    if peer is not None:
        call.peer = int(peer)
    if redop_arg:
        call.redop = _redop_code(arguments.get(redop_arg, c10d.ReduceOp.SUM))
    tensors = []
    for name in tensor_args:
        tensors.extend(_tensors_of(arguments.get(name)))
    _describe(call, tensors)
    if op == BROADCAST_OBJECT:  # filled in place, element for element: lengths must agree
        objects = arguments.get("object_list")
        call.count = len(objects) if objects is not None else 0
    if queued or any(getattr(t, "is_cuda", False) for t in tensors):
        call.flags |= _QUEUED
    site, line = _call_site()
    call.site = site[-(_SITE - 1):]
    call.line = line
    call.step = _current_step()
    return call


def _wrap(c10d, name, function, enter, leave):
    spec = _SPECS[name]
    signature = inspect.signature(function)

    @functools.wraps(function)
    def recorded(*args, **kwargs):
        call = None
        if _depth() == 0:
            try:
                arguments = signature.bind(*args, **kwargs).arguments
                call = _build(c10d, spec, arguments)
                if call is not None and (arguments.get("async_op") or name in _ALWAYS_ASYNC):
                    call.flags |= _ASYNC
            except Exception:  # a call we cannot describe runs unrecorded
                if os.environ.get("TRAINDOC_HOOK_DEBUG"):
                    raise
        number = 0
        if call is not None:
            number = enter(ctypes.byref(call))
            _state.depth = 1
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            if call is not None:
                # A raised call gave up (a timeout, a closed connection); a return says less.
                call.flags |= _RAISED
            _agent.hide_own_frame(error)
            raise
        finally:
            if call is not None:
                _state.depth = 0
                leave(ctypes.byref(call), number)

    recorded.__traindoc_recorded__ = True
    return recorded


def _asked(function, args, kwargs):
    """The rank and world size a call of init_process_group passes, -1 for each it leaves to the
    launcher's variables (its default)."""
    bound = inspect.signature(function).bind(*args, **kwargs).arguments
    return int(bound.get("rank", -1)), int(bound.get("world_size", -1))


def _wrap_init(c10d, function, called, joined, failed):
    """init_process_group, telling the agent the rank and world size the call asked for (a rank
    that never joins is missing from a world of that size), then the rank it gave: the process's
    rank where no launcher's variable says it (torch.multiprocessing.spawn, a rank passed in
    code); or that it raised, which a program may catch to try again later."""

    @functools.wraps(function)
    def init_process_group(*args, **kwargs):
        _agent.quietly(lambda: called(*_asked(function, args, kwargs)))
        try:
            result = function(*args, **kwargs)
        except BaseException as error:
            _agent.quietly(failed)
            _agent.hide_own_frame(error)
            raise
        _agent.quietly(lambda: joined(c10d.get_rank(), c10d.get_world_size()))
        return result

    init_process_group.__traindoc_recorded__ = True
    return init_process_group


def _replace(distributed, c10d, name, wrapped, function):
    # Calls from inside c10d (the object variants) and from the job (dist.all_reduce) both look
    # the name up in a module namespace: replace it in both.
    setattr(c10d, name, wrapped)
    if getattr(distributed, name, None) is function:
        setattr(distributed, name, wrapped)


def _patch(distributed):
    global _skip_dirs
    lib = _agent.entry_points()
    enter = getattr(lib, "traindoc_collective_enter", None)
    leave = getattr(lib, "traindoc_collective_exit", None)
    if enter is None or leave is None:
        return
    enter.restype = ctypes.c_uint64
    enter.argtypes = [ctypes.c_void_p]
    leave.restype = None
    leave.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    if c10d is None or not hasattr(c10d, "_get_default_group"):
        return
    torch_dir = os.path.dirname(os.path.dirname(os.path.abspath(distributed.__file__)))
    _skip_dirs = (torch_dir + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)
    for name in _SPECS:
        function = getattr(c10d, name, None)
        if function is None or getattr(function, "__traindoc_recorded__", False):
            continue
        _replace(distributed, c10d, name, _wrap(c10d, name, function, enter, leave), function)
    called = getattr(lib, "traindoc_process_group_init", None)
    joined = getattr(lib, "traindoc_process_group_joined", None)
    failed = getattr(lib, "traindoc_process_group_init_failed", None)
    init = getattr(c10d, "init_process_group", None)
    if None in (called, joined, failed, init) or hasattr(init, "__traindoc_recorded__"):
        return
    for entry in (called, joined):
        entry.restype = None
        entry.argtypes = [ctypes.c_int, ctypes.c_int]
    failed.restype = None
    failed.argtypes = []
    _replace(distributed, c10d, "init_process_group",
             _wrap_init(c10d, init, called, joined, failed), init)


def install():
    _imports.when_imported("torch.distributed", _patch)
