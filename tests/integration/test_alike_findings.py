"""A job that forks hundreds of short children failing the same way gets one finding for them,
with how many and a few examples, in report.json, report.html and the terminal summary; the
first child's failure stays the root cause, alone."""
from conftest import python_job

CHILDREN = 400


def test_forked_children_failing_alike_are_one_finding(traindoc):
    code = ("import os\n"
            f"for i in range({CHILDREN}):\n"
            "    pid = os.fork()\n"
            "    if pid == 0: os._exit(3)\n"
            "    os.waitpid(pid, 0)\n")
    run = traindoc(python_job(code), timeout=180)
    assert run.status == 0
    report = run.report
    children = [p for p in report["processes"] if p["role"] == "worker"]
    assert len(children) == CHILDREN
    assert all(p["exit"].get("code") == 3 for p in children)
    exits = [f for f in report["findings"] if f["kind"] == "worker-exit"]
    assert len(exits) == 2, [f["title"] for f in exits]
    root, group = exits
    # The first child's exit is the root cause, told alone.
    assert root["root_cause"] and "repeated" not in root
    assert root["pids"] == [children[0]["pid"]]
    # The others: one finding, caused by it, naming every one of them.
    assert not group["root_cause"]
    assert report["findings"].index(group) in root["consequences"]
    repeated = group["repeated"]
    assert repeated["count"] == CHILDREN - 1
    assert sorted(group["pids"]) == sorted(p["pid"] for p in children[1:])
    assert f"(and {CHILDREN - 2} more alike)" in group["title"]
    # A few examples: the first three and the last, in time order, each naming its process.
    examples = repeated["examples"]
    assert [e["pids"] for e in examples] == [[p["pid"]] for p in children[1:4] + children[-1:]]
    assert all(f"(pid {e['pids'][0]}) exited with code 3" in e["title"] for e in examples)
    times = [e["time_ns"] for e in examples]
    assert times == sorted(times)
    assert repeated["first_ns"] == times[0] and repeated["last_ns"] == times[-1]
    assert repeated["first_ns"] < repeated["last_ns"]
    assert group["evidence"][0].startswith(f"{CHILDREN - 1} alike findings: ")

    # Told once among the findings; the charts' marker of the group (an error) names it again.
    html = (run.run_dir / "report.html").read_text()
    findings = html[:html.index('<section id="charts">')]
    assert html.count('data-kind="worker-exit"') == 2
    assert html.count(f'data-repeated="{CHILDREN - 1}"') == 1
    assert findings.count(f"(and {CHILDREN - 2} more alike)") == 1
    assert group["time_ns"] == repeated["first_ns"]

    summary = run.stderr.decode()
    assert summary.count("[worker-exit]") == 2, summary
    assert summary.count(f"(and {CHILDREN - 2} more alike)") == 1
    assert summary.count(f"{CHILDREN - 1} alike findings: ") == 1
