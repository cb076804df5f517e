"""Records DistributedDataParallel's gradient all-reduce, which its Reducer makes in C++ during
backward, bucket by bucket, where the torch.distributed recorder (collectives.py) never sees it:
one `ddp_gradient_all_reduce` per backward of a forward that synchronises gradients, in the DDP
model's group, describing all the gradients it reduces, at the job's line that called backward
(or, where autograd runs on another thread, the one that called the model). A rank that ran a
training step the others did not (uneven inputs, a skipped backward) then waits in a call of its
own, and one whose backward meets another collective of a peer is seen to. Where the group's
backend is NCCL the agent's interposers record each bucket's own all-reduce instead."""
import functools
import sys
import weakref

from traindoc_hook import _agent, _imports, collectives

_SPEC = (collectives.DDP_GRADIENT_ALL_REDUCE, ("tensor",), "op", None)
_LINE_AT = collectives._Call.line.offset
_SITE_AT, _SITE = collectives._SITE_AT, collectives._SITE
_OUTPUTS = 4  # hooked per forward: the loss comes of one of them
_models = {}  # id of a DDP model -> its _Model (a weak reference's callback drops it)
_enter = _leave = _torch = _engine = None


class _Gradients:
    """What the Reducer all-reduces, as one tensor: every parameter that gets a gradient."""

    def __init__(self, parameters):
        trained = [p for p in parameters if p.requires_grad]
        self.shape = (sum(p.numel() for p in trained),)
        self.dtype = trained[0].dtype if trained else None
        self.device = trained[0].device if trained else None

    def numel(self):
        return self.shape[0]


class _Model:
    """What the recorder keeps of one DDP model: the model (weakly), the calls it described by
    site, whether the agent records its group's own calls (NCCL), the forward whose backward is
    to come (a token its output hooks hold), and the record entered and not yet left."""

    __slots__ = ("model", "calls", "unseen", "pending", "open", "__weakref__")

    def __init__(self, ddp):
        key = id(ddp)
        self.model = weakref.ref(ddp, lambda _: _models.pop(key, None))
        self.calls = {}
        c10d = sys.modules["torch.distributed.distributed_c10d"]
        self.unseen = not collectives._group_info(c10d, ddp.process_group)[1]
        self.pending = self.open = None

    def call_at(self, site, line):
        call = self.calls.get((site, line))
        if call is None:
            ddp = self.model()
            c10d = sys.modules["torch.distributed.distributed_c10d"]
            described = collectives._build(c10d, _SPEC, {
                "tensor": _Gradients(ddp.module.parameters()), "group": ddp.process_group})
            call = bytearray(described)
            call[_SITE_AT:_SITE_AT + _SITE] = site.ljust(_SITE, b"\0")
            call[_LINE_AT:_LINE_AT + 4] = line.to_bytes(4, "little", signed=True)
            call = bytes(call)
            if len(self.calls) < collectives._CACHE_LIMIT:
                self.calls[(site, line)] = call
        return call


def _model_of(ddp):
    model = _models.get(id(ddp))
    if model is None or model.model() is not ddp:
        model = _models[id(ddp)] = _Model(ddp)
    return model


def _site_of(frame):
    """The job's line (file tail, line) that `frame`'s call came from, empty where none is."""
    site = collectives._user_frame(frame)
    return collectives._call_site(site if site is not collectives._NESTED else None)


def _watch(ddp, output, caller):
    """After a forward of `ddp`: arranges the record of its backward's all-reduce, if it makes
    one (gradients enabled and synchronised, not under no_sync(); a backend the agent does not
    see)."""
    model = _model_of(ddp)
    if model.open is not None:  # a backward that raised (a timeout the job caught)
        _leave(collectives._raised(model.open))
        model.open = None
    model.pending = None
    if not model.unseen or not _torch.is_grad_enabled() or not ddp.require_backward_grad_sync:
        return
    outputs = [t for t in collectives._tensors_of(output)
               if getattr(t, "requires_grad", False)][:_OUTPUTS]
    if not outputs:
        return
    # Autograd runs a CUDA backward on a thread of its own, where the job's line is not on the
    # stack: the line that called the model stands for it.
    site = _site_of(caller) if outputs[0].is_cuda else None
    token = model.pending = (model, site)
    began = functools.partial(_began, token)
    for tensor in outputs:
        tensor.register_hook(began)


def _began(token, grad):
    """The gradient hook of a forward's outputs: the first of them, at the start of backward,
    enters the record."""
    model = token[0]
    if model.pending is not token:
        return None
    model.pending = None
    try:
        where = _site_of(sys._getframe(1))
        if not where[0]:  # on autograd's own thread
            where = token[1] or where
        call = model.open = model.call_at(*where)
        _enter(call)
        # Queued now, this callback runs before the Reducer's own (queued once the last bucket
        # is ready); queued from it, the second runs after, once the all-reduces are waited for.
        # A failure in a final callback would be the backward's: each is quiet.
        _engine.queue_callback(functools.partial(_agent.quietly, _engine.queue_callback,
                                                 functools.partial(_agent.quietly, _ended, model,
                                                                   call)))
    except Exception:
        if _agent.debugging():
            raise
    return None


def _ended(model, call):
    if model.open is call:
        model.open = None
        _leave(call)


def _shadow(match):
    """join()'s match of the others' gradient all-reduces on a rank out of inputs
    (_match_all_reduce_for_bwd_pass), recorded as a shadow, as join()'s other calls are."""

    @functools.wraps(match)
    def matched(self, *args, **kwargs):
        try:
            call = _model_of(self).call_at(*_site_of(sys._getframe(1)))
            call = collectives._with_flag(call, collectives._JOIN_SHADOW)
            _enter(call)
        except Exception:  # a call we cannot describe runs unrecorded
            call = None
        try:
            result = match(self, *args, **kwargs)
        except BaseException as error:
            if call is not None:
                _leave(collectives._raised(call))
            _agent.hide_own_frame(error)
            raise
        if call is not None:
            _leave(call)
        return result

    return matched


def _patch(module):
    global _torch, _engine
    _torch = sys.modules["torch"]
    _engine = sys.modules["torch.autograd"].Variable._execution_engine
    ddp_class = module.DistributedDataParallel
    forward = ddp_class.forward

    @functools.wraps(forward)
    def forward_watched(self, *args, **kwargs):
        try:
            output = forward(self, *args, **kwargs)
        except BaseException as error:
            _agent.hide_own_frame(error)
            raise
        try:
            _watch(self, output, sys._getframe(1))
        except Exception:  # a failure of the hook never reaches the job
            if _agent.debugging():
                raise
        return output

    ddp_class.forward = forward_watched
    match = getattr(ddp_class, "_match_all_reduce_for_bwd_pass", None)
    if match is not None:
        ddp_class._match_all_reduce_for_bwd_pass = _shadow(match)


def install():
    global _enter, _leave
    _enter, _leave = collectives._agent_entries()
    if _enter is None or _leave is None:
        return
    _imports.when_imported("torch.nn.parallel.distributed", _patch)
