// Tests of the host-memory chart's series of the job's own memory cgroups: none where the job
// stayed in traindoc's cgroup (the chart as before), a line and a limit for each other cgroup,
// named by its path (shortened) and, where the job was split, by its processes, OOM kills in its
// label and the title, a bounded number of them, and a limit set above a cgroup named for where.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "report/cgroup_lines.h"
#include "report/chart_series.h"
#include "store_test_util.h"

namespace traindoc::report {
namespace {

constexpr int64_t kStart = 1'800'000'000'000'000'000;
constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kMiB = 1 << 20;
const std::string kMount = "/sys/fs/cgroup/memory";

// The directory of the cgroup of `path`; "/", the hierarchy's root, is traindoc's own here.
std::string dir_of(const std::string& path) {
  return path == "/" ? kMount : kMount + path;
}

struct CgroupRun {
  analysis::Diagnosis diagnosis;
  store::Evidence evidence;

  // Rank `rank` as pid 100 + rank.
  void add_rank(int rank) {
    analysis::ProcessSummary p;
    p.record.pid = 100 + rank;
    p.record.start_ticks = 5000 + static_cast<uint64_t>(rank);
    p.role.role = analysis::Role::kRank;
    p.role.rank = rank;
    diagnosis.processes.push_back(p);
  }
  // Rank `rank` seen in the cgroup of `path` at second `at`.
  void member(int rank, const std::string& path, int64_t at = 0) {
    evidence.process_cgroups.push_back({kStart + at * kSecond, 100 + rank,
                                        5000 + static_cast<uint64_t>(rank), 1, path, dir_of(path)});
  }
  // One read of the cgroup of `path` at second `at`, limited where `max` is given (at
  // `limit_path`, itself by default).
  store::CgroupSample& sample(const std::string& path, int64_t at, uint64_t current,
                              std::optional<uint64_t> max = std::nullopt, uint64_t oom_kills = 0,
                              const std::string& limit_path = "") {
    std::string limit_dir = max ? dir_of(limit_path.empty() ? path : limit_path) : "";
    evidence.cgroup_samples.push_back(
        {kStart + at * kSecond, dir_of(path), 1, current, max, limit_dir, oom_kills});
    return evidence.cgroup_samples.back();
  }
  // The host sample of second `at`, and the job's sample of traindoc's own cgroup (`/`) that
  // the supervisor takes from it.
  void host(int64_t at, bool job_in_own = true) {
    store::HostSample h = store::test::full_host_sample(kStart + at * kSecond);
    h.cgroup_version = 1;
    h.cgroup_current = (20ULL << 30) + static_cast<uint64_t>(at) * kMiB;
    evidence.host_samples.push_back(h);
    if (job_in_own) sample("/", at, *h.cgroup_current, h.cgroup_max, *h.cgroup_oom_kills);
  }

  CgroupRun() {
    evidence.run.start_ns = kStart;
    evidence.run.end_ns = kStart + 10 * kSecond;
    diagnosis.run = evidence.run;
  }

  Chart chart() const {
    for (const Chart& c : build_charts(diagnosis, evidence)) {
      if (c.id == "host-memory") return c;
    }
    ADD_FAILURE() << "no host-memory chart";
    return {};
  }
};

// Rank 0, first seen in traindoc's cgroup, then in that of `path` from second `at` on.
CgroupRun moved_into(const std::string& path, int64_t at) {
  CgroupRun run;
  run.add_rank(0);
  run.member(0, "/");
  run.member(0, path, at);
  return run;
}

std::vector<std::string> labels(const Chart& chart) {
  std::vector<std::string> out;
  for (const ChartSeries& s : chart.series) out.push_back(s.label + (s.limit ? " [limit]" : ""));
  return out;
}

double peak(const Chart& chart, const std::string& label) {
  for (const ChartSeries& s : chart.series) {
    if (s.label != label) continue;
    double out = 0;
    for (const auto& v : s.values) out = std::max(out, v.value_or(0));
    return out;
  }
  ADD_FAILURE() << "no series " << label;
  return 0;
}

const std::vector<std::string> kHostSeries = {"host used (total - available)", "cgroup usage",
                                              "cgroup limit [limit]"};

TEST(CgroupChart, AJobInTraindocsOwnCgroupDrawsTheChartAsBefore) {
  CgroupRun run;
  run.add_rank(0);
  run.member(0, "/");
  for (int64_t t = 0; t < 10; ++t) run.host(t);
  // And one read of its own as a process ended by SIGKILL, between the host's.
  store::CgroupSample killed = run.evidence.cgroup_samples.back();
  killed.t_ns += kSecond / 2;
  killed.current = kMiB;
  run.evidence.cgroup_samples.push_back(killed);
  // The job's samples there are the host's readings, sample for sample.
  ASSERT_EQ(own_cgroup_dir(run.evidence), kMount);
  Chart with = run.chart();
  run.evidence.cgroup_samples.clear();
  run.evidence.process_cgroups.clear();
  Chart without = run.chart();
  EXPECT_EQ(with.title, "Memory of the host and the job's cgroup");
  EXPECT_EQ(with.title, without.title);
  EXPECT_EQ(with.x, without.x);
  ASSERT_EQ(labels(with), kHostSeries);
  for (size_t i = 0; i < with.series.size(); ++i) {
    EXPECT_EQ(with.series[i].values, without.series[i].values) << with.series[i].label;
  }
}

TEST(CgroupChart, AJobThatMovedIntoALimitedCgroupGetsItsUsageAndLimitAndItsOomKill) {
  CgroupRun run = moved_into("/train_1", 2);
  for (int64_t t = 0; t < 10; ++t) run.host(t, t < 2);
  for (int64_t t = 2; t < 10; ++t) {
    run.sample("/train_1", t, static_cast<uint64_t>(t * 8) * kMiB, 64 * kMiB, t < 9 ? 3 : 4);
  }
  Chart chart = run.chart();
  EXPECT_EQ(chart.title,
            "Memory of the host, traindoc's cgroup and the job's other cgroups, 1 OOM kill in "
            "cgroup /train_1");
  // The existing series as they were, the cgroup's after each of them; its limit drawn, as the
  // host's usage reaches a quarter of it.
  EXPECT_EQ(labels(chart), (std::vector<std::string>{
                               kHostSeries[0], kHostSeries[1], "cgroup /train_1 usage, 1 OOM kill",
                               kHostSeries[2], "cgroup /train_1 limit [limit]"}));
  EXPECT_EQ(peak(chart, "cgroup /train_1 usage, 1 OOM kill"), static_cast<double>(72 * kMiB));
  EXPECT_EQ(peak(chart, "cgroup /train_1 limit"), static_cast<double>(64 * kMiB));
  EXPECT_EQ(peak(chart, "cgroup usage"), static_cast<double>((20ULL << 30) + 9 * kMiB));
}

TEST(CgroupChart, AnUnlimitedCgroupHasNoLimitAndKillsBeforeTheRunAreNotCounted) {
  CgroupRun run;
  run.add_rank(0);
  run.member(0, "/scope");
  for (int64_t t = 0; t < 5; ++t) {
    run.host(t, false);
    run.sample("/scope", t, 100 * kMiB, std::nullopt, 7);
  }
  Chart chart = run.chart();
  EXPECT_EQ(chart.title, "Memory of the host, traindoc's cgroup and the job's other cgroups");
  EXPECT_EQ(labels(chart), (std::vector<std::string>{kHostSeries[0], kHostSeries[1],
                                                     "cgroup /scope usage", kHostSeries[2]}));
}

TEST(CgroupChart, ProcessesAreNamedWhereTheJobWasSplitAcrossCgroups) {
  CgroupRun run;
  for (int rank = 0; rank < 4; ++rank) run.add_rank(rank);
  run.member(0, "/job_7/step_0");
  for (int rank = 1; rank < 4; ++rank) run.member(rank, "/job_7/step_1");
  for (int64_t t = 0; t < 3; ++t) {
    run.host(t, false);
    run.sample("/job_7/step_0", t, 300 * kMiB, 1ULL << 30);
    run.sample("/job_7/step_1", t, 200 * kMiB, 1ULL << 30);
  }
  std::vector<std::string> got = labels(run.chart());
  EXPECT_EQ(got[2], "cgroup /job_7/step_0 usage (rank 0 (pid 100))");
  EXPECT_EQ(got[3],
            "cgroup /job_7/step_1 usage (rank 1 (pid 101), rank 2 (pid 102) and rank 3 "
            "(pid 103))");
  run.member(4, "/job_7/step_1");  // a process outside the diagnosis: by its pid
  run.member(5, "/job_7/step_1");
  got = labels(run.chart());
  EXPECT_EQ(got[3], "cgroup /job_7/step_1 usage (rank 1 (pid 101), rank 2 (pid 102) and 3 more)");
}

TEST(CgroupChart, ALimitSetAboveTheJobsCgroupIsNamedForWhereItIsSet) {
  CgroupRun run;
  run.add_rank(0);
  run.add_rank(1);
  run.member(0, "/job_7/step_0");
  run.member(1, "/job_7/step_1");
  for (int64_t t = 0; t < 3; ++t) {
    run.host(t, false);
    // Both read the usage of job_7, whose limit binds them: one line, not two alike.
    run.sample("/job_7/step_0", t, 500 * kMiB, 1ULL << 30, 0, "/job_7");
    run.sample("/job_7/step_1", t, 500 * kMiB, 1ULL << 30, 0, "/job_7");
  }
  EXPECT_EQ(labels(run.chart()),
            (std::vector<std::string>{kHostSeries[0], kHostSeries[1],
                                      "cgroup /job_7 usage, with /job_7/step_0 and /job_7/step_1 "
                                      "in it",
                                      kHostSeries[2], "cgroup /job_7 limit [limit]"}));
}

TEST(CgroupChart, ACgroupBoundByTraindocsOwnLimitIsTheHostsLine) {
  CgroupRun run = moved_into("/below", 1);
  for (int64_t t = 0; t < 4; ++t) {
    run.host(t, t < 1);
    // Below traindoc's cgroup, without a limit of its own: it reads the usage that the host's
    // cgroup line draws, a moment later.
    if (t >= 1) {
      const store::HostSample& h = run.evidence.host_samples.back();
      run.sample("/below", t, *h.cgroup_current + 4096, h.cgroup_max, 2, "/");
    }
  }
  Chart chart = run.chart();
  EXPECT_EQ(chart.title, "Memory of the host and the job's cgroup");
  EXPECT_EQ(labels(chart), kHostSeries);
}

TEST(CgroupChart, AtMostFiveCgroupsThoseWithOomKillsFirst) {
  CgroupRun run;
  run.add_rank(0);
  for (int i = 0; i < 7; ++i) {
    std::string path = "/pod_" + std::to_string(i);
    run.member(0, path, i);
    run.sample(path, 1, static_cast<uint64_t>(i + 1) * 100 * kMiB, 4ULL << 30, 0);
    run.sample(path, 2, static_cast<uint64_t>(i + 1) * 100 * kMiB, 4ULL << 30, i == 0 ? 2 : 0);
  }
  run.host(1, false);
  run.host(2, false);
  Chart chart = run.chart();
  EXPECT_EQ(chart.title,
            "Memory of the host, traindoc's cgroup and the job's other cgroups, 2 OOM kills in "
            "cgroup /pod_0, the 5 largest of 7");
  std::vector<std::string> got = labels(chart);
  ASSERT_EQ(got.size(), 3 + 2 * kChartCgroups);
  EXPECT_EQ(got[2], "cgroup /pod_0 usage, 2 OOM kills");
  EXPECT_EQ(got[3], "cgroup /pod_6 usage");
  EXPECT_EQ(got[6], "cgroup /pod_3 usage");
}

TEST(CgroupChart, SeveralCgroupsWithOomKillsAreAllInTheTitle) {
  CgroupRun run;
  run.add_rank(0);
  run.host(0, false);
  run.host(1, false);
  for (const char* path : {"/a", "/b"}) {
    run.member(0, path);
    run.sample(path, 0, 10 * kMiB, 64 * kMiB, 1);
    run.sample(path, 1, 60 * kMiB, 64 * kMiB, path[1] == 'a' ? 2 : 4);
  }
  EXPECT_EQ(run.chart().title,
            "Memory of the host, traindoc's cgroup and the job's other cgroups, OOM kills in "
            "cgroups /a (1) and /b (3)");
}

TEST(CgroupChart, LongPathsAreShortenedButStayApart) {
  const std::string pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice";
  const std::string container = pod + "/cri-containerd-";
  const std::string a = container + std::string(60, 'a') + "0123.scope";
  EXPECT_EQ(short_cgroup_path("/slurm/uid_0/job_7/step_0"), "/slurm/uid_0/job_7/step_0");
  EXPECT_EQ(short_cgroup_path(pod), ".../kubepods-burstable-pod1.slice");
  // A container's id: its start and its end.
  EXPECT_EQ(short_cgroup_path(a),
            ".../cri-containerd-aaaaa..." + std::string(11, 'a') + "0123.scope");
  EXPECT_EQ(short_cgroup_path(a).size(), 48u);
  // Not a character cut in two.
  std::string e_acute = "\xc3\xa9";
  std::string accents;
  for (int i = 0; i < 40; ++i) accents += e_acute;
  std::string nine, ten;
  for (int i = 0; i < 9; ++i) nine += e_acute;
  ten = nine + e_acute;
  EXPECT_EQ(short_cgroup_path("/x/b" + accents), "/x/b" + nine + "..." + ten);

  CgroupRun run;
  run.add_rank(0);
  run.host(0, false);
  // b differs from a only in the middle, which both lose: both are named whole; c is not.
  const std::string b =
      container + std::string(30, 'a') + "b" + std::string(29, 'a') + "0123.scope";
  const std::string c = container + std::string(60, 'c') + "0123.scope";
  for (const std::string& path : {a, b, c}) {
    run.member(0, path);
    run.sample(path, 0, 100 * kMiB);
  }
  std::vector<std::string> got = labels(run.chart());
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[2], "cgroup " + a + " usage");
  EXPECT_EQ(got[3], "cgroup " + b + " usage");
  EXPECT_EQ(got[4],
            "cgroup .../cri-containerd-ccccc..." + std::string(11, 'c') + "0123.scope usage");
}

TEST(CgroupChart, TraindocsOwnCgroupIsTheOneThatAgreesWithTheHost) {
  CgroupRun run;
  run.add_rank(0);
  for (int64_t t = 0; t < 6; ++t) run.host(t);
  // A sibling whose reading happened to equal the host's once.
  for (int64_t t = 0; t < 6; ++t) {
    run.sample("/other", t, t == 3 ? *run.evidence.host_samples[3].cgroup_current : 5 * kMiB,
               run.evidence.host_samples[3].cgroup_max, 2);
  }
  EXPECT_EQ(own_cgroup_dir(run.evidence), kMount);
  // Without the host's cgroup, nothing agrees; nor where no host sample read one.
  run.evidence.cgroup_samples.erase(run.evidence.cgroup_samples.begin(),
                                    run.evidence.cgroup_samples.begin() + 6);
  EXPECT_EQ(own_cgroup_dir(run.evidence), "");
  for (store::HostSample& h : run.evidence.host_samples) h.cgroup_version = 0;
  EXPECT_EQ(own_cgroup_dir(run.evidence), "");
}

TEST(CgroupChart, ThinnedSamplesFallBackOnTheCgroupTheJobWasFirstSeenIn) {
  CgroupRun run = moved_into("/train_1", 120);
  // Minutes ago: one row a minute each, the host's and the cgroup's of different moments.
  for (int64_t minute = 0; minute < 2; ++minute) {
    run.host(minute * 60, false);
    run.sample("/", minute * 60 + 7, 20ULL << 30, 32ULL << 30, 2);
  }
  for (int64_t t = 120; t < 130; ++t) {
    run.host(t, false);
    run.sample("/train_1", t, 100 * kMiB, 1ULL << 30);
  }
  EXPECT_EQ(own_cgroup_dir(run.evidence), kMount);
  std::vector<std::string> got = labels(run.chart());
  EXPECT_EQ(got, (std::vector<std::string>{kHostSeries[0], kHostSeries[1], "cgroup /train_1 usage",
                                           kHostSeries[2], "cgroup /train_1 limit [limit]"}));
  // Not a cgroup whose samples contradict it: a job that moved before the first look.
  run.evidence.process_cgroups.erase(run.evidence.process_cgroups.begin());
  EXPECT_EQ(own_cgroup_dir(run.evidence), "");
}

}  // namespace
}  // namespace traindoc::report
