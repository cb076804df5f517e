// The time series report.html draws: each process's memory, the host's, traindoc's cgroup's and
// the job's other cgroups', each GPU's and each process's on each GPU, and each rank's training
// steps, from the evidence, thinned to a bounded number of points (the largest value of each
// span, so that no peak is lost). Any process; pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"

namespace traindoc::report {

struct ChartSeries {
  std::string label;
  std::vector<std::optional<double>> values;  // one per x; empty where nothing was sampled
  bool limit = false;                         // a limit to compare against, drawn dashed
};

struct Chart {
  std::string id;
  std::string title;
  std::string unit;       // "bytes" or "steps"
  std::vector<double> x;  // seconds since the run started
  std::vector<ChartSeries> series;
};

inline constexpr size_t kChartPoints = 600;  // spans across a run, at most
inline constexpr size_t kChartSeries = 10;   // processes drawn in one chart, largest first
// The job's cgroups drawn beside traindoc's, a usage and a limit each: as many lines as processes.
inline constexpr size_t kChartCgroups = kChartSeries / 2;

// The end of the run, or of the last sample of one whose end is unknown.
int64_t last_sample_ns(const store::Evidence& evidence);

// "a", "a and b", "a, b and c".
std::string joined(const std::vector<std::string>& names);

// Charts with something to draw, in page order.
std::vector<Chart> build_charts(const analysis::Diagnosis& diagnosis,
                                const store::Evidence& evidence);

}  // namespace traindoc::report
