"""report.html, opened in a real browser (Debian's Chromium, headless): the page a user gets
from a failed torchrun job shows the root cause and draws its charts, the job's own text stays
text, a job killed in a memory cgroup of its own has that cgroup drawn, and `traindoc analyze`
writes the same page again from run.db."""
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from conftest import FAKE_NVML, PYTHON, TRAINDOC, job_script, nvml_env, torchrun_ranks
from test_crashes import WORKER_SEGV
from test_gpu import FOREIGN, OOM_2X, ranks_job

CHROMIUM = shutil.which("chromium")

# Two DDP ranks train for a few seconds (the same number of steps each: a loop timed by each
# rank's clock would leave one in a backward that the other never joins); then rank 1 raises,
# its message holding markup.
JOB = """
import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
model = DistributedDataParallel(torch.nn.Linear(64, 8))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    optimizer.zero_grad()
    model(torch.randn(16, 64)).sum().backward()
    optimizer.step()
    time.sleep(0.02)
dist.all_reduce(torch.ones(4))
if dist.get_rank() == 1:
    raise ValueError("batch <b>42</b> has no labels")
dist.barrier()
"""


class Page(HTMLParser):
    """What a test reads off the page the browser built: the body's data attributes, the text
    of each finding (a consequence, folded inside its root cause, comes after it), the charts
    uPlot drew with their legends, the text of each table row, and the bars of each rank's row
    of the collectives' timeline, by class."""

    VOID = {"br", "meta", "img", "hr", "input", "link"}

    def __init__(self, dom):
        super().__init__()
        self.body = {}
        self.findings = []  # [kind, text]
        self.plots = 0
        self.canvases = 0
        self.legend = []
        self.rows = []
        self.timeline = {}  # pid -> [class of each bar]
        self._timeline_pid = None
        self._depth = 0
        self._open = []  # (index in findings, depth at which it opened)
        self._in_legend_label = False
        self.feed(dom)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "body":
            self.body = attrs
        if tag == "div" and "uplot" in classes:
            self.plots += 1
        if tag == "canvas":
            self.canvases += 1
        self._in_legend_label = tag == "div" and "u-label" in classes
        if tag == "tr" and "u-series" not in classes:
            self.rows.append("")
        if tag == "g" and "rank" in classes:
            self._timeline_pid = int(attrs["data-pid"])
            self.timeline[self._timeline_pid] = []
        if tag == "rect" and self._timeline_pid is not None:
            self.timeline[self._timeline_pid].append(attrs.get("class"))
        if tag in self.VOID:
            return
        self._depth += 1
        if "finding" in classes or "consequence" in classes:
            self.findings.append([attrs.get("data-kind"), ""])
            self._open.append((len(self.findings) - 1, self._depth))

    def handle_endtag(self, tag):
        self._in_legend_label = False
        if tag == "g":
            self._timeline_pid = None
        if tag in self.VOID:
            return
        if self._open and self._open[-1][1] == self._depth:
            self._open.pop()
        self._depth -= 1

    def handle_data(self, data):
        for index, _ in self._open:
            self.findings[index][1] += data
        if self._in_legend_label:
            self.legend.append(data.strip())
        if self.rows:
            self.rows[-1] += data


def screenshot(path, tmp_path):
    """The page as Chromium paints it once its scripts ran, as a PIL image."""
    from PIL import Image
    png = tmp_path / "page.png"
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
         f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=5000",
         f"--screenshot={png}", path.resolve().as_uri()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert result.returncode == 0 and png.exists(), result.stderr
    return Image.open(png).convert("RGB")


def painted(image, colour):
    """How many pixels of `image` have `colour` ("#rrggbb"), give or take antialiasing."""
    want = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return sum(1 for pixel in image.getdata()
               if all(abs(p - w) <= 24 for p, w in zip(pixel, want)))


def chart_only(run_dir, tmp_path, chart="training-steps"):
    """A copy of report.html that shows nothing but one chart, at the top of the page, and
    marks its body with where the browser laid out each chart's plot area, markers and labels
    (`data-layout`: by chart id, the plot area's box and, for each marker, its line's x, its
    label's box or null, all in the page's pixels)."""
    page = (run_dir / "report.html").read_text()
    style = ("<style>body > :not(#charts), #charts > :not(.chart), "
             f".chart:not(:has(#chart-{chart})) {{ display: none !important; }}</style>")
    probe = """<script>
const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
const layout = {};
for (const plot of document.querySelectorAll('.uplot')) {
  const over = plot.querySelector('.u-over');
  layout[plot.parentElement.id.replace('chart-', '')] = { over: box(over),
    markers: Array.from(over.querySelectorAll('.marker')).filter((m) => m.style.display !== 'none')
      .map((m) => { const label = m.querySelector('.marker-label');
        return { kind: m.dataset.kind, x: Number(m.dataset.x), root: m.classList.contains('root'),
          title: m.title, line: box(m)[0] + 4.5,
          label: label && label.style.display !== 'none' ? box(label) : null,
          text: label ? label.textContent : null }; }) };
}
document.body.dataset.layout = JSON.stringify(layout);
</script>"""
    copy = tmp_path / f"{chart}.html"
    copy.write_text(page.replace("</head>", style + "</head>", 1)
                    .replace("</body>", probe + "</body>", 1))
    return copy


def charts_of(path):
    """The charts' data as the page carries it, by id."""
    data = re.search(r'<script type="application/json" id="traindoc-charts">(.*?)</script>',
                     path.read_text())
    return {chart["id"]: chart for chart in json.loads(data.group(1))}


def browse(path, tmp_path):
    """The page's DOM once its scripts ran, as Chromium built it."""
    assert CHROMIUM, "chromium is missing: scripts/setup installs it"
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000",
         f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=5000",
         "--dump-dom", path.resolve().as_uri()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return Page(result.stdout)


@pytest.fixture
def failed_run(traindoc, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(JOB)
    run = traindoc(torchrun_ranks(2, script), "--interval", "0.25", timeout=180)
    assert run.status == 1, run.stderr
    return run


def test_the_page_of_a_failed_job_tells_its_root_cause_and_draws_its_charts(failed_run, tmp_path):
    report = failed_run.report
    root = report["findings"][0]
    assert root["root_cause"] and root["kind"] == "python-exception", root
    page = browse(failed_run.run_dir / "report.html", tmp_path)

    assert "data-charts-error" not in page.body, page.body
    # Memory of each process, of the host, and the ranks' training steps.
    assert int(page.body["data-charts-drawn"]) >= 3, page.body
    assert page.plots == int(page.body["data-charts-drawn"])
    assert page.canvases >= page.plots
    ranks = {p["rank"]: p["pid"] for p in report["processes"] if p["role"] == "rank"}
    for rank, pid in ranks.items():
        assert f"rank {rank} (pid {pid})" in page.legend, page.legend

    kinds = [kind for kind, _ in page.findings]
    assert kinds == [f["kind"] for f in report["findings"]], (kinds, report["findings"])
    root_text = page.findings[0][1]
    # What a title or fix quotes in backticks is set as code on the page.
    assert root["title"].replace("`", "") in root_text
    assert all(line in root_text for line in root["evidence"]), (root_text, root["evidence"])
    assert root["fix"].replace("`", "") in root_text
    # The job's markup is text on the page, not elements (which would leave "batch 42 has").
    assert "batch <b>42</b> has no labels" in root_text

    # The ranks stepped together: on the steps chart, neither line hides the other. Either one
    # line names both ranks, or each rank's colour shows (the first chart's colours: uPlot's
    # series in order, rank 0's first).
    steps = [label for label in page.legend if label.endswith(", optimizer")
             or label.endswith("(the same steps)")]
    assert steps, page.legend
    if len(steps) == 1:
        assert all(f"rank {rank} (pid {pid})" in steps[0] for rank, pid in ranks.items()), steps
    else:
        shown = screenshot(chart_only(failed_run.run_dir, tmp_path), tmp_path)
        blue, red = painted(shown, "#1f77b4"), painted(shown, "#d62728")
        assert blue >= 0.5 * red and red >= 0.5 * blue and red > 200, (steps, blue, red)

    # Each rank's all_reduce after training, and rank 0's barrier that rank 1 never joined.
    assert set(page.timeline) == set(ranks.values()), page.timeline
    for pid in ranks.values():
        assert "call" in page.timeline[pid], page.timeline


def test_analyze_writes_the_same_page_again(failed_run):
    page = failed_run.run_dir / "report.html"
    first = page.read_bytes()
    page.unlink()
    result = subprocess.run([str(TRAINDOC), "analyze", str(failed_run.run_dir), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert result.returncode == 0, result.stderr
    assert page.read_bytes() == first
    assert not list(failed_run.run_dir.glob("*.tmp"))
    # The page is whole: it carries its chart library and its data, nothing fetched.
    text = first.decode()
    assert re.search(r"<script>/\*! https://github.com/leeoniya/uPlot", text)
    assert not re.search(r"<(script|link)[^>]+(src|href)=", text)
    assert set(charts_of(page)) >= {"process-memory", "host-memory", "training-steps"}


def test_the_page_of_a_gpu_job_shows_each_gpu_and_who_held_it(traindoc, tmp_path):
    """Four ranks on four GPUs of the stand-in NVML, ranks 1 to 3 also on GPU 0; rank 0 runs
    out of memory there."""
    assert FAKE_NVML.exists(), f"build first: {FAKE_NVML} is missing"
    run = traindoc(ranks_job(tmp_path, 4, 2.0, failing=0, text=OOM_2X), "--interval", "0.2",
                   env=nvml_env(tmp_path, FOREIGN))
    assert run.status == 1, run.stderr
    page = browse(run.run_dir / "report.html", tmp_path)
    assert "data-charts-error" not in page.body, page.body
    for gpu in range(4):
        assert f"GPU {gpu}" in page.legend, page.legend
    assert "capacity" in page.legend
    # Each rank on its own GPU, and ranks 1 to 3 on GPU 0 too, as lines of their own.
    ranks = {p["rank"]: p["pid"] for p in run.report["processes"] if p["role"] == "rank"}
    for rank, pid in ranks.items():
        assert f"rank {rank} (pid {pid}) on GPU {rank}" in page.legend, page.legend
        assert f"rank {rank} (pid {pid}) on GPU 0" in page.legend, page.legend
    gpu0 = next(row for row in page.rows if "00000000:06:00.0" in row)
    for rank in range(4):
        assert f"rank {rank}" in gpu0, gpu0
    assert "gpu-oom" in [kind for kind, _ in page.findings]


# The host-memory chart's series of traindoc's own cgroup, as they were before the job's others.
HOST_SERIES = ["host used (total - available)", "cgroup usage", "cgroup limit"]


def test_the_page_of_a_job_killed_in_a_cgroup_of_its_own_draws_that_cgroup(traindoc, tmp_path,
                                                                            memory_cgroup):
    """The job moves itself into a child memory cgroup limited to 64 MiB, where the OOM killer
    ends it: the host-memory chart draws that cgroup's usage and limit beside traindoc's own
    cgroup, and its title says where the kill was."""
    _, child = memory_cgroup(64 << 20)
    run = traindoc(job_script("cgroup_oom.py", child), "--interval", "0.2")
    assert run.status == 128 + 9, run.stderr.decode()[-3000:]
    page = browse(run.run_dir / "report.html", tmp_path)
    assert "data-charts-error" not in page.body, page.body
    chart = charts_of(run.run_dir / "report.html")["host-memory"]
    labels = [s["label"] for s in chart["series"]]
    # Its path as /proc/<pid>/cgroup names it, shortened to its last components where long.
    match = re.fullmatch(r"cgroup (\S+) usage, [0-9]+ OOM kills?", labels[2])
    assert match and match.group(1).endswith("/" + child.name), labels
    name = match.group(1)
    # traindoc's own limit (the host's total where it has none) drawn, or named in the title.
    limit = f"cgroup {name} limit"
    assert labels[:2] == HOST_SERIES[:2], labels
    assert labels[3:] in ([limit], ["cgroup limit", limit], ["host total", limit]), labels
    assert re.fullmatch(r"Memory of the host, traindoc's cgroup and the job's other cgroups, "
                        rf"[0-9]+ OOM kills? in cgroup {re.escape(name)}( \(.*\))?",
                        chart["title"]), chart["title"]
    drawn = next(s for s in chart["series"] if s["label"] == limit)
    assert drawn["limit"] and max(v for v in drawn["values"] if v is not None) == 64 << 20
    for label in labels:
        assert label in page.legend, (label, page.legend)


def test_the_page_of_a_job_in_traindocs_own_cgroup_draws_that_cgroup_alone(traindoc,
                                                                          memory_cgroup):
    """The control: traindoc itself runs in the limited cgroup, the job with it; the chart is as
    it was before the job's own cgroups were drawn."""
    _, child = memory_cgroup(64 << 20)
    run = traindoc(job_script("cgroup_oom.py"), "--interval", "0.2",
                   preexec_fn=lambda: (child / "cgroup.procs").write_text(str(os.getpid())))
    assert run.status == 128 + 9, run.stderr.decode()[-3000:]
    chart = charts_of(run.run_dir / "report.html")["host-memory"]
    assert [s["label"] for s in chart["series"]] == HOST_SERIES, chart["series"]
    assert chart["title"].startswith("Memory of the host and the job's cgroup"), chart["title"]


def markers_of(page, report, charts):
    """Each chart's drawn markers, checked against report.json: one for each error finding, at
    its moment on the chart's x axis, the root cause's set apart. By chart id."""
    layout = json.loads(page.body["data-layout"])
    start = report["run"]["start_ns"]
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and all("time_ns" in f for f in errors), report["findings"]
    for chart_id, drawn in layout.items():
        # The root cause first, then the others in time order, as report.json times them.
        want = sorted(errors, key=lambda f: (not f["root_cause"], f["time_ns"]))
        assert [m["kind"] for m in drawn["markers"]] == [f["kind"] for f in want], (chart_id, drawn)
        chart = charts[chart_id]
        lo = min([chart["x"][0]] + [m["x"] for m in drawn["markers"]])
        hi = max([chart["x"][-1]] + [m["x"] for m in drawn["markers"]])
        left, _, width, _ = drawn["over"]
        for marker, finding in zip(drawn["markers"], want):
            assert marker["x"] == pytest.approx((finding["time_ns"] - start) / 1e9, abs=1e-6)
            assert marker["root"] == finding["root_cause"], marker
            assert marker["title"].startswith(finding["title"]), (marker, finding)
            if width == 0:
                continue  # a chart the copy hides: not laid out
            # Where uPlot puts that x on the plot area, the axis spanning the samples and the
            # markers.
            expected = left + (marker["x"] - lo) / (hi - lo) * width
            assert marker["line"] == pytest.approx(expected, abs=1.5), (chart_id, marker, expected)
    return layout


def test_the_charts_mark_the_oom_kill_at_its_moment(traindoc, tmp_path, memory_cgroup):
    """The job grows in a cgroup limited to 64 MiB until the OOM killer ends it: each chart has
    a line at each error finding's moment, the kill's among them, the root cause's labelled
    and painted solid across the host-memory chart, where its growth rises to the limit."""
    _, child = memory_cgroup(64 << 20)
    run = traindoc(job_script("cgroup_oom.py", child), "--interval", "0.2")
    assert run.status == 128 + 9, run.stderr.decode()[-3000:]
    report = run.report
    kill = next(f for f in report["findings"] if f["kind"] == "host-oom-killed")
    killed = next(p for p in report["processes"] if p["pid"] == kill["pids"][0])
    # The kill's moment is the process's end, as traindoc saw it.
    assert kill["time_ns"] == killed["exit"]["time_ns"], (kill, killed)
    charts = charts_of(run.run_dir / "report.html")
    copy = chart_only(run.run_dir, tmp_path, "host-memory")
    page = browse(copy, tmp_path)
    assert "data-charts-error" not in page.body, page.body
    layout = markers_of(page, report, charts)
    assert set(layout) == set(charts), layout
    root = next(m for m in layout["host-memory"]["markers"] if m["root"])
    assert root["text"] == "root cause: " + report["findings"][0]["kind"], root
    assert root["label"] is not None, root
    # Painted: the root cause's solid line runs down the plot area at its x.
    shown = screenshot(copy, tmp_path)
    left, top, width, height = layout["host-memory"]["over"]
    column = round(root["line"])
    rows = range(round(top) + 40, round(top + height) - 2)  # below the labels' rows
    red = [y for y in rows if painted(shown.crop((column - 2, y, column + 3, y + 1)), "#b3261e")]
    assert len(red) >= 0.9 * len(rows), (column, len(red), len(rows))



def test_markers_that_fall_close_together_keep_their_labels_apart(traindoc, tmp_path):
    """A DataLoader worker segfaults and its rank raises a moment later: two lines a few
    pixels apart, whose labels sit in different rows, not over one another."""
    script = tmp_path / "train.py"
    script.write_text(WORKER_SEGV)
    run = traindoc([PYTHON, str(script)], "--interval", "0.2")
    assert run.status == 1, run.stderr.decode()[-3000:]
    report = run.report
    assert report["findings"][0]["kind"] == "worker-crash", report["findings"]
    page = browse(chart_only(run.run_dir, tmp_path, "process-memory"), tmp_path)
    layout = markers_of(page, report, charts_of(run.run_dir / "report.html"))
    drawn = layout["process-memory"]["markers"]
    assert len(drawn) >= 2 and drawn[0]["label"] is not None, drawn
    # Closer than the root cause's label is wide: in one row, the labels would overlap.
    assert abs(drawn[0]["line"] - drawn[1]["line"]) < drawn[0]["label"][2], drawn
    labels = [m["label"] for m in drawn if m["label"] is not None]
    assert len(labels) >= 2, drawn
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            apart = (a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or
                     a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1])
            assert apart, (a, b, drawn)
