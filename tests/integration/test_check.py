"""`traindoc check` and the checks at the start of `traindoc run` (issue 36), each driven by the
real condition the test makes: a small tmpfs over /dev/shm in a private mount namespace, a low
open-file limit, a memory cgroup, the stand-in NVML with another process holding a GPU's memory
and 4 GPUs for 8 ranks, a Python without torch, a port already bound, Debian's torchrun 1.13 on
Python 3.11 without --redirects. Where a check says "will fail", the job is run under the same
condition too, and fails."""
import errno
import json
import os
import shlex
import socket
import subprocess
import sys
import time

import pytest

from conftest import JOBS, PYTHON, TRAINDOC, free_port, job_script, nvml_env

LOADER = str(JOBS / "loader.py")


def check(*command, env=None, wrap=None, timeout=30):
    """`traindoc check --json [-- command]`, under `wrap` (a shell line the command is appended
    to) when given; returns (status, the JSON object)."""
    argv = [str(TRAINDOC), "check", "--json"] + (["--", *command] if command else [])
    if wrap is not None:
        argv = ["sh", "-c", wrap + " " + shlex.join(argv)]
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=timeout)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def named(result, name):
    found = [c for c in result["checks"] if c["check"] == name]
    return found[0] if found else None


def private_shm(size):
    """A shell line that runs what follows with a tmpfs of `size` over /dev/shm, in a mount
    namespace of its own; skips the test where that is not permitted."""
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode().strip()}")
    return f"exec unshare -m sh -c 'mount -t tmpfs -o size={size} tmpfs /dev/shm && exec \"$@\"' sh"


def test_a_clean_machine_has_nothing_that_will_fail():
    status, result = check()
    assert result["schema"] == "traindoc.check/1"
    # This machine may have may-fail traits of its own; none will fail.
    assert status == 0 and result["will_fail"] == 0, result["checks"]
    assert result["facts"]["shm"]["exists"]
    status, result = check(PYTHON, "-c", "import torch")
    assert status == 0 and result["will_fail"] == 0, result["checks"]
    assert result["facts"]["python"]["torch_version"], result["facts"]["python"]
    assert result["facts"]["command"]["launcher"] == "python"


def test_usage_errors_exit_2():
    for argv in (["check", "torchrun", "x.py"], ["check", "--no-such-flag"]):
        proc = subprocess.run([str(TRAINDOC), *argv], capture_output=True)
        assert proc.returncode == 2, proc.stderr.decode()


def test_a_small_shm_then_the_bus_error_it_warned_of(tmp_path):
    wrap = private_shm("64m")
    _, result = check(PYTHON, LOADER, "--workers", "8", wrap=wrap)
    shm = named(result, "shm-small")
    assert shm is not None, result["checks"]
    assert shm["verdict"] == "may-fail"
    assert shm["measured"] == shm["total"] == 64 << 20
    assert shm["threshold"] == 8 * 2 * 32 << 20  # 8 workers, 2 batches in flight, 32 MiB each
    assert result["facts"]["command"]["workers"] == 8
    # traindoc run in such a namespace: the workers' batches of 96 MiB do not fit.
    job = job_script("loader.py", "--workers", "2", "--batch-size", "4", "--sample-mib", "24")
    run_dir = tmp_path / "run"
    argv = [str(TRAINDOC), "run", "--out", str(run_dir), "--", *job]
    proc = subprocess.run(["sh", "-c", wrap + " " + shlex.join(argv)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr.decode()[-3000:]
    assert "traindoc: check: may fail: /dev/shm has 64.0 MiB free of 64.0 MiB" in \
        proc.stderr.decode()
    findings = json.loads((run_dir / "report.json").read_text())["findings"]
    root = findings[0]
    assert root["root_cause"] and root["kind"] == "shm-exhausted", findings
    assert any(e.startswith("the cause, which traindoc's check found as the run started: "
                            "/dev/shm has 64.0 MiB free") for e in root["evidence"]), root
    warning = [f for f in findings if f["kind"] == "preflight-shm-small"]
    assert warning and warning[0]["severity"] == "warning", findings


def test_a_low_open_file_limit_against_the_workers():
    wrap = "ulimit -n 32 &&"
    status, result = check(PYTHON, LOADER, "--workers", "8", wrap=wrap)
    nofile = named(result, "nofile-low")
    assert status == 1 and nofile["verdict"] == "will-fail", result["checks"]
    assert nofile["measured"] == 32 and nofile["threshold"] == 12 + 6 * 8
    # And so it does.
    proc = subprocess.run(["sh", "-c", f"{wrap} exec {shlex.join(job_script('loader.py', '--workers', '8'))}"],
                          capture_output=True, timeout=60)
    assert proc.returncode != 0 and b"Too many open files" in proc.stderr, proc.stderr[-2000:]
    # With room for them: a may-fail at most.
    status, result = check(PYTHON, LOADER, "--workers", "8", wrap="ulimit -n 1024 &&")
    assert status == 0 and named(result, "nofile-low")["verdict"] == "may-fail"


def test_a_memory_cgroup_near_its_limit(memory_cgroup):
    _, child = memory_cgroup(64 << 20)
    proc = subprocess.run([str(TRAINDOC), "check", "--json"], capture_output=True, timeout=30,
                          preexec_fn=lambda: (child / "cgroup.procs").write_text(str(os.getpid())))
    result = json.loads(proc.stdout)
    assert result["facts"]["memory"]["cgroup_max"] == 64 << 20
    low = named(result, "cgroup-memory-low")
    assert low is not None and low["total"] == 64 << 20 and low["measured"] <= 64 << 20, result


GPUS = "".join(f"device GPU-{i}aaa 00000000:0{i + 1}:00.0 81920 0 NVIDIA H100\n" for i in range(4))


def test_gpus_held_by_another_process_and_more_ranks_than_gpus(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "holder"])
    try:
        scenario = (GPUS + "cuda 12020\n"
                    f"process 1 pid={holder.pid} 30000\n"
                    f"process 2 pid={holder.pid} 500\ncomputemode 2 3\n")
        env = nvml_env(tmp_path, scenario)
        status, result = check("torchrun", "--nproc_per_node", "8", "--redirects", "2",
                               str(JOBS / "ddp_steps.py"), env=env)
        assert status == 1
        taken = named(result, "gpu-memory-taken")
        assert taken["device"] == 1 and taken["pid"] == holder.pid, result["checks"]
        assert taken["measured"] == 30000 << 20 and "holder" in taken["subject"]
        assert named(result, "gpu-exclusive-taken")["device"] == 2
        ranks = named(result, "ranks-exceed-gpus")
        assert ranks["measured"] == 8 and ranks["threshold"] == 4
        assert [c["verdict"] for c in result["checks"]][:2] == ["will-fail", "will-fail"]
        assert result["facts"]["nvml"]["cuda_version"] == 12020
        # One rank per visible GPU, and a GPU the job does not see, are no trap.
        env["CUDA_VISIBLE_DEVICES"] = "0,3"
        status, result = check("torchrun", "--nproc_per_node", "2", "--redirects", "2",
                               str(JOBS / "ddp_steps.py"), env=env)
        assert result["facts"]["visible_gpus"] == [0, 3]
        assert not [c for c in result["checks"] if c["check"].startswith(("gpu", "ranks"))]
        env["CUDA_VISIBLE_DEVICES"] = "0,7,1"
        _, result = check(env=env)
        assert named(result, "visible-devices-invalid")["subject"] == "7"
        assert result["facts"]["visible_gpus"] == [0]
    finally:
        holder.kill()
        holder.wait()


def test_a_run_tells_and_stores_the_gpu_another_process_holds(traindoc, tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "holder"])
    try:
        env = nvml_env(tmp_path, GPUS + f"process 0 pid={holder.pid} 30000\n")
        run = traindoc(["true"], env=env)
    finally:
        holder.kill()
        holder.wait()
    assert run.status == 0
    assert "traindoc: check: may fail: GPU 0 already holds 29.3 GiB" in run.stderr.decode()
    warning = [f for f in run.report["findings"] if f["kind"] == "preflight-gpu-memory-taken"]
    assert warning and warning[0]["pids"] == [holder.pid], run.report["findings"]


def test_a_python_without_torch(tmp_path):
    venv = tmp_path / "venv"
    made = subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"no venv module: {made.stderr.decode()[-300:]}")
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    status, result = check(str(venv / "bin" / "python"), str(script))
    missing = named(result, "torch-missing")
    assert status == 1 and missing["subject"] == str(venv / "bin" / "python"), result["checks"]
    assert subprocess.run([str(venv / "bin" / "python"), str(script)],
                          capture_output=True).returncode != 0
    # A script that does not use torch needs none.
    script.write_text("print('hello')\n")
    status, result = check(str(venv / "bin" / "python"), str(script))
    assert status == 0 and named(result, "torch-missing") is None


def debian_torchrun_trap():
    _, result = check("torchrun", "--nproc_per_node", "1", str(JOBS / "ddp_steps.py"))
    python = result["facts"]["python"]
    if not (python["torch_version"].startswith("1.13") and python["version"] >= "3.11"):
        pytest.skip(f"not torchrun 1.13 on Python 3.11: {python}")
    return result


def test_torchrun_113_on_python_311_without_redirects(traindoc):
    result = debian_torchrun_trap()
    trap = named(result, "torchrun-redirects")
    assert trap["verdict"] == "will-fail" and trap["measured"] == 311, result["checks"]
    _, fixed = check("torchrun", "--nproc_per_node", "1", "--redirects", "2", "--tee", "2",
                     str(JOBS / "ddp_steps.py"))
    assert named(fixed, "torchrun-redirects") is None
    # And the run it warned of: torchrun dies before any rank, the trap named as the cause.
    run = traindoc(["torchrun", "--standalone", "--nproc_per_node", "1", str(JOBS / "ddp_steps.py")])
    assert run.status != 0
    root = run.report["findings"][0]
    assert root["kind"] == "launcher-bug", run.report["findings"]
    assert any(e.startswith("the cause, which traindoc's check found as the run started: torchrun "
                            "of torch 1.13") for e in root["evidence"]), root


def test_the_network_of_the_rendezvous():
    with socket.socket() as bound:
        port = free_port()
        bound.bind(("127.0.0.1", port))
        bound.listen()
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
               "NCCL_SOCKET_IFNAME": "nosuchif", "GLOO_SOCKET_IFNAME": "lo"}
        status, result = check(PYTHON, "-c", "pass", env=env)
    assert status == 1
    taken = named(result, "master-port-taken")
    assert taken["measured"] == port and taken["subject"] == "127.0.0.1", result["checks"]
    assert named(result, "socket-ifname-missing")["subject"] == "NCCL_SOCKET_IFNAME=nosuchif"
    assert [i["matches"] for i in result["facts"]["network"]["socket_ifnames"]] == [False, True]
    env["MASTER_ADDR"] = "no-such-host.invalid"
    _, result = check(PYTHON, "-c", "pass", env=env)
    assert named(result, "master-addr-unresolved")["subject"] == "no-such-host.invalid"


def test_a_static_rendezvous_endpoint_without_a_port():
    """torchrun 1.13 refuses `--rdzv_endpoint HOST` under its default (static) rendezvous
    ("port is missing in endpoint"); under c10d the endpoint's port is 29400."""
    status, result = check("torchrun", "--redirects", "2", "--rdzv_endpoint", "127.0.0.1", "x.py")
    assert status == 1 and named(result, "rendezvous-port-missing")["subject"] == "127.0.0.1"
    assert result["facts"]["network"]["endpoint_port_missing"] is True
    status, result = check("torchrun", "--redirects", "2", "--rdzv_backend", "c10d",
                           "--rdzv_endpoint", "127.0.0.1", "x.py")
    assert named(result, "rendezvous-port-missing") is None
    assert result["facts"]["network"]["master_port"] == 29400


def test_a_port_that_is_none():
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "99999"}
    status, result = check(PYTHON, "-c", "pass", env=env)
    assert status == 1 and named(result, "master-port-invalid")["subject"] == "MASTER_PORT=99999"
    assert result["facts"]["network"]["master_port"] is None, result["facts"]["network"]
    status, result = check("torchrun", "--master_port", "70000", "--redirects", "2", "x.py")
    assert named(result, "master-port-invalid")["subject"] == "--master_port=70000", result["checks"]
    assert named(result, "master-port-taken") is None


def test_the_first_nodes_port_from_another_node():
    """A second node's check: 127.0.0.2 stands for the first node. Its port listening, closed
    (refused: the first node has not started yet) or with a full backlog, which drops the
    handshake as a firewall does."""
    def second_node(port):
        started = time.monotonic()
        _, result = check("torchrun", "--nnodes", "2", "--node_rank", "1", "--master_addr",
                          "127.0.0.2", "--master_port", str(port), "--redirects", "2", "x.py")
        return result, time.monotonic() - started

    with socket.socket() as listening:
        listening.bind(("127.0.0.2", 0))
        listening.listen()
        result, _ = second_node(listening.getsockname()[1])
        assert result["facts"]["network"]["connect_error"] == 0, result["facts"]["network"]
        assert named(result, "master-port-unreachable") is None
    with socket.socket() as closed:
        closed.bind(("127.0.0.2", 0))
        result, _ = second_node(closed.getsockname()[1])
        assert result["facts"]["network"]["connect_error"] == errno.ECONNREFUSED
        assert not [c for c in result["checks"] if c["check"].startswith("master")], result
    with socket.socket() as full, socket.socket() as first:
        full.bind(("127.0.0.2", 0))
        full.listen(0)
        port = full.getsockname()[1]
        first.connect(("127.0.0.2", port))  # fills the backlog of 0
        result, took = second_node(port)
    trap = named(result, "master-port-unreachable")
    assert trap["verdict"] == "may-fail" and trap["measured"] == errno.ETIMEDOUT, result["checks"]
    assert 300 <= trap["threshold"] < 500 and took < 5, (trap, took)
    assert trap["subject"] == f"127.0.0.2:{port}"
    assert "got no answer in" in trap["title"]
