"""Records every torch.distributed collective and point-to-point call of the process into the
agent (src/agent/collective_abi.cpp): its process group, op, tensors, reduce op, root or peer,
call site and step, before the call, and its return after it. The supervisor compares the ranks'
calls as they come (docs/collectives.md). Any backend; PyTorch 1.13 and 2.x."""
import ctypes
import functools
import inspect
import os
import struct
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
_JOIN_SHADOW = 64  # made through join()'s code: a rank out of inputs shadows the others' calls
_JOIN_FILE = os.path.join("distributed", "algorithms", "join.py")
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

# A call is packed into bytes rather than filled field by field (a ctypes field costs a Python
# call): its scalar head in one struct, from _Call's fields up to the tensors'.
_CODES = {ctypes.c_uint64: "Q", ctypes.c_int64: "q", ctypes.c_int32: "i", ctypes.c_uint16: "H",
          ctypes.c_uint8: "B"}
_HEAD = struct.Struct("<" + "".join(_CODES[kind] for _, kind in _Call._fields_[:16]))
assert _HEAD.size == _Call.ndims.offset
_TENSOR_DIMS = struct.Struct("<%dI" % _DIMS)
_SHAPES = [struct.Struct("<%dI" % ndims) for ndims in range(_DIMS + 1)]
_NDIMS, _TENSOR_DTYPES, _TENSOR_DEVICES = (_Call.ndims.offset, _Call.tensor_dtypes.offset,
                                           _Call.tensor_devices.offset)
_DIMS_AT, _SITE_AT = _Call.dims.offset, _Call.site.offset

# layout.h CollectiveOp.
ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL = 1, 2, 3, 4, 5, 6
GATHER, SCATTER, BARRIER, MONITORED_BARRIER, SEND, RECV = 7, 8, 9, 10, 11, 12
ALL_GATHER_OBJECT, BROADCAST_OBJECT, GATHER_OBJECT, SCATTER_OBJECT = 13, 14, 15, 16
ALL_REDUCE_COALESCED, BROADCAST_COALESCED = 17, 18
DDP_GRADIENT_ALL_REDUCE = 19  # recorded by ddp_gradients.py
# Described at every call, never kept: their objects' pickled lengths vary from call to call.
_OBJECT_OPS = (ALL_GATHER_OBJECT, BROADCAST_OBJECT, GATHER_OBJECT, SCATTER_OBJECT)

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
    # DistributedDataParallel's own broadcast: of the module's buffers in each forward that
    # follows a training one (broadcast_buffers=True), and of its parameters and buffers when it
    # is built. The site is the job's line that called the model (or built it).
    "_broadcast_coalesced": (BROADCAST_COALESCED, ("tensors",), None, "src"),
}
# Functions of torch.distributed made in C++, which inspect cannot read: each is recorded
# through a Python function of the same arguments (_native).
_NATIVE = ("_broadcast_coalesced",)

# ncclDataType_t numbering, then the types NCCL lacks (layout.h).
_DTYPES = {
    "int8": 0, "uint8": 1, "int32": 2, "int64": 4, "float16": 6, "float32": 7, "float64": 8,
    "bfloat16": 9, "float8_e4m3fn": 10, "float8_e5m2": 11, "bool": 20, "complex64": 21,
    "complex128": 22, "int16": 23, "complex32": 24,
}
_DEVICES = {"cpu": 1, "cuda": 2}  # layout.h CollectiveDevice; 3: any other
_CUDA = _DEVICES["cuda"]
_OTHER_DEVICE = 3
_REDOPS = {"SUM": 0, "PRODUCT": 1, "MAX": 2, "MIN": 3, "AVG": 4, "PREMUL_SUM": 5, "BAND": 6,
           "BOR": 7, "BXOR": 8}

# process group -> (64-bit identity, whether its backend queues ops, rank, size); weak, so that
# destroy_process_group still frees the group (a group kept alive until the interpreter ends can
# abort the process as it goes)
_groups = weakref.WeakKeyDictionary()
_skip_dirs = ()  # frames in these folders are not the call site

# The calls already described, as the agent takes them (a CollectiveCall's bytes), by what makes
# them alike: the op, the call site (code object and bytecode offset), the group, each tensor's
# shape, dtype and device, and the reduce op, root or peer and async flag as passed. A training
# loop makes the same calls step after step, so most calls cost a key and a lookup rather than a
# description. Objects are keyed by id, which hashes at once: the code objects (in _outside) and
# reduce ops (in _redop_codes) are kept alive while the cache holds their ids, and a group's
# death or a change of the default group (init_process_group, destroy_process_group) empties it.
_cache = {}
_watched = {}  # id -> a weak reference to each group keyed in _cache
_outside = {}  # id -> (code object, its file's tail as a record holds it), for call sites
_inside = {}  # id -> code object, for the code known to be in _skip_dirs, the recorders' aside
_join_codes = set()  # ids of the code in _inside that is join()'s (_JOIN_FILE)
_lines = {}  # (id of a code object in _outside, bytecode offset) -> its line
_recorders = set()  # ids of the recorders' code: a frame of one is a recorded call under way
_dtype_codes = {}  # torch dtype -> its number in a record
_device_codes = {}  # torch device -> its number in a record
_redop_codes = {}  # id -> (reduce op, its number in a record)
_CACHE_LIMIT = 4096  # entries of each; more (shapes that change every step) start afresh
_MISS = object()
_NESTED = object()
_FLAGS = _Call.flags.offset


def _forget(*_):
    """Drops the calls kept: a group died, or the default group may be another."""
    _cache.clear()
    _watched.clear()


def _forget_all():
    """Drops the calls kept and what their keys name by id: the tables of code are full."""
    _forget()
    for table in (_outside, _inside, _join_codes, _lines, _redop_codes):
        table.clear()


def _stable_hash(text):
    """64-bit FNV-1a, the agent's identity_hash: equal on every rank for the same text."""
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def _group_info(c10d, group):
    """The group's identity, the same on every rank (PyTorch names groups in creation order,
    which every rank follows: new_group must be called by all), whether its backend returns
    once an op is queued (NCCL: the wait is on the GPU stream, not in the call), and this
    process's rank in it and its size, which never change."""
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
    size = c10d.get_world_size(group)
    info = (_stable_hash("torch-pg:%s:%d" % (name, size)), queued, c10d.get_rank(group), size)
    try:
        _groups[group] = info
    except TypeError:
        pass
    return info


def _user_frame(frame):
    """The call site: the innermost frame from `frame` outwards outside torch and the hook, None
    when there is none; or _NESTED, for a call that a recorded one makes (all_gather_object
    all-gathers sizes, then bytes), which is part of it."""
    while frame is not None:
        code = frame.f_code
        if id(code) not in _inside:
            if id(code) in _outside:
                return frame
            if id(code) in _recorders:
                return _NESTED
            if len(_outside) + len(_inside) >= _CACHE_LIMIT:
                _forget_all()
            if not code.co_filename.startswith(_skip_dirs):
                _outside[id(code)] = (code, _file_tail(code))
                return frame
            _inside[id(code)] = code
            if code.co_filename.endswith(_JOIN_FILE):
                _join_codes.add(id(code))
        frame = frame.f_back
    return None


def _through_join(frame, site):
    """Whether torch's frames from `frame` out to the call site pass through join()'s code."""
    while frame is not None and frame is not site:
        if id(frame.f_code) in _join_codes:
            return True
        frame = frame.f_back
    return False


def _file_tail(code):
    return code.co_filename.encode(errors="replace")[-(_SITE - 1):]


def _call_site(frame):
    """The site's file (the tail a record holds) and line, kept for the code in _outside by
    offset: Python finds a frame's line by reading its code's line table from the start."""
    if frame is None:
        return b"", 0
    code = frame.f_code
    known = _outside.get(id(code))
    if known is None:
        return _file_tail(code), frame.f_lineno
    where = (id(code), frame.f_lasti)
    line = _lines.get(where)
    if line is None:
        if len(_lines) >= _CACHE_LIMIT:
            _lines.clear()
        line = _lines[where] = frame.f_lineno
    return known[1], line


def _tensors_of(value):
    """The tensors in `value`: a tensor, or lists, tuples and mappings of them (a collective's
    arguments, a model's output)."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            out.extend(_tensors_of(item))
        return out
    return [value] if hasattr(value, "shape") and hasattr(value, "dtype") else []


def _tensors_key(value):
    """What a list of tensors argument adds to a call's key: how many tensors, and the shape,
    dtype and device of those a record describes."""
    tensors = _tensors_of(value)
    return len(tensors), tuple((t.shape, t.dtype, t.device) for t in tensors[:_TENSORS])


def _code_of(codes, value, describe):
    """`describe(value)`, kept in `codes` by value: a dtype's name and a device's type are new
    strings at every ask."""
    try:
        return codes[value]
    except (KeyError, TypeError):
        code = describe(value)
    try:
        if len(codes) < _CACHE_LIMIT:
            codes[value] = code
    except TypeError:
        pass
    return code


def _dtype_code(dtype):
    return _code_of(_dtype_codes, dtype,
                    lambda d: _DTYPES.get(str(d).replace("torch.", ""), _UNKNOWN_DTYPE))


def _device_code(device):
    return _code_of(_device_codes, device,
                    lambda d: _DEVICES.get(getattr(d, "type", None), _OTHER_DEVICE))


def _describe(call, tensors):
    """Packs the first tensors' shapes, dtypes and devices into `call` (a bytearray); returns the
    flags they add (truncated, queued)."""
    flags = _TRUNCATED if len(tensors) > _TENSORS else 0
    for index, tensor in enumerate(tensors[:_TENSORS]):
        shape = tensor.shape
        if len(shape) > _DIMS:
            flags |= _TRUNCATED
            shape = shape[:_DIMS]
        call[_NDIMS + index] = min(len(shape), 255)
        try:  # the kept codes, inline: the common case
            dtype = _dtype_codes[tensor.dtype]
            device = _device_codes[tensor.device]
        except (KeyError, TypeError):
            dtype, device = _dtype_code(tensor.dtype), _device_code(tensor.device)
        call[_TENSOR_DTYPES + index] = dtype
        call[_TENSOR_DEVICES + index] = device
        if device == _CUDA:
            flags |= _QUEUED
        at = _DIMS_AT + index * _TENSOR_DIMS.size
        try:
            _SHAPES[len(shape)].pack_into(call, at, *shape)
        except struct.error:  # a size beyond 2^32 - 1, saturated
            _SHAPES[len(shape)].pack_into(call, at, *(min(int(size), _MAX_DIM) for size in shape))
    if len(tensors) > _TENSORS and any(getattr(t, "is_cuda", False) for t in tensors[_TENSORS:]):
        flags |= _QUEUED
    return flags


def _redop_code(op):
    # Kept by id with the op itself: a pybind enum's name and hash are slow Python calls.
    try:
        return _redop_codes[id(op)][1]
    except KeyError:
        pass
    name = str(getattr(op, "op", op)).rsplit(".", 1)[-1]
    code = _REDOPS.get(name, _NO_REDOP)
    if len(_redop_codes) >= _CACHE_LIMIT:  # the kept calls name ops by id: they go too
        _forget()
        _redop_codes.clear()
    _redop_codes[id(op)] = (op, code)
    return code


def _peer_of(c10d, group, arguments, peer_arg, op):
    """The root or peer as a global rank: given as one (src, dst; roots default to rank 0, and a
    receive without a source takes any), or, from PyTorch 2.6, as a rank of the group
    (group_src, group_dst)."""
    group_peer = arguments.get("group_" + peer_arg)
    if group_peer is None:
        return arguments.get(peer_arg, None if op == RECV else 0)
    return c10d.get_global_rank(group, group_peer)


def _build(c10d, spec, arguments, frame=None):
    """The call described from its arguments (by name), made from the code of `frame` (the call
    site), as the agent takes it (a CollectiveCall's bytes); None for a call that is not
    recorded. The step, number and time are the agent's to add."""
    op, tensor_args, redop_arg, peer_arg = spec
    default = c10d._get_default_group()
    group = arguments.get("group")
    if group is None or group is c10d.GroupMember.WORLD:
        group = default
    if group is c10d.GroupMember.NON_GROUP_MEMBER:
        return None
    flags = 0
    group_id, queued, group_rank, group_size = _group_info(c10d, group)
    peer = _peer_of(c10d, group, arguments, peer_arg, op) if peer_arg else None
    if op in (SEND, RECV):
        if peer is None:  # a receive from any source pairs with nothing known in advance
            return None
        me = c10d.get_rank()
        sender, receiver = (me, peer) if op == SEND else (peer, me)
        group_id = _stable_hash("%d:%d>%d" % (group_id, sender, receiver))
        group_rank, group_size = (0, 2) if op == SEND else (1, 2)
    elif group is default:
        flags |= _DEFAULT_GROUP
    redop = _NO_REDOP
    if redop_arg:
        given = arguments.get(redop_arg)
        redop = _redop_code(c10d.ReduceOp.SUM if given is None else given)
    tensors = []
    for name in tensor_args:
        tensors.extend(_tensors_of(arguments.get(name)))
    call = bytearray(ctypes.sizeof(_Call))
    flags |= _describe(call, tensors)
    count = tensors[0].numel() if tensors else 0
    if op == BROADCAST_OBJECT:  # filled in place, element for element: lengths must agree
        objects = arguments.get("object_list")
        count = len(objects) if objects is not None else 0
    if queued:
        flags |= _QUEUED
    if arguments.get("async_op"):
        flags |= _ASYNC
    site, line = _call_site(frame)
    call[_SITE_AT:_SITE_AT + len(site)] = site
    _HEAD.pack_into(call, 0, group_id, 0, 0, count, 0, group_rank, group_size,
                    _NO_PEER if peer is None else int(peer), line, op, 0, 0,
                    call[_TENSOR_DTYPES] if tensors else _UNKNOWN_DTYPE, redop,
                    min(len(tensors), _TENSORS), flags)
    return bytes(call)


def _with_flag(call, flag):
    return call[:_FLAGS] + bytes((call[_FLAGS] | flag,)) + call[_FLAGS + 1:]


def _raised(call):
    """`call` marked as one that raised: it gave up (a timeout, a closed connection), which a
    return does not say."""
    return _with_flag(call, _RAISED)


def _described(c10d, name, key_of, frame, key, arguments):
    """The call as the agent takes it, for a call the recorder's first look did not find kept
    (under `key`, made with its caller as the site; None when it could make none), described and
    kept; None for one not recorded. The call site is the first frame outside torch and the hook;
    `key_of(site, **arguments)` makes the call's key from another site."""
    shadow = False
    if id(frame.f_code) not in _outside:
        caller, frame = frame, _user_frame(frame)
        if frame is _NESTED:
            return None
        shadow = _through_join(caller, frame)
        try:
            key = key_of(frame, **arguments)
            call = _cache.get(key, _MISS)
        except Exception:  # no site, or an argument that makes no key: described every time
            key, call = None, _MISS
        if call is not _MISS:
            return call
    if len(_cache) >= _CACHE_LIMIT:
        _forget()
    spec = _SPECS[name]
    try:
        call = _build(c10d, spec, arguments, frame)
    except Exception:  # a call we cannot describe runs unrecorded
        if os.environ.get("TRAINDOC_HOOK_DEBUG"):
            raise
        return None
    if call is None:
        return None
    if name in _ALWAYS_ASYNC:
        call = _with_flag(call, _ASYNC)
    if shadow:
        call = _with_flag(call, _JOIN_SHADOW)
    if key is None or spec[0] in _OBJECT_OPS:
        return call
    group = arguments.get("group")
    if group is not None and id(group) not in _watched:
        try:
            _watched[id(group)] = weakref.ref(group, _forget)
        except TypeError:  # a group without weak references: it could die unnoticed
            return call
    _cache[key] = call
    return call


# Each recorder is made from this text, with the parameters of the function it wraps: binding
# arguments by name (inspect.Signature.bind) would cost more than the rest of the record.
# `{key}` adds to the key what the call's record depends on besides its site and group. The
# first look takes the caller as the site, which it is for a call straight from the job's code
# (the common case), and writes the key out rather than calling _td_key_of (a call more would
# be a tenth of the look); a call from torch's code (an object variant, FSDP) misses, as no key
# is ever kept with torch's code as the site, and is found from its site by _described.
_RECORDER = """
def _td_key_of(_td_frame, {parameters}):
    return ({name!r}, id(_td_frame.f_code), _td_frame.f_lasti, id({group}), {key})


def {name}({parameters}):
    _td_frame = _td_getframe(1)
    try:
        _td_key = ({name!r}, id(_td_frame.f_code), _td_frame.f_lasti, id({group}), {key})
        _td_call = _td_cache.get(_td_key, _td_miss)
    except Exception:
        _td_key, _td_call = None, _td_miss
    if _td_call is _td_miss:
        _td_call = _td_described(_td_frame, _td_key, {{{named}}})
        if _td_call is None:
            try:
                return _td_original({arguments})
            except BaseException as _td_error:
                _td_hide_own_frame(_td_error)
                raise
    _td_enter(_td_call)
    try:
        _td_result = _td_original({arguments})
    except BaseException as _td_error:
        _td_leave(_td_raised(_td_call))
        _td_hide_own_frame(_td_error)
        raise
    _td_leave(_td_call)
    return _td_result
"""


def _source(name, signature):
    """The recorder's text for a function of `signature`, and the defaults its parameters take
    (positional, keyword-only)."""
    kinds = inspect.Parameter
    every = list(signature.parameters.values())
    last_positional_only = max((i for i, p in enumerate(every) if p.kind is kinds.POSITIONAL_ONLY),
                               default=None)
    parameters, arguments, named = [], [], []
    defaults, keyword_defaults = [], {}
    for index, parameter in enumerate(every):
        name_ = parameter.name
        if name_.startswith("_td_"):
            raise ValueError(name_)
        if parameter.kind is kinds.VAR_POSITIONAL:
            parameters.append("*" + name_)
            arguments.append("*" + name_)
        elif parameter.kind is kinds.VAR_KEYWORD:
            parameters.append("**" + name_)
            arguments.append("**" + name_)
            named.append("**" + name_)
        else:
            if parameter.kind is kinds.KEYWORD_ONLY:
                if not any(p.startswith("*") for p in parameters):
                    parameters.append("*")
                arguments.append("%s=%s" % (name_, name_))
                if parameter.default is not kinds.empty:
                    keyword_defaults[name_] = parameter.default
            else:
                arguments.append(name_)
                if parameter.default is not kinds.empty:
                    defaults.append(parameter.default)
            parameters.append(name_)
            named.append("%r: %s" % (name_, name_))
        if index == last_positional_only:
            parameters.append("/")
    present = set(signature.parameters)
    _, tensor_args, redop_arg, peer_arg = _SPECS[name]
    key = []
    for argument in tensor_args:
        if argument not in present:
            key.append("None")
        elif argument.endswith(("_list", "_lists", "tensors")):
            key.append("_td_tensors_key(%s)" % argument)
        else:
            key.append("{0}.shape, {0}.dtype, {0}.device".format(argument))
    if redop_arg in present:
        key.append("id(%s)" % redop_arg)  # a pybind enum's hash is a Python call
    for argument in (peer_arg, "group_%s" % peer_arg, "async_op"):
        if argument in present:
            key.append(argument)
    text = _RECORDER.format(
        name=name, parameters=", ".join(parameters), arguments=", ".join(arguments),
        named=", ".join(named), group="group" if "group" in present else "None",
        key="".join(part + ", " for part in key))
    return text, tuple(defaults), keyword_defaults


def _wrap(c10d, name, function, enter, leave):
    text, defaults, keyword_defaults = _source(name, inspect.signature(function))
    namespace = {
        "_td_original": function, "_td_getframe": sys._getframe, "_td_cache": _cache,
        "_td_miss": _MISS,
        "_td_tensors_key": _tensors_key, "_td_hide_own_frame": _agent.hide_own_frame,
        "_td_enter": enter, "_td_leave": leave, "_td_raised": _raised,
    }
    # Named as a file of the hook's own folder: a call site is never in it.
    where = os.path.join(os.path.dirname(os.path.abspath(__file__)), "<%s recorder>" % name)
    exec(compile(text, where, "exec"), namespace)  # noqa: S102 (our own text, above)
    namespace["_td_described"] = functools.partial(_described, c10d, name, namespace["_td_key_of"])
    recorded = functools.update_wrapper(namespace[name], function)
    _recorders.add(id(recorded.__code__))  # kept alive by the function that replaces the original
    recorded.__defaults__ = defaults or None
    recorded.__kwdefaults__ = keyword_defaults or None
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
        _forget()  # the default group is another
        _agent.quietly(lambda: joined(c10d.get_rank(), c10d.get_world_size()))
        return result

    init_process_group.__traindoc_recorded__ = True
    return init_process_group


def _wrap_destroy(function):
    """destroy_process_group, which frees the default group (or the one given): the calls kept
    of groups that no longer are, and of a default group that may come back as another, go."""

    @functools.wraps(function)
    def destroy_process_group(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except BaseException as error:
            _agent.hide_own_frame(error)
            raise
        finally:
            _forget()

    destroy_process_group.__traindoc_recorded__ = True
    return destroy_process_group


def _replace(distributed, c10d, name, wrapped, function):
    # Calls from inside c10d (the object variants) and from the job (dist.all_reduce) both look
    # the name up in a module namespace: replace it in both.
    setattr(c10d, name, wrapped)
    if getattr(distributed, name, None) is function:
        setattr(distributed, name, wrapped)


def _native(function):
    """dist._broadcast_coalesced as a Python function the recorder can mirror, which keeps its
    own frame out of the job's tracebacks."""

    def _broadcast_coalesced(group, tensors, buffer_size, src=0):
        try:
            return function(group, tensors, buffer_size, src)
        except BaseException as error:
            _agent.hide_own_frame(error)
            raise

    return _broadcast_coalesced


def _agent_entries():
    """The agent's enter and exit of a collective (either None where it lacks them)."""
    return _agent.held("traindoc_collective_enter"), _agent.held("traindoc_collective_exit")


def _patch(distributed):
    global _skip_dirs
    lib = _agent.entry_points()
    enter, leave = _agent_entries()
    if enter is None or leave is None:
        return
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    if c10d is None or not hasattr(c10d, "_get_default_group"):
        return
    torch_dir = os.path.dirname(os.path.dirname(os.path.abspath(distributed.__file__)))
    _skip_dirs = (torch_dir + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)
    for name in _SPECS:
        native = name in _NATIVE
        function = getattr(distributed if native else c10d, name, None)
        if function is None or getattr(function, "__traindoc_recorded__", False):
            continue
        try:
            wrapped = _wrap(c10d, name, _native(function) if native else function, enter, leave)
        except Exception:  # a signature the recorder cannot mirror: the function stays as it is
            if os.environ.get("TRAINDOC_HOOK_DEBUG"):
                raise
            continue
        if native:  # DDP calls it as dist._broadcast_coalesced
            setattr(distributed, name, wrapped)
            continue
        _replace(distributed, c10d, name, wrapped, function)
    destroy = getattr(c10d, "destroy_process_group", None)
    if destroy is not None and not hasattr(destroy, "__traindoc_recorded__"):
        _replace(distributed, c10d, "destroy_process_group", _wrap_destroy(destroy), destroy)
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
