// Tests of report.json (schema traindoc.report/1): fields present and absent, how processes
// ended, the shell status, the atomic write, any bytes of the job carried, times at int64's
// limits.
#include "report/json_report.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace traindoc::report {
namespace {

using analysis::Diagnosis;
using analysis::ProcessSummary;
using analysis::Role;
using json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "report-json-XXXXXX").string();
    m_path = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(m_path); }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

ProcessSummary summary(int pid, int ppid, Role role, std::optional<int> rank = std::nullopt,
                       std::optional<int> worker = std::nullopt) {
  ProcessSummary s;
  s.record.pid = pid;
  s.record.ppid = ppid;
  s.record.start_ticks = static_cast<uint64_t>(pid);
  s.record.start_ns = 1000 + pid;
  s.record.cmdline = "python3 train.py";
  s.record.argv0 = "python3";
  s.record.agent = true;
  s.role.role = role;
  s.role.rank = rank;
  s.role.local_rank = rank;
  s.role.worker = worker;
  return s;
}

Diagnosis sample_diagnosis() {
  Diagnosis d;
  d.run.command = {"torchrun", "--nproc_per_node", "2", "train.py"};
  d.run.hostname = "node1";
  d.run.version = "0.1.0";
  d.run.supervisor_pid = 9;
  d.run.root_pid = 10;
  d.run.start_ns = 1'000'000'000;
  d.run.end_ns = 3'500'000'000;
  d.run.exit_code = 1;

  ProcessSummary launcher = summary(10, 9, Role::kLauncher);
  launcher.record.exit_code = 1;
  launcher.record.end_source = store::EndSource::kSupervisor;
  launcher.record.end_ns = 3'400'000'000;
  launcher.peak_rss = 50u << 20;
  ProcessSummary rank = summary(11, 10, Role::kRank, 0);
  rank.record.world_size = 2;
  rank.record.exit_signal = SIGSEGV;
  rank.record.core_dumped = true;
  rank.record.end_source = store::EndSource::kParent;
  rank.record.end_ns = 3'000'000'000;
  rank.peak_rss = 900u << 20;
  rank.peak_pss = 800u << 20;
  rank.peak_uss = 700u << 20;
  rank.peak_swap = 0;
  rank.peak_fds = 64;
  rank.fd_limit = 1024;
  rank.peak_threads = 20;
  rank.cpu_s = 2.5;
  rank.steps = {{store::StepKind::kOptimizer, 1200}, {store::StepKind::kDdpForward, 1201}};
  ProcessSummary worker = summary(12, 11, Role::kWorker, 0, 0);
  worker.record.end_source = store::EndSource::kVanished;
  worker.record.end_ns = 3'100'000'000;
  ProcessSummary other = summary(13, 10, Role::kOther);
  other.record.agent = false;
  d.processes = {launcher, rank, worker, other};

  analysis::Finding finding;
  finding.kind = analysis::FindingKind::kNativeCrash;
  finding.severity = analysis::Severity::kError;
  finding.root_cause = true;
  finding.title = "rank 0 crashed with SIGSEGV";
  finding.ranks = {0};
  finding.pids = {11};
  finding.evidence = {"pid 11: SIGSEGV at 0x0"};
  finding.fix = "check the extension";
  finding.confidence = 0.9;
  finding.consequences = {1};
  finding.t_ns = 3'000'000'000;
  analysis::Finding consequence;
  consequence.kind = analysis::FindingKind::kPeerExited;
  consequence.severity = analysis::Severity::kWarning;
  consequence.title = "rank 1 failed after rank 0 exited";
  d.findings = {finding, consequence};
  d.missing_evidence = {"no host memory samples were taken"};
  return d;
}

TEST(JsonReport, TopLevelFieldsInOrder) {
  json j = to_json(sample_diagnosis());
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "run", "processes", "findings",
                                            "missing_evidence"}));
  EXPECT_EQ(j["schema"], "traindoc.report/1");
  EXPECT_STREQ(kReportSchema, "traindoc.report/1");
  EXPECT_EQ(j["missing_evidence"], json::array({"no host memory samples were taken"}));
}

TEST(JsonReport, RunFields) {
  json run = to_json(sample_diagnosis())["run"];
  EXPECT_EQ(run["command"], json::array({"torchrun", "--nproc_per_node", "2", "train.py"}));
  EXPECT_EQ(run["hostname"], "node1");
  EXPECT_EQ(run["traindoc_version"], "0.1.0");
  EXPECT_EQ(run["supervisor_pid"], 9);
  EXPECT_EQ(run["root_pid"], 10);
  EXPECT_EQ(run["start_ns"], 1'000'000'000);
  EXPECT_EQ(run["end_ns"], 3'500'000'000);
  EXPECT_DOUBLE_EQ(run["duration_s"].get<double>(), 2.5);
  EXPECT_EQ(run["exit_code"], 1);
  EXPECT_EQ(run["status"], 1);
  EXPECT_FALSE(run.contains("exit_signal"));
  EXPECT_FALSE(run.contains("signal_name"));
  EXPECT_FALSE(run.contains("exec_error"));
}

TEST(JsonReport, RunKilledBySignal) {
  Diagnosis d = sample_diagnosis();
  d.run.exit_code.reset();
  d.run.exit_signal = SIGKILL;
  json run = to_json(d)["run"];
  EXPECT_FALSE(run.contains("exit_code"));
  EXPECT_EQ(run["exit_signal"], 9);
  EXPECT_EQ(run["signal_name"], "SIGKILL");
  EXPECT_EQ(run["status"], 137);
}

TEST(JsonReport, RunStillGoingLeavesOutEndFields) {
  Diagnosis d = sample_diagnosis();
  d.run.end_ns = 0;
  d.run.exit_code.reset();
  json run = to_json(d)["run"];
  for (const char* key : {"end_ns", "duration_s", "exit_code", "exit_signal", "status"}) {
    EXPECT_FALSE(run.contains(key)) << key;
  }
  for (const char* key :
       {"command", "hostname", "traindoc_version", "supervisor_pid", "root_pid", "start_ns"}) {
    EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_EQ(run.dump().find("null"), std::string::npos);
}

TEST(JsonReport, ExecError) {
  Diagnosis d;
  d.run.command = {"no-such-program"};
  d.run.exit_code = 127;
  d.run.exec_error = "no-such-program: command not found";
  json j = to_json(d);
  EXPECT_EQ(j["run"]["exec_error"], "no-such-program: command not found");
  EXPECT_EQ(j["run"]["status"], 127);
  EXPECT_EQ(j["processes"], json::array());
  EXPECT_EQ(j["findings"], json::array());
  EXPECT_EQ(j["missing_evidence"], json::array());
}

TEST(JsonReport, Processes) {
  json processes = to_json(sample_diagnosis())["processes"];
  ASSERT_EQ(processes.size(), 4u);

  const json& launcher = processes[0];
  EXPECT_EQ(launcher["pid"], 10);
  EXPECT_EQ(launcher["parent"], 9);
  EXPECT_EQ(launcher["role"], "launcher");
  EXPECT_EQ(launcher["role_text"], "launcher");
  for (const char* key : {"rank", "local_rank", "node_rank", "worker", "world_size", "peak_fds",
                          "fd_limit", "peak_threads", "steps"}) {
    EXPECT_FALSE(launcher.contains(key)) << key;
  }
  EXPECT_EQ(launcher["cmdline"], "python3 train.py");
  EXPECT_EQ(launcher["start_ns"], 1010);
  EXPECT_EQ(launcher["agent"], true);
  EXPECT_EQ(launcher["exit"], json::parse(R"({"how": "exited", "code": 1, "time_ns": 3400000000,
                                              "source": "supervisor"})"));
  EXPECT_EQ(launcher["memory"], json::parse(R"({"peak_rss": 52428800})"));
  EXPECT_EQ(launcher["cpu_s"], 0.0);

  const json& rank = processes[1];
  EXPECT_EQ(rank["role"], "rank");
  EXPECT_EQ(rank["role_text"], "rank 0");
  EXPECT_EQ(rank["rank"], 0);
  EXPECT_EQ(rank["local_rank"], 0);
  EXPECT_FALSE(rank.contains("worker"));
  EXPECT_EQ(rank["world_size"], 2);
  EXPECT_EQ(rank["exit"], json::parse(R"({"how": "signaled", "signal": 11,
                                          "signal_name": "SIGSEGV", "core_dumped": true,
                                          "time_ns": 3000000000, "source": "parent"})"));
  EXPECT_EQ(rank["memory"], json::parse(R"({"peak_rss": 943718400, "peak_pss": 838860800,
                                            "peak_uss": 734003200, "peak_swap": 0})"));
  EXPECT_EQ(rank["peak_fds"], 64);
  EXPECT_EQ(rank["fd_limit"], 1024);
  EXPECT_EQ(rank["peak_threads"], 20);
  EXPECT_EQ(rank["cpu_s"], 2.5);
  EXPECT_EQ(rank["steps"], json::parse(R"({"optimizer": 1200, "ddp-forward": 1201})"));

  const json& worker = processes[2];
  EXPECT_EQ(worker["role"], "worker");
  EXPECT_EQ(worker["role_text"], "worker 0 of rank 0");
  EXPECT_EQ(worker["worker"], 0);
  EXPECT_EQ(worker["rank"], 0);
  EXPECT_EQ(worker["exit"],
            json::parse(R"({"how": "vanished", "time_ns": 3100000000, "source": "vanished"})"));

  const json& other = processes[3];
  EXPECT_EQ(other["role"], "other");
  EXPECT_EQ(other["agent"], false);
  EXPECT_EQ(other["exit"], json::parse(R"({"how": "running", "source": "none"})"));
}

TEST(JsonReport, NoNullAnywhere) {
  // Absent values are left out, never written as null: a process without memory samples has an
  // empty "memory" object.
  json j = to_json(sample_diagnosis());
  const json& memory = j["processes"][2]["memory"];
  EXPECT_EQ(memory, json::object());
  EXPECT_EQ(j.dump().find("null"), std::string::npos);
}

TEST(JsonReport, ExitSources) {
  Diagnosis d;
  const std::pair<store::EndSource, const char*> sources[] = {
      {store::EndSource::kSupervisor, "supervisor"}, {store::EndSource::kParent, "parent"},
      {store::EndSource::kZombie, "zombie"},         {store::EndSource::kAgentExit, "agent-exit"},
      {store::EndSource::kVanished, "vanished"},     {store::EndSource::kNone, "none"},
  };
  for (const auto& [source, name] : sources) {
    ProcessSummary p = summary(20, 1, Role::kOther);
    p.record.end_source = source;
    p.record.exit_code = 0;
    d.processes = {p};
    json exit = to_json(d)["processes"][0]["exit"];
    EXPECT_EQ(exit["source"], name);
    EXPECT_EQ(exit["how"], "exited");
    EXPECT_EQ(exit["code"], 0);
    EXPECT_FALSE(exit.contains("signal"));
    EXPECT_FALSE(exit.contains("core_dumped"));
  }
}

TEST(JsonReport, SignaledWithoutCore) {
  Diagnosis d;
  ProcessSummary p = summary(20, 1, Role::kRank, 3);
  p.record.exit_signal = SIGTERM;
  p.record.end_source = store::EndSource::kZombie;
  d.processes = {p};
  json exit = to_json(d)["processes"][0]["exit"];
  EXPECT_EQ(exit["how"], "signaled");
  EXPECT_EQ(exit["signal"], 15);
  EXPECT_EQ(exit["signal_name"], "SIGTERM");
  EXPECT_EQ(exit["core_dumped"], false);
  EXPECT_FALSE(exit.contains("time_ns"));
  EXPECT_FALSE(exit.contains("code"));
}

TEST(JsonReport, Findings) {
  json findings = to_json(sample_diagnosis())["findings"];
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0], json::parse(R"({
      "kind": "native-crash", "severity": "error", "root_cause": true,
      "title": "rank 0 crashed with SIGSEGV", "ranks": [0], "pids": [11],
      "evidence": ["pid 11: SIGSEGV at 0x0"], "fix": "check the extension",
      "confidence": 0.9, "consequences": [1], "time_ns": 3000000000})"));
  EXPECT_EQ(findings[1]["kind"], "peer-exited");
  EXPECT_EQ(findings[1]["severity"], "warning");
  EXPECT_EQ(findings[1]["root_cause"], false);
  EXPECT_EQ(findings[1]["ranks"], json::array());
  EXPECT_EQ(findings[1]["evidence"], json::array());
  EXPECT_EQ(findings[1]["consequences"], json::array());
  // Its moment unknown: left out.
  EXPECT_FALSE(findings[1].contains("time_ns"));
  // Every finding field of DESIGN.md contract 4 is there.
  for (const char* key : {"kind", "severity", "root_cause", "title", "ranks", "pids", "evidence",
                          "fix", "confidence"}) {
    EXPECT_TRUE(findings[1].contains(key)) << key;
  }
}

TEST(JsonReport, ShellStatus) {
  store::RunInfo run;
  EXPECT_EQ(shell_status(run), 0);
  run.exit_code = 0;
  EXPECT_EQ(shell_status(run), 0);
  run.exit_code = 3;
  EXPECT_EQ(shell_status(run), 3);
  run.exit_code.reset();
  run.exit_signal = SIGSEGV;
  EXPECT_EQ(shell_status(run), 139);
  run.exit_signal = SIGINT;
  EXPECT_EQ(shell_status(run), 130);
  // The signal wins where both are set.
  run.exit_code = 1;
  run.exit_signal = SIGKILL;
  EXPECT_EQ(shell_status(run), 137);
}

TEST(JsonReport, SignalNames) {
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGABRT), "SIGABRT");
  EXPECT_EQ(signal_name(SIGBUS), "SIGBUS");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
  // Numbers no signal has, from a damaged or forged run.db.
  EXPECT_EQ(signal_name(0), "an invalid signal number 0");
  EXPECT_EQ(signal_name(-3), "an invalid signal number -3");
  EXPECT_EQ(signal_name(200), "an invalid signal number 200");
}

TEST(JsonReport, WriteIsCompleteAndParses) {
  TempDir dir;
  Diagnosis d = sample_diagnosis();
  write_json_report(d, dir.path());
  std::string text = read_file(dir.path() + "/report.json");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(json::parse(text), to_json(d));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/report.json.tmp"));
  // Only the report is left in the folder.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(JsonReport, WriteReplacesTheFileRatherThanRewritingIt) {
  // A reader that opened the old report keeps reading the old report whole: the new one is
  // renamed over it, not truncated and rewritten in place.
  TempDir dir;
  std::string path = dir.path() + "/report.json";
  std::string keeper = dir.path() + "/old.json";
  Diagnosis first = sample_diagnosis();
  write_json_report(first, dir.path());
  ASSERT_EQ(link(path.c_str(), keeper.c_str()), 0);
  struct stat before {};
  ASSERT_EQ(stat(path.c_str(), &before), 0);

  Diagnosis second = sample_diagnosis();
  second.run.hostname = "node2";
  write_json_report(second, dir.path());
  struct stat after {};
  ASSERT_EQ(stat(path.c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino);
  EXPECT_EQ(json::parse(read_file(path))["run"]["hostname"], "node2");
  EXPECT_EQ(json::parse(read_file(keeper))["run"]["hostname"], "node1");
}

TEST(JsonReport, WriteToAMissingFolderThrows) {
  TempDir dir;
  EXPECT_THROW(write_json_report(sample_diagnosis(), dir.path() + "/missing"), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/missing"));
}

analysis::GpuSummary gpu0() {
  analysis::GpuSummary g;
  g.device = {0, "GPU-5f1c", "00000000:06:00.0", "NVIDIA H100", 80ULL << 30};
  g.peak_used = 31ULL << 30;
  g.holders = {{4242, "rank 0", 30ULL << 30, true}, {777, "outside the job", 1ULL << 30, false}};
  return g;
}

// GPUs come last, and only where NVML listed devices: other reports keep their shape.
TEST(JsonReport, GpusAfterTheRestOnlyWhenSampled) {
  analysis::Diagnosis d = sample_diagnosis();
  EXPECT_FALSE(to_json(d).contains("gpus"));
  d.gpus = {gpu0()};
  json j = to_json(d);
  EXPECT_EQ(std::prev(j.end()).key(), "gpus");
  EXPECT_EQ(j["gpus"][0]["pci_bus_id"], "00000000:06:00.0");
  EXPECT_EQ(j["gpus"][0]["peak_used"], 31ULL << 30);
  EXPECT_EQ(
      j["gpus"][0]["processes"][1],
      json({{"pid", 777}, {"who", "outside the job"}, {"in_job", false}, {"peak", 1ULL << 30}}));
  analysis::GpuSummary never_used = gpu0();
  never_used.peak_used.reset();
  d.gpus = {never_used};
  EXPECT_FALSE(to_json(d)["gpus"][0].contains("peak_used"));
}

// Whatever bytes the job printed or was started with, report.json is written, as valid UTF-8
// with U+FFFD where they were not: `traindoc run -- /bin/echo caf$'\xe9'` once wrote none.
TEST(JsonReport, BytesThatAreNotUtf8AreReplacedNotFatal) {
  const std::string broken = "caf\xE9 \xFF\xC3";
  const std::string shown = "caf\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD";
  Diagnosis d = sample_diagnosis();
  d.run.command = {"/bin/echo", broken};
  d.run.hostname = broken;
  d.run.exec_error = broken;
  d.processes[0].record.cmdline = broken;
  d.findings[0].title = broken;
  d.findings[0].evidence.push_back(broken);
  d.findings[0].fix = broken;
  d.missing_evidence.push_back(broken);
  d.gpus = {gpu0()};
  d.gpus[0].device.name = broken;
  TempDir dir;
  write_json_report(d, dir.path());
  std::string text = read_file(dir.path() + "/report.json");
  EXPECT_EQ(text, json_text(d));
  json j = json::parse(text);
  EXPECT_EQ(j["run"]["command"][1], shown);
  EXPECT_EQ(j["run"]["hostname"], shown);
  EXPECT_EQ(j["run"]["exec_error"], shown);
  EXPECT_EQ(j["processes"][0]["cmdline"], shown);
  EXPECT_EQ(j["findings"][0]["title"], shown);
  EXPECT_EQ(j["findings"][0]["evidence"].back(), shown);
  EXPECT_EQ(j["findings"][0]["fix"], shown);
  EXPECT_EQ(j["missing_evidence"].back(), shown);
  EXPECT_EQ(j["gpus"][0]["name"], shown);
}

// `traindoc analyze --json` prints this text: nothing in it is a control a terminal obeys.
TEST(JsonReport, TextHoldsNoControlCharacter) {
  Diagnosis d = sample_diagnosis();
  d.findings[0].title = "\x1b]0;owned\x07 \x1b[2J \x7f \xC2\x9B[31m \x9B";
  std::string text = json_text(d);
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte >= 0x20 || c == '\n' || c == ' ') << static_cast<int>(byte);
    EXPECT_NE(byte, 0x7F);
  }
  EXPECT_EQ(text.find("\xC2\x9B"), std::string::npos);
  EXPECT_EQ(json::parse(text)["findings"][0]["title"],
            "\x1b]0;owned\x07 \x1b[2J \x7f \xC2\x9B[31m \xEF\xBF\xBD");
}

// Times at int64's limits (a damaged or planted run.db) overflow nothing, and no duration is
// claimed where the times tell none; run under -fsanitize=undefined.
TEST(JsonReport, TimesAtTheLimitsOfInt64) {
  Diagnosis d = sample_diagnosis();
  d.processes[0].record.start_ns = INT64_MIN;
  d.processes[0].record.end_ns = INT64_MAX;
  for (auto [start, end] : {std::pair{INT64_MIN, INT64_MAX}, std::pair{INT64_MAX, INT64_MIN},
                            std::pair{int64_t{0}, INT64_MAX}, std::pair{INT64_MAX, int64_t{1}},
                            std::pair{int64_t{-5}, int64_t{-1}}}) {
    d.run.start_ns = start;
    d.run.end_ns = end;
    json run = json::parse(json_text(d))["run"];
    EXPECT_EQ(run["start_ns"], start);
    EXPECT_EQ(run["end_ns"], end);
    EXPECT_FALSE(run.contains("duration_s")) << start << " " << end << ": " << run.dump();
  }
  // 292 years tell no run's length either; three days do.
  d.run.start_ns = 1;
  d.run.end_ns = INT64_MAX;
  EXPECT_FALSE(to_json(d)["run"].contains("duration_s"));
  d.run.end_ns = 1 + int64_t{3} * 86'400'000'000'000;
  EXPECT_DOUBLE_EQ(to_json(d)["run"]["duration_s"].get<double>(), 259200.0);
  json process = to_json(d)["processes"][0];
  EXPECT_EQ(process["start_ns"], INT64_MIN);
  EXPECT_EQ(process["exit"]["time_ns"], INT64_MAX);
}

// A signal number no kernel sends (a damaged run.db) still reads as a failure, without overflow.
TEST(JsonReport, ShellStatusOfASignalOutOfRange) {
  store::RunInfo run;
  for (int signal : {INT_MAX, INT_MIN, -3, 0, 128}) {
    run.exit_signal = signal;
    EXPECT_EQ(shell_status(run), 255) << signal;
  }
  run.exit_signal = 64;  // SIGRTMAX
  EXPECT_EQ(shell_status(run), 192);
}

}  // namespace
}  // namespace traindoc::report
