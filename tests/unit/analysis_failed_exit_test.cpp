// Tests of the failed-exit rule through diagnose() on the evidence of a torchrun job: the
// exception or last words a process ended with, known texts and their fixes, the roles that
// are findings and those that are not.
#include "analysis/rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis_job_fixture.h"

namespace traindoc::analysis {
namespace {

using namespace job;  // NOLINT(google-build-using-namespace): the shared job fixture

using store::Evidence;
using testing::Contains;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Not;

TEST(RuleFailedExit, RankCitesItsPythonException) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(10.2, 200, "Traceback (most recent call last):"),
      stderr_line(10.2, 201, "  File \"/home/user/proj/train.py\", line 77, in <module>"),
      stderr_line(10.3, 214, kDataLoaderError),
  };
  exited(e, kRank0, 10.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kPythonException);
  EXPECT_THAT(f.ranks, ElementsAre(0));
  EXPECT_THAT(f.pids, ElementsAre(kRank0));
  EXPECT_EQ(f.title, "rank 0 (pid 1010) raised " + kDataLoaderError);
  EXPECT_THAT(f.evidence, Contains("stderr lines 200-214 at +10.3 s: " + kDataLoaderError));
  EXPECT_THAT(f.evidence, Contains("at /home/user/proj/train.py:77 in <module>"));
  EXPECT_THAT(f.evidence, Contains(std::string("rank 0 (pid 1010) exited with code 1 at +10.5 s")));
}

TEST(RuleFailedExit, AnExitWithoutATracebackCitesTheLastLineItPrinted) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(10.0, 7, "[default0]:loading configs/run.yaml"),
      stderr_line(10.0, 8, "[default0]:no such config: configs/run.yaml"),
      stderr_line(10.1, 9, "[default1]:rank 1 is fine"),
      stderr_line(10.1, 10, "[default0]:"),
  };
  exited(e, kRank0, 10.3, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kNonzeroExit);
  EXPECT_EQ(f.title, "rank 0 (pid 1010) exited with code 1: no such config: configs/run.yaml");
  EXPECT_THAT(f.evidence, Contains(std::string("the last line it printed, stderr line 8 at +10.0 "
                                               "s: no such config: configs/run.yaml")));
}

// torchrun --redirects 2: each rank wrote its stderr to a file of its own, read when traindoc
// read it (here after both ranks had ended), which only its writer printed.
Evidence redirected_job() {
  Evidence e = torchrun_job();
  for (int rank : {kRank0, kRank1}) {
    std::string path = "/tmp/torchelastic_x/attempt_0/" + std::to_string(rank - kRank0) + "/err";
    e.logs.push_back({.name = path,
                      .files = {"logs/file-" + std::to_string(rank - kRank0 + 1) + ".log"},
                      .writers = {{rank, 2, process(e, rank).start_ns + 1}}});
  }
  return e;
}

// diagnose(e), whose root cause is that `who` raised the DataLoader error, cited as `cited`.
Diagnosis expect_raised(const Evidence& e, const std::string& who, const std::string& cited) {
  Diagnosis d = diagnose(e);
  EXPECT_FALSE(d.findings.empty());
  if (d.findings.empty()) return d;
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kPythonException);
  EXPECT_EQ(f.title, who + " raised " + kDataLoaderError);
  EXPECT_THAT(f.evidence, Contains(cited + ": " + kDataLoaderError));
  return d;
}

// As expect_raised, cited from `file` (`where` in it), whose traceback the fix names.
void expect_raised_in_file(const Evidence& e, const std::string& who, const std::string& file,
                           const std::string& where) {
  Diagnosis d = expect_raised(e, who, file + " " + where);
  if (!d.findings.empty()) {
    EXPECT_EQ(d.findings[0].fix, "Read the traceback in " + file + ".");
  }
}

TEST(RuleFailedExit, OutputInAFileIsItsWritersWhenEverItWasRead) {
  Evidence e = redirected_job();
  const std::string file = e.logs[1].name;
  e.log_lines = {
      {at(12.0), file, 1, "Traceback (most recent call last):"},
      {at(12.0), file, 2, "  File \"/home/user/proj/train.py\", line 77, in <module>"},
      {at(12.0), file, 3, kDataLoaderError},
  };
  exited(e, kRank1, 10.3, 1);
  exited(e, kRank0, 11.9, 1);  // as it lost its peer, saying nothing; just before the read
  expect_raised_in_file(e, "rank 1 (pid 1011)", file, "lines 1-3 at +12.0 s");
}

TEST(RuleFailedExit, LastWordsInAFileNameTheFile) {
  Evidence e = redirected_job();
  const std::string file = e.logs[0].name;
  e.log_lines = {
      {at(10.0), file, 1, "no such config: configs/run.yaml"},
      // On the job's stderr as rank 0 ended: the launcher's, never rank 0's.
      stderr_line(10.1, 1, "Traceback (most recent call last):"),
      stderr_line(10.1, 2, "  File \"/usr/bin/torchrun\", line 33, in <module>"),
      stderr_line(10.1, 3, "RuntimeError: rank 0 failed"),
  };
  exited(e, kRank0, 10.1, 3);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kNonzeroExit);
  EXPECT_EQ(f.title, "rank 0 (pid 1010) exited with code 3: no such config: configs/run.yaml");
  EXPECT_THAT(f.evidence, Contains("the last line it printed, " + file +
                                   " line 1 at +10.0 s: no such config: configs/run.yaml"));
  EXPECT_EQ(f.fix, "See the process's last output in " + file + " (kept in logs/file-1.log).");
}

// Rank 0 logs to a file of its own (logging.FileHandler, its descriptor 3), read later than its
// stderr, and prints on the job's stderr as before.
Evidence logging_job() {
  Evidence e = torchrun_job();
  e.logs.push_back({.name = "/home/user/proj/train.log",
                    .files = {"logs/file-1.log"},
                    .writers = {{kRank0, 3, process(e, kRank0).start_ns + 1}}});
  return e;
}

const std::vector<std::string> kLoggedTraceback = {
    "2026-11-27 10:00:00,001 ERROR training failed", "Traceback (most recent call last):",
    "  File \"/home/user/proj/train.py\", line 77, in <module>", kDataLoaderError};

TEST(RuleFailedExit, AnExceptionLoggedOnlyInALogFileIsTheOneItEndedWith) {
  Evidence e = logging_job();
  const std::string file = e.logs[0].name;
  for (uint64_t i = 0; i < kLoggedTraceback.size(); ++i) {
    e.log_lines.push_back({at(10.4), file, i + 20, kLoggedTraceback[i]});
  }
  exited(e, kRank0, 10.3, 1);  // sys.exit(1) after logger.exception
  expect_raised_in_file(e, "rank 0 (pid 1010)", file, "lines 21-23 at +10.4 s");
}

TEST(RuleFailedExit, AnExceptionLoggedAndRaisedIsCitedFromStderr) {
  Evidence e = logging_job();
  const std::string file = e.logs[0].name;
  // Mostly what it logged alone: not a copy of the terminal's output.
  for (uint64_t i = 0; i < 4; ++i) {
    e.log_lines.push_back({at(5.0), file, i + 1, "INFO step " + std::to_string(i)});
  }
  for (uint64_t i = 1; i < kLoggedTraceback.size(); ++i) {
    e.log_lines.push_back(stderr_line(10.2, i + 40, "[default0]:" + kLoggedTraceback[i]));
  }
  for (uint64_t i = 0; i < kLoggedTraceback.size(); ++i) {
    e.log_lines.push_back({at(10.4), file, i + 20, kLoggedTraceback[i]});  // read after it
  }
  exited(e, kRank0, 10.3, 1);
  expect_raised(e, "rank 0 (pid 1010)", "stderr lines 41-43 ([default0]:) at +10.2 s");
}

// Both ranks log to one file, while torchrun prefixes what they print: the file's lines are
// still theirs, and rank 1's exception, logged as it failed, is the one it ended with.
TEST(RuleFailedExit, ALogFileOfPrefixedRanksIsTheirs) {
  Evidence e = logging_job();
  e.logs[0].writers.push_back({kRank1, 3, process(e, kRank1).start_ns + 1});
  e.log_lines.push_back(stderr_line(5.0, 1, "[default0]:step 0"));
  for (uint64_t i = 0; i < kLoggedTraceback.size(); ++i) {
    e.log_lines.push_back({at(10.0), e.logs[0].name, i + 20, kLoggedTraceback[i]});
  }
  exited(e, kRank1, 10.3, 1);
  killed(e, kRank0, 10.8, 15);  // stopped by torchrun
  expect_raised_in_file(e, "rank 1 (pid 1011)", e.logs[0].name, "lines 21-23 at +10.0 s");
}

// torchrun without --tee: the ranks print on its stderr as they are, and its error summary heads
// each failure with a bare "[0]:", which prefixes no rank's output.
TEST(RuleFailedExit, TorchrunsErrorSummaryPrefixesNoRank) {
  Evidence e = torchrun_job();
  uint64_t number = 10;
  print_lines(e, 10.0, number, {kLoggedTraceback.begin() + 1, kLoggedTraceback.end()});
  number = 30;
  print_lines(e, 10.6, number,
              {"Root Cause (first observed failure):", "[0]:", "  rank      : 1 (local_rank: 1)"});
  exited(e, kRank1, 10.1, 1);
  killed(e, kRank0, 10.5, 15);
  expect_raised(e, "rank 1 (pid 1011)", "stderr lines 10-12 at +10.0 s");
}

// Its log file takes nothing from what it prints on stderr without a prefix (rank 1's stderr
// goes to a file: rank 0 is the one rank that prints there).
TEST(RuleFailedExit, AProcessWithALogFileStillOwnsItsStderr) {
  Evidence e = logging_job();
  e.logs.push_back(
      {.name = "/tmp/err-1.log", .files = {"logs/file-2.log"}, .writers = {{kRank1, 2, at(0.1)}}});
  e.log_lines = {
      stderr_line(10.0, 8, "no such config: configs/run.yaml"),
      {at(10.1), e.logs[0].name, 1, "2026-11-27 10:00:00,001 INFO loading configs"},
  };
  exited(e, kRank0, 10.1, 2);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].title,
            "rank 0 (pid 1010) exited with code 2: no such config: configs/run.yaml");
}

// torchrun --tee 2 prints each rank's file on its own stderr, prefixed: that copy is told, once.
TEST(RuleFailedExit, AFileTheLauncherCopiedToTheTerminalIsToldFromThere) {
  Evidence e = redirected_job();
  const std::string file = e.logs[1].name;
  const std::vector<std::string> texts = {
      "Traceback (most recent call last):",
      "  File \"/home/user/proj/train.py\", line 77, in <module>", kDataLoaderError};
  for (uint64_t i = 0; i < texts.size(); ++i) {
    e.log_lines.push_back(stderr_line(10.3, i + 40, "[default1]:" + texts[i]));
  }
  for (uint64_t i = 0; i < texts.size(); ++i) {
    e.log_lines.push_back({at(10.4), file, i + 1, texts[i]});  // read after the copy
  }
  exited(e, kRank1, 10.3, 1);
  Diagnosis d =
      expect_raised(e, "rank 1 (pid 1011)", "stderr lines 40-42 ([default1]:) at +10.3 s");
  for (const Finding& f : d.findings) {
    EXPECT_THAT(f.evidence, Not(Contains(HasSubstr(file)))) << f.title;
  }
}

// A missing checkpoint, logged and caught; the rank trained on, then exited with a message of its
// own. Had it not trained on (logged, then exit), the exception would be what it ended with.
TEST(RuleFailedExit, AnExceptionTheProcessTrainedOnFromIsNotItsEnd) {
  for (bool trained_on : {true, false}) {
    Evidence e = torchrun_job();
    e.log_lines = {
        stderr_line(1.0, 1, "[default0]:ERROR:train:no pretrained weights, training from scratch"),
        stderr_line(1.0, 2, "[default0]:Traceback (most recent call last):"),
        stderr_line(1.0, 3, "[default0]:  File \"/home/user/proj/train.py\", line 6, in <module>"),
        stderr_line(1.0, 4,
                    "[default0]:FileNotFoundError: [Errno 2] No such file or directory: "
                    "'pretrained/backbone.pt'"),
        stderr_line(4.0, 5, "[default0]:FAILED: val_acc below 0.50 threshold"),
    };
    for (auto [seconds, count] :
         std::vector<std::pair<double, int64_t>>{{0.5, 0}, {2, 40}, {3, 80}}) {
      e.steps.push_back({at(seconds), kRank0, process(e, kRank0).start_ticks,
                         store::StepKind::kBackward, trained_on ? count : 0});
    }
    exited(e, kRank0, 4.1, 1);
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    if (trained_on) {
      EXPECT_EQ(d.findings[0].kind, FindingKind::kNonzeroExit);
      EXPECT_EQ(d.findings[0].title,
                "rank 0 (pid 1010) exited with code 1: FAILED: val_acc below 0.50 threshold");
      // Silent at its end: the caught error's words are no last words.
      e.log_lines.pop_back();
      EXPECT_EQ(diagnose(e).findings.at(0).title, "rank 0 (pid 1010) exited with code 1");
    } else {
      EXPECT_EQ(d.findings[0].kind, FindingKind::kPythonException);
      EXPECT_THAT(d.findings[0].title, HasSubstr("raised FileNotFoundError"));
    }
  }
}

// Files a dataset opens per sample and never closes: the limit is reached in the rank itself;
// with workers, descriptors of shared tensors may be what ran out (a forkserver's workers too).
TEST(RuleFailedExit, DescriptorsRunOutWhereTheProcessKeepsWhatItOpens) {
  for (auto [workers, forkserver] : {std::pair{false, false}, {true, false}, {true, true}}) {
    Evidence e = torchrun_job();
    if (!workers) {
      std::erase_if(e.processes, [](const store::ProcessRecord& r) {
        return r.pid == kWorker0 || r.pid == kWorker1;
      });
    }
    if (forkserver) through_forkserver(e, kWorker0);
    e.log_lines = {
        stderr_line(9.0, 1, "[default0]:Traceback (most recent call last):"),
        stderr_line(9.0, 2,
                    "[default0]:  File \"/home/user/proj/data.py\", line 9, in __getitem__"),
        stderr_line(9.0, 3,
                    "[default0]:OSError: [Errno 24] Too many open files: '/data/img_7.jpg'"),
    };
    store::ProcSample sample;
    sample.t_ns = at(8.5);
    sample.pid = kRank0;
    sample.start_ticks = process(e, kRank0).start_ticks;
    sample.rss = 100 << 20;
    sample.fds = 1000;
    sample.fd_limit = 1024;
    e.proc_samples.push_back(sample);
    exited(e, kRank0, 9.5, 1);
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    const Finding& f = d.findings[0];
    EXPECT_EQ(f.kind, FindingKind::kFdExhausted);
    EXPECT_THAT(f.evidence, Contains(std::string("its open descriptors peaked at 1000, of a limit "
                                                 "of 1024")));
    EXPECT_EQ(f.fix.find("set_sharing_strategy") != std::string::npos, workers) << f.fix;
    EXPECT_EQ(f.fix.find("close each") != std::string::npos, !workers) << f.fix;
  }
}

// A thread refused: the limit on processes and threads, with the most threads the job's
// processes held in one round of samples.
TEST(RuleFailedExit, AThreadRefusedNamesTheLimitAndTheJobsThreads) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(9.0, 1, "[default0]:Traceback (most recent call last):"),
      stderr_line(9.0, 2, "[default0]:  File \"/home/user/proj/train.py\", line 9, in <module>"),
      stderr_line(9.0, 3, "[default0]:RuntimeError: can't start new thread"),
  };
  for (double seconds : {7.0, 8.0}) {
    for (int pid : {kRank0, kRank1, kWorker0}) {
      store::ProcSample sample;
      sample.t_ns = at(seconds);
      sample.pid = pid;
      sample.start_ticks = process(e, pid).start_ticks;
      sample.threads = seconds == 8.0 ? 300 : 10;
      e.proc_samples.push_back(sample);
    }
  }
  exited(e, kRank0, 9.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kProcessLimit);
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): could not start a thread: the limit on processes and threads, or "
            "memory for its stack");
  EXPECT_THAT(f.evidence, Contains(std::string("the job's processes held 900 threads at once (in "
                                               "3 processes), as sampled")));
  EXPECT_THAT(f.fix, HasSubstr("OMP_NUM_THREADS"));

  // OpenMP's own line, without a traceback, says the same.
  e.log_lines = {stderr_line(9.0, 1,
                             "[default0]:libgomp: Thread creation failed: Resource temporarily "
                             "unavailable")};
  d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].title,
            "rank 0 (pid 1010): OpenMP could not start its threads: the limit on processes and "
            "threads was reached");
  EXPECT_THAT(d.findings[0].evidence, Contains(HasSubstr("held 900 threads at once")));
  e.log_lines[0].text = "[default0]:libgomp: Thread creation failed: Cannot allocate memory";
  d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_THAT(d.findings[0].title, testing::EndsWith("OpenMP could not start its threads: no "
                                                     "memory for their stacks"));
}

// argparse's error, from a rank or from a launcher that never started one.
TEST(RuleFailedExit, ACommandLineTheScriptRejectedIsNamed) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(10.0, 7, "[default0]:usage: train.py [-h] [--batch-size BATCH_SIZE]"),
      stderr_line(10.0, 8, "[default0]:train.py: error: unrecognized arguments: --bacth-size 16"),
  };
  exited(e, kRank0, 10.3, 2);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kBadArguments);
  EXPECT_EQ(d.findings[0].title,
            "rank 0 (pid 1010): train.py does not accept the arguments --bacth-size 16");
  EXPECT_THAT(d.findings[0].fix, HasSubstr("spelling"));

  // torch.distributed.launch passes --local_rank to scripts that torchrun's users never had to
  // accept.
  e.log_lines[1].text = "[default0]:train.py: error: unrecognized arguments: --local-rank=0";
  d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_THAT(d.findings[0].title, HasSubstr("which torch.distributed.launch passes"));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("LOCAL_RANK"));

  // The launcher's own command line: no rank started.
  Evidence launcher = torchrun_job();
  launcher.processes.resize(1);
  launcher.log_lines = {stderr_line(1.0, 3, "torchrun: error: unrecognized arguments: --bogus")};
  exited(launcher, kLauncher, 1.1, 2);
  d = diagnose(launcher);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kBadArguments);
  EXPECT_EQ(d.findings[0].title,
            "launcher (pid 1000): torchrun does not accept the arguments --bogus");
}

// Both ranks raise the same exception, word for word, in a library their code called: one
// failure naming both ranks, and a fix that points at the user's line.
TEST(RuleFailedExit, TheSameUnknownExceptionFromTwoRanksIsOneFinding) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  for (int rank : {0, 1}) {
    print_lines(e, 3.0 + rank * 0.1, number,
                {"Traceback (most recent call last):",
                 "  File \"/home/user/proj/train.py\", line 12, in <module>",
                 "    config = yaml.safe_load(open(args.config))",
                 "  File \"/usr/lib/python3/dist-packages/yaml/__init__.py\", line 125, in "
                 "safe_load",
                 "yaml.scanner.ScannerError: mapping values are not allowed here"},
                "[default" + std::to_string(rank) + "]:");
  }
  exited(e, kRank0, 3.2, 1);
  exited(e, kRank1, 3.3, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010) raised yaml.scanner.ScannerError: mapping values are not allowed "
            "here");
  EXPECT_THAT(f.ranks, ElementsAre(0, 1));
  EXPECT_EQ(f.fix,
            "A library raised it (/usr/lib/python3/dist-packages/yaml/__init__.py:125), called "
            "from your code at /home/user/proj/train.py:12: check what that line passes it. The "
            "whole traceback is in logs/stderr.log.");
}

// A multiprocessing.Pool worker's exception, re-raised in its parent from the worker's own
// (Python 3.11's text): the worker's line is cited, and the fix points at it.
TEST(RuleFailedExit, AnExceptionRaisedFromAnotherCitesTheFirstOne) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(
      e, 3.0, number,
      {"multiprocessing.pool.RemoteTraceback: ", "\"\"\"", "Traceback (most recent call last):",
       "  File \"/usr/lib/python3.11/multiprocessing/pool.py\", line 125, in worker",
       "    result = (True, func(*args, **kwds))",
       "  File \"/home/user/proj/prepare.py\", line 3, in tokenize",
       "    return len(line.split()) // (len(line) - 5)",
       "ZeroDivisionError: integer division or modulo by zero", "\"\"\"", "",
       "The above exception was the direct cause of the following exception:", "",
       "Traceback (most recent call last):",
       "  File \"/home/user/proj/prepare.py\", line 6, in <module>",
       "    counts = p.map(tokenize, lines)",
       "  File \"/usr/lib/python3.11/multiprocessing/pool.py\", line 774, in get",
       "    raise self._value", "ZeroDivisionError: integer division or modulo by zero"},
      "[default0]:");
  exited(e, kRank0, 3.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_THAT(f.evidence, Contains(std::string("the exception it was raised from, at "
                                               "/home/user/proj/prepare.py:3 in tokenize: return "
                                               "len(line.split()) // (len(line) - 5)")));
  EXPECT_EQ(f.fix,
            "Your code raised it at /home/user/proj/prepare.py:3: fix it there. The whole "
            "traceback is in logs/stderr.log.");
}

// The one finding of rank 0's exit with code 1 after printing `traceback`.
Finding rank0_traceback_finding(const std::vector<std::string>& traceback) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 3.0, number, traceback, "[default0]:");
  exited(e, kRank0, 3.2, 1);
  Diagnosis d = diagnose(e);
  EXPECT_EQ(d.findings.size(), 1u);
  return d.findings.empty() ? Finding{} : d.findings[0];
}

// The torchvision references loop over their logger's generator, which loops over the
// DataLoader: an error of the data passes through log_every, a helper on the stack only because
// the loop runs through it. "Your code" is the loop's line, not the logger's.
TEST(RuleFailedExit, YourCodeIsTheLoopNotTheHelperItIteratesThrough) {
  const std::string refs = "  File \"/home/user/vision/references/classification/";
  const std::string torch = "  File \"/usr/lib/python3/dist-packages/torch/utils/data/";
  Finding f = rank0_traceback_finding(
      {"Traceback (most recent call last):", refs + "train.py\", line 385, in main",
       "    train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args)",
       refs + "train.py\", line 29, in train_one_epoch",
       "    for i, (image, target) in enumerate(metric_logger.log_every(data_loader, "
       "args.print_freq, header)):",
       refs + "utils.py\", line 134, in log_every",
       "    for obj in iterable:", torch + "dataloader.py\", line 628, in __next__",
       "    data = self._next_data()", torch + "_utils/fetch.py\", line 58, in fetch",
       "    data = [self.dataset[idx] for idx in possibly_batched_index]",
       "  File \"/usr/lib/python3/dist-packages/torchvision/datasets/folder.py\", line 232, in "
       "__getitem__",
       "    target = self.target_transform(target)",
       "ValueError: invalid literal for int() with base 10: 'n01440764'"});
  EXPECT_THAT(f.fix, HasSubstr("called from your code at "
                               "/home/user/vision/references/classification/train.py:29:"))
      << f.fix;
  EXPECT_THAT(f.evidence, Contains(HasSubstr("train.py:29 in train_one_epoch"))) << f.fix;
}

// A decorator's wrapper calls on with its caller's arguments: the caller's line is the one that
// says what was passed.
TEST(RuleFailedExit, YourCodeIsTheCallerOfAWrapperThatPassesItsArgumentsOn) {
  Finding f = rank0_traceback_finding(
      {"Traceback (most recent call last):",
       "  File \"/home/user/proj/train.py\", line 40, in <module>",
       "    state = load_checkpoint(\"/ckpt/last.pt\", map_location=\"cpu\")",
       "  File \"/home/user/proj/timing.py\", line 9, in wrapper", "    return fn(*args, **kwargs)",
       "  File \"/usr/lib/python3/dist-packages/torch/serialization.py\", line 771, in load",
       "    with _open_file_like(f, 'rb') as opened_file:",
       "ValueError: checkpoint is neither a file nor a zip archive"});
  EXPECT_THAT(f.fix, HasSubstr("called from your code at /home/user/proj/train.py:40")) << f.fix;
}

TEST(RuleFailedExit, ASyntaxErrorIsCompleteAndSaysNothingRan) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(1.0, 1, "  File \"/home/user/proj/train.py\", line 3"),
      stderr_line(1.0, 2, "    print(1)"),
      stderr_line(1.0, 3, "    ^"),
      stderr_line(1.0, 4,
                  "IndentationError: expected an indented block after 'if' statement on "
                  "line 2"),
  };
  exited(e, kRank0, 1.1, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kPythonException);
  EXPECT_THAT(f.evidence, Contains(std::string("at /home/user/proj/train.py:3: print(1)")));
  EXPECT_THAT(f.evidence, Not(Contains(HasSubstr("were not kept"))));
  EXPECT_THAT(f.fix, HasSubstr("nothing in it ran"));
}

// Everyday exceptions get a fix of their own, with what the text names.
TEST(RuleFailedExit, CommonExceptionsNameTheirFix) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ModuleNotFoundError: No module named 'wandb.sdk'", "no module 'wandb'"},
      {"FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'",
       "The path 'data/train.csv' does not exist"},
      {"AssertionError: Torch not compiled with CUDA enabled", "CPU-only build"},
      {"RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
       "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
       "no NVIDIA driver"},
      {"RuntimeError: No CUDA GPUs are available", "CUDA_VISIBLE_DEVICES"},
      {"RuntimeError: Distributed package doesn't have NCCL built in", "the gloo backend"},
      {"RuntimeError: Attempting to deserialize object on a CUDA device but "
       "torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use "
       "torch.load with map_location=torch.device('cpu') to map your storages to the CPU.",
       "map_location=\"cpu\""},
      {"RuntimeError: The NVIDIA driver on your system is too old (found version 12080). Please "
       "update your GPU driver by downloading and installing a new version from the URL: "
       "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to "
       "install a PyTorch version that has been compiled with your version of the CUDA driver.",
       "a cu128 wheel for a 12.8 driver"},
      {"KeyError: 'LOCAL_RANK'", "defaults (int(os.environ.get('LOCAL_RANK', 0)))"},
      {"RuntimeError: CUDA error: invalid device ordinal", "--nproc_per_node at most"},
      // PyTorch 2.11's words on an H100, for a GPU number past the last.
      {"torch.AcceleratorError: CUDA error: invalid device ordinal", "--nproc_per_node at most"},
      {"ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
       "variable MASTER_ADDR expected, but not set",
       "os.environ.setdefault('MASTER_ADDR', '127.0.0.1')"},
  };
  for (const auto& [text, fix] : cases) {
    Evidence e = torchrun_job();
    e.log_lines = {stderr_line(10.0, 1, "Traceback (most recent call last):"),
                   stderr_line(10.0, 2, "  File \"/home/user/proj/train.py\", line 7, in <module>"),
                   stderr_line(10.0, 3, text)};
    exited(e, kRank0, 10.3, 1);
    Diagnosis d = diagnose(e);
    ASSERT_EQ(d.findings.size(), 1u) << text;
    bool cuda = text.find("CUDA") != std::string::npos ||
                text.find("NVIDIA") != std::string::npos || text.find("NCCL") != std::string::npos;
    EXPECT_EQ(d.findings[0].kind,
              cuda ? FindingKind::kCudaUnavailable : FindingKind::kPythonException)
        << text;
    EXPECT_THAT(d.findings[0].fix, HasSubstr(fix)) << text;
  }
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(10.0, 1,
                             "RuntimeError: The NVIDIA driver on your system is too old "
                             "(found version 12080). Please update your GPU driver")};
  exited(e, kRank0, 10.3, 1);
  EXPECT_EQ(diagnose(e).findings[0].title,
            "rank 0 (pid 1010): the NVIDIA driver supports CUDA up to 12.8, older than the CUDA "
            "this program was built for");
}

// A native program (NCCL's own test, a C++ trainer) prints no traceback: the known error it
// printed before it exited is the finding, not its last line. Real text of NCCL 2.28 on a machine
// whose driver is older than its CUDA runtime.
TEST(RuleFailedExit, AnExitWithoutATracebackCitesAKnownErrorItPrinted) {
  Evidence e = torchrun_job();
  const std::string warn =
      "[2026-11-25 17:28:04] node7:1010:1010 [0] misc/cudawrap.cc:270 NCCL WARN Cuda failure "
      "'CUDA driver version is insufficient for CUDA runtime version'";
  e.log_lines = {
      {at(10.0), "stdout", 4, "[default0]:" + warn},
      stderr_line(10.1, 9, "[default0]:rank 0: ncclCommInitRank failed"),
  };
  exited(e, kRank0, 10.3, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kCudaUnavailable);
  EXPECT_EQ(
      f.title,
      "rank 0 (pid 1010): the NVIDIA driver is older than the CUDA runtime this program uses");
  EXPECT_THAT(f.evidence,
              ElementsAre("rank 0 (pid 1010) exited with code 1 at +10.3 s",
                          "the error it printed, stdout line 4 at +10.0 s: " + warn,
                          "known error cuda.driver-too-old: gpu 0, host node7, pid 1010"));
  // NCCL's words for a GPU number beyond those the process sees.
  e.log_lines[0].text =
      "[default0]:node7:1010:1010 [3] misc/cudawrap.cc:270 NCCL WARN Cuda failure "
      "'invalid device ordinal'";
  EXPECT_EQ(diagnose(e).findings[0].title,
            "rank 0 (pid 1010): the process asked for a GPU it cannot see (invalid device "
            "ordinal)");
  // A text about another process (a peer that left) leaves the exit to the rules about it.
  e.log_lines = {stderr_line(10.0, 1,
                             "[default0]:ncclRemoteError: A call failed possibly due to "
                             "a network error or a remote process exiting prematurely.")};
  EXPECT_EQ(diagnose(e).findings[0].kind, FindingKind::kNonzeroExit);
}

// As PyTorch 1.13 prints a dataset's exception in worker 1.
TEST(RuleFailedExit, AWorkersExceptionCitesWhereTheWorkerRaisedIt) {
  Evidence e = torchrun_job();
  const std::vector<std::string> text = {
      "Traceback (most recent call last):",
      "  File \"/home/user/proj/train.py\", line 8, in <module>",
      "    for b in DataLoader(D(), batch_size=4, num_workers=2): pass",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 628, in "
      "__next__",
      "    data = self._next_data()",
      "           ^^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1333, in "
      "_next_data",
      "    return self._process_data(data)",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1359, in "
      "_process_data",
      "    data.reraise()",
      "  File \"/usr/lib/python3/dist-packages/torch/_utils.py\", line 543, in reraise",
      "    raise exception",
      "KeyError: Caught KeyError in DataLoader worker process 1.",
      "Original Traceback (most recent call last):",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 302, in "
      "_worker_loop",
      "    data = fetcher.fetch(index)",
      "           ^^^^^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 58, in "
      "fetch",
      "    data = [self.dataset[idx] for idx in possibly_batched_index]",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 58, in "
      "<listcomp>",
      "    data = [self.dataset[idx] for idx in possibly_batched_index]",
      "            ~~~~~~~~~~~~^^^^^",
      "  File \"/home/user/proj/train.py\", line 6, in __getitem__",
      "    if i == 37: raise KeyError(\"label\")",
      "                ^^^^^^^^^^^^^^^^^^^^^^^",
      "KeyError: 'label'",
  };
  for (size_t i = 0; i < text.size(); ++i) e.log_lines.push_back(stderr_line(10.0, i + 1, text[i]));
  exited(e, kRank0, 10.3, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kPythonException);
  EXPECT_EQ(f.title, "rank 0 (pid 1010): DataLoader worker 1 raised KeyError: 'label'");
  EXPECT_THAT(f.evidence, Contains(std::string("in the worker: KeyError: 'label'")));
  EXPECT_THAT(f.evidence,
              Contains(std::string("in the worker, at /home/user/proj/train.py:6 in "
                                   "__getitem__: if i == 37: raise KeyError(\"label\")")));
  EXPECT_THAT(f.fix, HasSubstr("DataLoader worker 1"));
  EXPECT_THAT(f.fix, HasSubstr("num_workers=0"));

  // Where the worker's own exception is a known text (samples of unequal shapes, which the
  // default collate cannot stack), its fix comes before the re-raise's.
  e.log_lines.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    std::string line = text[i];
    if (line.starts_with("KeyError: Caught")) {
      line = "RuntimeError: Caught RuntimeError in DataLoader worker process 1.";
    } else if (i + 1 == text.size()) {
      line =
          "RuntimeError: stack expects each tensor to be equal size, but got [3, 512, 1024] at "
          "entry 0 and [3, 512, 1000] at entry 2";
    }
    e.log_lines.push_back(stderr_line(10.0, i + 1, line));
  }
  d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kPythonException);
  EXPECT_THAT(d.findings[0].fix, HasSubstr("([3, 512, 1024] at entry 0, [3, 512, 1000] at entry "
                                           "2), so the default collate cannot stack them"));
}

TEST(RuleFailedExit, TorchrunPrefixedLinesMatch) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(10.0, 90, "[default0]:Traceback (most recent call last):"),
      stderr_line(10.1, 95, "[default0]:ValueError: bad"),
  };
  exited(e, kRank0, 10.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kPythonException);
  EXPECT_THAT(d.findings[0].title, HasSubstr("ValueError: bad"));

  e.log_lines = {stderr_line(10.1, 95, "[rank0]: torch.distributed.DistBackendError: NCCL error")};
  d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kPythonException);
  EXPECT_THAT(d.findings[0].title, HasSubstr("DistBackendError: NCCL error"));
}

TEST(RuleFailedExit, TheLastExceptionIsCited) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(9.0, 10, "KeyError: 'label'"),
      stderr_line(9.5, 20, "During handling of the above exception, another exception occurred:"),
      stderr_line(10.0, 30, "RuntimeError: Caught KeyError in DataLoader worker process 0."),
  };
  exited(e, kRank0, 10.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_THAT(d.findings[0].title, HasSubstr("Caught KeyError in DataLoader worker process 0."));
}

// A bug in an `except FileNotFoundError:` block: the missing file was expected, the NameError is
// the failure. A library's error while cleaning up after another (torch.save's "unexpected pos"
// after a failed write) still cites the one it handled.
TEST(RuleFailedExit, AnErrorOfTheHandlerIsNotTheHandledOnes) {
  // A `raise` in the handler wraps the handled error, whose fix stands: only the user's other
  // lines are the handler's bugs.
  for (const char* raiser : {"/home/user/proj/train.py", "/usr/lib/python3/dist-packages/x.py",
                             "/home/user/proj/wrap.py"}) {
    Evidence e = torchrun_job();
    e.log_lines = {
        stderr_line(9.0, 1, "Traceback (most recent call last):"),
        stderr_line(9.0, 2, "  File \"/home/user/proj/train.py\", line 3, in <module>"),
        stderr_line(9.0, 3, "FileNotFoundError: [Errno 2] No such file or directory: 'last.pt'"),
        stderr_line(9.0, 4, ""),
        stderr_line(9.0, 5, "During handling of the above exception, another exception occurred:"),
        stderr_line(9.0, 6, ""),
        stderr_line(9.0, 7, "Traceback (most recent call last):"),
        stderr_line(9.0, 8, std::string("  File \"") + raiser + "\", line 6, in <module>"),
        stderr_line(9.0, 9,
                    std::string(raiser).ends_with("wrap.py")
                        ? "    raise NameError(\"name 'state' is not defined\")"
                        : "    start_epoch = state[\"epoch\"] + 1"),
        stderr_line(9.0, 10, "NameError: name 'state' is not defined"),
    };
    exited(e, kRank0, 9.5, 1);
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    EXPECT_THAT(d.findings[0].title, HasSubstr("raised NameError: name 'state' is not defined"));
    bool users = std::string(raiser).ends_with("train.py");
    EXPECT_EQ(d.findings[0].fix.find("'last.pt' does not exist") == std::string::npos, users)
        << raiser;
  }
}

TEST(RuleFailedExit, LinesFarFromTheEndOrOnStdoutAreNotCited) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(100 - 61, 10, "ValueError: from a minute ago"),
      stderr_line(100 + 3, 90, "RuntimeError: printed after it ended"),
      {at(99.9), "stdout", 500, "AssertionError: printed by the user on stdout"},
      stderr_line(99.9, 60, "error: not an exception"),
  };
  exited(e, kRank0, 100, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kNonzeroExit);
  // No exception is cited: only the last line it printed on stderr by its end.
  EXPECT_EQ(f.title, "rank 0 (pid 1010) exited with code 1: error: not an exception");
}

TEST(RuleFailedExit, TheHooksParameterNamesNameDdpsUnusedIndices) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(10.0, 30,
                  "RuntimeError: Expected to have finished reduction in the prior iteration before "
                  "starting a new one. This error indicates that your module has parameters that "
                  "were not used in producing loss. Parameter indices which did not receive grad "
                  "for rank 0: 0 3")};
  auto parameter = [](int pid, int64_t index, const std::string& name) {
    return store::Event{at(10.1), store::EventKind::kDdpParameter, pid, "", index, {}, {}, name};
  };
  // Another process's numbering is not this one's.
  e.events = {parameter(kRank0, 0, "encoder.0.weight"), parameter(kRank0, 3, "bias"),
              parameter(kRank1, 0, "head.weight")};
  exited(e, kRank0, 10.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kDdpUnusedParameters);
  EXPECT_THAT(f.title, testing::EndsWith("(indices 0,3) on rank 0: encoder.0.weight (module "
                                         "encoder.0), bias (the model's own)"));
  EXPECT_THAT(f.evidence,
              testing::Contains("DDP's parameter 0 is encoder.0.weight (module encoder.0) (Python "
                                "hook)"));
  EXPECT_THAT(f.fix, testing::StartsWith("These parameters got no gradient: encoder.0.weight"));

  // Without the hook's record, the indices alone.
  e.events.clear();
  d = diagnose(e);
  EXPECT_THAT(d.findings[0].title, testing::EndsWith("(indices 0,3) on rank 0"));
}

TEST(RuleFailedExit, TheHooksClassCountCompletesALabelError) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(10.0, 30, "IndexError: Target 255 is out of bounds.")};
  e.events = {
      {at(10.0), store::EventKind::kLabelOutOfRange, kRank0, "label 255, 19 classes", 255, 19},
      {at(10.0), store::EventKind::kLabelOutOfRange, kRank1, "label 7, 5 classes", 7, 5}};
  exited(e, kRank0, 10.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kLabelOutOfRange);
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): target label 255 is outside [0, 19): the loss's input has 19 "
            "classes");
  EXPECT_THAT(f.fix, HasSubstr("ignore_index=255"));

  // An earlier record of the process for another label (an interactive session's error it went
  // on from) is not this error's.
  e.events.insert(e.events.begin(), {at(5.0), store::EventKind::kLabelOutOfRange, kRank0,
                                     "label 3, 2 classes", 3, 2});
  e.events.back().text = "label 9, 4 classes";
  e.events.back().a = 9;
  e.events.back().b = 4;
  e.events.back().pid = kRank0;
  d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_THAT(d.findings[0].title, testing::EndsWith("input has 19 classes"));
  e.events[1].text = "label 3, 2 classes";
  e.events[1].a = 3;
  e.events[1].b = 2;
  d = diagnose(e);
  EXPECT_EQ(d.findings[0].title, "rank 0 (pid 1010): target label 255 is outside [0, classes)");
}

// The fix names the mistake from the label and the class count: a real class beyond the model's
// classes is too few classes or a wrong labelling, never a label to ignore; only a void label is.
TEST(RuleFailedExit, ALabelsFixNamesTheMistakeFromTheLabelAndTheClasses) {
  auto fix_of = [](int64_t label, std::optional<int64_t> classes) {
    Evidence e = torchrun_job();
    std::string text = "IndexError: Target " + std::to_string(label) + " is out of bounds.";
    e.log_lines = {stderr_line(10.0, 30, text)};
    if (classes) {
      e.events = {{at(10.0), store::EventKind::kLabelOutOfRange, kRank0, "", label, *classes}};
    }
    exited(e, kRank0, 10.2, 1);
    Diagnosis d = diagnose(e);
    EXPECT_EQ(d.findings.size(), 1u);
    EXPECT_EQ(d.findings.at(0).kind, FindingKind::kLabelOutOfRange);
    return d.findings.at(0).fix;
  };
  // Label 12 of a 10-class output: both numbers and both causes.
  std::string real = fix_of(12, 10);
  EXPECT_THAT(real, HasSubstr("Label 12 is beyond the model's 10 classes (0..9)"));
  EXPECT_THAT(real, HasSubstr("its output has 10, the labels go up to at least 12"));
  EXPECT_THAT(real, HasSubstr("num_classes, the last layer's outputs, to at least 13"));
  EXPECT_THAT(real, HasSubstr("remap them to 0..9; a 1-based labelling gives 10"));
  EXPECT_THAT(real, Not(HasSubstr("ignore_index")));
  // Label 10 of 10 classes, the 1-based case, the same.
  EXPECT_THAT(fix_of(10, 10), Not(HasSubstr("ignore_index")));
  // The label without the hook's count: the same causes, no count.
  std::string no_count = fix_of(12, std::nullopt);
  EXPECT_THAT(no_count, HasSubstr("Label 12 is not a class of the model"));
  EXPECT_THAT(no_count, HasSubstr("to at least 13"));
  EXPECT_THAT(no_count, HasSubstr("remap them to 0..C-1 for C classes"));
  EXPECT_THAT(no_count, Not(HasSubstr("ignore_index")));
  // A negative label is a wrong one.
  std::string negative = fix_of(-3, 5);
  EXPECT_THAT(negative, HasSubstr("Label -3 is negative: the labels are wrong"));
  EXPECT_THAT(negative, HasSubstr("from 0 to 4 (the loss's input has 5 classes)"));
  EXPECT_THAT(negative, Not(HasSubstr("ignore_index")));
  EXPECT_THAT(fix_of(-1, std::nullopt), Not(HasSubstr("ignore_index")));
  // The void labels: 255 of segmentation masks, and -100 where the loss's ignore_index moved.
  EXPECT_THAT(fix_of(255, 19), HasSubstr("void label 255 is not ignored"));
  EXPECT_THAT(fix_of(255, std::nullopt), HasSubstr("CrossEntropyLoss(ignore_index=255)"));
  std::string moved = fix_of(-100, 21);
  EXPECT_THAT(moved, HasSubstr("-100 is PyTorch's default ignore_index"));
  EXPECT_THAT(moved, HasSubstr("pass ignore_index=-100"));
}

// Texts whose numbers say what went wrong give them in the title; MemoryError has none and is
// named as raised.
TEST(RuleFailedExit, KnownTextsNameTheirNumbers) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't "
       "allocate memory: you tried to allocate 274877906944 bytes. Error code 12 (Cannot "
       "allocate memory)",
       "rank 0 (pid 1010): a host allocation of 256 GiB was refused"},
      {"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.45 GiB for an array with "
       "shape (100000, 10000) and data type float64",
       "rank 0 (pid 1010): a host allocation of 7.5 GiB was refused (an array of shape [100000, "
       "10000] float64)"},
      {"MemoryError", "rank 0 (pid 1010) raised MemoryError"},
      {"RuntimeError: The server socket has failed to listen on any local network address. The "
       "server socket has failed to bind to [::]:29611 (errno: 98 - Address already in use). The "
       "server socket has failed to bind to 0.0.0.0:29611 (errno: 98 - Address already in use).",
       "rank 0 (pid 1010): the store could not listen on port 29611: Address already in use"},
  };
  for (const auto& [line, title] : cases) {
    Evidence e = torchrun_job();
    e.log_lines = {
        stderr_line(10.0, 28, "Traceback (most recent call last):"),
        stderr_line(10.0, 29, "  File \"/home/user/proj/train.py\", line 12, in <module>"),
        stderr_line(10.0, 30, line)};
    exited(e, kRank0, 10.2, 1);
    Diagnosis d = diagnose(e);
    ASSERT_EQ(d.findings.size(), 1u) << line;
    EXPECT_EQ(d.findings[0].title, title);
    EXPECT_FALSE(d.findings[0].fix.empty()) << line;
  }
}

TEST(RuleFailedExit, WorkerExitCode) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(10.0, 30, "ValueError: bad")};
  exited(e, kWorker1, 10.2, 3);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kWorkerExit);
  EXPECT_THAT(f.ranks, ElementsAre(1));
  EXPECT_EQ(f.title, "worker 0 of rank 1 (pid 1021) exited with code 3");
  EXPECT_THAT(f.fix, HasSubstr("num_workers=0"));
}

TEST(RuleFailedExit, ProgramARankRanIsNotAFinding) {
  // wandb's `git rev-parse` outside a repository: the rank's own error is the failure.
  Evidence e = torchrun_job();
  e.processes.push_back(proc(1040, kRank0, 500'400, "git rev-parse HEAD"));
  exited(e, 1040, 1.0, 128);
  e.log_lines = {stderr_line(10.0, 30, "ValueError: bad config")};
  exited(e, kRank0, 10.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kPythonException);
  EXPECT_THAT(d.findings[0].pids, ElementsAre(kRank0));
}

// A Python process that multiprocessing's spawn started for rank 0.
void add_spawned_child(Evidence& e, int pid) {
  e.processes.push_back(proc(pid, kRank0, 500'401,
                             "/usr/bin/python3.11 -c from multiprocessing.spawn import "
                             "spawn_main; spawn_main(tracker_fd=5, pipe_handle=7) "
                             "--multiprocessing-fork"));
}

TEST(RuleFailedExit, SpawnedWorkerExitIsAFinding) {
  Evidence e = torchrun_job();
  add_spawned_child(e, 1041);
  exited(e, 1041, 1.0, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kWorkerExit);
  EXPECT_THAT(d.findings[0].pids, ElementsAre(1041));
}

// A process that multiprocessing spawned and that failed before it ran anything of the job's
// prints its own traceback (a DataLoader worker hands its exception to its rank instead): the
// finding is that exception, whose message starts on the line after its type.
TEST(RuleFailedExit, ASpawnedProcessThatPrintedItsExceptionIsExplainedByIt) {
  Evidence e = torchrun_job();
  add_spawned_child(e, 1041);
  uint64_t number = 1;
  print_lines(
      e, 4.5, number,
      {"Traceback (most recent call last):", "  File \"<string>\", line 1, in <module>",
       "  File \"/home/user/proj/train.py\", line 40, in <module>", "    mp.spawn(work, nprocs=2)",
       "  File \"/usr/lib/python3.11/multiprocessing/spawn.py\", line 138, in "
       "_check_not_importing_main",
       "RuntimeError: ", "        An attempt has been made to start a new process before the",
       "        current process has finished its bootstrapping phase."});
  exited(e, 1041, 4.6, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kPythonException);
  EXPECT_THAT(f.pids, ElementsAre(1041));
  EXPECT_THAT(f.title, HasSubstr("worker 1 of rank 0 (pid 1041): a started process re-ran"));
  EXPECT_THAT(f.fix, HasSubstr("if __name__ == '__main__':"));
  EXPECT_THAT(f.evidence,
              Contains(HasSubstr("RuntimeError: An attempt has been made to start a new process")));
}

// The first line of a message that says something: not the empty line before an indented block,
// nor torchrun's rule of '=' before "train.py FAILED".
TEST(RuleFailedExit, AnExceptionsSummarySkipsEmptyAndRuleLines) {
  PythonTraceback tb;
  tb.exception_type = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError";
  tb.message = "\n============================================================\ntrain.py FAILED";
  EXPECT_EQ(exception_summary(tb),
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: train.py FAILED");
  tb.exception_type = "RuntimeError";
  tb.message = "\n        An attempt has been made to start a new process before the";
  EXPECT_EQ(exception_summary(tb),
            "RuntimeError: An attempt has been made to start a new process before the");
}

TEST(RuleFailedExit, LauncherExit) {
  Evidence e = torchrun_job();
  exited(e, kLauncher, 12, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kLauncherExit);
  EXPECT_THAT(f.pids, ElementsAre(kLauncher));
  EXPECT_THAT(f.ranks, IsEmpty());
  EXPECT_EQ(f.title, "launcher (pid 1000) exited with code 1");
}

TEST(RuleFailedExit, ExitZeroIsNotAFinding) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(10.0, 30, "UserWarning: this DataLoader will create 8 workers")};
  exited(e, kRank0, 10.2, 0);
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

TEST(RuleFailedExit, HelperOutsideTheRanksIsNotAFinding) {
  // A probe the launcher ran (role other): its exit code is not the job's failure.
  Evidence e = torchrun_job();
  e.processes.push_back(proc(1030, kLauncher, 500'050, "/usr/bin/nvidia-smi -L"));
  exited(e, 1030, 2, 9);
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

}  // namespace
}  // namespace traindoc::analysis
