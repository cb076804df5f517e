// Tests of the terminal summary: golden files for a torchrun-shaped run, with and without its
// findings, and for a command that could not start (tests/fixtures/report/summary_*.txt), how
// consequences and other findings are told apart, quiet mode's verdict, row truncation, process
// end texts, text of the job shown rather than obeyed, times at int64's limits.
// TRAINDOC_UPDATE_GOLDEN=1 rewrites the golden files from the current output.
#include "report/terminal.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "report/safe_text.h"

namespace traindoc::report {
namespace {

using analysis::Diagnosis;
using analysis::ProcessSummary;
using analysis::Role;

constexpr uint64_t kMiB = 1024 * 1024;

std::string golden_path(const std::string& name) {
  return std::string(TRAINDOC_FIXTURES) + "/report/" + name;
}

void expect_golden(const std::string& name, const std::string& actual) {
  std::string path = golden_path(name);
  if (const char* update = std::getenv("TRAINDOC_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(path, std::ios::binary) << actual;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path
                  << " (run with TRAINDOC_UPDATE_GOLDEN=1 to create it)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden file " << path;
}

ProcessSummary process(int pid, int ppid, Role role, std::optional<int> rank = std::nullopt,
                       std::optional<int> worker = std::nullopt) {
  ProcessSummary s;
  s.record.pid = pid;
  s.record.ppid = ppid;
  s.record.start_ticks = static_cast<uint64_t>(pid);
  s.record.agent = true;
  s.role.role = role;
  s.role.rank = rank;
  s.role.local_rank = rank;
  s.role.worker = worker;
  return s;
}

store::ProcessRecord& exited(ProcessSummary& p, int code) {
  p.record.exit_code = code;
  p.record.end_source = store::EndSource::kSupervisor;
  return p.record;
}

Diagnosis torchrun_diagnosis() {
  Diagnosis d;
  d.run.command = {"torchrun", "--nproc_per_node", "2", "train.py"};
  d.run.root_pid = 4200;
  d.run.start_ns = 1'700'000'000'000'000'000;
  d.run.end_ns = d.run.start_ns + 12'340'000'000;
  d.run.exit_code = 1;

  ProcessSummary launcher = process(4200, 4199, Role::kLauncher);
  exited(launcher, 1);
  launcher.peak_rss = 310 * kMiB;
  launcher.peak_uss = 290 * kMiB;

  ProcessSummary rank0 = process(4201, 4200, Role::kRank, 0);
  rank0.record.exit_signal = SIGSEGV;
  rank0.record.core_dumped = true;
  rank0.record.end_source = store::EndSource::kParent;
  rank0.peak_rss = 2'400 * kMiB;
  rank0.peak_uss = 1'900 * kMiB;
  rank0.steps = {{store::StepKind::kOptimizer, 412}, {store::StepKind::kBackward, 413}};

  ProcessSummary rank1 = process(4202, 4200, Role::kRank, 1);
  rank1.record.exit_signal = SIGTERM;
  rank1.record.end_source = store::EndSource::kParent;
  rank1.peak_rss = 2'350 * kMiB;

  ProcessSummary w00 = process(4210, 4201, Role::kWorker, 0, 0);
  w00.record.end_source = store::EndSource::kVanished;
  w00.peak_rss = 1'536 * 1024;
  w00.peak_uss = 512 * 1024;
  ProcessSummary w01 = process(4211, 4201, Role::kWorker, 0, 1);
  w01.record.end_source = store::EndSource::kVanished;
  w01.peak_rss = 900 * kMiB;
  w01.peak_uss = 12 * kMiB;
  ProcessSummary w10 = process(4212, 4202, Role::kWorker, 1, 0);
  exited(w10, 0);
  w10.peak_rss = 880 * kMiB;
  ProcessSummary w11 = process(4213, 4202, Role::kWorker, 1, 1);
  exited(w11, 0);

  ProcessSummary other = process(4300, 4200, Role::kOther);
  other.peak_rss = 512;

  d.processes = {launcher, rank0, rank1, w00, w01, w10, w11, other};
  d.missing_evidence = {
      "1 process(es) ran without the agent (static or set-uid programs, programs given an "
      "environment of their own such as env -i or a traindoc inside the job, or gone before it "
      "started): only sampled from /proc"};
  return d;
}

TEST(TerminalSummary, TorchrunGolden) {
  expect_golden("summary_torchrun.txt", render_summary(torchrun_diagnosis(), "/runs/job-1"));
}

analysis::Finding finding(analysis::FindingKind kind, analysis::Severity severity,
                          std::string title) {
  analysis::Finding f;
  f.kind = kind;
  f.severity = severity;
  f.title = std::move(title);
  return f;
}

// The torchrun run above, diagnosed: a worker's crash is the root cause; its rank's exception
// and the launcher's teardown are its consequences; a leak that began earlier is a warning of
// its own.
Diagnosis diagnosed_torchrun() {
  using analysis::Severity;
  Diagnosis d = torchrun_diagnosis();
  analysis::Finding root =
      finding(analysis::FindingKind::kWorkerCrash, Severity::kError,
              "worker 0 of rank 0 (pid 4210) died of SIGSEGV: null pointer dereference "
              "(address 0x0)");
  root.root_cause = true;
  root.ranks = {0};
  root.pids = {4210};
  root.evidence = {
      "crash record of worker 0 of rank 0 (pid 4210) at +11.9 s: SIGSEGV, SEGV_MAPERR at 0x0",
      "blame frame: strlen in libc.so.6",
      "Python: in your code at dataset.py:17 in __getitem__: header = ctypes.string_at(0)"};
  root.fix = "A NULL dereference in native code that Dataset.__getitem__ called.";
  root.consequences = {1, 3};
  analysis::Finding rank = finding(analysis::FindingKind::kPythonException, Severity::kError,
                                   "rank 0 (pid 4201) raised RuntimeError: DataLoader worker "
                                   "(pid(s) 4210) exited unexpectedly");
  analysis::Finding leak = finding(analysis::FindingKind::kMemoryLeak, Severity::kWarning,
                                   "rank 1 (pid 4202): host memory grows 2.10 MiB per step");
  leak.evidence = {
      "RSS of rank 1 (pid 4202) grew from 1148.0 MiB to 2012.2 MiB between steps 82 and 494 "
      "(+864.2 MiB): 2.10 MiB per step, a robust (Theil-Sen) fit of 49 samples after warm-up, "
      "growing in 4 of 4 quarters",
      "a step is one of the process's optimizer steps, counted by traindoc's Python hook",
      "at this rate the 6.2 GiB of available memory runs out after about 3024 more steps, near "
      "step 3518",
      "the steps of its growth: 0.4 s each"};
  leak.fix = "Accumulate loss.item(), not the loss tensor.";
  analysis::Finding stopped = finding(analysis::FindingKind::kKilledExternally, Severity::kInfo,
                                      "rank 1 (pid 4202) was stopped by SIGTERM from its launcher");
  d.findings = {root, rank, leak, stopped};
  return d;
}

TEST(TerminalSummary, FindingsGolden) {
  expect_golden("summary_findings.txt", render_summary(diagnosed_torchrun(), "/runs/job-3"));
}

// The consequences are the ones the root cause links (report.json's `consequences`), not
// whatever follows it; the rest are told apart, with their fix.
TEST(TerminalSummary, ConsequencesAreTheLinkedFindings) {
  std::string text = render_summary(diagnosed_torchrun(), "/r");
  size_t caused = text.find("  which caused:\n");
  size_t apart = text.find("  not caused by the root cause:\n");
  ASSERT_NE(caused, std::string::npos) << text;
  ASSERT_NE(apart, std::string::npos) << text;
  EXPECT_LT(caused, text.find("    [python-exception] rank 0 (pid 4201)"));
  EXPECT_LT(text.find("    [killed-externally] rank 1"), apart);
  EXPECT_GT(text.find("  warning [memory-leak] rank 1 (pid 4202)"), apart);
  EXPECT_NE(text.find("      ... 1 more lines in report.json\n    fix: Accumulate loss.item()"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("then ["), std::string::npos);
}

// Without a root cause (the job did not fail), warnings are told on their own, with no heading
// that speaks of a root cause.
TEST(TerminalSummary, WarningsWithoutARootCause) {
  Diagnosis d = diagnosed_torchrun();
  d.findings = {d.findings[2]};
  std::string text = render_summary(d, "/r");
  EXPECT_NE(text.find("\n  warning [memory-leak] rank 1 (pid 4202): host memory grows"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("root cause"), std::string::npos) << text;
  EXPECT_EQ(text.find("ROOT CAUSE"), std::string::npos) << text;
}

// Quiet mode's one line: how the job ended, the root cause and how many other findings.
TEST(TerminalVerdict, NamesTheRootCause) {
  EXPECT_EQ(render_verdict(diagnosed_torchrun(), "/runs/job-3"),
            "traindoc: the job exited with code 1 after 12.3 s; root cause [worker-crash] worker 0 "
            "of rank 0 (pid 4210) died of SIGSEGV: null pointer dereference (address 0x0) (+2 "
            "more findings) (/runs/job-3)\n");
}

TEST(TerminalVerdict, AFinishedJobNamesItsFirstWarning) {
  Diagnosis d = diagnosed_torchrun();
  d.run.exit_code = 0;
  d.findings = {d.findings[2], d.findings[3]};
  EXPECT_EQ(render_verdict(d, "/r"),
            "traindoc: the job exited with code 0 after 12.3 s; warning [memory-leak] rank 1 (pid "
            "4202): host memory grows 2.10 MiB per step (/r)\n");
  d.findings.clear();
  EXPECT_EQ(render_verdict(d, "/r"), "traindoc: the job exited with code 0 after 12.3 s (/r)\n");
}

// A job that exited 0 on a stop request may have left its training early: the one line says so.
TEST(TerminalVerdict, AFinishedJobNamesTheStopItGot) {
  Diagnosis d = diagnosed_torchrun();
  d.run.exit_code = 0;
  d.findings = {finding(analysis::FindingKind::kStopRequested, analysis::Severity::kInfo,
                        "the job exited with code 0 0.4 s after SIGTERM from pid 77 (slurmstepd)")};
  EXPECT_EQ(render_verdict(d, "/r"),
            "traindoc: the job exited with code 0 after 12.3 s; info [stop-requested] the job "
            "exited with code 0 0.4 s after SIGTERM from pid 77 (slurmstepd) (/r)\n");
}

TEST(TerminalSummary, ExecErrorGolden) {
  Diagnosis d;
  d.run.command = {"trian.py"};
  d.run.start_ns = 1'700'000'000'000'000'000;
  d.run.end_ns = d.run.start_ns + 2'000'000;
  d.run.exit_code = 127;
  d.run.exec_error = "trian.py: command not found";
  d.missing_evidence = {"no host memory samples were taken"};
  expect_golden("summary_exec_error.txt", render_summary(d, "/runs/job-2"));
}

TEST(TerminalSummary, VerdictLines) {
  Diagnosis d;
  d.run.start_ns = 1'000'000'000;
  d.run.end_ns = 4'250'000'000;
  d.run.exit_signal = SIGKILL;
  std::string text = render_summary(d, "/r");
  EXPECT_EQ(text.substr(0, text.find('\n')), "traindoc: the job was killed by SIGKILL after 3.2 s");

  d.run.exit_signal.reset();
  d.run.exit_code = 0;
  text = render_summary(d, "/r");
  EXPECT_EQ(text.substr(0, text.find('\n')), "traindoc: the job exited with code 0 after 3.2 s");

  d.run.exit_code.reset();
  text = render_summary(d, "/r");
  EXPECT_EQ(text.substr(0, text.find('\n')), "traindoc: the job ended after 3.2 s");

  // No end time: traindoc itself stopped while the job ran.
  d.run.end_ns = 0;
  text = render_summary(d, "/r");
  // Without processes there is no table.
  EXPECT_EQ(text,
            "traindoc: the run has no recorded end: traindoc stopped while the job ran\n"
            "  run folder: /r  (report.json, report.html; `traindoc analyze` redoes them)\n");
}

int count_lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

TEST(TerminalSummary, MaxRowsTruncates) {
  Diagnosis d = torchrun_diagnosis();  // 8 processes
  std::string text = render_summary(d, "/runs/job-1", TerminalOptions{3});
  EXPECT_NE(text.find("      4200  launcher"), std::string::npos);
  EXPECT_NE(text.find("      4201  rank 0"), std::string::npos);
  // Steps: the optimizer's count where there is one; "-" where none were counted.
  EXPECT_NE(text.find("    1.9 GiB     412\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  steps\n"), std::string::npos) << text;
  EXPECT_NE(text.find("290 MiB       -\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      4202  rank 1"), std::string::npos);
  EXPECT_EQ(text.find("4210"), std::string::npos);
  EXPECT_EQ(text.find("4300"), std::string::npos);
  EXPECT_NE(text.find("\n  ... and 5 more processes (report.json lists them all)\n"),
            std::string::npos);
  // The header plus three rows.
  EXPECT_EQ(count_lines_starting(text, "      42"), 3);
  // Peaks by role still count every process, listed or not.
  EXPECT_NE(text.find("  peak RSS by role: launcher 310 MiB (max of 1), rank 2.3 GiB (max of 2), "
                      "worker 900 MiB (max of 4), other 512 B (max of 1)\n"),
            std::string::npos)
      << text;
}

TEST(TerminalSummary, MaxRowsEqualToCountShowsAll) {
  Diagnosis d = torchrun_diagnosis();
  std::string all = render_summary(d, "/x", TerminalOptions{8});
  EXPECT_EQ(all.find("more processes"), std::string::npos);
  EXPECT_EQ(all, render_summary(d, "/x"));  // the default (24) shows all 8 too
  EXPECT_EQ(count_lines_starting(all, "      4"), 8);

  std::string none = render_summary(d, "/x", TerminalOptions{0});
  EXPECT_NE(none.find("  ... and 8 more processes"), std::string::npos);
  EXPECT_EQ(count_lines_starting(none, "      4"), 0);
}

TEST(TerminalSummary, TableColumnsStayAligned) {
  // Every row's "peak RSS" column ends where the header's does, whatever the end text.
  std::string text = render_summary(torchrun_diagnosis(), "/x");
  std::istringstream in(text);
  std::string header;
  std::getline(in, header);  // the verdict
  std::getline(in, header);
  size_t width = header.size();
  bool aligned = true;
  for (std::string line; std::getline(in, line) && line.rfind("      4", 0) == 0;) {
    aligned &= line.size() == width;
  }
  EXPECT_TRUE(aligned);
}

TEST(TerminalSummary, DescribeEnd) {
  store::ProcessRecord p;
  EXPECT_EQ(describe_end(p), "still running");
  p.end_source = store::EndSource::kVanished;
  EXPECT_EQ(describe_end(p), "vanished");
  p.exit_code = 0;
  EXPECT_EQ(describe_end(p), "exit 0");
  p.exit_code = 2;
  EXPECT_EQ(describe_end(p), "exit 2");
  p.exit_code.reset();
  p.exit_signal = SIGABRT;
  EXPECT_EQ(describe_end(p), "killed by SIGABRT");
  p.core_dumped = true;
  EXPECT_EQ(describe_end(p), "killed by SIGABRT (core dumped)");
}

// One line per GPU, after the process table, only where NVML listed devices.
TEST(TerminalSummary, OneLinePerGpu) {
  Diagnosis d = torchrun_diagnosis();
  EXPECT_EQ(render_summary(d, "/runs/r1", {}).find("  GPU "), std::string::npos);
  analysis::GpuSummary g;
  g.device = {0, "GPU-5f1c", "00000000:06:00.0", "NVIDIA H100", 80ULL << 30};
  g.peak_used = 31ULL << 30;
  g.holders = {{4242, "rank 0", 30ULL << 30, true}, {777, "outside the job", 1ULL << 30, false}};
  d.gpus = {g};
  std::string text = render_summary(d, "/runs/r1", {});
  EXPECT_NE(text.find("  GPU 0 00000000:06:00.0: peak 31.0 GiB of 80.0 GiB (rank 0 30.0 GiB, pid "
                      "777 outside the job 1.0 GiB)\n"),
            std::string::npos)
      << text;
}

// Words of the job that a terminal would act on: a title change (OSC), a screen clear, C1
// controls as UTF-8 and as lone bytes, a carriage return and a newline that would fake a line.
constexpr const char* kOsc = "\x1b]0;owned\x07";
constexpr const char* kClear = "\x1b[2J";

Diagnosis hostile_diagnosis() {
  Diagnosis d = diagnosed_torchrun();
  analysis::Finding& root = d.findings[0];
  root.title = std::string("rank 0 raised RuntimeError: ") + kOsc + "boom" + kClear;
  root.evidence.push_back("stderr line 3: \xC2\x9B[31m red \x9B[2J \x7f del\rover");
  root.evidence.push_back("ok\n  ROOT CAUSE [fake] spoofed");
  root.fix = std::string("run `") + kClear + "` again";
  d.findings[1].title = std::string("consequence ") + kOsc;
  d.processes[0].record.cmdline = kOsc;
  d.missing_evidence.push_back(std::string("note ") + kOsc);
  analysis::GpuSummary g;
  g.device = {0, "GPU-5f1c", std::string("00:06.0") + kClear, "NVIDIA H100", 80ULL << 30};
  g.holders = {{4242, std::string("rank 0") + kOsc, 30ULL << 30, true}};
  d.gpus = {g};
  return d;
}

// What in `text` a terminal would act on beyond the summary's own newlines (and, where `colour`,
// its own colours): "" when nothing.
std::string obeyed(std::string text, bool colour) {
  if (colour) {
    for (std::string code :
         {"\033[1m", "\033[1;31m", "\033[1;33m", "\033[32m", "\033[2m", "\033[0m"}) {
      for (size_t at = text.find(code); at != std::string::npos; at = text.find(code, at)) {
        text.erase(at, code.size());
      }
    }
  }
  if (valid_utf8(text) != text) return "bytes that are not UTF-8";
  for (size_t i = 0; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if ((byte < 0x20 && byte != '\n') || byte == 0x7F || (byte == 0xC2 && next <= 0x9F)) {
      return "control " + std::to_string(byte) + " at " + std::to_string(i) + ": " +
             text.substr(i >= 20 ? i - 20 : 0, 40);
    }
  }
  return "";
}

TEST(TerminalSummary, TextOfTheJobIsShownNotObeyed) {
  Diagnosis d = hostile_diagnosis();
  std::string run_dir = std::string("/runs/") + kClear;
  for (bool colour : {false, true}) {
    std::string text = render_summary(d, run_dir, TerminalOptions{24, colour});
    EXPECT_EQ(obeyed(text, colour), "") << text;
    EXPECT_NE(text.find("raised RuntimeError: \\x1b]0;owned\\x07boom\\x1b[2J"), std::string::npos)
        << text;
    EXPECT_NE(text.find("stderr line 3: \\u009b[31m red \\x9b[2J \\x7f del\\rover"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("fix:" + std::string(colour ? "\033[0m" : "") + " run `\\x1b[2J` again"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("  note: note \\x1b]0;owned\\x07\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  GPU 0 00:06.0\\x1b[2J: "), std::string::npos) << text;
    EXPECT_NE(text.find("run folder: /runs/\\x1b[2J "), std::string::npos) << text;
    // A newline of the job's does not start a line of the summary's.
    EXPECT_EQ(count_lines_starting(text, "  ROOT CAUSE [fake]"), 0) << text;
    EXPECT_NE(text.find("ok\\n  ROOT CAUSE [fake] spoofed"), std::string::npos) << text;
  }
}

TEST(TerminalVerdict, TextOfTheJobIsShownNotObeyed) {
  Diagnosis d = hostile_diagnosis();
  std::string text = render_verdict(d, std::string("/r\n") + kOsc);
  EXPECT_EQ(obeyed(text, false), "") << text;
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
  EXPECT_NE(
      text.find("root cause [worker-crash] rank 0 raised RuntimeError: "
                "\\x1b]0;owned\\x07boom\\x1b[2J (+2 more findings) (/r\\n\\x1b]0;owned\\x07)"),
      std::string::npos)
      << text;

  // A command that could not start, named with an escape sequence and a lone C1 byte.
  Diagnosis failed;
  failed.run.start_ns = 1'000'000'000;
  failed.run.end_ns = 2'000'000'000;
  failed.run.exit_code = 127;
  failed.run.exec_error = std::string(kOsc) + "\x9b[2J: command not found";
  EXPECT_EQ(render_verdict(failed, "/r"),
            "traindoc: the job could not start: \\x1b]0;owned\\x07\\x9b[2J: command not found "
            "(/r)\n");
  EXPECT_EQ(obeyed(render_summary(failed, "/r"), false), "");
}

// Text that is UTF-8 and prints as text is left as it is.
TEST(TerminalSummary, PrintableTextIsKept) {
  Diagnosis d = diagnosed_torchrun();
  d.findings[0].title = "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\ttab \\x1b";
  EXPECT_NE(render_summary(d, "/r").find("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\ttab \\x1b\n"),
            std::string::npos);
}

// Times at int64's limits (a damaged or planted run.db): no overflow (run under
// -fsanitize=undefined), and no duration, rather than a negative or wrapped one.
TEST(TerminalSummary, TimesAtTheLimitsOfInt64) {
  store::RunInfo run;
  run.exit_signal = SIGINT;
  for (auto [start, end] : {std::pair{INT64_MIN, INT64_MAX}, std::pair{INT64_MAX, INT64_MIN},
                            std::pair{INT64_MIN, int64_t{-1}}, std::pair{int64_t{0}, INT64_MAX},
                            std::pair{INT64_MAX, int64_t{1}}}) {
    run.start_ns = start;
    run.end_ns = end;
    EXPECT_EQ(describe_run_end(run), "the job was killed by SIGINT") << start << " " << end;
  }
  // 292 years tell no run's length either; three days do.
  run.start_ns = 1;
  run.end_ns = INT64_MAX;
  EXPECT_EQ(describe_run_end(run), "the job was killed by SIGINT");
  run.end_ns = 1 + int64_t{3} * 86'400'000'000'000;
  EXPECT_EQ(describe_run_end(run), "the job was killed by SIGINT after 259200.0 s");
  Diagnosis d = torchrun_diagnosis();
  d.run.start_ns = INT64_MIN;
  d.run.end_ns = INT64_MAX;
  std::string text = render_summary(d, "/r");
  EXPECT_EQ(text.substr(0, text.find('\n')), "traindoc: the job exited with code 1") << text;
  EXPECT_EQ(render_verdict(d, "/r"), "traindoc: the job exited with code 1 (/r)\n");
}

}  // namespace
}  // namespace traindoc::report
