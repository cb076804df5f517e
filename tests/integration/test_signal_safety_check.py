"""scripts/check-agent-signal-safety, the gate that keeps allocation and stdio out of the agent's
signal-handler code. The sources as they are pass it. A copy of them with a violation planted in
a handler's file, or in a header such a file includes, fails it, naming the line. A violation
marked as a justified exception, in a comment or a string, or in a file no handler runs does
not."""
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

CHECK = ROOT / "scripts" / "check-agent-signal-safety"


def check(root=None):
    return subprocess.run([sys.executable, str(CHECK)] + ([str(root)] if root else []),
                          capture_output=True, text=True, timeout=30)


@pytest.fixture
def sources(tmp_path):
    """A copy of the agent's and the shared headers' sources, to plant violations in."""
    for room in ("agent", "common"):
        shutil.copytree(ROOT / "src" / room, tmp_path / "src" / room)
    return tmp_path


def plant(sources, name, before, added):
    """Puts the line `added` before the first line of src/<name> that starts with `before`; returns
    the added line's number."""
    path = sources / "src" / name
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(before))
    lines.insert(at, added + "\n")
    path.write_text("".join(lines))
    return at + 1


def test_the_agent_passes():
    result = check()
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name, before, added, what", [
    ("agent/stack_dump.cpp", "  close(fd);", "  void* leak = malloc(16);", "allocates"),
    ("agent/crash_handler.cpp", "  int64_t crash_ns", '  fprintf(stderr, "crash\\n");',
     "uses stdio"),
    ("agent/signal_hooks.cpp", "namespace traindoc", "auto* g_table = new int[4];", "allocates"),
    ("agent/crash_record.cpp", "namespace traindoc", "std::string g_name;", "allocates"),
    ("agent/agent.cpp", "namespace traindoc", "#include <cstdio>", "includes"),
    ("agent/hooks.cpp", "namespace traindoc", 'void g() { syslog(LOG_ERR, "reaped"); }',
     "uses syslog"),
    # A header that a handler's file includes.
    ("common/write_all.h", "namespace traindoc", "inline std::vector<int> g_sizes;", "allocates"),
])
def test_a_planted_violation_fails(sources, name, before, added, what):
    assert check(sources).returncode == 0
    line = plant(sources, name, before, added)
    result = check(sources)
    assert result.returncode == 1
    assert f"src/{name}:{line}: {what}" in result.stderr, result.stderr


@pytest.mark.parametrize("name, before, added", [
    ("agent/stack_dump.cpp", "  close(fd);",
     "  void* leak = malloc(16);  // signal-safety: a marked exception"),
    ("agent/stack_dump.cpp", "  close(fd);", "  // malloc(16) would deadlock here"),
    ("agent/stack_dump.cpp", "  close(fd);", '  write_text(fd, "printf\\n", 7);'),
    ("agent/nccl_hooks.cpp", "namespace traindoc", "std::string g_not_in_a_handler;"),
])
def test_what_is_not_a_violation(sources, name, before, added):
    plant(sources, name, before, added)
    result = check(sources)
    assert result.returncode == 0, result.stderr
