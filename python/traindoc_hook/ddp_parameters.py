"""The names of the parameters that DistributedDataParallel's unused-parameter error lists only by
index ("Parameter indices which did not receive grad for rank 0: 3 4", where
TORCH_DISTRIBUTED_DEBUG is unset). When that error ends the program, the hook reads the names of
the parameters the DDP model's reducer numbers from the model whose forward raised it, writes
those the error lists to the run folder (agent/ddp-parameters-<pid>.tsv, docs/file-formats.md)
and tells the agent (`traindoc_ddp_parameters`, src/agent/python_abi.cpp); the analysis maps the
error's indices to them. Nothing runs while the job trains: it reads the error at exit, from what
Python keeps of the exception that ended the program, as losses.py does."""
import ctypes
import os
import re
import sys

from traindoc_hook import _agent

_INDICES = re.compile(r"Parameter indices which did not receive grad for rank \d+: ([0-9 ]+)")
_MAX_NAMES = 64  # the supervisor reads as many
_tell = None


def _reducer_names(ddp):
    """The names of the parameters DDP's reducer numbers, in its order: module by module
    (named_modules), each module's own parameters that require grad and are not ignored, each
    once (DistributedDataParallel._build_params_for_reducer, PyTorch 1.13 and 2.x)."""
    ignored = getattr(ddp, "parameters_to_ignore", ())
    seen = set()
    names = []
    for module_name, module in ddp.module.named_modules():
        for name, parameter in module.named_parameters(recurse=False):
            if not parameter.requires_grad or f"{module_name}.{name}" in ignored:
                continue
            if id(parameter) in seen:
                continue
            seen.add(id(parameter))
            names.append(f"{module_name}.{name}" if module_name else name)
    return names


def _raising_model(traceback):
    """The DDP model whose method raised the error: the innermost frame of a method of one."""
    ddp_class = getattr(sys.modules.get("torch.nn.parallel.distributed"),
                        "DistributedDataParallel", None)
    found = None
    while ddp_class is not None and traceback is not None:
        owner = traceback.tb_frame.f_locals.get("self")
        if isinstance(owner, ddp_class):
            found = owner
        traceback = traceback.tb_next
    return found


def _report(error):
    match = _INDICES.search(str(error))
    run_dir = os.environ.get("TRAINDOC_RUN_DIR")
    if match is None or not isinstance(error, RuntimeError) or not run_dir:
        return
    ddp = _raising_model(error.__traceback__)
    if ddp is None:
        return
    names = _reducer_names(ddp)
    lines = []
    for index in [int(i) for i in match.group(1).split()][:_MAX_NAMES]:
        if index < len(names):
            name = names[index].replace("\t", " ").replace("\n", " ")
            lines.append(f"{index}\t{name}\n")
    if not lines:
        return
    path = os.path.join(run_dir, "agent", "ddp-parameters-%d.tsv" % os.getpid())
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.writelines(lines)
    _tell(len(lines))


def install():
    global _tell
    try:
        _tell = _agent.entry_points().traindoc_ddp_parameters
    except AttributeError:
        return
    _tell.restype = None
    _tell.argtypes = [ctypes.c_int]
    _agent.at_exit_with_error(_report)
