// The preflight checks (analysis/preflight_checks.h) on made-up facts: each trap found at its
// threshold and not below it, its verdict, its measured numbers and its words; and the report's
// preflight findings, with a failure the trap leads to citing it.
#include <gtest/gtest.h>

#include <cerrno>

#include "analysis/diagnosis.h"
#include "analysis/preflight_checks.h"

namespace traindoc::analysis {
namespace {

using store::PreflightCheck;
using store::PreflightFacts;
using store::PreflightResult;
using store::Verdict;

// A machine with nothing to find: a large tmpfs, memory, generous limits, no GPU, no command.
PreflightFacts clean() {
  PreflightFacts f;
  f.shm = {true, true, 8 * kGiB, 8 * kGiB};
  f.memory.mem_total = 64 * kGiB;
  f.memory.mem_available = 60 * kGiB;
  f.limits.nofile = {65536, 65536};
  f.limits.stack = {8 * kMiB, std::nullopt};
  f.limits.core = {0, std::nullopt};
  f.limits.core_pattern = "core";
  return f;
}

PreflightFacts torchrun(int nproc, int workers) {
  PreflightFacts f = clean();
  f.command.launcher = store::Launcher::kTorchrun;
  f.command.nproc_per_node = nproc;
  f.command.workers = workers;
  f.command.redirects_given = true;
  f.command.redirects = 2;
  f.python = {"/usr/bin/python3.11",
              "3.11",
              "/usr/lib/python3/dist-packages/torch",
              "2.4.0",
              "12.4",
              "3.11",
              ""};
  return f;
}

void add_gpus(PreflightFacts& f, int count) {
  f.nvml.loaded = true;
  f.nvml.cuda_version = 12040;
  for (int i = 0; i < count; ++i) {
    f.nvml.gpus.push_back(
        {i, "NVIDIA H100", "GPU-" + std::to_string(i) + "aaa", 80 * kGiB, 0, 0, {}});
  }
}

std::vector<PreflightCheck> checks_of(const PreflightFacts& facts) {
  std::vector<PreflightCheck> out;
  for (const PreflightResult& r : preflight_checks(facts)) out.push_back(r.check);
  return out;
}

const PreflightResult* find(const std::vector<PreflightResult>& results, PreflightCheck check) {
  for (const PreflightResult& r : results) {
    if (r.check == check) return &r;
  }
  return nullptr;
}

TEST(Preflight, ACleanMachineAndCommandFindNothing) {
  EXPECT_TRUE(checks_of(clean()).empty());
  PreflightFacts f = torchrun(4, 8);
  add_gpus(f, 4);
  EXPECT_TRUE(checks_of(f).empty());
}

TEST(Preflight, ShmAgainstWhatTheWorkersOfEveryRankNeed) {
  PreflightFacts f = torchrun(2, 8);
  f.shm = {true, true, 64 * kMiB, 64 * kMiB};
  std::vector<PreflightResult> results = preflight_checks(f);
  const PreflightResult* shm = find(results, PreflightCheck::kShmSmall);
  ASSERT_NE(shm, nullptr);
  EXPECT_EQ(shm->verdict, Verdict::kMayFail);
  EXPECT_EQ(shm->measured, int64_t(64 * kMiB));
  // 2 ranks x 8 workers x 2 batches in flight x 32 MiB.
  EXPECT_EQ(shm->threshold, int64_t(2 * 8 * 2 * kShmBatchAllowance));
  EXPECT_EQ(describe(*shm).title,
            "/dev/shm has 64.0 MiB free of 64.0 MiB: less than the 1.0 GiB the batches in flight "
            "for 8 DataLoader worker(s) a rank may take; a worker then dies of a Bus error");
  // Just enough, and no workers at all: nothing.
  f.shm.free = f.shm.total = 1 * kGiB;
  EXPECT_EQ(find(preflight_checks(f), PreflightCheck::kShmSmall), nullptr);
  f.shm.free = f.shm.total = 1 * kMiB;
  f.command.workers = 0;
  EXPECT_EQ(find(preflight_checks(f), PreflightCheck::kShmSmall), nullptr);
  // Nearly full: not even a batch fits.
  f.command.workers = std::nullopt;
  results = preflight_checks(f);
  ASSERT_NE(find(results, PreflightCheck::kShmSmall), nullptr);
  EXPECT_EQ(find(results, PreflightCheck::kShmSmall)->verdict, Verdict::kWillFail);
}

TEST(Preflight, ShmMissingOrOnADisk) {
  PreflightFacts f = torchrun(1, 2);
  f.shm = {};
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kShmMissing});
  f.shm = {true, false, 100 * kGiB, 100 * kGiB};
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kShmNotTmpfs});
}

TEST(Preflight, GpuMemoryOfOtherProcesses) {
  PreflightFacts f = torchrun(2, 0);
  add_gpus(f, 2);
  f.nvml.gpus[1].processes = {{4242, "python other.py", 30 * kGiB},
                              {4243, "python small.py", 100 * kMiB}};
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].check, PreflightCheck::kGpuMemoryTaken);
  EXPECT_EQ(results[0].verdict, Verdict::kMayFail);
  EXPECT_EQ(results[0].device, 1);
  EXPECT_EQ(results[0].pid, 4242);
  EXPECT_EQ(results[0].measured, int64_t(30 * kGiB + 100 * kMiB));
  EXPECT_EQ(describe(results[0]).title,
            "GPU 1 already holds 30.1 GiB of 80.0 GiB for processes outside the job (pid 4242: "
            "python other.py): the job gets only the rest");
  // A GPU the job does not see is none of its business; a full one will fail.
  f.cuda_visible_devices_set = true;
  f.cuda_visible_devices = "0";
  f.command.nproc_per_node = 1;
  EXPECT_TRUE(checks_of(f).empty());
  f.cuda_visible_devices = "1";
  f.nvml.gpus[1].processes[0].used_bytes = 79 * kGiB;
  EXPECT_EQ(preflight_checks(f).at(0).verdict, Verdict::kWillFail);
  // Under the threshold: 1 GiB, or 5 % of the GPU.
  f.nvml.gpus[1].processes = {{4242, "", 1 * kGiB}};
  EXPECT_TRUE(checks_of(f).empty());
}

TEST(Preflight, ComputeModes) {
  PreflightFacts f = torchrun(2, 0);
  add_gpus(f, 2);
  f.nvml.gpus[0].compute_mode = 3;
  EXPECT_TRUE(checks_of(f).empty());  // exclusive, but free
  f.nvml.gpus[0].processes = {{77, "python holder.py", 500 * kMiB}};
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kGpuExclusiveTaken});
  f.nvml.gpus[0].compute_mode = 2;
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kGpuProhibited});
}

TEST(Preflight, RanksAgainstTheVisibleGpus) {
  PreflightFacts f = torchrun(8, 0);
  add_gpus(f, 4);
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].check, PreflightCheck::kRanksExceedGpus);
  EXPECT_EQ(results[0].verdict, Verdict::kWillFail);
  EXPECT_EQ(results[0].measured, 8);
  EXPECT_EQ(results[0].threshold, 4);
  f.command.nproc_per_node = std::nullopt;
  f.command.nproc_from_gpus = true;  // --nproc_per_node gpu
  EXPECT_TRUE(checks_of(f).empty());
  EXPECT_EQ(local_ranks(f), 4);
  // CUDA_VISIBLE_DEVICES 0,1: two ranks of 4 have no GPU.
  f.command.nproc_from_gpus = false;
  f.command.nproc_per_node = 4;
  f.cuda_visible_devices_set = true;
  f.cuda_visible_devices = "0,1";
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kRanksExceedGpus});
  // No GPU visible on purpose: a CPU job.
  f.cuda_visible_devices = "";
  EXPECT_TRUE(checks_of(f).empty());
  f.cuda_visible_devices = "-1";
  EXPECT_TRUE(checks_of(f).empty());
}

TEST(Preflight, VisibleDevicesStopAtTheFirstThatNamesNoGpu) {
  PreflightFacts f = torchrun(1, 0);
  add_gpus(f, 4);
  f.cuda_visible_devices_set = true;
  std::string invalid;
  f.cuda_visible_devices = "2,GPU-3a,9,0";
  EXPECT_EQ(visible_gpus(f, invalid), (std::vector{2, 3}));
  EXPECT_EQ(invalid, "9");
  f.cuda_visible_devices = "1,1";
  EXPECT_EQ(visible_gpus(f, invalid), std::vector{1});
  EXPECT_EQ(invalid, "1");
  f.cuda_visible_devices = "7";
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].check, PreflightCheck::kVisibleDevicesInvalid);
  EXPECT_EQ(results[0].verdict, Verdict::kWillFail);
  EXPECT_EQ(results[0].subject, "7");
}

TEST(Preflight, HostMemoryAndTheCgroupsHeadroom) {
  PreflightFacts f = clean();
  f.memory.mem_available = 1 * kGiB;
  f.memory.cgroup_version = 2;
  f.memory.cgroup_max = 4 * kGiB;
  f.memory.cgroup_current = 3500 * kMiB;
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].check, PreflightCheck::kHostMemoryLow);
  EXPECT_EQ(results[0].subject, "no swap");
  EXPECT_EQ(results[1].check, PreflightCheck::kCgroupMemoryLow);
  EXPECT_EQ(results[1].measured, int64_t(596 * kMiB));
  EXPECT_EQ(describe(results[1]).title,
            "the memory cgroup (v2) leaves 596 MiB under its limit of 4.0 GiB: the job is killed "
            "when it needs more");
  f.memory.mem_available = 10 * kGiB;
  f.memory.cgroup_current = 2 * kGiB;
  EXPECT_TRUE(checks_of(f).empty());
}

TEST(Preflight, OpenFilesAgainstTheWorkers) {
  PreflightFacts f = torchrun(1, 8);
  f.limits.nofile = {1024, 1024};
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].verdict, Verdict::kMayFail);
  EXPECT_EQ(describe(results[0]).fix.find("ulimit -n 65536 as root"), 25u);
  // Under what a rank and 8 workers take with the smallest batches: 12 + 6 x 8.
  f.limits.nofile = {59, 4096};
  results = preflight_checks(f);
  EXPECT_EQ(results.at(0).verdict, Verdict::kWillFail);
  EXPECT_EQ(results[0].threshold, 60);
  EXPECT_NE(describe(results[0]).fix.find("ulimit -n 4096;"), std::string::npos);
  f.limits.nofile = {60, 4096};
  EXPECT_EQ(preflight_checks(f).at(0).verdict, Verdict::kMayFail);
  f.command.workers = 0;  // no tensors pass between processes
  EXPECT_TRUE(checks_of(f).empty());
}

TEST(Preflight, MemlockStackAndCores) {
  PreflightFacts f = torchrun(2, 0);
  f.limits.memlock = {8 * kMiB, 8 * kMiB};
  EXPECT_TRUE(checks_of(f).empty());  // no InfiniBand: NCCL registers nothing
  f.limits.infiniband = true;
  f.limits.stack = {1 * kMiB, std::nullopt};
  f.limits.core = {std::nullopt, std::nullopt};
  EXPECT_EQ(checks_of(f), (std::vector{PreflightCheck::kMemlockLow, PreflightCheck::kStackSmall,
                                       PreflightCheck::kCoreDumpsLarge}));
  f.limits.core_pattern = "|/usr/share/apport/apport %p";  // a handler, not a file
  EXPECT_EQ(checks_of(f).size(), 2u);
}

TEST(Preflight, ThePythonAndItsTorch) {
  PreflightFacts f = torchrun(1, 0);
  f.python.torch_python = "3.12";
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kTorchOtherPython});
  EXPECT_EQ(describe(preflight_checks(f)[0]).title,
            "torch in /usr/lib/python3/dist-packages/torch was built for Python 3.12, and the "
            "job's Python is 3.11: import torch fails");
  f = torchrun(1, 0);
  f.python.torch_dir.clear();
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kTorchMissing});
  // A plain script that does not import torch needs none.
  f.command.launcher = store::Launcher::kPython;
  EXPECT_TRUE(checks_of(f).empty());
  f.command.script_imports_torch = true;
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kTorchMissing});
  f.python.interpreter.clear();
  f.command.program = "python3.99";
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kPythonMissing});
}

TEST(Preflight, TorchsCudaAgainstTheDriver) {
  PreflightFacts f = torchrun(1, 0);
  add_gpus(f, 1);
  f.nvml.driver_version = "535.54.03";
  f.nvml.cuda_version = 12020;
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].check, PreflightCheck::kTorchCudaNewer);
  EXPECT_EQ(results[0].verdict, Verdict::kMayFail);  // minor version compatibility
  EXPECT_NE(describe(results[0]).fix.find("whl/cu122"), std::string::npos);
  f.nvml.cuda_version = 11080;
  EXPECT_EQ(preflight_checks(f).at(0).verdict, Verdict::kWillFail);
  f.python.torch_cuda.clear();
  EXPECT_TRUE(checks_of(f).empty());  // a script that never names CUDA
  f.command.script_uses_cuda = true;
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kTorchCpuOnly});
}

TEST(Preflight, Torchrun113OnPython311WithoutRedirects) {
  PreflightFacts f = torchrun(2, 0);
  f.python.torch_version = "1.13.0a0";
  f.python.torch_cuda.clear();
  EXPECT_TRUE(checks_of(f).empty());  // --redirects 2
  f.command.redirects = 0;
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kTorchrunRedirects});
  f.command.redirects_given = false;
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kTorchrunRedirects});
  f.python.version = f.python.torch_python = "3.10";
  EXPECT_TRUE(checks_of(f).empty());
}

TEST(Preflight, TheNetwork) {
  PreflightFacts f = torchrun(2, 0);
  f.network.master_addr = "node-that-is-not";
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kMasterAddrUnresolved});
  f.network.master_addr = "127.0.0.1";
  f.network.master_addr_resolved = true;
  f.network.master_port = 29500;
  f.network.port_in_use = true;
  EXPECT_EQ(checks_of(f), std::vector{PreflightCheck::kMasterPortTaken});
  f.command.node_rank = 1;  // the store is the first node's
  EXPECT_TRUE(checks_of(f).empty());
  f.network.ifnames = {{"NCCL_SOCKET_IFNAME", "ib", false}, {"GLOO_SOCKET_IFNAME", "eth0", true}};
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].subject, "NCCL_SOCKET_IFNAME=ib");
}

// A port outside 0 to 65535 is its own trap, named by what gave it.
TEST(Preflight, APortThatIsNone) {
  PreflightFacts f = torchrun(2, 0);
  f.network.master_addr = "127.0.0.1";
  f.network.master_addr_resolved = true;
  f.network.port_invalid = "--master_port=70000";
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].check, PreflightCheck::kMasterPortInvalid);
  EXPECT_EQ(results[0].verdict, Verdict::kWillFail);
  EXPECT_EQ(describe(results[0]).title,
            "--master_port=70000 is no TCP port (0 to 65535): torch refuses it (ValueError) "
            "before any rank joins");
}

TEST(Preflight, AStaticRendezvousEndpointWithoutAPort) {
  PreflightFacts f = torchrun(2, 0);
  f.network.master_addr = "node0";
  f.network.master_addr_resolved = true;
  f.network.endpoint_port_missing = true;
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].check, PreflightCheck::kRendezvousPortMissing);
  EXPECT_EQ(results[0].verdict, Verdict::kWillFail);
  PreflightWords words = describe(results[0]);
  EXPECT_EQ(words.title,
            "--rdzv_endpoint node0 names no port: torchrun's static rendezvous (its default "
            "backend) stops with \"port is missing in endpoint\" before any rank starts, whatever "
            "--master_port says");
  EXPECT_NE(words.fix.find("--rdzv_endpoint node0:29500"), std::string::npos) << words.fix;
}

// From another node: no answer, or an error of the network, may fail; a refusal (the first node
// has not started yet) and a connection are no trap.
TEST(Preflight, TheFirstNodesPortFromAnother) {
  PreflightFacts f = torchrun(2, 0);
  f.command.node_rank = 1;
  f.network.master_addr = "10.0.0.1";
  f.network.master_addr_resolved = true;
  f.network.master_port = 29500;
  for (int error : {0, ECONNREFUSED}) {
    f.network.connect_error = error;
    EXPECT_TRUE(checks_of(f).empty()) << error;
  }
  f.network.connect_error = ETIMEDOUT;
  f.network.connect_ms = 300.4;
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].check, PreflightCheck::kMasterPortUnreachable);
  EXPECT_EQ(results[0].verdict, Verdict::kMayFail);
  EXPECT_EQ(results[0].threshold, 300);
  EXPECT_EQ(describe(results[0]).title,
            "a TCP connect from this node to the rendezvous at 10.0.0.1:29500 got no answer in "
            "300 ms: a firewall drops it or the address is not the first node's as this node "
            "reaches it, and the rendezvous times out");
  f.network.master_addr = "fd00::1";
  f.network.connect_error = EHOSTUNREACH;
  f.network.connect_ms = 0.2;
  results = preflight_checks(f);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].subject, "[fd00::1]:29500");
  EXPECT_NE(describe(results[0]).title.find("failed at once: No route to host:"),
            std::string::npos);
}

TEST(Preflight, WillFailComesFirst) {
  PreflightFacts f = torchrun(8, 2);
  add_gpus(f, 4);
  f.shm = {true, true, 64 * kMiB, 64 * kMiB};
  std::vector<PreflightResult> results = preflight_checks(f);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].check, PreflightCheck::kRanksExceedGpus);
  EXPECT_EQ(results[1].check, PreflightCheck::kShmSmall);
}

// The report: a warning each, and a failure the trap leads to cites it as its cause.
TEST(Preflight, ReportTellsEachTrapAndTheFailureItLedTo) {
  store::Evidence evidence;
  evidence.run.start_ns = 1'000'000'000;
  evidence.run.end_ns = 9'000'000'000;
  evidence.run.root_pid = 10;
  evidence.run.exit_code = 1;
  evidence.preflight_ns = 1'100'000'000;
  PreflightResult shm;
  shm.check = PreflightCheck::kShmSmall;
  shm.measured = shm.total = int64_t(64 * kMiB);
  shm.threshold = int64_t(512 * kMiB);
  evidence.preflight = {shm};
  store::ProcessRecord rank;
  rank.pid = 10;
  rank.start_ns = 1'200'000'000;
  rank.exit_code = 1;
  rank.end_ns = 8'000'000'000;
  evidence.processes = {rank};
  evidence.log_lines = {{7'900'000'000, "stderr", 1,
                         "RuntimeError: DataLoader worker (pid 12) is killed by signal: Bus "
                         "error. It is possible that dataloader's workers are out of shared "
                         "memory. Please try to raise your shared memory limit."}};
  Diagnosis diagnosis = diagnose(evidence);
  const Finding* warning = nullptr;
  const Finding* failure = nullptr;
  for (const Finding& f : diagnosis.findings) {
    if (f.kind == FindingKind::kPreflightShmSmall) warning = &f;
    if (f.kind == FindingKind::kShmExhausted) failure = &f;
  }
  ASSERT_NE(warning, nullptr);
  EXPECT_EQ(warning->severity, Severity::kWarning);
  EXPECT_FALSE(warning->root_cause);
  EXPECT_EQ(warning->title.rfind("before the job started: /dev/shm has 64.0 MiB free", 0), 0u);
  ASSERT_NE(failure, nullptr);
  EXPECT_TRUE(failure->root_cause);
  bool cited = false;
  for (const std::string& line : failure->evidence) {
    cited |= line.starts_with(
        "the cause, which traindoc's check found as the run started: "
        "/dev/shm has 64.0 MiB free");
  }
  EXPECT_TRUE(cited);
  EXPECT_EQ(to_string(FindingKind::kPreflightShmSmall), "preflight-shm-small");
  EXPECT_EQ(preflight_kind(PreflightCheck::kSocketIfnameMissing),
            FindingKind::kPreflightSocketIfnameMissing);
}

}  // namespace
}  // namespace traindoc::analysis
