"""Replays a recorded transcript (tests/fixtures/transcripts/): prints its lines on the streams
and at the times recorded, then ends as the real failure did, with its exit status or its
signal. Needs neither TensorFlow nor JAX. A transcript of several ranks is replayed as a
launcher would run them: one process per rank (RANK, LOCAL_RANK, WORLD_SIZE set), and the
launcher's status is 1 when a rank failed.

    replay.py TRANSCRIPT [--rank N]

A transcript is text: its first lines starting with '#' are its header (where each text comes
from); then lines to print, and directives, lines that start with '@':
    @rank N           the lines that follow are rank N's (none: the whole job is one process)
    @after SECONDS    wait until SECONDS after the process started
    @stdout, @stderr  the stream of the lines that follow (stderr at first)
    @exit CODE        end with this status
    @signal NAME      end by this signal (SIGKILL, SIGABRT, ...), as the real process did
    @@text            a line '@text'
"""
import os
import signal
import subprocess
import sys
import time


def parse(path):
    """{rank or None: [(directive or None, text)]} of the transcript at `path`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    parts = {}
    rank = None
    for line in lines:
        if line.startswith("@rank "):
            rank = int(line.split()[1])
            continue
        if line.startswith("@") and not line.startswith("@@"):
            word, _, arg = line[1:].partition(" ")
            if word not in ("after", "stdout", "stderr", "exit", "signal"):
                sys.exit(f"replay: {path}: unknown directive {line!r}")
            parts.setdefault(rank, []).append((word, arg))
        else:
            parts.setdefault(rank, []).append((None, line[1:] if line.startswith("@@") else line))
    return parts


def play(steps):
    """Prints one process's lines and ends it as recorded."""
    start = time.monotonic()
    stream = sys.stderr
    for word, arg in steps:
        if word is None:
            stream.write(arg + "\n")
            stream.flush()
        elif word == "after":
            time.sleep(max(0.0, start + float(arg) - time.monotonic()))
        elif word in ("stdout", "stderr"):
            stream = getattr(sys, word)
        elif word == "exit":
            sys.exit(int(arg))
        elif word == "signal":
            number = getattr(signal, arg)
            if number not in (signal.SIGKILL, signal.SIGSTOP):  # those two have no handler
                signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
            time.sleep(5)  # a blocked signal would end here: no exit status of our own
    sys.exit(0)


def launch(path, ranks):
    """Runs each rank as a process of its own and waits for them all, as a launcher does."""
    children = []
    for rank in ranks:
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank),
               "WORLD_SIZE": str(len(ranks))}
        children.append(subprocess.Popen([sys.executable, __file__, path, "--rank", str(rank)],
                                         env=env))
    statuses = [child.wait() for child in children]
    sys.exit(0 if all(status == 0 for status in statuses) else 1)


def main():
    path = sys.argv[1]
    parts = parse(path)
    if len(sys.argv) > 3 and sys.argv[2] == "--rank":
        play(parts.get(int(sys.argv[3]), []))
    ranks = sorted(r for r in parts if r is not None)
    if ranks:
        launch(path, ranks)
    play(parts.get(None, []))


if __name__ == "__main__":
    main()
