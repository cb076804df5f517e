// Tests of report.html and its chart series: findings in the terminal's order with all their
// evidence, text escaped wherever it lands, series thinned without losing a peak, the largest
// processes drawn, charts only where something was sampled, any bytes of the job carried as
// UTF-8, times at int64's limits. tests/integration draws the page in a real browser.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "report/chart_markers.h"
#include "report/chart_series.h"
#include "report/collective_timeline.h"
#include "report/html_report.h"
#include "report/safe_text.h"
#include "store_test_util.h"

namespace traindoc::report {
namespace {

using analysis::Diagnosis;
using analysis::Finding;
using analysis::FindingKind;
using analysis::ProcessSummary;
using analysis::Role;
using analysis::Severity;

constexpr int64_t kStart = 1'700'000'000'000'000'000;
constexpr int64_t kSecond = 1'000'000'000;

ProcessSummary rank_process(int pid, int rank, uint64_t peak_rss) {
  ProcessSummary p;
  p.record.pid = pid;
  p.record.start_ticks = static_cast<uint64_t>(pid) * 7;
  p.record.cmdline = "python3 train.py";
  p.record.exit_code = 0;
  p.role.role = Role::kRank;
  p.role.rank = rank;
  p.peak_rss = peak_rss;
  return p;
}

store::ProcSample proc_sample(const ProcessSummary& p, int64_t t_ns, uint64_t rss) {
  store::ProcSample s;
  s.t_ns = t_ns;
  s.pid = p.record.pid;
  s.start_ticks = p.record.start_ticks;
  s.rss = rss;
  return s;
}

struct JobRun {
  Diagnosis diagnosis;
  store::Evidence evidence;
};

// A run of `seconds` with one process sampled every second, its RSS 1 MiB more each time.
JobRun growing_run(int64_t seconds) {
  JobRun run;
  run.diagnosis.run.command = {"python3", "train.py"};
  run.diagnosis.run.start_ns = kStart;
  run.diagnosis.run.end_ns = kStart + seconds * kSecond;
  run.diagnosis.run.exit_code = 0;
  run.evidence.run = run.diagnosis.run;
  run.diagnosis.processes.push_back(rank_process(100, 0, static_cast<uint64_t>(seconds) << 20));
  for (int64_t t = 0; t < seconds; ++t) {
    run.evidence.proc_samples.push_back(proc_sample(
        run.diagnosis.processes[0], kStart + t * kSecond, static_cast<uint64_t>(t + 1) << 20));
  }
  return run;
}

// The same, with rank 1 (pid 101) beside rank 0.
JobRun two_ranks(int64_t seconds) {
  JobRun run = growing_run(seconds);
  run.diagnosis.processes.push_back(rank_process(101, 1, 1 << 20));
  return run;
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

const Chart* find_chart(const std::vector<Chart>& charts, const std::string& id) {
  for (const Chart& chart : charts) {
    if (chart.id == id) return &chart;
  }
  return nullptr;
}

double largest(const ChartSeries& series) {
  double out = 0;
  for (const auto& v : series.values) out = std::max(out, v.value_or(0));
  return out;
}

TEST(ChartSeries, ALongRunIsThinnedAndKeepsItsPeak) {
  JobRun run = growing_run(100'000);
  std::vector<Chart> charts = build_charts(run.diagnosis, run.evidence);
  const Chart* memory = find_chart(charts, "process-memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_LE(memory->x.size(), kChartPoints + 1);
  EXPECT_GT(memory->x.size(), kChartPoints / 2);
  ASSERT_EQ(memory->series.size(), 1u);
  EXPECT_EQ(memory->series[0].label, "rank 0 (pid 100)");
  EXPECT_EQ(memory->series[0].values.size(), memory->x.size());
  EXPECT_EQ(largest(memory->series[0]), static_cast<double>(uint64_t{100'000} << 20));
  EXPECT_TRUE(std::is_sorted(memory->x.begin(), memory->x.end()));
}

TEST(ChartSeries, AShortRunKeepsEverySampleRound) {
  JobRun run = growing_run(20);
  std::vector<Chart> charts = build_charts(run.diagnosis, run.evidence);
  const Chart* memory = find_chart(charts, "process-memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->x.size(), 20u);
  EXPECT_DOUBLE_EQ(memory->x[3], 3.0);
}

TEST(ChartSeries, OnlyTheLargestProcessesAreDrawn) {
  JobRun run = growing_run(5);
  for (int i = 1; i <= 11; ++i) {
    ProcessSummary p = rank_process(100 + i, i, static_cast<uint64_t>(i) << 30);
    run.evidence.proc_samples.push_back(proc_sample(p, kStart + kSecond, *p.peak_rss));
    run.diagnosis.processes.push_back(p);
  }
  std::vector<Chart> charts = build_charts(run.diagnosis, run.evidence);
  const Chart* memory = find_chart(charts, "process-memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->title, "Memory of each process (RSS), the 10 largest of 12");
  ASSERT_EQ(memory->series.size(), kChartSeries);
  EXPECT_EQ(memory->series.front().label, "rank 11 (pid 111)");
  EXPECT_EQ(memory->series.back().label, "rank 2 (pid 102)");
}

TEST(ChartSeries, ChartsOnlyForWhatWasSampled) {
  JobRun run = growing_run(3);
  store::HostSample host = store::test::full_host_sample(kStart);
  host.shm_used = 0;
  run.evidence.host_samples.push_back(host);
  std::vector<Chart> charts = build_charts(run.diagnosis, run.evidence);
  std::vector<std::string> ids;
  for (const Chart& chart : charts) ids.push_back(chart.id);
  // No GPU, no steps, nothing in /dev/shm: no chart of them.
  EXPECT_EQ(ids, (std::vector<std::string>{"process-memory", "host-memory"}));
  const Chart& memory = *find_chart(charts, "host-memory");
  ASSERT_EQ(memory.series.size(), 3u);
  EXPECT_EQ(memory.series[0].label, "host used (total - available)");
  EXPECT_EQ(largest(memory.series[0]), static_cast<double>(24ull << 30));
  EXPECT_EQ(memory.series[2].label, "cgroup limit");
  EXPECT_TRUE(memory.series[2].limit);
}

TEST(ChartSeries, StepsAndGpusAreDrawnWhereCounted) {
  JobRun run = growing_run(3);
  ProcessSummary& rank = run.diagnosis.processes[0];
  rank.steps[store::StepKind::kOptimizer] = 2;
  for (int64_t step = 1; step <= 2; ++step) {
    run.evidence.steps.push_back({kStart + step * kSecond, rank.record.pid, rank.record.start_ticks,
                                  store::StepKind::kOptimizer, step});
  }
  run.evidence.gpu.devices.push_back({0, "GPU-1", "00000000:06:00.0", "H100", 80ull << 30});
  store::GpuSample gpu;
  gpu.t_ns = kStart + kSecond;
  gpu.device = 0;
  gpu.memory_used = 3ull << 30;
  run.evidence.gpu.samples.push_back(gpu);
  std::vector<Chart> charts = build_charts(run.diagnosis, run.evidence);
  const Chart* steps = find_chart(charts, "training-steps");
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(steps->series[0].label, "rank 0 (pid 100), optimizer");
  EXPECT_EQ(largest(steps->series[0]), 2.0);
  const Chart* gpus = find_chart(charts, "gpu-memory");
  ASSERT_NE(gpus, nullptr);
  EXPECT_EQ(gpus->series[0].label, "GPU 0");
  // 3 GiB drawn against a line at 80 GiB would lie flat at the bottom: the title names it.
  ASSERT_EQ(gpus->series.size(), 1u);
  EXPECT_EQ(gpus->title, "Memory used on each GPU (capacity 80.0 GiB)");
  gpu.memory_used = 60ull << 30;
  run.evidence.gpu.samples.push_back(gpu);
  charts = build_charts(run.diagnosis, run.evidence);
  gpus = find_chart(charts, "gpu-memory");
  ASSERT_EQ(gpus->series.size(), 2u);
  EXPECT_EQ(gpus->title, "Memory used on each GPU");
  EXPECT_TRUE(gpus->series[1].limit);
  EXPECT_EQ(largest(gpus->series[1]), static_cast<double>(80ull << 30));
  EXPECT_EQ(find_chart(charts, "gpu-process-memory"), nullptr) << "no process was listed";
}

// Ranks in lockstep draw one line named for all of them (one line hiding another would say
// that only one rank counted); a rank that counted otherwise keeps its own.
TEST(ChartSeries, RanksThatCountedTheSameStepsShareOneNamedLine) {
  JobRun run = two_ranks(3);
  run.diagnosis.processes.push_back(rank_process(102, 2, 1 << 20));
  for (ProcessSummary& rank : run.diagnosis.processes) {
    rank.steps[store::StepKind::kOptimizer] = 2;
    for (int64_t step = 1; step <= 2; ++step) {
      int64_t count = rank.record.pid == 102 ? step * 2 : step;
      run.evidence.steps.push_back({kStart + step * kSecond, rank.record.pid,
                                    rank.record.start_ticks, store::StepKind::kOptimizer, count});
    }
  }
  std::vector<Chart> charts = build_charts(run.diagnosis, run.evidence);
  const Chart* steps = find_chart(charts, "training-steps");
  ASSERT_NE(steps, nullptr);
  ASSERT_EQ(steps->series.size(), 2u);
  EXPECT_EQ(steps->series[0].label,
            "rank 0 (pid 100) and rank 1 (pid 101), optimizer (the same steps)");
  EXPECT_EQ(largest(steps->series[0]), 2.0);
  EXPECT_EQ(steps->series[1].label, "rank 2 (pid 102), optimizer");
  EXPECT_EQ(largest(steps->series[1]), 4.0);
}

store::GpuProcessSample gpu_process(int device, int pid, uint64_t start_ticks, int nvml_pid,
                                    int64_t at_s, uint64_t mib) {
  store::GpuProcessSample s;
  s.t_ns = kStart + at_s * kSecond;
  s.device = device;
  s.pid = pid;
  s.start_ticks = start_ticks;
  s.nvml_pid = nvml_pid;
  s.used_bytes = mib << 20;
  return s;
}

TEST(ChartSeries, EachProcessOnEachGpuTheLargestFirst) {
  JobRun run = two_ranks(3);
  const ProcessSummary& rank0 = run.diagnosis.processes[0];
  const ProcessSummary& rank1 = run.diagnosis.processes[1];
  run.evidence.gpu.process_samples = {
      gpu_process(0, rank0.record.pid, rank0.record.start_ticks, 9100, 1, 4000),
      gpu_process(0, rank0.record.pid, rank0.record.start_ticks, 9100, 2, 6000),
      // Rank 1's context on rank 0's GPU, beside its own memory on GPU 1.
      gpu_process(0, rank1.record.pid, rank1.record.start_ticks, 9101, 2, 500),
      gpu_process(1, rank1.record.pid, rank1.record.start_ticks, 9101, 2, 5000),
      // Not visible from our namespace: NVML's pid names it.
      gpu_process(1, 0, 0, 7777, 1, 2000)};
  for (int i = 0; i < 10; ++i) {  // small ones beyond the 10 drawn
    run.evidence.gpu.process_samples.push_back(gpu_process(2, 200 + i, 1, 0, 1, 10));
  }
  std::vector<Chart> charts = build_charts(run.diagnosis, run.evidence);
  const Chart* chart = find_chart(charts, "gpu-process-memory");
  ASSERT_NE(chart, nullptr);
  EXPECT_EQ(chart->title, "GPU memory of each process, the 10 largest of 14");
  ASSERT_EQ(chart->series.size(), 10u);
  EXPECT_EQ(chart->series[0].label, "rank 0 (pid 100) on GPU 0");
  EXPECT_EQ(largest(chart->series[0]), static_cast<double>(6000ull << 20));
  EXPECT_EQ(chart->series[1].label, "rank 1 (pid 101) on GPU 1");
  EXPECT_EQ(chart->series[2].label, "pid 7777 outside the job on GPU 1");
  EXPECT_EQ(chart->series[3].label, "rank 1 (pid 101) on GPU 0");
  EXPECT_EQ(chart->series[4].label, "pid 200 outside the job on GPU 2");
}

Finding finding(FindingKind kind, Severity severity, std::string title) {
  Finding f;
  f.kind = kind;
  f.severity = severity;
  f.title = std::move(title);
  f.ranks = {1};
  f.pids = {101};
  f.confidence = 0.9;
  return f;
}

JobRun failed_run() {
  JobRun run = growing_run(3);
  run.diagnosis.run.exit_code = 1;
  Finding root =
      finding(FindingKind::kNativeCrash, Severity::kError, "rank 1 (pid 101) crashed <in> foo()");
  root.root_cause = true;
  root.consequences = {1};
  for (int i = 0; i < 14; ++i) root.evidence.push_back("frame #" + std::to_string(i));
  root.fix = "Rebuild with `-g` & run again; a lone ` stays";
  run.diagnosis.findings.push_back(root);
  run.diagnosis.findings.push_back(
      finding(FindingKind::kPeerExited, Severity::kError, "rank 0 lost its peer"));
  run.diagnosis.findings.push_back(
      finding(FindingKind::kMemoryLeak, Severity::kWarning, "rank 0: host memory grows"));
  run.diagnosis.missing_evidence.push_back("no GPU: NVML could not be loaded");
  return run;
}

TEST(HtmlReport, FindingsComeInTheTerminalsOrderWithAllTheirEvidence) {
  JobRun run = failed_run();
  std::string html = render_html(run.diagnosis, run.evidence);
  size_t root = html.find("crashed &lt;in&gt; foo()");
  size_t caused = html.find("Which caused:");
  size_t consequence = html.find("rank 0 lost its peer");
  size_t others = html.find("Not caused by the root cause");
  size_t warning = html.find("rank 0: host memory grows");
  ASSERT_NE(root, std::string::npos);
  EXPECT_LT(root, caused);
  EXPECT_LT(caused, consequence);
  EXPECT_LT(consequence, others);
  EXPECT_LT(others, warning);
  // Every line of evidence, beyond the terminal's ten.
  EXPECT_NE(html.find("<li>frame #13</li>"), std::string::npos);
  EXPECT_NE(html.find("Rebuild with <code>-g</code> &amp; run again; a lone ` stays"),
            std::string::npos);
  EXPECT_NE(html.find("Note: no GPU: NVML could not be loaded"), std::string::npos);
  EXPECT_NE(html.find("class=\"verdict failed\">the job exited with code 1 after 3.0 s"),
            std::string::npos);
}

TEST(HtmlReport, NoTextOfTheJobCanBreakThePage) {
  JobRun run = failed_run();
  run.diagnosis.run.command = {"python3", "-c", "print('</script><b>')"};
  run.diagnosis.findings[0].evidence.push_back("stderr: <script>alert(1)</script>");
  run.diagnosis.processes[0].record.cmdline = "python3 \"a\" 'b'";
  run.diagnosis.processes[0].role.role = Role::kOther;
  run.diagnosis.processes[0].role.rank.reset();
  run.evidence.logs.push_back({"/tmp/my log <1>.txt", 10, 1, 0, {"logs/my log <1>.log"}, {}});
  std::string html = render_html(run.diagnosis, run.evidence);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<code title=\"python3 &quot;a&quot; &#39;b&#39;\">"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"logs/my%20log%20%3C1%3E.log\">"), std::string::npos);
  // The page's own script blocks: the chart data, the markers, the library and the drawing
  // script.
  EXPECT_EQ(occurrences(html, "<script"), 4u);
  EXPECT_EQ(html.find("</script><b>"), std::string::npos);
}

TEST(HtmlReport, ChartDataCannotCloseItsBlock) {
  JobRun run = growing_run(2);
  run.diagnosis.processes[0].role.role = Role::kOther;
  run.diagnosis.processes[0].role.rank.reset();
  std::string html = render_html(run.diagnosis, run.evidence);
  size_t data = html.find("<script type=\"application/json\" id=\"traindoc-charts\">");
  ASSERT_NE(data, std::string::npos);
  size_t end = html.find("</script>", data);
  std::string block = html.substr(data, end - data);
  EXPECT_NE(block.find("\"id\":\"process-memory\""), std::string::npos);
  EXPECT_NE(block.find("\"label\":\"other (pid 100)\""), std::string::npos);
  EXPECT_NE(html.find("<div id=\"chart-process-memory\"></div>"), std::string::npos);
  EXPECT_EQ(html.find("No samples were taken"), std::string::npos);
}

// The failed run's findings timed: the crash at +2.5 s, the peer's loss at +2.9 s, the warning
// at +0.5 s; and an error whose moment is unknown.
JobRun timed_failure() {
  JobRun run = failed_run();
  run.diagnosis.findings[0].t_ns = kStart + 2'500'000'000;
  run.diagnosis.findings[1].t_ns = kStart + 2'900'000'000;
  run.diagnosis.findings[2].t_ns = kStart + 500'000'000;
  Finding untimed = finding(FindingKind::kWorkerExit, Severity::kError, "worker 0 exited");
  run.diagnosis.findings.push_back(untimed);
  return run;
}

TEST(ChartMarkers, EachErrorFindingAtItsMomentTheRootCauseFirst) {
  JobRun run = timed_failure();
  ChartMarkers markers = chart_markers(run.diagnosis, run.evidence);
  // The warning is no error; the worker's exit has no moment to mark.
  ASSERT_EQ(markers.lines.size(), 2u);
  EXPECT_EQ(markers.not_marked, 1u);
  const ChartMarker& root = markers.lines[0];
  EXPECT_DOUBLE_EQ(root.x, 2.5);
  EXPECT_TRUE(root.root_cause);
  EXPECT_TRUE(root.labelled);
  EXPECT_EQ(root.kind, "native-crash");
  EXPECT_EQ(root.label, "root cause: native-crash");
  EXPECT_EQ(root.title, "rank 1 (pid 101) crashed <in> foo() (+2.5 s)");
  const ChartMarker& peer = markers.lines[1];
  EXPECT_DOUBLE_EQ(peer.x, 2.9);
  EXPECT_FALSE(peer.root_cause);
  EXPECT_EQ(peer.label, "peer-exited");
  // On the same clock as the charts' x.
  const Chart* memory = find_chart(build_charts(run.diagnosis, run.evidence), "process-memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_DOUBLE_EQ(memory->x[2], 2.0);
}

// Forty-nine errors after the root cause, the latest of all: the root cause and the earliest
// others are drawn, the first few labelled, and the rest counted.
TEST(ChartMarkers, AtMostSoManyLinesAndFewerLabels) {
  JobRun run = growing_run(100);
  for (int i = 0; i < 50; ++i) {
    Finding f = finding(FindingKind::kWorkerExit, Severity::kError, fmt::format("exit {}", i));
    f.t_ns = kStart + (50 - i) * kSecond;
    f.root_cause = i == 0;
    run.diagnosis.findings.push_back(f);
  }
  ChartMarkers markers = chart_markers(run.diagnosis, run.evidence);
  ASSERT_EQ(markers.lines.size(), kMarkerLines);
  EXPECT_EQ(markers.not_marked, 50 - kMarkerLines);
  EXPECT_TRUE(markers.lines[0].root_cause);
  EXPECT_DOUBLE_EQ(markers.lines[0].x, 50);
  for (size_t i = 1; i < markers.lines.size(); ++i) {
    EXPECT_FALSE(markers.lines[i].root_cause);
    EXPECT_DOUBLE_EQ(markers.lines[i].x, static_cast<double>(i));
    EXPECT_EQ(markers.lines[i].labelled, i < kMarkerLabels) << i;
  }
  std::string html = render_html(run.diagnosis, run.evidence);
  EXPECT_NE(html.find("10 error findings are not marked (no known time, or past the first 40)."),
            std::string::npos);
}

// A moment before the run's start or past its last sample (a clock set off, a damaged run.db)
// is drawn at the charts' edge, not beyond it.
TEST(ChartMarkers, AMomentOutsideTheChartsIsHeldAtTheirEdge) {
  JobRun run = timed_failure();
  run.diagnosis.findings[0].t_ns = kStart - 3 * kSecond;
  run.diagnosis.findings[1].t_ns = INT64_MAX;
  ChartMarkers markers = chart_markers(run.diagnosis, run.evidence);
  ASSERT_EQ(markers.lines.size(), 2u);
  EXPECT_DOUBLE_EQ(markers.lines[0].x, 0);
  EXPECT_DOUBLE_EQ(markers.lines[1].x, 3);  // the run's end
}

TEST(HtmlReport, MarkersAreInABlockOfTheirOwnThatCannotBeClosed) {
  JobRun run = timed_failure();
  run.diagnosis.findings[0].title = "crashed </script><b>";
  std::string html = render_html(run.diagnosis, run.evidence);
  size_t data = html.find("<script type=\"application/json\" id=\"traindoc-markers\">");
  ASSERT_NE(data, std::string::npos);
  std::string block = html.substr(data, html.find("</script>", data) - data);
  EXPECT_NE(block.find("{\"x\":2.5,\"kind\":\"native-crash\",\"label\":\"root cause: "
                       "native-crash\",\"title\":\"crashed \\u003c/script>\\u003cb> (+2.5 s)\","
                       "\"root_cause\":true,\"labelled\":true}"),
            std::string::npos)
      << block;
  EXPECT_NE(html.find("<p class=\"meta\" id=\"chart-markers\">Red lines mark"), std::string::npos);
  EXPECT_NE(html.find("1 error finding is not marked"), std::string::npos);
  // Without an error finding: an empty list, and no word of lines.
  run.diagnosis.findings.clear();
  html = render_html(run.diagnosis, run.evidence);
  EXPECT_NE(html.find("id=\"traindoc-markers\">[]</script>"), std::string::npos);
  EXPECT_EQ(html.find("id=\"chart-markers\""), std::string::npos);
}

store::CollectiveCall call(const ProcessSummary& p, uint64_t number, double at_s, double took_s) {
  store::CollectiveCall c;
  c.t_ns = kStart + static_cast<int64_t>(at_s * 1e9);
  c.end_ns = took_s < 0 ? 0 : c.t_ns + static_cast<int64_t>(took_s * 1e9);
  c.pid = p.record.pid;
  c.start_ticks = p.record.start_ticks;
  c.group = 0xabc;
  c.number = number;
  c.group_rank = *p.role.rank;
  c.group_size = 2;
  c.source = "python";
  c.op = "all_reduce";
  c.tensors = "[4] float32";
  c.site = "train.py:<b>7</b>";
  return c;
}

TEST(CollectiveTimeline, TheLastMinuteOfEachRanksCallsWithTheOneThatNeverReturned) {
  JobRun run = two_ranks(100);
  const ProcessSummary& rank0 = run.diagnosis.processes[0];
  const ProcessSummary& rank1 = run.diagnosis.processes[1];
  // Rank 1 comes first in the records, and its first calls are before the window.
  run.evidence.collectives = {call(rank1, 1, 5, 0.001), call(rank0, 1, 5, 0.002),
                              call(rank1, 2, 50.5, 0.001), call(rank0, 2, 50, 0.5),
                              call(rank0, 3, 95, -1)};
  store::CollectiveCall queued = call(rank1, 3, 60, 0);
  queued.async = true;
  run.evidence.collectives.push_back(queued);
  store::CollectiveIssue issue;
  issue.t_ns = kStart + 97 * kSecond;
  issue.kind = store::IssueKind::kMissing;
  issue.field = store::IssueField::kMissing;
  issue.group_size = 2;
  issue.default_group = true;
  issue.op = "all_reduce";
  issue.number = 3;
  issue.ranks = {{.group_rank = 0, .job_rank = 0, .state = store::RankState::kWaiting},
                 {.group_rank = 1, .job_rank = 1, .state = store::RankState::kNeverCalled}};
  run.evidence.collective_issues.push_back(issue);

  std::string html = collective_timeline_html(run.diagnosis, run.evidence);
  EXPECT_NE(html.find("from 40.0 s to 100.0 s after the start (the last minute)"),
            std::string::npos);
  size_t row0 = html.find("<g class=\"rank\" data-pid=\"100\">");
  size_t row1 = html.find("<g class=\"rank\" data-pid=\"101\">");
  ASSERT_NE(row0, std::string::npos);
  EXPECT_LT(row0, row1);
  EXPECT_EQ(occurrences(html, "<rect class=\"call\""), 2u);  // each rank's #2
  EXPECT_EQ(occurrences(html, "<rect class=\"queued\""), 1u);
  EXPECT_EQ(occurrences(html, "<rect class=\"open\""), 1u);
  EXPECT_EQ(html.find("#1 at"), std::string::npos) << "calls before the window are not drawn";
  // The open call runs to the right edge: 1100 wide, less a margin of 16.
  double x = 200 + (1100 - 200 - 16) * 55.0 / 60.0;
  EXPECT_NE(html.find(fmt::format("<rect class=\"open\" x=\"{:.1f}\" y=\"35.0\" width=\"{:.1f}\"",
                                  x, 1084 - x)),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<title>all_reduce #3 at train.py:&lt;b&gt;7&lt;/b&gt; (rank 0 of 2 ranks; "
                      "[4] float32), at 95.000 s: did not return</title>"),
            std::string::npos);
  EXPECT_NE(html.find("all_reduce #2 at train.py:&lt;b&gt;7&lt;/b&gt; (rank 0 of 2 ranks; [4] "
                      "float32), at 50.000 s: took 500 ms"),
            std::string::npos);
  EXPECT_NE(html.find("rank 1 (pid 101)<title>last call: all_reduce #3"), std::string::npos);
  EXPECT_NE(
      html.find("<title>collective-missing: rank 1 never made all_reduce #3 in the default group"),
      std::string::npos);
  EXPECT_EQ(occurrences(html, "<text class=\"tick\""), 7u);  // 40, 50, ... 100 s
  EXPECT_NE(html.find(">40 s</text>"), std::string::npos);
  EXPECT_NE(html.find(">100 s</text>"), std::string::npos);
  EXPECT_NE(render_html(run.diagnosis, run.evidence).find(html), std::string::npos);
}

// Rank 0 gave up waiting for rank 1 after 30 s (the process group's timeout): its bar ends there,
// red, and says it raised rather than took 30 s.
TEST(CollectiveTimeline, ACallThatRaisedIsToldFromOneThatReturned) {
  JobRun run = two_ranks(100);
  store::CollectiveCall raised = call(run.diagnosis.processes[0], 1, 40, 30);
  raised.raised = true;
  run.evidence.collectives = {raised, call(run.diagnosis.processes[1], 1, 41, 29)};
  std::string html = collective_timeline_html(run.diagnosis, run.evidence);
  EXPECT_EQ(occurrences(html, "<rect class=\"raised\""), 1u);
  EXPECT_EQ(occurrences(html, "<rect class=\"call\""), 1u);
  EXPECT_NE(html.find("(rank 0 of 2 ranks; [4] float32), at 40.000 s: raised after 30.0 s: it "
                      "gave up waiting (a timeout, or a rank that left)</title>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("at 41.000 s: took 29.0 s</title>"), std::string::npos);
  EXPECT_NE(render_html(run.diagnosis, run.evidence).find(".timeline rect.raised"),
            std::string::npos);
}

TEST(CollectiveTimeline, ARunWithoutARecordedEndEndsAtItsLastSample) {
  JobRun run = growing_run(100);  // samples up to 99 s
  run.diagnosis.run.end_ns = 0;
  run.evidence.run.end_ns = 0;
  run.evidence.collectives = {call(run.diagnosis.processes[0], 1, 30, 0.1),
                              call(run.diagnosis.processes[0], 2, 95, -1)};
  std::string html = collective_timeline_html(run.diagnosis, run.evidence);
  EXPECT_NE(html.find("from 39.0 s to 99.0 s after the start (the last minute)"),
            std::string::npos);
  EXPECT_EQ(occurrences(html, "<rect class=\"call\""), 0u);
  EXPECT_EQ(occurrences(html, "<rect class=\"open\""), 1u);
}

TEST(CollectiveTimeline, ARowDrawsItsLatestThousandCalls) {
  JobRun run = growing_run(30);
  for (uint64_t n = 1; n <= 1500; ++n) {
    run.evidence.collectives.push_back(
        call(run.diagnosis.processes[0], n, 1 + static_cast<double>(n) / 100, 0.001));
  }
  std::string html = collective_timeline_html(run.diagnosis, run.evidence);
  EXPECT_EQ(occurrences(html, "<rect class=\"call\""), 1000u);
  EXPECT_NE(html.find(", nor more than the latest 1000 of a rank."), std::string::npos);
  EXPECT_EQ(html.find("all_reduce #500 at"), std::string::npos);
  EXPECT_NE(html.find("all_reduce #501 at"), std::string::npos);
  EXPECT_NE(html.find("all_reduce #1500 at"), std::string::npos);
}

TEST(CollectiveTimeline, NoCallsNoSection) {
  JobRun run = growing_run(3);
  EXPECT_EQ(collective_timeline_html(run.diagnosis, run.evidence), "");
  EXPECT_EQ(render_html(run.diagnosis, run.evidence).find("id=\"collectives\""), std::string::npos);
}

TEST(HtmlReport, IsWrittenWhole) {
  store::test::TempDir dir;
  JobRun run = failed_run();
  write_html_report(run.diagnosis, run.evidence, dir.path().string());
  std::ifstream in(dir.file("report.html"));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), render_html(run.diagnosis, run.evidence));
  EXPECT_FALSE(std::filesystem::exists(dir.file("report.html.tmp")));
}

// Bytes of the job that are not UTF-8 reach the page as U+FFFD: the whole page is UTF-8, as its
// <meta charset> says.
TEST(HtmlReport, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  JobRun run = failed_run();
  run.diagnosis.run.command = {"/bin/echo", "caf\xE9"};
  run.diagnosis.run.hostname = "node\xFF";
  run.diagnosis.findings[0].title = "crashed in caf\xE9";
  run.diagnosis.findings[0].evidence.push_back("stderr: \xC3 cut");
  run.diagnosis.processes[0].record.cmdline = "python3 caf\xE9.py";
  run.evidence.logs.push_back({"/tmp/caf\xE9.txt", 10, 1, 0, {"logs/caf\xE9.log"}, {}});
  std::string html = render_html(run.diagnosis, run.evidence);
  EXPECT_EQ(valid_utf8(html), html);
  EXPECT_NE(html.find("<title>traindoc: /bin/echo caf\xEF\xBF\xBD</title>"), std::string::npos);
  EXPECT_NE(html.find("crashed in caf\xEF\xBF\xBD"), std::string::npos);
  EXPECT_NE(html.find("<li>stderr: \xEF\xBF\xBD cut</li>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"logs/caf%E9.log\">logs/caf\xEF\xBF\xBD.log</a>"),
            std::string::npos);
  EXPECT_EQ(html_escape("\x1b[1m<b>\xE9"), "\x1b[1m&lt;b&gt;\xEF\xBF\xBD");
}

// Times at int64's limits (a damaged or planted run.db): the series, the timeline and the page
// are drawn with nothing overflowing (run under -fsanitize=undefined), no number that is not
// one, and no negative duration.
JobRun run_at_the_limits(int64_t start_ns, int64_t end_ns) {
  JobRun run = two_ranks(3);
  run.diagnosis.run.start_ns = start_ns;
  run.diagnosis.run.end_ns = end_ns;
  run.evidence.run = run.diagnosis.run;
  const ProcessSummary& rank0 = run.diagnosis.processes[0];
  const ProcessSummary& rank1 = run.diagnosis.processes[1];
  run.evidence.proc_samples.clear();
  for (int64_t t :
       {INT64_MIN, INT64_MIN + 1, int64_t{-1}, int64_t{0}, kStart, INT64_MAX - 1, INT64_MAX}) {
    run.evidence.proc_samples.push_back(proc_sample(rank0, t, 1 << 20));
    store::HostSample host;
    host.t_ns = t;
    host.mem_total = UINT64_MAX;
    host.mem_available = 1;
    host.cgroup_current = 1 << 20;
    host.cgroup_max = UINT64_MAX;
    run.evidence.host_samples.push_back(host);
    for (const ProcessSummary* p : {&rank0, &rank1}) {
      for (int64_t end : {INT64_MIN, int64_t{0}, t, INT64_MAX}) {
        store::CollectiveCall c = call(*p, run.evidence.collectives.size() + 1, 0, 0);
        c.t_ns = t;
        c.end_ns = end;
        c.raised = end == INT64_MIN;
        run.evidence.collectives.push_back(c);
      }
    }
    store::CollectiveIssue issue;
    issue.t_ns = t;
    issue.field = store::IssueField::kMissing;
    run.evidence.collective_issues.push_back(issue);
  }
  return run;
}

TEST(ReportAtTheLimits, TimesOfInt64sLimitsDrawNothingAbsurd) {
  const int64_t limits[] = {INT64_MIN, int64_t{-1}, int64_t{0}, kStart, INT64_MAX};
  for (int64_t start : limits) {
    for (int64_t end : limits) {
      SCOPED_TRACE(fmt::format("start {} end {}", start, end));
      JobRun run = run_at_the_limits(start, end);
      for (const Chart& chart : build_charts(run.diagnosis, run.evidence)) {
        EXPECT_LE(chart.x.size(), kChartPoints + 1) << chart.id;
        for (double x : chart.x) EXPECT_TRUE(std::isfinite(x) && x >= 0) << chart.id << " " << x;
      }
      Finding crash = finding(FindingKind::kNativeCrash, Severity::kError, "crashed");
      for (int64_t t : limits) {
        crash.t_ns = t;
        run.diagnosis.findings.push_back(crash);
      }
      for (const ChartMarker& m : chart_markers(run.diagnosis, run.evidence).lines) {
        EXPECT_TRUE(std::isfinite(m.x) && m.x >= 0) << m.x;
      }
      std::string timeline = collective_timeline_html(run.diagnosis, run.evidence);
      EXPECT_NE(timeline.find("<svg"), std::string::npos);
      EXPECT_LE(occurrences(timeline, "<text class=\"tick\""), 20u);
      for (const char* absurd : {"nan", "inf", "took -", "after -"}) {
        size_t at = timeline.find(absurd);
        EXPECT_EQ(at, std::string::npos) << timeline.substr(at < 100 ? 0 : at - 100, 200);
      }
      std::string html = render_html(run.diagnosis, run.evidence);
      EXPECT_EQ(html.find("after -"), std::string::npos);
      if (start <= 0) {
        EXPECT_NE(html.find(", started at an unknown time"), std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace traindoc::report
