// The Chrome trace-event JSON writer (perfetto_trace.h). Any process; pure.
// Every event is first gathered on its track with its time in nanoseconds, the tracks bounded,
// then written with times relative to the trace's origin, so that whatever times a damaged
// run.db holds, every ts is a number and every slice of a thread nests.
#include "report/perfetto_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "report/chart_series.h"
#include "report/elapsed.h"
#include "report/json_report.h"
#include "report/terminal.h"

namespace traindoc::report {
namespace {

using json = nlohmann::ordered_json;

// A job process's threads in the trace; a node's own track has the first alone.
constexpr int kEventsTid = 1;
constexpr int kStepsTid = 2;
constexpr int kFirstCollectiveTid = 3;  // one per lane of calls that overlap (async ones)
// Processes and counters belong to no thread.
constexpr int kNoTid = 0;
// Sort indexes: a node's tracks together, its own first.
constexpr int kNodeSortStride = 100'000;
// Native frames a crash instant lists, innermost first.
constexpr size_t kCrashFrames = 16;

// An event before its time is written: all but `ts` (and `dur`, for a slice).
struct Item {
  int64_t t_ns = 0;
  std::optional<int64_t> dur_ns;  // a slice's
  json event;
};

// Events of one track, bounded together, and the name the count of those left out goes by.
struct Track {
  std::string name;
  bool collectives = false;  // laid out on lanes once bounded
  std::vector<Item> items;
};

// A node's job processes as trace processes.
class NodeProcesses {
 public:
  NodeProcesses(const analysis::Diagnosis& diagnosis, int first_pid) : m_diagnosis(diagnosis) {
    for (size_t i = 0; i < diagnosis.processes.size(); ++i) {
      const store::ProcessRecord& r = diagnosis.processes[i].record;
      int pid = first_pid + static_cast<int>(i);
      m_identity.emplace(std::make_pair(r.pid, r.start_ticks), pid);
      m_by_pid.emplace(r.pid, i);
    }
    m_first_pid = first_pid;
  }

  // The process of that identity, else the one that held `pid` at `t_ns`, else the last to.
  std::optional<int> find(int pid, uint64_t start_ticks, int64_t t_ns) const {
    auto exact = m_identity.find({pid, start_ticks});
    return exact != m_identity.end() ? exact->second : at(pid, t_ns);
  }

  // Events carry the pid alone: the process that held it at that time.
  std::optional<int> at(int pid, int64_t t_ns) const {
    std::optional<int> last;
    for (auto [it, end] = m_by_pid.equal_range(pid); it != end; ++it) {
      const store::ProcessRecord& r = m_diagnosis.processes[it->second].record;
      last = trace_pid(it->second);
      if (r.start_ns <= t_ns && (r.end_ns == 0 || t_ns <= r.end_ns)) return last;
    }
    return last;
  }

  int trace_pid(size_t index) const { return m_first_pid + static_cast<int>(index); }
  const analysis::ProcessSummary& summary(int trace_pid) const {
    return m_diagnosis.processes[static_cast<size_t>(trace_pid - m_first_pid)];
  }

 private:
  const analysis::Diagnosis& m_diagnosis;
  int m_first_pid = 0;
  std::map<std::pair<int, uint64_t>, int> m_identity;
  std::multimap<int, size_t> m_by_pid;
};

// The order of a node's processes: the launcher, then each rank with the programs and workers
// below it, then the others; start order within each.
std::tuple<int, int, int, size_t> role_order(const analysis::ProcessSummary& p, size_t index) {
  int rank = p.role.rank.value_or(INT_MAX);
  switch (p.role.role) {
    case analysis::Role::kLauncher:
      return {INT_MIN, 0, 0, index};
    case analysis::Role::kRank:
      return {rank, 0, 0, index};
    case analysis::Role::kOther:
      return {rank, 1, 0, index};
    case analysis::Role::kWorker:
      return {rank, 2, p.role.worker.value_or(INT_MAX), index};
  }
  return {INT_MAX, 3, 0, index};
}

std::string thread_name(int tid) {
  if (tid == kEventsTid) return "events";
  if (tid == kStepsTid) return "steps";
  int lane = tid - kFirstCollectiveTid;
  return lane == 0 ? "collectives" : fmt::format("collectives (overlapping, {})", lane + 1);
}

json metadata(const char* name, int pid, int tid, json args) {
  return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", 0}, {"args", args}};
}

json instant(const std::string& name, const char* category, int pid, int tid, json args) {
  return {{"ph", "i"},  {"name", name}, {"cat", category}, {"s", "t"},
          {"pid", pid}, {"tid", tid},   {"args", args}};
}

json counter(const std::string& name, int pid, json args) {
  return {{"ph", "C"}, {"name", name}, {"pid", pid}, {"tid", kNoTid}, {"args", args}};
}

template <typename T>
void put(json& object, const char* key, const std::optional<T>& value) {
  if (value) object[key] = *value;
}

class TraceBuilder {
 public:
  explicit TraceBuilder(const TraceOptions& options) : m_options(options) {}

  void add_node(const TraceNode& node, size_t index, bool several);
  std::string text();

 private:
  void add_processes(const TraceNode& node, const NodeProcesses& processes, size_t index,
                     bool several);
  void add_collectives(const store::Evidence& e, const NodeProcesses& processes, int64_t end_ns);
  void add_steps(const store::Evidence& e, const NodeProcesses& processes);
  void add_process_memory(const store::Evidence& e, const NodeProcesses& processes);
  void add_node_memory(const store::Evidence& e, int node_pid);
  void add_process_ends(const analysis::Diagnosis& d, const NodeProcesses& processes);
  void add_crashes(const store::Evidence& e, const NodeProcesses& processes);
  void add_events(const store::Evidence& e, const NodeProcesses& processes, int node_pid);
  void add_findings(const analysis::Diagnosis& d, int node_pid, int64_t end_ns);

  // `t_ns` <= 0 is a time not known: nothing to place.
  void add(int pid, const std::string& key, int64_t t_ns, json event,
           std::optional<int64_t> dur_ns = std::nullopt);
  void bound(Track& track);
  void lay_out_lanes(Track& track);

  const TraceOptions& m_options;
  int m_next_pid = 1;
  std::vector<json> m_metadata;
  std::map<int, std::string> m_process_names;
  std::map<std::pair<int, std::string>, Track> m_tracks;
  std::vector<Item> m_findings;  // never bounded
  std::vector<int64_t> m_finding_ns;
  std::optional<int64_t> m_origin_ns;
  std::vector<std::string> m_nodes;
  json m_left_out = json::object();
};

void TraceBuilder::add(int pid, const std::string& key, int64_t t_ns, json event,
                       std::optional<int64_t> dur_ns) {
  if (t_ns <= 0) return;
  Track& track = m_tracks[{pid, key}];
  if (track.name.empty()) {
    track.name = m_process_names[pid] + ": " + key;
    track.collectives = key == "collectives";
  }
  track.items.push_back({t_ns, dur_ns, std::move(event)});
}

void TraceBuilder::add_node(const TraceNode& node, size_t index, bool several) {
  const store::Evidence& e = *node.evidence;
  const analysis::Diagnosis& d = *node.diagnosis;
  m_nodes.push_back(node.name);
  if (e.run.start_ns > 0)
    m_origin_ns = std::min(m_origin_ns.value_or(e.run.start_ns), e.run.start_ns);
  int node_pid = m_next_pid++;
  NodeProcesses processes(d, m_next_pid);
  m_next_pid += static_cast<int>(d.processes.size());
  m_process_names[node_pid] = "node " + node.name;
  m_metadata.push_back(metadata("process_name", node_pid, kNoTid, {{"name", "node " + node.name}}));
  m_metadata.push_back(metadata("process_sort_index", node_pid, kNoTid,
                                {{"sort_index", static_cast<int>(index) * kNodeSortStride}}));
  add_processes(node, processes, index, several);
  // A call still waiting, at the end of what was seen.
  int64_t end_ns = last_sample_ns(e);
  add_collectives(e, processes, end_ns);
  add_steps(e, processes);
  add_process_memory(e, processes);
  add_node_memory(e, node_pid);
  add_process_ends(d, processes);
  add_crashes(e, processes);
  add_events(e, processes, node_pid);
  add_findings(d, node_pid, end_ns);
}

void TraceBuilder::add_processes(const TraceNode& node, const NodeProcesses& processes,
                                 size_t index, bool several) {
  const analysis::Diagnosis& d = *node.diagnosis;
  std::vector<std::tuple<int, int, int, size_t>> order;
  for (size_t i = 0; i < d.processes.size(); ++i) order.push_back(role_order(d.processes[i], i));
  std::sort(order.begin(), order.end());
  for (size_t position = 0; position < order.size(); ++position) {
    size_t i = std::get<3>(order[position]);
    int pid = processes.trace_pid(i);
    std::string name = analysis::process_name(d.processes[i]);
    if (several) name.insert(0, node.name + ": ");
    m_process_names[pid] = name;
    m_metadata.push_back(metadata("process_name", pid, kNoTid, {{"name", name}}));
    m_metadata.push_back(metadata("process_labels", pid, kNoTid, {{"labels", node.name}}));
    int sort_index = static_cast<int>(index) * kNodeSortStride + static_cast<int>(position) + 1;
    m_metadata.push_back(metadata("process_sort_index", pid, kNoTid, {{"sort_index", sort_index}}));
  }
}

void TraceBuilder::add_collectives(const store::Evidence& e, const NodeProcesses& processes,
                                   int64_t end_ns) {
  for (const store::CollectiveCall& c : e.collectives) {
    std::optional<int> pid = processes.find(c.pid, c.start_ticks, c.t_ns);
    if (!pid) continue;
    json args = {{"op", c.op},
                 {"shape", c.tensors},
                 {"dtype", c.dtype},
                 {"count", c.count},
                 {"group", fmt::format("{:016x}", c.group)},
                 {"group_rank", c.group_rank},
                 {"group_size", c.group_size},
                 {"sequence", c.number},
                 {"source", c.source}};
    if (!c.redop.empty()) args["reduce_op"] = c.redop;
    if (c.peer >= 0) args["peer"] = c.peer;
    if (!c.site.empty()) args["site"] = c.site;
    if (c.step != 0) args["step"] = c.step;
    if (c.async) args["async"] = true;
    if (c.raised) args["raised"] = true;
    // NCCL's records tell when a call was enqueued, not when it ended: a point. A Python call
    // that never returned lasts to its process's end, or to the end of what was seen.
    int64_t until = c.end_ns;
    if (c.end_ns == 0 && c.source == "nccl") {
      until = c.t_ns;
      args["end_known"] = false;
    } else if (c.end_ns == 0) {
      int64_t process_end = processes.summary(*pid).record.end_ns;
      until = std::max(c.t_ns, process_end != 0 ? process_end : end_ns);
      args["returned"] = false;
    }
    json event = {{"ph", "X"},
                  {"name", c.op},
                  {"cat", "collective"},
                  {"pid", *pid},
                  {"tid", kFirstCollectiveTid},
                  {"args", args}};
    add(*pid, "collectives", c.t_ns, std::move(event),
        std::max<int64_t>(0, elapsed_ns(c.t_ns, until)));
  }
}

void TraceBuilder::add_steps(const store::Evidence& e, const NodeProcesses& processes) {
  std::vector<const store::StepSample*> samples;
  for (const store::StepSample& s : e.steps) samples.push_back(&s);
  std::stable_sort(samples.begin(), samples.end(),
                   [](const auto* a, const auto* b) { return a->t_ns < b->t_ns; });
  std::map<int, int64_t> last;  // by trace pid: the count of its step kind so far
  for (const store::StepSample* s : samples) {
    std::optional<int> pid = processes.find(s->pid, s->start_ticks, s->t_ns);
    // Each process's steps of the kind its step count comes from, as the report counts them.
    if (!pid || processes.summary(*pid).step_kind() != s->kind) continue;
    auto [previous, first] = last.emplace(*pid, 0);
    if (s->count <= previous->second) continue;
    json args = {{"kind", store::to_string(s->kind)},
                 {"count", s->count},
                 {"new_steps", s->count - previous->second}};
    previous->second = s->count;
    add(*pid, "steps", s->t_ns,
        instant(fmt::format("step {}", s->count), "step", *pid, kStepsTid, std::move(args)));
  }
}

void TraceBuilder::add_process_memory(const store::Evidence& e, const NodeProcesses& processes) {
  for (const store::ProcSample& s : e.proc_samples) {
    std::optional<int> pid = processes.find(s.pid, s.start_ticks, s.t_ns);
    if (!pid) continue;
    json args = {{"rss", s.rss}};
    put(args, "uss", s.uss);
    put(args, "pss", s.pss);
    args["swap"] = s.swap;
    add(*pid, "memory", s.t_ns, counter("memory", *pid, std::move(args)));
  }
  for (const store::GpuProcessSample& s : e.gpu.process_samples) {
    // A process outside traindoc's pid namespace is none of the job's.
    std::optional<int> pid =
        s.pid == 0 ? std::nullopt : processes.find(s.pid, s.start_ticks, s.t_ns);
    if (!pid || !s.used_bytes) continue;
    std::string name = fmt::format("GPU {} memory", s.device);
    add(*pid, name, s.t_ns, counter(name, *pid, {{"used", *s.used_bytes}}));
  }
}

void TraceBuilder::add_node_memory(const store::Evidence& e, int pid) {
  for (const store::HostSample& s : e.host_samples) {
    add(pid, "host memory", s.t_ns,
        counter("host memory", pid,
                {{"used", s.mem_total - std::min(s.mem_total, s.mem_available)},
                 {"available", s.mem_available},
                 {"swap_used", s.swap_total - std::min(s.swap_total, s.swap_free)}}));
    if (s.shm_used) {
      json args = {{"used", *s.shm_used}};
      put(args, "total", s.shm_total);
      add(pid, "/dev/shm", s.t_ns, counter("/dev/shm", pid, std::move(args)));
    }
  }
  for (const store::CgroupSample& s : e.cgroup_samples) {
    json args = json::object();
    put(args, "current", s.current);
    put(args, "max", s.max);
    if (args.empty()) continue;
    std::string name = "cgroup " + s.dir;
    add(pid, name, s.t_ns, counter(name, pid, std::move(args)));
  }
  std::map<int, uint64_t> totals;
  for (const store::GpuDevice& device : e.gpu.devices) totals[device.index] = device.memory_total;
  for (const store::GpuSample& s : e.gpu.samples) {
    if (!s.memory_used) continue;
    std::string name = fmt::format("GPU {} memory", s.device);
    json args = {{"used", *s.memory_used}};
    if (auto total = totals.find(s.device); total != totals.end()) args["total"] = total->second;
    add(pid, name, s.t_ns, counter(name, pid, std::move(args)));
  }
}

void TraceBuilder::add_process_ends(const analysis::Diagnosis& d, const NodeProcesses& processes) {
  for (size_t i = 0; i < d.processes.size(); ++i) {
    const store::ProcessRecord& r = d.processes[i].record;
    int pid = processes.trace_pid(i);
    json args = {{"how_known", store::to_string(r.end_source)}};
    put(args, "exit_code", r.exit_code);
    if (r.exit_signal) {
      args["signal"] = signal_name(*r.exit_signal);
      args["core_dumped"] = r.core_dumped;
    }
    add(pid, "events", r.end_ns,
        instant("end: " + describe_end(r), "process-end", pid, kEventsTid, std::move(args)));
  }
}

void TraceBuilder::add_crashes(const store::Evidence& e, const NodeProcesses& processes) {
  for (const store::Crash& c : e.crashes) {
    std::optional<int> pid = processes.find(c.pid, c.start_ticks, c.time_ns);
    if (!pid) continue;
    json frames = json::array();
    for (size_t i = 0; i < c.frames.size() && i < kCrashFrames; ++i) {
      const store::NativeFrame& f = c.frames[i];
      frames.push_back(
          fmt::format("{} ({})", f.function.empty() ? fmt::format("{:#x}", f.address) : f.function,
                      f.module.empty() ? "?" : f.module));
    }
    json args = {{"signal", signal_name(c.signo)},
                 {"si_code", c.code},
                 {"fault_address", fmt::format("{:#x}", c.fault_addr)},
                 {"thread", c.thread_name},
                 {"tid", c.tid},
                 {"native_stack", frames}};
    if (!c.python_traceback.empty()) args["python_traceback"] = c.python_traceback;
    add(*pid, "events", c.time_ns,
        instant("crash: " + signal_name(c.signo), "crash", *pid, kEventsTid, std::move(args)));
  }
}

void TraceBuilder::add_events(const store::Evidence& e, const NodeProcesses& processes,
                              int node_pid) {
  for (const store::Event& event : e.events) {
    // Those of no job process (the supervisor's watches) go on the node's own track.
    int pid = processes.at(event.pid, event.t_ns).value_or(node_pid);
    json args = {{"text", event.text}};
    put(args, "a", event.a);
    put(args, "b", event.b);
    put(args, "c", event.c);
    if (!event.name.empty()) args["name"] = event.name;
    if (event.pid != 0) args["pid"] = event.pid;
    add(pid, "events", event.t_ns,
        instant(std::string(store::to_string(event.kind)), "event", pid, kEventsTid, args));
  }
  for (const store::KernelOomKill& kill : e.kernel_oom_kills) {
    int pid = processes.at(kill.pid, kill.t_ns).value_or(node_pid);
    json args = {{"pid", kill.pid}, {"comm", kill.comm}, {"memory_cgroup_limit", kill.memcg}};
    if (!kill.oom_cgroup.empty()) args["oom_cgroup"] = kill.oom_cgroup;
    put(args, "anon_rss", kill.anon_rss);
    add(pid, "events", kill.t_ns, instant("OOM kill", "oom-kill", pid, kEventsTid, args));
  }
  for (const store::GpuEvent& g : e.gpu.events) {
    json args = {{"device", g.device}, {"text", g.text}, {"code", g.code}};
    add(node_pid, "events", g.t_ns,
        instant(fmt::format("GPU {}: {}", g.device, g.type), "gpu-event", node_pid, kEventsTid,
                args));
  }
}

void TraceBuilder::add_findings(const analysis::Diagnosis& d, int node_pid, int64_t end_ns) {
  for (const analysis::Finding& f : d.findings) {
    // A finding whose moment the analysis does not know is shown at the end.
    bool known = f.t_ns > 0;
    int64_t t_ns = known ? f.t_ns : end_ns;
    if (t_ns <= 0) continue;
    json args = finding_json(f);
    if (!known) args["time_known"] = false;
    json event = instant((f.root_cause ? "ROOT CAUSE: " : "") + f.title, "finding", node_pid,
                         kEventsTid, std::move(args));
    event["s"] = "g";
    if (f.root_cause) event["cname"] = "terrible";
    m_findings.push_back({t_ns, std::nullopt, std::move(event)});
    m_finding_ns.push_back(t_ns);
  }
}

// Keeps the track's events near a finding first (the latest of them, if even those are too
// many), then the latest of the rest.
void TraceBuilder::bound(Track& track) {
  size_t limit = m_options.events_per_track;
  std::vector<Item>& items = track.items;
  if (items.size() <= limit) return;
  auto near_finding = [&](int64_t t_ns) {
    auto after = std::lower_bound(m_finding_ns.begin(), m_finding_ns.end(),
                                  shifted_ns(t_ns, -kTraceFindingWindowNs));
    return after != m_finding_ns.end() && *after <= shifted_ns(t_ns, kTraceFindingWindowNs);
  };
  std::vector<bool> keep(items.size(), false);
  size_t kept = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = items.size(); i-- > 0 && kept < limit;) {
      if (!keep[i] && (pass == 1 || near_finding(items[i].t_ns))) {
        keep[i] = true;
        ++kept;
      }
    }
  }
  std::vector<Item> out;
  out.reserve(kept);
  for (size_t i = 0; i < items.size(); ++i) {
    if (keep[i]) out.push_back(std::move(items[i]));
  }
  m_left_out[track.name] = items.size() - out.size();
  items = std::move(out);
}

// Calls that overlap (async ones, a call begun before another returned) go on further lanes,
// so that the slices of each thread never cross.
void TraceBuilder::lay_out_lanes(Track& track) {
  std::vector<int64_t> lane_end;
  for (Item& item : track.items) {
    int64_t end = shifted_ns(item.t_ns, item.dur_ns.value_or(0));
    size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > item.t_ns) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(end);
    lane_end[lane] = end;
    item.event["tid"] = kFirstCollectiveTid + static_cast<int>(lane);
  }
}

std::string TraceBuilder::text() {
  std::sort(m_finding_ns.begin(), m_finding_ns.end());
  for (auto& [key, track] : m_tracks) {
    std::stable_sort(track.items.begin(), track.items.end(),
                     [](const Item& a, const Item& b) { return a.t_ns < b.t_ns; });
    bound(track);
    if (track.collectives) lay_out_lanes(track);
    for (const Item& item : track.items)
      m_origin_ns = std::min(m_origin_ns.value_or(item.t_ns), item.t_ns);
  }
  for (const Item& item : m_findings)
    m_origin_ns = std::min(m_origin_ns.value_or(item.t_ns), item.t_ns);
  int64_t origin = m_origin_ns.value_or(0);
  auto us = [&](int64_t ns) { return static_cast<double>(ns) / 1e3; };

  std::string events;
  auto append = [&](const json& event) {
    events += events.empty() ? "\n" : ",\n";
    events += json_dump(event);
  };
  for (const json& event : m_metadata) append(event);
  std::set<std::pair<int, int>> threads;
  auto write = [&](Item& item) {
    item.event["ts"] = us(elapsed_ns(origin, item.t_ns));
    if (item.dur_ns) item.event["dur"] = us(*item.dur_ns);
    int pid = item.event["pid"].get<int>();
    int tid = item.event["tid"].get<int>();
    if (tid != kNoTid && threads.emplace(pid, tid).second) {
      append(metadata("thread_name", pid, tid, {{"name", thread_name(tid)}}));
      append(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}}));
    }
    append(item.event);
  };
  for (auto& [key, track] : m_tracks) {
    for (Item& item : track.items) write(item);
  }
  for (Item& item : m_findings) write(item);

  json other = {{"producer", "traindoc"},
                {"clock", "CLOCK_REALTIME"},
                {"origin_ns", origin},
                {"nodes", m_nodes},
                {"events_per_track", m_options.events_per_track},
                {"events_left_out", m_left_out}};
  return "{\"displayTimeUnit\":\"ms\",\"otherData\":" + json_dump(other) + ",\"traceEvents\":[" +
         events + "\n]}\n";
}

}  // namespace

std::string perfetto_trace(const std::vector<TraceNode>& nodes, const TraceOptions& options) {
  TraceBuilder builder(options);
  for (size_t i = 0; i < nodes.size(); ++i) builder.add_node(nodes[i], i, nodes.size() > 1);
  return builder.text();
}

}  // namespace traindoc::report
