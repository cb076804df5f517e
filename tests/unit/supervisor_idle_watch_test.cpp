// Tests of the idle watch: a job quiet and at no CPU for --stall-seconds is told once per spell,
// and its end when it moves again; one that prints, uses CPU or starts processes is not idle; the
// CPU of the stack dumps is not the job's, nor is memory that keeps growing idle; a failure just
// before the quiet is named.
#include "supervisor/idle_watch.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace traindoc::supervisor {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;
constexpr int64_t kStallNs = 5 * kSecond;

// A job walked each second: `cpu_s` used by its busiest process per walk, `bytes` written so far.
struct Job {
  IdleWatch watch{kStallNs, kSecond};
  int64_t t_ns = kT0;
  uint64_t bytes = 0;
  size_t processes = 3;
  uint64_t rss = 512 << 20;

  IdleWatch::Turn walk(double cpu_s = 0) {
    t_ns += kSecond;
    return watch.walked({t_ns, {cpu_s, rss}, bytes, processes});
  }
  // Walks `n` quiet seconds; returns how many of them told the job idle.
  int quiet(int n) {
    int told = 0;
    for (int i = 0; i < n; ++i) told += walk().went_idle ? 1 : 0;
    return told;
  }
};

TEST(IdleWatch, AJobQuietForTheStallIsToldOnce) {
  Job job;
  job.walk();  // the first walk: the job's start is activity
  int64_t moved_ns = job.t_ns;
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(job.walk().went_idle);
  IdleWatch::Turn turn = job.walk();
  EXPECT_TRUE(turn.went_idle);
  EXPECT_EQ(turn.since_ns, moved_ns);
  EXPECT_EQ(job.quiet(20), 0);  // once per spell
}

TEST(IdleWatch, AJobThatPrintsIsNotIdle) {
  Job job;
  for (int i = 0; i < 20; ++i) {
    job.bytes += 10;
    EXPECT_FALSE(job.walk().went_idle);
  }
}

// A program that fills memory between sleeps (a dataset read into a list) at almost no CPU is at
// work; memory that creeps (under a MiB a second), wobbles, shrinks or jumps once (a wait ending
// in an error) is not.
TEST(IdleWatch, AJobWhoseMemoryKeepsGrowingIsNotIdle) {
  Job job;
  for (int i = 0; i < 20; ++i) {
    job.rss += 4 << 20;
    EXPECT_FALSE(job.walk().went_idle) << i;
  }
  Job creeping;
  for (int i = 0; i < 5; ++i) {
    creeping.rss += 900 << 10;
    EXPECT_FALSE(creeping.walk().went_idle) << i;
  }
  EXPECT_TRUE(creeping.walk().went_idle);
  Job jumping;
  jumping.walk();
  for (int i = 0; i < 4; ++i) {
    if (i == 2) jumping.rss += 8 << 20;
    EXPECT_FALSE(jumping.walk().went_idle) << i;
  }
  EXPECT_TRUE(jumping.walk().went_idle);
  Job wobbling;
  for (int i = 0; i < 5; ++i) {
    if (i % 2 == 0) {
      wobbling.rss += 600 << 10;
    } else {
      wobbling.rss -= 600 << 10;
    }
    EXPECT_FALSE(wobbling.walk().went_idle) << i;
  }
  EXPECT_TRUE(wobbling.walk().went_idle);
  Job shrinking;
  shrinking.walk();
  for (int i = 0; i < 4; ++i) {
    shrinking.rss -= 8 << 20;
    EXPECT_FALSE(shrinking.walk().went_idle);
  }
  EXPECT_TRUE(shrinking.walk().went_idle);
}

TEST(IdleWatch, AJobThatUsesCpuIsNotIdle) {
  Job job;
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(job.walk(0.5).went_idle);
}

// A wait that polls takes 1 to 3 % of a core: still idle.
TEST(IdleWatch, APollingWaitIsIdle) {
  Job job;
  job.walk();
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(job.walk(0.02).went_idle);
  EXPECT_TRUE(job.walk(0.02).went_idle);
}

TEST(IdleWatch, AJobThatStartsProcessesIsNotIdle) {
  Job job;
  for (int i = 0; i < 20; ++i) {
    ++job.processes;
    EXPECT_FALSE(job.walk().went_idle);
  }
}

// Walks of 0.2 s: one that sees a poll's wake-up as 2 ticks (10 % of it) does not end the spell.
TEST(IdleWatch, JudgesTheCpuOverASecondOfShortWalks) {
  IdleWatch watch(kStallNs, kSecond / 5);
  int64_t t = kT0;
  int told = 0;
  for (int i = 0; i < 60; ++i) {
    t += kSecond / 5;
    told += watch.walked({t, {i % 5 == 4 ? 0.02 : 0.0, 0}, 0, 1}).went_idle ? 1 : 0;
  }
  EXPECT_EQ(told, 1);
}

TEST(IdleWatch, TellsTheSpellsEndWhenTheJobMovesAgain) {
  Job job;
  job.walk();
  ASSERT_EQ(job.quiet(5), 1);
  int64_t moved_ns = kT0 + kSecond;
  job.bytes += 1;
  IdleWatch::Turn turn = job.walk();
  EXPECT_TRUE(turn.resumed);
  EXPECT_EQ(turn.since_ns, moved_ns);
  EXPECT_FALSE(job.walk(1.0).resumed);  // once
  // A new spell is told again.
  EXPECT_EQ(job.quiet(5), 1);
}

TEST(IdleWatch, OutputWhileIdleIsSeenWithoutAWalk) {
  Job job;
  job.walk();
  EXPECT_FALSE(job.watch.printed_while_idle(job.bytes + 1));  // not idle yet
  ASSERT_EQ(job.quiet(5), 1);
  EXPECT_FALSE(job.watch.printed_while_idle(job.bytes));
  EXPECT_TRUE(job.watch.printed_while_idle(job.bytes + 1));
}

// The CPU the processes spend writing the stacks asked for them is not the job's.
TEST(IdleWatch, TheDumpsCpuIsNotTheJobs) {
  Job job;
  job.walk();
  job.quiet(2);
  job.watch.stacks_asked();
  EXPECT_FALSE(job.walk(0.8).went_idle);
  EXPECT_FALSE(job.walk(0.8).went_idle);
  EXPECT_TRUE(job.walk().went_idle);  // the quiet went on through the dumps
  job.watch.stacks_asked();
  job.walk(0.8);
  job.walk(0.8);
  EXPECT_TRUE(job.walk(0.8).resumed);  // a third walk's CPU is the job's
}

TEST(IdleWatch, WorkIsTheMostCpuOneProcessUsedSinceTheLastWalkAndTheJobsMemory) {
  IdleWatch watch(kStallNs, kSecond);
  auto sample = [](int pid, double user, double sys) {
    store::ProcSample s;
    s.pid = pid;
    s.cpu_user_s = user;
    s.cpu_sys_s = sys;
    s.rss = static_cast<uint64_t>(pid) << 20;
    return s;
  };
  auto cpu = [&](const std::vector<store::ProcSample>& samples, const std::set<int>& alive) {
    return watch.work_of(samples, alive).busiest_cpu_s;
  };
  EXPECT_DOUBLE_EQ(cpu({sample(1, 10, 2), sample(2, 1, 0)}, {1, 2}), 12);
  EXPECT_DOUBLE_EQ(cpu({sample(1, 10.5, 2), sample(2, 1.75, 0)}, {1, 2}), 0.75);
  // A process gone is forgotten: the same pid again is a new process, counted whole.
  EXPECT_DOUBLE_EQ(cpu({sample(1, 11, 2)}, {1}), 0.5);
  EXPECT_DOUBLE_EQ(cpu({sample(1, 11, 2), sample(2, 3, 0)}, {1, 2}), 3);
  EXPECT_EQ(watch.work_of({sample(1, 11, 2), sample(2, 3, 0)}, {1, 2}).rss_bytes, 3u << 20);
}

TEST(IdleWatch, NamesAFailureJustBeforeTheQuiet) {
  IdleWatch watch(kStallNs, kSecond);
  EXPECT_EQ(watch.failure_before(kT0 + 10 * kSecond, kT0), "");
  store::ProcessRecord ok;
  ok.pid = 7;
  ok.exit_code = 0;
  ok.end_ns = kT0 + 9 * kSecond;
  watch.process_ended(ok);
  EXPECT_EQ(watch.failure_before(kT0 + 10 * kSecond, kT0), "");  // not a failure
  store::ProcessRecord crashed;
  crashed.pid = 42;
  crashed.cmdline = "python\nworker.py";
  crashed.exit_signal = SIGSEGV;
  crashed.end_ns = kT0 + 3400 * kSecond / 1000;
  watch.process_ended(crashed);
  watch.process_ended(ok);
  EXPECT_EQ(watch.failure_before(kT0 + 8 * kSecond, kT0),
            "; the last process to fail before it: pid 42 (python worker.py), killed by SIGSEGV "
            "at +3.4 s");
  // Long before the quiet: not its likely cause.
  EXPECT_EQ(watch.failure_before(kT0 + 9 * kSecond, kT0), "");
}

TEST(IdleWatch, ShortensALongCommandLineOnACharacterBoundary) {
  IdleWatch watch(kStallNs, kSecond);
  store::ProcessRecord p;
  p.pid = 1;
  p.cmdline = std::string(55, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9" + std::string(20, 'b');
  p.exit_code = 1;
  p.end_ns = kT0;
  watch.process_ended(p);
  EXPECT_EQ(watch.failure_before(kT0, kT0), "; the last process to fail before it: pid 1 (" +
                                                std::string(55, 'a') +
                                                "\xc3\xa9...), exited 1 at +0.0 s");
}

}  // namespace
}  // namespace traindoc::supervisor
