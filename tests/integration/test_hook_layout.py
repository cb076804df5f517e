"""The Python hook's copies of src/common/layout.h against layout.h itself, as a program compiled
with it prints them (tests/tools/layout_json.cpp): CollectiveCall field for field, the numbers of
the ops, step kinds and devices, and a collective record's sizes and flags. A number changed on
one side only fails here, rather than in a job whose records the supervisor would misread."""
import ctypes
import json
import re
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT

sys.path.insert(0, str(ROOT / "python"))
from traindoc_hook import collectives, steps  # noqa: E402

# layout.h's constant -> the hook's copy of it, in collectives.py.
COPIES = {
    "kCollectiveTensors": "_TENSORS",
    "kCollectiveDims": "_DIMS",
    "kCallSiteSize": "_SITE",
    "kDtypeUnknown": "_UNKNOWN_DTYPE",
    "kRedOpNone": "_NO_REDOP",
    "kCollectiveAsync": "_ASYNC",
    "kCollectiveTruncated": "_TRUNCATED",
    "kCollectiveQueued": "_QUEUED",
    "kCollectiveRaised": "_RAISED",
    "kCollectiveDefaultGroup": "_DEFAULT_GROUP",
    "kCollectiveJoinShadow": "_JOIN_SHADOW",
}


@pytest.fixture(scope="module")
def layout():
    program = BUILD / "tests" / "tools" / "layout_json"
    return json.loads(subprocess.run([str(program)], capture_output=True, check=True).stdout)


def hook_name(name):
    """layout.h's kAllToAll as the hook spells it: ALL_TO_ALL."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name[1:]).upper()


def public_numbers(module):
    """The module's public integer constants (the hook names its copies of enums in capitals)."""
    return {name: value for name, value in vars(module).items()
            if name.isupper() and not name.startswith("_") and isinstance(value, int)}


def ctypes_field(structure, name, ctype):
    """A field of a ctypes Structure, described as layout_json describes a C++ one."""
    shape = []
    element = ctype
    while hasattr(element, "_length_"):
        shape.append(element._length_)
        element = element._type_
    is_char = element is ctypes.c_char
    described = getattr(structure, name)
    return {"name": name, "offset": described.offset, "size": described.size,
            "element": {"kind": "char" if is_char else "int", "size": ctypes.sizeof(element),
                        "signed": None if is_char else element(-1).value < 0},
            "shape": shape}


def test_the_layout_program_lists_every_field(layout):
    # The program names CollectiveCall's fields one by one: they must cover the struct, so that
    # a field added to layout.h and not to the program shows here.
    call = layout["CollectiveCall"]
    end = 0
    for field in call["fields"]:
        assert field["offset"] == end, f"a field before {field['name']} is not listed"
        end += field["size"]
    assert end == call["size"], "a field after the last one listed"


def test_collective_call_field_for_field(layout):
    call = layout["CollectiveCall"]
    fields = call["fields"]
    for field in fields:
        if field["element"]["kind"] == "char":  # bytes to ctypes: its sign does not matter
            field["element"]["signed"] = None
    hook = collectives._Call
    assert [ctypes_field(hook, name, ctype) for name, ctype in hook._fields_] == fields
    assert (ctypes.sizeof(hook), ctypes.alignment(hook)) == (call["size"], call["align"])


def test_op_step_and_device_numbers(layout):
    assert public_numbers(collectives) == {hook_name(name): value
                                           for name, value in layout["CollectiveOp"].items()}
    assert public_numbers(steps) == {hook_name(name): value
                                     for name, value in layout["StepKind"].items()}
    devices = layout["CollectiveDevice"]
    assert collectives._DEVICES == {"cpu": devices["kCpu"], "cuda": devices["kCuda"]}
    assert collectives._OTHER_DEVICE == devices["kOther"]


def test_sizes_and_flags(layout):
    assert set(COPIES) == set(layout["constants"])
    assert {name: getattr(collectives, copy) for name, copy in COPIES.items()} == \
        layout["constants"]
    dims = next(f for f in layout["CollectiveCall"]["fields"] if f["name"] == "dims")
    assert collectives._MAX_DIM == 2 ** (8 * dims["element"]["size"]) - 1
