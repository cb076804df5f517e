// Chart series for report.html. Any process; pure.
// Samples fall into spans of equal length across the run; a series keeps its largest value in
// each span, and the x of a span is the time of its first sample.
#include "report/chart_series.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "report/cgroup_lines.h"
#include "report/elapsed.h"

namespace traindoc::report {
namespace {

// Spans no shorter than this, so that one round of samples (taken process after process) falls
// into one span on short runs.
constexpr int64_t kMinSpanNs = 500'000'000;
// A limit is drawn where the values reach this share of it; below, it is named in the title.
constexpr double kLimitDrawnAt = 0.25;

// A value of bytes drawn as a double, back as bytes: the largest counts (a limit read as
// "unlimited") round up to 2^64, which no uint64_t holds.
uint64_t bytes_of(double value) {
  constexpr double kPastLargest = 18446744073709551616.0;  // 2^64
  return value >= kPastLargest ? UINT64_MAX : static_cast<uint64_t>(std::max(0.0, value));
}

class ChartBuilder {
 public:
  ChartBuilder(int64_t start_ns, int64_t span_ns) : m_start_ns(start_ns), m_span_ns(span_ns) {}

  size_t add_series(std::string label, bool limit = false) {
    m_series.push_back({std::move(label), {}, limit});
    return m_series.size() - 1;
  }

  void add(size_t series, int64_t t_ns, double value) {
    int64_t key = std::max<int64_t>(0, elapsed_ns(m_start_ns, t_ns)) / m_span_ns;
    auto [it, inserted] = m_spans.try_emplace(key, Span{t_ns, {}});
    Span& span = it->second;
    span.first_ns = std::min(span.first_ns, t_ns);
    std::optional<double>& slot = span.values[series];
    slot = std::max(slot.value_or(value), value);
  }

  // The chart, or nothing when none of its series (limits aside) got a value. A limit far above
  // every value (a host's 24 GiB against a job's 1 GiB) would flatten them to its floor: it is
  // named in the title instead.
  std::optional<Chart> finish(std::string id, std::string title, std::string unit) {
    Chart chart{std::move(id), std::move(title), std::move(unit), {}, {}};
    for (const auto& [key, span] : m_spans) {
      chart.x.push_back(std::max(0.0, elapsed_s(m_start_ns, span.first_ns)));
    }
    std::vector<ChartSeries> limits;
    double peak = 0;
    for (size_t s = 0; s < m_series.size(); ++s) {
      ChartSeries out = m_series[s];
      bool any = false;
      for (const auto& [key, span] : m_spans) {
        auto it = span.values.find(s);
        out.values.push_back(it == span.values.end() ? std::nullopt : it->second);
        any = any || it != span.values.end();
        if (!out.limit && it != span.values.end()) peak = std::max(peak, it->second.value_or(0));
      }
      if (!any) continue;
      (out.limit ? limits : chart.series).push_back(std::move(out));
    }
    if (chart.series.empty()) return std::nullopt;
    std::string named;
    for (ChartSeries& limit : limits) {
      double top = 0;
      for (const auto& v : limit.values) top = std::max(top, v.value_or(0));
      if (peak >= kLimitDrawnAt * top) {
        chart.series.push_back(std::move(limit));
      } else {
        named += fmt::format("{}{} {}", named.empty() ? "" : ", ", limit.label,
                             chart.unit == "bytes" ? analysis::format_bytes(bytes_of(top))
                                                   : fmt::format("{:.0f}", top));
      }
    }
    if (!named.empty()) chart.title += " (" + named + ")";
    return chart;
  }

 private:
  struct Span {
    int64_t first_ns;
    std::map<size_t, std::optional<double>> values;
  };
  int64_t m_start_ns;
  int64_t m_span_ns;
  std::vector<ChartSeries> m_series;
  std::map<int64_t, Span> m_spans;
};

using ProcessKey = std::pair<int, uint64_t>;

// Sorts `items` by `peak`, largest first, and keeps the first `most`; `title` says so when some
// were left out.
template <typename T, typename Peak>
void keep_largest(std::vector<T>& items, Peak peak, std::string& title,
                  size_t most = kChartSeries) {
  std::stable_sort(items.begin(), items.end(),
                   [&](const T& a, const T& b) { return peak(a) > peak(b); });
  if (items.size() > most) {
    title += fmt::format(", the {} largest of {}", most, items.size());
    items.resize(most);
  }
}

std::optional<Chart> process_memory(ChartBuilder builder, const analysis::Diagnosis& d,
                                    const store::Evidence& e) {
  std::vector<const analysis::ProcessSummary*> sampled;
  for (const auto& p : d.processes) {
    if (p.peak_rss) sampled.push_back(&p);
  }
  std::string title = "Memory of each process (RSS)";
  keep_largest(
      sampled, [](const auto* p) { return *p->peak_rss; }, title);
  std::map<ProcessKey, size_t> series;
  for (const auto* p : sampled) {
    series[{p->record.pid, p->record.start_ticks}] = builder.add_series(analysis::process_name(*p));
  }
  for (const store::ProcSample& s : e.proc_samples) {
    auto it = series.find({s.pid, s.start_ticks});
    if (it != series.end()) builder.add(it->second, s.t_ns, static_cast<double>(s.rss));
  }
  return builder.finish("process-memory", title, "bytes");
}

// The job's cgroups other than traindoc's: where those whose OOM kill counters rose are, and
// the largest (those first).
std::string cgroups_title(std::vector<CgroupLine>& cgroups, bool own) {
  if (cgroups.empty()) return "Memory of the host and the job's cgroup";
  std::string title = own ? "Memory of the host, traindoc's cgroup and the job's other cgroups"
                          : "Memory of the host and the job's cgroups";
  std::vector<const CgroupLine*> hit;
  for (const CgroupLine& c : cgroups) {
    if (c.oom_kills > 0) hit.push_back(&c);
  }
  if (hit.size() == 1) {
    title += ", " + analysis::counted(hit[0]->oom_kills, "OOM kill", "OOM kills") + " in cgroup " +
             hit[0]->name;
  } else if (!hit.empty()) {
    std::vector<std::string> each;
    each.reserve(hit.size());
    for (const CgroupLine* c : hit) each.push_back(fmt::format("{} ({})", c->name, c->oom_kills));
    title += ", OOM kills in cgroups " + joined(each);
  }
  keep_largest(
      cgroups, [](const CgroupLine& c) { return std::pair(c.oom_kills > 0, c.peak); }, title,
      kChartCgroups);
  return title;
}

std::optional<Chart> host_memory(ChartBuilder builder, const analysis::Diagnosis& d,
                                 const store::Evidence& e) {
  bool cgroup_limit = std::any_of(e.host_samples.begin(), e.host_samples.end(),
                                  [](const auto& s) { return s.cgroup_max.has_value(); });
  bool own = std::any_of(e.host_samples.begin(), e.host_samples.end(),
                         [](const auto& s) { return s.cgroup_current.has_value(); });
  size_t used = builder.add_series("host used (total - available)");
  size_t cgroup = builder.add_series("cgroup usage");
  size_t limit = builder.add_series(cgroup_limit ? "cgroup limit" : "host total", true);
  for (const store::HostSample& s : e.host_samples) {
    if (s.mem_total >= s.mem_available && s.mem_total > 0) {
      builder.add(used, s.t_ns, static_cast<double>(s.mem_total - s.mem_available));
    }
    if (s.cgroup_current) builder.add(cgroup, s.t_ns, static_cast<double>(*s.cgroup_current));
    std::optional<uint64_t> bound = cgroup_limit ? s.cgroup_max : s.mem_total;
    if (bound && *bound > 0) builder.add(limit, s.t_ns, static_cast<double>(*bound));
  }
  std::vector<CgroupLine> cgroups = job_cgroup_lines(d, e);
  std::string title = cgroups_title(cgroups, own);
  for (const CgroupLine& c : cgroups) {
    size_t usage = builder.add_series(c.usage_label);
    size_t bound = builder.add_series(c.limit_label, true);
    for (const store::CgroupSample* s : c.samples) {
      if (s->current) builder.add(usage, s->t_ns, static_cast<double>(*s->current));
      if (s->max && *s->max > 0) builder.add(bound, s->t_ns, static_cast<double>(*s->max));
    }
  }
  return builder.finish("host-memory", title, "bytes");
}

std::optional<Chart> shared_memory(ChartBuilder builder, const store::Evidence& e) {
  size_t used = builder.add_series("used");
  size_t size = builder.add_series("size", true);
  bool any = false;
  for (const store::HostSample& s : e.host_samples) {
    if (s.shm_used && *s.shm_used > 0) {
      any = true;
      builder.add(used, s.t_ns, static_cast<double>(*s.shm_used));
    }
    if (s.shm_total) builder.add(size, s.t_ns, static_cast<double>(*s.shm_total));
  }
  if (!any) return std::nullopt;
  return builder.finish("shared-memory", "/dev/shm, where DataLoader workers and NCCL share memory",
                        "bytes");
}

std::optional<Chart> gpu_memory(ChartBuilder builder, const store::Evidence& e) {
  std::map<int, size_t> series;
  uint64_t capacity = 0;
  for (const store::GpuDevice& device : e.gpu.devices) {
    series[device.index] = builder.add_series(fmt::format("GPU {}", device.index));
    capacity = std::max(capacity, device.memory_total);
  }
  size_t limit = builder.add_series("capacity", true);
  for (const store::GpuSample& s : e.gpu.samples) {
    auto it = series.find(s.device);
    if (it == series.end() || !s.memory_used) continue;
    builder.add(it->second, s.t_ns, static_cast<double>(*s.memory_used));
    if (capacity > 0) builder.add(limit, s.t_ns, static_cast<double>(capacity));
  }
  return builder.finish("gpu-memory", "Memory used on each GPU", "bytes");
}

// Each process's memory on each GPU, the largest by peak: a rank that also holds memory on
// another rank's GPU (a context made there before its set_device) is a line of its own there.
std::optional<Chart> gpu_process_memory(ChartBuilder builder, const analysis::Diagnosis& d,
                                        const store::Evidence& e) {
  // Device, then the process: its pid and start in our namespace, else NVML's pid.
  using Key = std::tuple<int, int, uint64_t, int>;
  auto key_of = [](const store::GpuProcessSample& s) {
    return Key{s.device, s.pid, s.start_ticks, s.pid == 0 ? s.nvml_pid : 0};
  };
  std::map<Key, uint64_t> peaks;
  for (const store::GpuProcessSample& s : e.gpu.process_samples) {
    if (!s.used_bytes) continue;
    uint64_t& peak = peaks[key_of(s)];
    peak = std::max(peak, *s.used_bytes);
  }
  std::vector<std::pair<Key, uint64_t>> largest(peaks.begin(), peaks.end());
  std::string title = "GPU memory of each process";
  keep_largest(
      largest, [](const auto& entry) { return entry.second; }, title);
  std::map<ProcessKey, const analysis::ProcessSummary*> job;
  for (const auto& p : d.processes) job[{p.record.pid, p.record.start_ticks}] = &p;
  std::map<Key, size_t> series;
  for (const auto& [key, peak] : largest) {
    const auto& [device, pid, start_ticks, nvml_pid] = key;
    auto it = job.find({pid, start_ticks});
    std::string who = it != job.end() ? analysis::process_name(*it->second)
                                      : fmt::format("pid {} outside the job", pid ? pid : nvml_pid);
    series[key] = builder.add_series(fmt::format("{} on GPU {}", who, device));
  }
  for (const store::GpuProcessSample& s : e.gpu.process_samples) {
    auto it = series.find(key_of(s));
    if (it != series.end() && s.used_bytes) {
      builder.add(it->second, s.t_ns, static_cast<double>(*s.used_bytes));
    }
  }
  return builder.finish("gpu-process-memory", title, "bytes");
}

// Ranks in lockstep count the same steps at every point drawn, and one line would hide the
// others: such series become one, whose label names them all.
void merge_alike(Chart& chart, const std::map<std::string, std::pair<std::string, std::string>>&
                                   parts) {  // label -> (process, step kind)
  std::vector<ChartSeries> merged;
  std::vector<std::vector<std::string>> names;
  for (ChartSeries& s : chart.series) {
    // Not a structured binding: a lambda cannot capture one before C++20's clang 16.
    const std::string& process = parts.at(s.label).first;
    const std::string& kind = parts.at(s.label).second;
    auto same = std::find_if(merged.begin(), merged.end(), [&](const ChartSeries& m) {
      return m.values == s.values && parts.at(m.label).second == kind;
    });
    if (same == merged.end()) {
      names.push_back({process});
      merged.push_back(std::move(s));
    } else {
      names[static_cast<size_t>(same - merged.begin())].push_back(process);
    }
  }
  for (size_t i = 0; i < merged.size(); ++i) {
    if (names[i].size() > 1) {
      merged[i].label =
          joined(names[i]) + ", " + parts.at(merged[i].label).second + " (the same steps)";
    }
  }
  chart.series = std::move(merged);
}

std::optional<Chart> training_steps(ChartBuilder builder, const analysis::Diagnosis& d,
                                    const store::Evidence& e) {
  std::map<ProcessKey, std::pair<size_t, store::StepKind>> series;
  std::map<std::string, std::pair<std::string, std::string>> parts;
  size_t counted = 0;
  for (const auto& p : d.processes) {
    std::optional<store::StepKind> kind = p.step_kind();
    if (!kind) continue;
    if (++counted > kChartSeries) continue;
    std::string name = analysis::process_name(p);
    std::string label = fmt::format("{}, {}", name, store::to_string(*kind));
    parts[label] = {name, std::string(store::to_string(*kind))};
    series[{p.record.pid, p.record.start_ticks}] = {builder.add_series(label), *kind};
  }
  for (const store::StepSample& s : e.steps) {
    auto it = series.find({s.pid, s.start_ticks});
    if (it == series.end() || it->second.second != s.kind) continue;
    builder.add(it->second.first, s.t_ns, static_cast<double>(s.count));
  }
  std::string title = "Training steps of each process";
  if (counted > kChartSeries) title += fmt::format(", the first {} of {}", kChartSeries, counted);
  std::optional<Chart> chart = builder.finish("training-steps", title, "steps");
  if (chart) merge_alike(*chart, parts);
  return chart;
}

}  // namespace

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out;
}

int64_t last_sample_ns(const store::Evidence& e) {
  int64_t last = e.run.end_ns;
  for (const auto& s : e.proc_samples) last = std::max(last, s.t_ns);
  for (const auto& s : e.host_samples) last = std::max(last, s.t_ns);
  for (const auto& s : e.gpu.samples) last = std::max(last, s.t_ns);
  for (const auto& s : e.steps) last = std::max(last, s.t_ns);
  return last;
}

std::vector<Chart> build_charts(const analysis::Diagnosis& d, const store::Evidence& e) {
  int64_t start = e.run.start_ns;
  int64_t length = std::max<int64_t>(0, elapsed_ns(start, last_sample_ns(e)));
  ChartBuilder builder(
      start, std::max<int64_t>(kMinSpanNs, length / static_cast<int64_t>(kChartPoints) + 1));
  std::vector<Chart> charts;
  for (std::optional<Chart> chart :
       {process_memory(builder, d, e), host_memory(builder, d, e), shared_memory(builder, e),
        gpu_memory(builder, e), gpu_process_memory(builder, d, e), training_steps(builder, d, e)}) {
    if (chart) charts.push_back(std::move(*chart));
  }
  return charts;
}

}  // namespace traindoc::report
