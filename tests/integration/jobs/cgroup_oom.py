"""A job that runs out of memory in a memory cgroup below traindoc's (tests/integration/
test_cgroup_oom.py). With a directory argument it first runs a moment where it started (so that
traindoc sees it there), then moves itself into that cgroup by writing its pid to cgroup.procs;
then it allocates 4 MiB every 0.1 s until the kernel's OOM killer ends it. It never allocates
more than 1 GiB: a limit that did not take ends it with code 3, not the machine's OOM killer."""
import os
import sys
import time

if len(sys.argv) > 1:
    time.sleep(0.6)
    with open(os.path.join(sys.argv[1], "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))
print("allocating", flush=True)
kept = []
for _ in range(256):
    kept.append(bytearray(b"\1") * (4 << 20))  # every page written, so every page charged
    time.sleep(0.1)
print("no limit stopped the job", flush=True)
sys.exit(3)
