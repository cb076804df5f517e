"""The fault zoo: each case of the catalog of real failures that runs on a CPU, how to launch it,
and the diagnosis traindoc must give (root-cause kind, ranks named, words and numbers). The
integration tests run every case; run this file to print the results table of docs/findings.md:

    /usr/bin/python3 examples/faults/zoo.py [--traindoc build/bin/traindoc] [case ...]
"""
import argparse
import dataclasses
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))


@dataclasses.dataclass
class Case:
    id: str  # the catalog's row
    script: str
    ranks_launched: int  # 0: plain python; N: torchrun with N processes
    kind: str  # of the root cause; "" for a clean run
    ranks: list = dataclasses.field(default_factory=list)
    title: list = dataclasses.field(default_factory=list)  # words of the root cause's title
    evidence: list = dataclasses.field(default_factory=list)  # words in its evidence
    fix: list = dataclasses.field(default_factory=list)
    consequences: list = dataclasses.field(default_factory=list)  # kinds that must follow it
    args: list = dataclasses.field(default_factory=list)
    status: int = 1  # None: any (the job's end depends on how the backend fails)
    options: list = dataclasses.field(default_factory=list)  # of traindoc run
    small_shm: bool = False  # needs a 16 MiB /dev/shm (a private mount namespace, as root)
    redirects: bool = True  # torchrun with --redirects 2 --tee 2 (Debian's torchrun needs them)
    # False: the ranks named must include `ranks` (the collective checker also names the ranks
    # that waited); True: exactly `ranks`.
    all_ranks_named: bool = True
    # Words of one consequence's title; "{pid}" stands for one of the root cause's pids (a
    # failure merged from several processes names them all). A list of such lists: any of them,
    # where what the others saw depends on timing.
    consequence_title: list = dataclasses.field(default_factory=list)


# The rank's failure names the dead worker, in PyTorch's words ("DataLoader worker (pid(s) N)
# exited unexpectedly") or, where the worker died while the rank fetched a batch it had made and
# PyTorch says only "Connection reset by peer", in traindoc's ("... from DataLoader worker 0 of
# rank 0 (pid N) when it died ...").
WORKER_NAMED = ["DataLoader worker", "{pid})"]

CASES = [
    Case("T01", "worker_segfault.py", 0, "worker-crash", [0], ["worker", "SIGSEGV", "null pointer"],
         ["string_at"], ["num_workers=0"], ["python-exception"],
         consequence_title=WORKER_NAMED),
    Case("T03", "worker_killed.py", 0, "worker-crash", [0], ["worker", "SIGKILL"], [], ["OOM"],
         ["python-exception"], consequence_title=WORKER_NAMED),
    Case("T05", "worker_timeout.py", 0, "worker-timeout", [0], ["1000 ms"], ["worker_timeout.py"],
         ["timeout"]),
    Case("T08", "small_shm.py", 0, "shm-exhausted", [0], ["/dev/shm"], [], ["--shm-size"],
         small_shm=True),
    Case("S03", "label_255.py", 0, "label-out-of-range", [0], ["label 255", "[0, 19)"],
         ["Target 255 is out of bounds", "label_255.py:27", "criterion("], ["ignore_index=255"]),
    Case("T30", "store_key_timeout.py", 0, "rendezvous-timeout", [0],
         ["dataset/prepared", "1000 ms"], [], ["store key"]),
    Case("S08", "native_crash_rank.py", 2, "native-crash", [1], ["rank 1", "SIGSEGV"],
         ["in your code", 'native_crash_rank.py", line 16 in fused_op']),
    Case("T12", "collective_op_mismatch.py", 2, "collective-mismatch", [0, 1],
         ["all_reduce #1", "different op", "reduce at"], ["ALLREDUCE", "REDUCE"]),
    Case("T13", "collective_shape_mismatch.py", 2, "collective-mismatch", [0, 1],
         ["different shape", "[100, 2560]", "[200, 2560]"], ["512000 bytes"], ["pad"]),
    Case("H06", "uneven_all_gather.py", 2, "collective-mismatch", [0, 1],
         ["all_gather #1", "different shape", "rank 0: [2]; [2]; [3]", "rank 1: [3]; [2]; [3]"],
         ["expected (2) at index 1, got (3)"]),
    Case("S05", "dtype_mismatch.py", 2, "collective-mismatch", [0, 1],
         ["all_reduce #1", "different dtype", "float32", "int64"], [], ["Cast"], status=None),
    # Rank 0 blocks in its first call, so its second is never seen: the swap shows as a
    # different op at #1, with both call sites.
    Case("S06", "order_swapped.py", 2, "collective-mismatch", [0, 1],
         ["all_reduce #1", "different op", "order_swapped.py:15", "order_swapped.py:18"]),
    Case("H02", "total_loss_leak.py", 0, "memory-leak", [0], ["memory grows", "MiB per step"], [],
         ["item()"], status=0, options=["--interval", "0.2"]),
    Case("T14", "monitored_barrier.py", 2, "collective-missing", [1], ["rank 1", "monitored"],
         ["2000 ms", "monitored_barrier.py:17"]),
    Case("H08b", "skip_collective.py", 2, "collective-missing", [1], ["rank 1", "all_reduce"],
         ["5000 ms"]),
    Case("H08c", "skip_collective.py", 2, "collective-missing", [1], ["rank 1", "all_reduce"],
         ["exit code 0"], ["skip"], ["peer-exited"], ["--then-exit"]),
    # A straggler is not a failure: the job finishes, and the warning tells it from a desync.
    Case("H14", "straggler.py", 2, "collective-missing", [1], ["rank 1", "a straggler"],
         ["made it", "straggler.py:20"], ["timeout"], status=0, options=["--stall-seconds", "1"]),
    # DDP's gradient all-reduce, recorded by the hook: rank 0's 4th backward waits in one that
    # rank 1, a backward short, never makes; with the loss all-reduced for logging first, rank 1's
    # next all_reduce meets rank 0's gradient all-reduce (gloo then fails on their sizes).
    Case("H11", "skip_backward.py", 2, "uneven-inputs", [1],
         ["rank 1 never made ddp_gradient_all_reduce #5", "skip_backward.py:26"],
         ["4 backward", "3 backward"], ["same number of batches"], ["peer-exited"],
         all_ranks_named=False),
    Case("H11 log", "skip_backward.py", 2, "collective-order", [0, 1],
         ["ddp_gradient_all_reduce #5 at", "skip_backward.py:26", "all_reduce #5 at",
          "skip_backward.py:22"], [], ["skipped a backward", "skip flag"], args=["--log-loss"],
         status=None),
    Case("T16", "peer_abort.py", 2, "abort", [1], ["rank 1", "SIGABRT"], ["peer_abort.py\", line 17"],
         consequences=["peer-exited"],
         # Rank 0 tells of the lost connection, unless its launcher ended it before it could
         # (seen on a busy machine): then the consequence is rank 1's end before the call.
         consequence_title=[["rank 0", "lost its connection to rank 1 (pid {pid}), which had died of SIGABRT"],
                            ["rank 1 (pid {pid}) died of SIGABRT before all_reduce #3, which the other ranks waited in"]]),
    Case("T28", "ddp_model_mismatch.py", 2, "ddp-model-mismatch", [0, 1],
         ["rank 0 has 4 parameters", "rank 1 has 2"]),
    # The indices named: the hook numbers the parameters of the model that raised the error.
    Case("T29", "ddp_unused_parameters.py", 2, "ddp-unused-parameters", [0, 1],
         ["indices 0", "a.weight (module a)"], ["DDP's parameter 0 is a.weight"],
         ["a.weight", "find_unused_parameters=True"]),
    # Evaluation through the DDP model on rank 0 only: DDP's buffer broadcast is rank 0's alone,
    # not uneven inputs (the training steps agree). Without broadcast_buffers a forward under
    # no_grad makes no collective, and the run is clean, as is join()'s shadowing of rank 0's
    # collectives that follows (from another line than rank 0's, by design).
    Case("DDP-eval", "eval_rank_zero.py", 2, "collective-missing", [0],
         ["rank 0 alone ran a forward through the DDP model at", "eval_rank_zero.py:29",
          "broadcast_coalesced #"],
         ["never calls from there", "6 optimizer"], ["model.module", "Evaluate on every rank"],
         ["peer-exited"]),
    Case("DDP-eval no buffers", "eval_rank_zero.py", 2, "",
         args=["--no-broadcast-buffers", "--join"], status=0),
    Case("launcher", "clean_ddp.py", 2, "launcher-bug", [], ["--redirects"], [], ["--redirects 2"],
         redirects=False),
    Case("clean", "clean_single.py", 0, "", status=0),
    Case("clean DDP", "clean_ddp.py", 2, "", status=0),
    # H01 and S04 finish: their diagnosis is a warning, with the growth of each process.
    # The workers' private memory comes from smaps_rollup, whose reads traindoc paces to a CPU
    # budget: 0.1 s samples and a 25 s epoch give it enough of them.
    Case("H01", "python_list_dataset.py", 0, "memory-leak", [0], ["copy the Python objects", "2 worker(s)"],
         ["with 2 workers per rank", "while its RSS stayed near"], ["numpy"], status=0,
         args=["--seconds", "25"], options=["--interval", "0.1"]),
    Case("S04", "total_loss_leak.py", 0, "memory-leak", [0], ["memory grows", "MiB per step"],
         ["optimizer steps"], [".detach()"], args=["--keep-outputs"], status=0,
         options=["--interval", "0.2"]),
    Case("H03", "label_255.py", 0, "label-out-of-range", [0], ["label 255", "[0, 21)", "21 classes"],
         ["Target 255 is out of bounds", "label_255.py:24", "F.cross_entropy(", "Pascal VOC"],
         ["ignore_index=255"], args=["--voc"]),
    # Rank 0 alone syncs a metric: the blame is rank 0's, not that of the ranks that never make it.
    Case("H16", "rank_zero_collective.py", 3, "collective-order", [0],
         ["rank 0 made all_reduce #3", "from another place"],
         ["the odd one", "rank_zero_collective.py:23"], ["rank_zero_only=True"], ["peer-exited"]),
    Case("T17", "rank_zero_collective.py", 3, "collective-missing", [0],
         ["rank 0 alone made all_reduce #4", "rank_zero_collective.py:23"],
         ["never calls from there"], ["unconditional"], ["peer-exited"], ["--at-end"]),
]


def python_with_torch():
    """Debian's interpreter has torch; the first python3 on PATH may not."""
    return os.environ.get("TRAINDOC_PYTHON", "/usr/bin/python3")


def free_port():
    """A TCP port free on loopback now, for a job's store. Below the kernel's ephemeral range, so
    that no connection made meanwhile (gloo's, another job's) gets it as its local port before the
    store binds it; the store's launcher takes a second or two to start."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    pick = random.SystemRandom()
    for _ in range(100):
        port = pick.randrange(10000, ephemeral) if ephemeral > 10000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError(f"no free TCP port from 10000 to {ephemeral}")


def command(case):
    python = python_with_torch()
    script = [os.path.join(HERE, case.script), *case.args]
    if case.ranks_launched == 0:
        return [python, *script]
    # A store on a free port, not --standalone's fixed 29400: cases may run side by side.
    launcher = [python, "-m", "torch.distributed.run", "--nnodes", "1", "--master_addr",
                "127.0.0.1", "--master_port", str(free_port()),
                "--nproc_per_node", str(case.ranks_launched)]
    if case.redirects:
        launcher += ["--redirects", "2", "--tee", "2"]
    return launcher + script


def run(case, traindoc, run_dir, timeout=180):
    """Runs the case under `traindoc run`; returns (exit status, report, stderr)."""
    argv = [traindoc, "run", "--out", run_dir, *case.options, "--", *command(case)]
    if case.small_shm:
        argv = ["unshare", "-m", "sh", "-c",
                'mount -t tmpfs -o size=16m tmpfs /dev/shm && exec "$@"', "sh", *argv]
    proc = subprocess.run(argv, capture_output=True, timeout=timeout)
    with open(os.path.join(run_dir, "report.json"), encoding="utf-8") as f:
        return proc.returncode, json.load(f), proc.stderr.decode(errors="replace")


def problems(case, status, report):
    """What differs from the expected diagnosis; empty when the case passes."""
    found = []
    if case.status is not None and status != case.status:
        found.append(f"exit status {status}, expected {case.status}")
    serious = [f for f in report["findings"] if f["severity"] in ("error", "warning")]
    if not case.kind:
        if serious:
            found.append("findings on a clean run: " + "; ".join(f["title"] for f in serious))
        return found
    # A run that did not fail has no root cause: its first finding (a warning) is the diagnosis.
    roots = [f for f in report["findings"] if f["root_cause"]] or report["findings"][:1]
    if len(roots) != 1:
        return found + [f"{len(roots)} root causes"]
    root = roots[0]
    if root["kind"] != case.kind:
        found.append(f"root cause {root['kind']}: {root['title']}")
    named = sorted(root["ranks"]) if case.all_ranks_named else sorted(set(root["ranks"]) & set(case.ranks))
    if named != sorted(case.ranks):
        found.append(f"ranks {root['ranks']}, expected {case.ranks}")
    for field, words in (("title", case.title), ("fix", case.fix)):
        found += [f"{field} lacks {w!r}: {root[field]}" for w in words if w not in root[field]]
    evidence = "\n".join(root["evidence"])
    found += [f"evidence lacks {w!r}" for w in case.evidence if w not in evidence]
    consequences = [report["findings"][i] for i in root["consequences"]]
    kinds = [f["kind"] for f in consequences]
    found += [f"no {k} consequence ({kinds})" for k in case.consequences if k not in kinds]
    if case.consequence_title:
        titles = case.consequence_title
        if isinstance(titles[0], str):
            titles = [titles]
        told = any(all(w.replace("{pid}", str(pid)) in f["title"] for w in words)
                   for words in titles for f in consequences for pid in root["pids"])
        if not told:
            found.append(f"no consequence's title has {case.consequence_title} with a pid of "
                         f"{root['pids']}: {[f['title'] for f in consequences]}")
    for finding in [root, *consequences]:
        found += misnamed_processes(finding, report["processes"])
        # No case restarts its ranks: a title that counts attempts names a process twice.
        if "attempts: the launcher restarted" in finding["title"]:
            found.append(f"restart attempts counted without restarts: {finding['title']}")
    return found


def misnamed_processes(finding, processes):
    """Every "(pid N)" of a finding's title must be a process of the run, named by its role;
    PyTorch's own words ("DataLoader worker (pid N) is killed") name it their way."""
    roles = {p["pid"]: p["role_text"] for p in processes}
    found = []
    for pid in map(int, re.findall(r"(?<!DataLoader worker )\(pid (\d+)\)", finding["title"])):
        if pid not in roles:
            found.append(f"pid {pid} is no process of the run: {finding['title']}")
        elif f"{roles[pid]} (pid {pid})" not in finding["title"]:
            found.append(f"pid {pid} is {roles[pid]}: {finding['title']}")
    return found


def can_run(case):
    if not case.small_shm:
        return True
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=16m tmpfs /dev/shm"],
                           capture_output=True)
    return probe.returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traindoc", default=os.path.join(HERE, "..", "..", "build", "bin", "traindoc"))
    parser.add_argument("cases", nargs="*", help="case ids (default: all)")
    args = parser.parse_args()
    selected = [c for c in CASES if not args.cases or c.id in args.cases]
    print("| case | script | expected | root cause found | ranks | title | s |")
    print("|---|---|---|---|---|---|---:|")
    failed = 0
    for case in selected:
        if not can_run(case):
            print(f"| {case.id} | {case.script} | {case.kind} | not run: needs a private mount namespace | | | |")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            start = time.monotonic()
            status, report, _ = run(case, os.path.abspath(args.traindoc), os.path.join(tmp, "run"))
            seconds = time.monotonic() - start
        roots = [f for f in report["findings"] if f["root_cause"]] or report["findings"][:1]
        root = roots[0] if roots else {"kind": "(none)", "ranks": [], "title": ""}
        wrong = problems(case, status, report)
        failed += bool(wrong)
        mark = "" if not wrong else " **(" + "; ".join(wrong) + ")**"
        # Paths as the repository names them, wherever it was checked out.
        title = root["title"].replace(REPOSITORY + os.sep, "")
        print(f"| {case.id} | {case.script} {' '.join(case.args)} | {case.kind or '(none)'} | "
              f"{root['kind']}{mark} | {root['ranks']} | {title} | {seconds:.0f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
