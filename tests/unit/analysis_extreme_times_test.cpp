// The analysis of evidence whose times are at int64's limits (a clock set far off, a damaged or
// planted run.db): no overflow (these tests run under -fsanitize=undefined in the asan preset),
// and no negative or absurd duration in the findings' words.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis_job_fixture.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

using namespace job;

// A job with something for each rule that tells times: rank 1 aborts on an uncaught C++
// exception, rank 0 raises, the job pauses and hangs, a GPU reports Xid 79, memory and steps
// are sampled, and rank 1's worker is OOM-killed in a cgroup of its own.
Evidence eventful_job() {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 2.0, number,
              {"[default0]:Traceback (most recent call last):",
               "[default0]:  File \"/home/user/proj/train.py\", line 52, in <module>",
               "[default0]:    loss.backward()", "[default0]:ValueError: bad batch"});
  print_lines(e, 3.0, number,
              {"terminate called after throwing an instance of 'std::runtime_error'",
               "  what():  fastimg: truncated JPEG"});
  exited(e, kRank0, 2.2, 1);
  killed(e, kRank1, 3.1, SIGABRT);
  killed(e, kWorker0, 2.3, SIGTERM);
  exited(e, kLauncher, 4.0, 1);
  store::Crash crash;
  crash.pid = kRank1;
  crash.start_ticks = process(e, kRank1).start_ticks;
  crash.tid = kRank1;
  crash.signo = SIGABRT;
  crash.code = -6;
  crash.sender_pid = kRank1;
  crash.time_ns = at(3.05);
  e.crashes = {crash};
  e.events = {{at(1.0), store::EventKind::kJobIdle, 0, "no CPU, no output"},
              {at(1.5), store::EventKind::kJobResumed, 0, ""},
              {at(1.6), store::EventKind::kJobIdle, 0, "no CPU, no output"},
              {at(3.5), store::EventKind::kKillSent, kLauncher, "SIGTERM", -kRank0}};
  e.gpu.events = {{at(2.5), 0, "xid", 79, "Xid 79"}};
  killed(e, kWorker1, 2.8, SIGKILL);
  const std::string cgroup = "/sys/fs/cgroup/job/w";
  e.process_cgroups = {{at(0.5), kWorker1, process(e, kWorker1).start_ticks, 2, "/job/w", cgroup}};
  for (int i = 0; i < 4; ++i) {
    e.cgroup_samples.push_back({at(1.0 + 0.6 * i), cgroup, 2, (1 + static_cast<uint64_t>(i)) * kGiB,
                                4 * kGiB, cgroup, static_cast<uint64_t>(i / 3)});
  }
  e.kernel_oom_kills = {{at(2.75), kWorker1, "pt_data_worker", true, "/job/w", "/job/w"}};
  for (int i = 0; i < 8; ++i) {
    store::ProcSample s;
    s.t_ns = at(0.2 * i);
    s.pid = kRank0;
    s.start_ticks = process(e, kRank0).start_ticks;
    s.rss = (1 + static_cast<uint64_t>(i)) * kGiB;
    s.threads = 4;
    e.proc_samples.push_back(s);
    e.steps.push_back({s.t_ns, kRank0, s.start_ticks, store::StepKind::kOptimizer, i * 10});
  }
  e.run.end_ns = at(4.0);
  e.run.exit_code = 1;
  return e;
}

// Every time of the evidence set to `begin` where it starts something and to `times[i]` in
// turn elsewhere, ends included.
void move_times(Evidence& e, int64_t begin, const std::vector<int64_t>& times) {
  size_t i = 0;
  auto next = [&] { return times[i++ % times.size()]; };
  e.run.start_ns = begin;
  e.run.end_ns = next();
  for (store::ProcessRecord& p : e.processes) {
    p.start_ns = begin;
    p.end_ns = next();
  }
  for (store::LogLine& line : e.log_lines) line.t_ns = next();
  for (store::Crash& crash : e.crashes) crash.time_ns = next();
  for (store::Event& event : e.events) event.t_ns = next();
  for (store::GpuEvent& event : e.gpu.events) event.t_ns = next();
  for (store::ProcSample& s : e.proc_samples) s.t_ns = next();
  for (store::StepSample& s : e.steps) s.t_ns = next();
  for (store::HostSample& s : e.host_samples) s.t_ns = next();
  for (store::ProcessCgroup& m : e.process_cgroups) m.t_ns = next();
  for (store::CgroupSample& s : e.cgroup_samples) s.t_ns = next();
  for (store::KernelOomKill& k : e.kernel_oom_kills) k.t_ns = next();
}

// The durations a finding's words tell ("3.2 s", "+0.5 s"): none negative, none beyond a run's
// reach.
void expect_sensible_durations(const Diagnosis& d, const std::string& context) {
  static const std::regex kSeconds(R"(([-+]*)([0-9]+(\.[0-9]+)?) s\b)");
  constexpr double kLongest_s = static_cast<double>(store::kLongestDurationNs) / 1e9;
  for (const Finding& f : d.findings) {
    std::vector<std::string> texts = f.evidence;
    texts.push_back(f.title);
    texts.push_back(f.fix);
    for (const std::string& text : texts) {
      for (std::sregex_iterator it(text.begin(), text.end(), kSeconds), end; it != end; ++it) {
        EXPECT_EQ((*it)[1].str().find('-'), std::string::npos) << context << ": " << text;
        EXPECT_LE(std::stod((*it)[2].str()), kLongest_s) << context << ": " << text;
      }
    }
  }
}

TEST(ExtremeTimes, SaneTimesTellDurations) {
  Diagnosis d = diagnose(eventful_job());
  ASSERT_FALSE(d.findings.empty());
  expect_sensible_durations(d, "sane");
  bool told = false;
  for (const Finding& f : d.findings) told = told || f.title.find(" s") != std::string::npos;
  EXPECT_TRUE(told) << "no finding tells a time: the test checks nothing";
}

TEST(ExtremeTimes, TimesAtTheLimitsOfInt64TellNoAbsurdDuration) {
  const std::vector<int64_t> limits = {INT64_MIN, INT64_MIN + 1, -1,       0, 1,
                                       at(2.0),   INT64_MAX - 1, INT64_MAX};
  for (int64_t begin : limits) {
    for (int64_t other : limits) {
      for (const std::vector<int64_t>& times :
           {std::vector<int64_t>{other}, {begin, other}, {other, at(2.0), begin}}) {
        Evidence e = eventful_job();
        move_times(e, begin, times);
        std::string context = std::to_string(begin) + " / " + std::to_string(other) + " x" +
                              std::to_string(times.size());
        expect_sensible_durations(diagnose(e), context);
      }
    }
  }
}

TEST(ExtremeTimes, DurationsOnlyBetweenTimesThatTellOne) {
  using store::duration_ns;
  EXPECT_EQ(duration_ns(at(1), at(3)), at(3) - at(1));
  EXPECT_EQ(duration_ns(0, 0), 0);
  EXPECT_EQ(duration_ns(at(3), at(1)), std::nullopt);
  EXPECT_EQ(duration_ns(INT64_MIN, INT64_MAX), std::nullopt);
  EXPECT_EQ(duration_ns(-1, 1), std::nullopt);
  EXPECT_EQ(duration_ns(at(0), INT64_MAX), std::nullopt);
  EXPECT_EQ(store::elapsed_ns(INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_EQ(store::elapsed_ns(INT64_MAX, INT64_MIN), INT64_MIN);
  EXPECT_EQ(store::shifted_ns(INT64_MAX, 1), INT64_MAX);
  EXPECT_EQ(store::shifted_ns(INT64_MIN, -1), INT64_MIN);
  EXPECT_EQ(store::distance_ns(INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_EQ(store::distance_ns(INT64_MAX, INT64_MIN), INT64_MAX);
  EXPECT_EQ(store::distance_ns(at(1), at(3)), at(3) - at(1));
}

}  // namespace
}  // namespace traindoc::analysis
