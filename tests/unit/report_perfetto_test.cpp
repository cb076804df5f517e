// Tests of the Chrome trace-event writer: the format (every event's ph, ts, pid and tid; slices
// that nest; counters of numbers), the tracks by role and node, collective calls on one clock,
// the findings, the bound per track, and damaged evidence.
#include "report/perfetto_trace.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <climits>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis_job_fixture.h"
#include "report/json_report.h"

namespace traindoc::report {
namespace {

using analysis::job::at;
using analysis::job::kLauncher;
using analysis::job::kRank0;
using analysis::job::kRank1;
using analysis::job::kSecond;
using analysis::job::kT0;
using analysis::job::kWorker1;
using json = nlohmann::json;

// What the format requires of each event, and what Perfetto needs to draw it: a phase, a time,
// a process and a thread; slices of one thread that nest (none crosses another's end); counter
// values that are numbers. Returns the events.
json checked_trace(const std::string& text) {
  json trace = json::parse(text);  // throws on text that is not JSON
  EXPECT_TRUE(trace.contains("traceEvents"));
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  for (const json& event : trace["traceEvents"]) {
    EXPECT_TRUE(event["ph"].is_string()) << event;
    EXPECT_TRUE(event["ts"].is_number()) << event;
    EXPECT_GE(event["ts"].get<double>(), 0) << event;
    EXPECT_TRUE(event["pid"].is_number_integer()) << event;
    EXPECT_TRUE(event["tid"].is_number_integer()) << event;
    EXPECT_TRUE(event["name"].is_string()) << event;
    std::string ph = event["ph"];
    EXPECT_TRUE(ph == "M" || ph == "X" || ph == "i" || ph == "C") << event;
    if (ph == "X") {
      EXPECT_TRUE(event["dur"].is_number()) << event;
      EXPECT_GE(event["dur"].get<double>(), 0) << event;
      double ts = event["ts"];
      slices[{event["pid"], event["tid"]}].emplace_back(ts, ts + event["dur"].get<double>());
    }
    if (ph == "C") {
      EXPECT_FALSE(event["args"].empty()) << event;
      for (const auto& [key, value] : event["args"].items())
        EXPECT_TRUE(value.is_number()) << event;
    }
    if (ph == "i") {
      EXPECT_TRUE(event["s"] == "t" || event["s"] == "p" || event["s"] == "g") << event;
    }
  }
  for (auto& [thread, spans] : slices) {
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return a.first < b.first || (a.first == b.first && a.second > b.second);
    });
    std::vector<double> open;  // ends of the slices that enclose the next
    for (const auto& [begin, end] : spans) {
      while (!open.empty() && open.back() <= begin) open.pop_back();
      EXPECT_TRUE(open.empty() || end <= open.back())
          << "slice [" << begin << ", " << end << "] crosses one ending at " << open.back();
      open.push_back(end);
    }
  }
  return trace["traceEvents"];
}

store::CollectiveCall call(int pid, uint64_t ticks, uint64_t number, double from, double to,
                           int group_rank) {
  store::CollectiveCall c;
  c.pid = pid;
  c.start_ticks = ticks;
  c.t_ns = at(from);
  c.end_ns = to > 0 ? at(to) : 0;
  c.group = 0xfeedbeefcafe1234;
  c.number = number;
  c.group_rank = group_rank;
  c.group_size = 2;
  c.source = "python";
  c.op = "all_reduce";
  c.dtype = "float32";
  c.count = 200;
  c.tensors = "[20, 10] float32";
  c.redop = "sum";
  c.site = "train.py:40";
  return c;
}

// Rank 1 comes late to its second all_reduce, then crashes with SIGSEGV at 5 s while rank 0
// waits in its third; the launcher stops.
store::Evidence straggler_job() {
  store::Evidence e = analysis::job::torchrun_job();
  uint64_t t0 = analysis::job::process(e, kRank0).start_ticks;
  uint64_t t1 = analysis::job::process(e, kRank1).start_ticks;
  e.collectives = {call(kRank0, t0, 1, 1.0, 1.1, 0), call(kRank1, t1, 1, 1.0, 1.1, 1),
                   call(kRank0, t0, 2, 2.0, 2.6, 0), call(kRank1, t1, 2, 2.5, 2.6, 1),
                   call(kRank0, t0, 3, 3.0, 0, 0)};
  // An async send begun while a call was in flight, and an NCCL call whose end is unknown.
  store::CollectiveCall send = call(kRank1, t1, 3, 2.55, 2.9, 1);
  send.op = "send";
  send.async = true;
  send.peer = 0;
  store::CollectiveCall nccl = call(kRank1, t1, 4, 3.5, 0, 1);
  nccl.source = "nccl";
  e.collectives.push_back(send);
  e.collectives.push_back(nccl);
  for (int s = 1; s <= 5; ++s) {
    for (int pid : {kRank0, kRank1}) {
      store::ProcSample p;
      p.t_ns = at(s);
      p.pid = pid;
      p.start_ticks = pid == kRank0 ? t0 : t1;
      p.rss = static_cast<uint64_t>(s) * analysis::job::kGiB;
      p.uss = p.rss / 2;
      e.proc_samples.push_back(p);
      e.steps.push_back({at(s), pid, p.start_ticks, store::StepKind::kOptimizer, s * 10});
    }
  }
  store::Crash crash;
  crash.pid = kRank1;
  crash.start_ticks = t1;
  crash.tid = kRank1;
  crash.signo = SIGSEGV;
  crash.code = 1;
  crash.fault_addr = 0x10;
  crash.time_ns = at(5);
  store::NativeFrame frame;
  frame.address = 0x7f00;
  frame.module = "/usr/lib/libfoo.so";
  frame.function = "foo_apply";
  crash.frames = {frame};
  e.crashes = {crash};
  analysis::job::killed(e, kRank1, 5.01, SIGSEGV);
  e.events.push_back({at(5.2), store::EventKind::kSignalForwarded, 0, "SIGTERM from the terminal"});
  analysis::job::killed(e, kRank0, 5.5, SIGTERM);
  analysis::job::exited(e, kLauncher, 6, 1);
  e.run.end_ns = at(6);
  e.run.exit_code = 1;
  e.run.hostname = "node-a";
  return e;
}

std::string trace_of(const store::Evidence& e, const TraceOptions& options = {}) {
  analysis::Diagnosis d = analysis::diagnose(e);
  return perfetto_trace({{"node-a", &e, &d}}, options);
}

std::map<int, std::string> process_names(const json& events) {
  std::map<int, std::string> names;
  for (const json& event : events) {
    if (event["name"] == "process_name") names[event["pid"]] = event["args"]["name"];
  }
  return names;
}

int pid_named(const json& events, const std::string& prefix) {
  for (const auto& [pid, name] : process_names(events)) {
    if (name.starts_with(prefix)) return pid;
  }
  ADD_FAILURE() << "no process named " << prefix;
  return -1;
}

std::vector<json> named(const json& events, int pid, const std::string& name) {
  std::vector<json> out;
  for (const json& event : events) {
    if (event["pid"] == pid && event["name"] == name) out.push_back(event);
  }
  return out;
}

TEST(PerfettoTrace, FollowsTheFormatAndNamesTracksByRole) {
  json events = checked_trace(trace_of(straggler_job()));
  std::map<int, std::string> names = process_names(events);
  std::set<std::string> values;
  for (const auto& [pid, name] : names) values.insert(name);
  EXPECT_TRUE(values.contains("node node-a"));
  EXPECT_TRUE(values.contains("launcher (pid 1000)"));
  EXPECT_TRUE(values.contains("rank 1 (pid 1011)"));
  EXPECT_TRUE(values.contains("worker 0 of rank 1 (pid 1021)"));
  // Sorted by node, then role: the launcher, rank 0, its worker, rank 1, its worker.
  std::map<int, int> sort_index;
  for (const json& event : events) {
    if (event["name"] == "process_sort_index")
      sort_index[event["pid"]] = event["args"]["sort_index"];
  }
  EXPECT_LT(sort_index[pid_named(events, "node")], sort_index[pid_named(events, "launcher")]);
  EXPECT_LT(sort_index[pid_named(events, "launcher")], sort_index[pid_named(events, "rank 0")]);
  EXPECT_LT(sort_index[pid_named(events, "worker 0 of rank 0")],
            sort_index[pid_named(events, "rank 1")]);
  EXPECT_LT(sort_index[pid_named(events, "rank 1")],
            sort_index[pid_named(events, "worker 0 of rank 1")]);
}

TEST(PerfettoTrace, CollectivesOnOneClockShowTheStraggler) {
  json events = checked_trace(trace_of(straggler_job()));
  int rank0 = pid_named(events, "rank 0");
  int rank1 = pid_named(events, "rank 1");
  std::vector<json> calls0 = named(events, rank0, "all_reduce");
  std::vector<json> calls1 = named(events, rank1, "all_reduce");
  ASSERT_EQ(calls0.size(), 3u);
  ASSERT_EQ(calls1.size(), 3u);
  // Microseconds since the run's start, for every process alike.
  EXPECT_DOUBLE_EQ(calls0[0]["ts"].get<double>(), 1e6);
  EXPECT_DOUBLE_EQ(calls1[1]["ts"].get<double>() - calls0[1]["ts"].get<double>(), 500'000);
  EXPECT_DOUBLE_EQ(calls1[1]["dur"].get<double>(), 100'000);
  const json& args = calls1[1]["args"];
  EXPECT_EQ(args["op"], "all_reduce");
  EXPECT_EQ(args["shape"], "[20, 10] float32");
  EXPECT_EQ(args["dtype"], "float32");
  EXPECT_EQ(args["group"], "feedbeefcafe1234");
  EXPECT_EQ(args["sequence"], 2);
  EXPECT_EQ(args["reduce_op"], "sum");
  // Rank 0's third call never returned: it lasts until rank 0 ended.
  EXPECT_EQ(calls0[2]["args"]["returned"], false);
  EXPECT_DOUBLE_EQ(calls0[2]["ts"].get<double>() + calls0[2]["dur"].get<double>(), 5.5e6);
  // The async send overlaps the all_reduce: on a lane of its own, so that slices still nest.
  std::vector<json> sends = named(events, rank1, "send");
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_NE(sends[0]["tid"], calls1[1]["tid"]);
  // NCCL's call: when it was enqueued, its end not known.
  EXPECT_EQ(calls1[2]["args"]["source"], "nccl");
  EXPECT_EQ(calls1[2]["args"]["end_known"], false);
  EXPECT_DOUBLE_EQ(calls1[2]["dur"].get<double>(), 0);
}

TEST(PerfettoTrace, StepsMemoryCrashesEndsAndFindings) {
  json events = checked_trace(trace_of(straggler_job()));
  int rank1 = pid_named(events, "rank 1");
  EXPECT_EQ(named(events, rank1, "step 30").size(), 1u);
  std::vector<json> memory = named(events, rank1, "memory");
  ASSERT_EQ(memory.size(), 5u);
  EXPECT_EQ(memory[4]["args"]["rss"], 5 * analysis::job::kGiB);
  EXPECT_EQ(memory[4]["args"]["uss"], 5 * analysis::job::kGiB / 2);
  EXPECT_EQ(named(events, pid_named(events, "node"), "host memory").size(), 1u);
  std::vector<json> crash = named(events, rank1, "crash: SIGSEGV");
  ASSERT_EQ(crash.size(), 1u);
  EXPECT_DOUBLE_EQ(crash[0]["ts"].get<double>(), 5e6);
  EXPECT_EQ(crash[0]["args"]["native_stack"][0], "foo_apply (/usr/lib/libfoo.so)");
  EXPECT_EQ(named(events, rank1, "end: killed by SIGSEGV").size(), 1u);
  // The forwarded signal came from no job process: on the node's track.
  EXPECT_EQ(named(events, pid_named(events, "node"), "signal-forwarded").size(), 1u);

  std::vector<json> findings;
  for (const json& event : events) {
    if (event.value("cat", "") == "finding") findings.push_back(event);
  }
  ASSERT_FALSE(findings.empty());
  size_t roots = 0;
  for (const json& f : findings) {
    EXPECT_EQ(f["s"], "g");
    EXPECT_FALSE(f["args"]["title"].get<std::string>().empty());
    if (f["args"]["root_cause"] == true) {
      ++roots;
      EXPECT_TRUE(f["name"].get<std::string>().starts_with("ROOT CAUSE: ")) << f;
      EXPECT_EQ(f["args"]["kind"], "native-crash");
      // At the moment of the crash it names.
      EXPECT_DOUBLE_EQ(f["ts"].get<double>(), 5e6);
    }
  }
  EXPECT_EQ(roots, 1u);
}

TEST(PerfettoTrace, BoundsEachTrackKeepingTheLatestAndThoseNearFindings) {
  store::Evidence e = straggler_job();
  uint64_t ticks = analysis::job::process(e, kWorker1).start_ticks;
  // 2,000 samples of the worker, 10 ms apart from 0.5 s: the crash at 5 s falls among them.
  for (int i = 0; i < 2000; ++i) {
    store::ProcSample p;
    p.t_ns = at(0.5) + i * 10'000'000LL;
    p.pid = kWorker1;
    p.start_ticks = ticks;
    p.rss = static_cast<uint64_t>(i);
    e.proc_samples.push_back(p);
  }
  json trace = json::parse(trace_of(e, {.events_per_track = 100}));
  json events = checked_trace(trace.dump());
  std::vector<json> kept = named(events, pid_named(events, "worker 0 of rank 1"), "memory");
  ASSERT_EQ(kept.size(), 100u);
  // Every one kept is within 30 s of the crash here: the latest of them.
  EXPECT_EQ(kept.back()["args"]["rss"], 1999);
  EXPECT_EQ(kept.front()["args"]["rss"], 1900);
  EXPECT_EQ(trace["otherData"]["events_per_track"], 100);
  EXPECT_EQ(trace["otherData"]["events_left_out"]["worker 0 of rank 1 (pid 1021): memory"], 1900);
}

TEST(PerfettoTrace, KeepsSamplesNearAFindingBeforeTheLatest) {
  store::Evidence e = straggler_job();
  uint64_t ticks = analysis::job::process(e, kWorker1).start_ticks;
  // An hour of samples each second: the crash at 5 s is far from the latest.
  for (int i = 0; i < 3600; ++i) {
    store::ProcSample p;
    p.t_ns = kT0 + i * kSecond;
    p.pid = kWorker1;
    p.start_ticks = ticks;
    p.rss = static_cast<uint64_t>(i);
    e.proc_samples.push_back(p);
  }
  json events = checked_trace(trace_of(e, {.events_per_track = 100}));
  std::vector<double> findings;
  for (const json& event : events) {
    if (event.value("cat", "") == "finding") findings.push_back(event["ts"]);
  }
  // The samples (their rss: the second) within 30 s of a finding, then the latest.
  std::set<uint64_t> expected;
  for (uint64_t s = 0; s < 3600; ++s) {
    for (double f : findings) {
      if (std::abs(static_cast<double>(s) * 1e6 - f) <= 30e6) expected.insert(s);
    }
  }
  EXPECT_TRUE(expected.contains(0) && expected.contains(34)) << "the crash's window";
  for (uint64_t s = 3599; expected.size() < 100; --s) expected.insert(s);
  std::vector<json> kept = named(events, pid_named(events, "worker 0 of rank 1"), "memory");
  std::set<uint64_t> rss;
  for (const json& k : kept) rss.insert(k["args"]["rss"].get<uint64_t>());
  EXPECT_EQ(kept.size(), 100u);
  EXPECT_EQ(rss, expected);
}

TEST(PerfettoTrace, SeveralNodesGetTracksOfTheirOwn) {
  store::Evidence a = straggler_job();
  store::Evidence b = straggler_job();
  b.run.hostname = "node-b";
  for (store::CollectiveCall& c : b.collectives) {
    c.t_ns += kSecond;
    c.end_ns += c.end_ns != 0 ? kSecond : 0;
  }
  analysis::Diagnosis da = analysis::diagnose(a);
  analysis::Diagnosis db = analysis::diagnose(b);
  json events = checked_trace(perfetto_trace({{"node-a", &a, &da}, {"node-b", &b, &db}}));
  std::map<int, std::string> names = process_names(events);
  std::set<std::string> values;
  for (const auto& [pid, name] : names) values.insert(name);
  // The same pids on two nodes are two processes.
  EXPECT_TRUE(values.contains("node-a: rank 1 (pid 1011)"));
  EXPECT_TRUE(values.contains("node-b: rank 1 (pid 1011)"));
  EXPECT_EQ(names.size(), 2 * (1 + a.processes.size()));
  int a1 = pid_named(events, "node-a: rank 1");
  int b1 = pid_named(events, "node-b: rank 1");
  EXPECT_DOUBLE_EQ(named(events, b1, "all_reduce")[0]["ts"].get<double>() -
                       named(events, a1, "all_reduce")[0]["ts"].get<double>(),
                   1e6);
}

TEST(PerfettoTrace, DamagedEvidenceStillGivesAValidTrace) {
  store::Evidence e = straggler_job();
  e.processes[1].cmdline = "python3 \xff\xfe train.py";
  e.events.push_back({INT64_MAX, store::EventKind::kJobIdle, kRank0, "bad \xc3 bytes \x7f"});
  e.events.push_back({0, store::EventKind::kJobIdle, kRank0, "no time"});
  e.events.push_back({-5, store::EventKind::kJobIdle, kRank0, "before the epoch"});
  e.collectives.push_back(call(kRank0, 1, 9, 4.0, 3.0, 0));  // ends before it began
  e.collectives.back().tensors = "\x80";
  store::ProcSample before_time;
  before_time.t_ns = INT64_MIN;
  before_time.pid = kRank0;
  before_time.rss = UINT64_MAX;
  e.proc_samples.push_back(before_time);
  e.run.start_ns = 0;
  json events = checked_trace(trace_of(e));
  EXPECT_FALSE(events.empty());
}

TEST(PerfettoTrace, NoEvidenceAtAll) {
  store::Evidence e;
  json events = checked_trace(trace_of(e));
  EXPECT_EQ(process_names(events).size(), 1u);  // the node's own track
}

}  // namespace
}  // namespace traindoc::report
