// Tests of the GPU analysis on stored evidence: CUDA device numbers reconciled with NVML's, the
// OOM anatomy of each framework's text, foreign contexts, imbalance, hardware faults, and the
// note on missing GPU evidence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/gpu_facts.h"

namespace traindoc::analysis {
namespace {

using store::Evidence;
using store::GpuDevice;
using testing::AllOf;
using testing::Contains;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Not;
using testing::StartsWith;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;
constexpr int kLauncher = 100;
constexpr int kRank0 = 110;  // ranks are 110 + rank

std::vector<GpuDevice> four_devices() {
  std::vector<GpuDevice> out;
  for (int i = 0; i < 4; ++i) {
    out.push_back({i, "GPU-5f1c" + std::to_string(i) + "000-aaaa",
                   "00000000:0" + std::to_string(6 + i) + ":00.0", "NVIDIA H100", 80 * kGiB});
  }
  return out;
}

// A launcher and four ranks (local ranks 0..3), NVML loaded with four GPUs.
Evidence four_ranks() {
  Evidence e;
  e.run.root_pid = kLauncher;
  e.run.start_ns = kT0;
  store::ProcessRecord launcher;
  launcher.pid = kLauncher;
  launcher.ppid = 99;
  launcher.start_ticks = 1000;
  launcher.cmdline = "/usr/bin/python3 -m torch.distributed.run train.py";
  launcher.argv0 = "/usr/bin/python3";
  e.processes.push_back(launcher);
  for (int r = 0; r < 4; ++r) {
    store::ProcessRecord p;
    p.pid = kRank0 + r;
    p.ppid = kLauncher;
    p.start_ticks = 1100;
    p.cmdline = "/usr/bin/python3 -u train.py";
    p.argv0 = "/usr/bin/python3";
    p.rank = r;
    p.local_rank = r;
    p.world_size = 4;
    p.rank_source = common::RankSource::kTorch;
    e.processes.push_back(p);
    e.gpu.cuda_env.push_back({p.pid, p.start_ticks, std::nullopt, "", std::nullopt});
  }
  e.gpu.nvml_loaded = true;
  e.gpu.nvml_status = "NVML of driver 580.65.06: 4 GPU(s)";
  e.gpu.devices = four_devices();
  return e;
}

// One NVML round at `t`: per device, its processes (pid -> bytes).
void round(Evidence& e, int64_t t, const std::vector<std::vector<std::pair<int, uint64_t>>>& on) {
  for (int d = 0; d < static_cast<int>(on.size()); ++d) {
    uint64_t used = 500 * kMiB;
    for (auto [pid, bytes] : on[static_cast<size_t>(d)]) {
      used += bytes;
      uint64_t ticks = pid >= kRank0 && pid < kRank0 + 4 ? 1100 : 5000;
      e.gpu.process_samples.push_back({t, d, pid, pid, ticks, bytes, "compute"});
    }
    store::GpuSample s;
    s.t_ns = t;
    s.device = d;
    s.memory_used = used;
    e.gpu.samples.push_back(s);
  }
}

void fail(Evidence& e, int pid, int64_t t, const std::string& prefix,
          const std::vector<std::string>& lines) {
  uint64_t number = e.log_lines.size() + 1;
  for (const std::string& line : lines)
    e.log_lines.push_back({t, "stderr", number++, prefix + line});
  for (auto& p : e.processes) {
    if (p.pid == pid) {
      p.exit_code = 1;
      p.end_ns = t + kSecond / 10;
      p.end_source = store::EndSource::kParent;
    }
  }
}

const Finding* find(const Diagnosis& d, FindingKind kind) {
  for (const Finding& f : d.findings) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

std::vector<FindingKind> kinds(const Diagnosis& d) {
  std::vector<FindingKind> out;
  for (const Finding& f : d.findings) out.push_back(f.kind);
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

const std::vector<std::string> kTraceback = {
    "Traceback (most recent call last):",
    "  File \"/work/train.py\", line 88, in <module>",
    "    loss = model(x).sum()",
};

std::vector<std::string> with_traceback(const std::string& exception) {
  std::vector<std::string> lines = kTraceback;
  lines.push_back(exception);
  return lines;
}

// ---- CUDA device numbers --------------------------------------------------------------------

TEST(GpuDevices, CudaVisibleDevicesNamesNvmlDevices) {
  std::vector<GpuDevice> d = four_devices();
  EXPECT_THAT(visible_devices(std::nullopt, d), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(visible_devices("2", d), ElementsAre(2));
  EXPECT_THAT(visible_devices("3,1", d), ElementsAre(3, 1));
  EXPECT_THAT(visible_devices("GPU-5f1c2000-aaaa,0", d), ElementsAre(2, 0));
  EXPECT_THAT(visible_devices("GPU-5f1c1", d), ElementsAre(1));  // a unique prefix
  EXPECT_THAT(visible_devices("5f1c3", d), ElementsAre(3));      // without "GPU-"
  // As CUDA: the list ends at the first entry that names no device.
  EXPECT_THAT(visible_devices("0,7,1", d), ElementsAre(0));
  EXPECT_THAT(visible_devices("GPU-5f1c,1", d), IsEmpty());  // ambiguous
  EXPECT_THAT(visible_devices("", d), IsEmpty());
  EXPECT_THAT(visible_devices("-1", d), IsEmpty());
  EXPECT_THAT(visible_devices("1,1", d), ElementsAre(1));
  EXPECT_THAT(visible_devices(" 1 , 2", d), ElementsAre(1, 2));
}

// Fuzz-style: any CUDA_VISIBLE_DEVICES gives distinct known devices, never a crash.
TEST(GpuDevices, AnyCudaVisibleDevices) {
  std::vector<GpuDevice> d = four_devices();
  std::mt19937 rng(20261122);
  const std::string bytes = "0123-,GPU5fc ";
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (size_t n = rng() % 24; n > 0; --n) text += bytes[rng() % bytes.size()];
    std::vector<int> seen = visible_devices(text, d);
    EXPECT_LE(seen.size(), d.size()) << text;
    for (size_t i = 0; i < seen.size(); ++i) {
      EXPECT_TRUE(seen[i] >= 0 && seen[i] < 4) << text;
      EXPECT_EQ(std::count(seen.begin(), seen.end(), seen[i]), 1) << text;
    }
  }
}

TEST(GpuDevices, ARankOwnsItsLocalRanksDeviceOrItsOnlyOne) {
  Evidence e = four_ranks();
  e.gpu.cuda_env[2].visible_devices = "3";  // rank 2 sees GPU 3 alone
  e.gpu.cuda_env[3].visible_devices = "2,3";
  Diagnosis d = diagnose(e);
  ProcessTexts texts(e, d.processes);
  RuleContext context{e, d.processes, texts};
  auto rank = [&](int r) { return *context.process(kRank0 + r); };
  EXPECT_EQ(own_device(context, rank(0)), 0);
  EXPECT_EQ(own_device(context, rank(1)), 1);
  EXPECT_EQ(own_device(context, rank(2)), 3);
  EXPECT_EQ(own_device(context, rank(3)), std::nullopt);  // local rank 3 of two visible GPUs
  EXPECT_EQ(nvml_device(context, rank(2), 0), 3);
  EXPECT_EQ(nvml_device(context, rank(3), 1), 3);
  EXPECT_EQ(nvml_device(context, rank(3), 2), std::nullopt);
  EXPECT_EQ(own_device(context, *context.process(kLauncher)), std::nullopt);
}

// ---- placement --------------------------------------------------------------------------------

// CUDA counts GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID; NVML in PCI bus order. On
// identical GPUs the two agree; on mixed ones the finding says the mapping may be off.
TEST(GpuDevices, MixedModelsWithoutPciBusIdOrderMakeTheMappingUncertain) {
  const std::string oom =
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
      "capacity of 39.39 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
      "process has 38.00 GiB memory in use. Of the allocated memory 36.20 GiB is allocated by "
      "PyTorch, and 1.20 MiB is reserved by PyTorch but unallocated.";
  auto caveats = [&](bool mixed, const std::string& order, std::optional<std::string> visible) {
    Evidence e = four_ranks();
    if (mixed) e.gpu.devices[2].name = e.gpu.devices[3].name = "NVIDIA A100-SXM4-40GB";
    for (store::CudaEnv& env : e.gpu.cuda_env) {
      env.device_order = order;
      env.visible_devices = visible;
    }
    fail(e, 110, kT0 + kSecond, "[rank0]: ", with_traceback(oom));
    Diagnosis d = diagnose(e);
    const Finding* f = find(d, FindingKind::kGpuOom);
    std::vector<std::string> out;
    for (const std::string& line : f ? f->evidence : std::vector<std::string>{}) {
      if (line.starts_with("the device mapping may be off")) out.push_back(line);
    }
    EXPECT_NE(f, nullptr);
    return out;
  };
  std::vector<std::string> mixed = caveats(true, "", std::nullopt);
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_EQ(mixed[0],
            "the device mapping may be off: rank 0 (pid 110) has CUDA_DEVICE_ORDER unset (CUDA's "
            "default, FASTEST_FIRST) and the GPUs differ in model (NVIDIA H100, NVIDIA "
            "A100-SXM4-40GB), so its CUDA device numbers may count the GPUs in another order "
            "than NVML's PCI bus order; set CUDA_DEVICE_ORDER=PCI_BUS_ID, or name the GPUs by "
            "UUID in CUDA_VISIBLE_DEVICES");
  EXPECT_THAT(caveats(true, "FASTEST_FIRST", "1,2"), Contains(HasSubstr("FASTEST_FIRST and")));
  EXPECT_THAT(caveats(true, "PCI_BUS_ID", std::nullopt), IsEmpty());
  EXPECT_THAT(caveats(false, "", std::nullopt), IsEmpty());  // identical GPUs: orders agree
  EXPECT_THAT(caveats(true, "", "GPU-5f1c2000,GPU-5f1c3000"), IsEmpty());  // by UUID

  // The same caveat on a foreign context: "its own GPU" rests on the mapping.
  Evidence e = four_ranks();
  e.gpu.devices[3].name = "NVIDIA A100-SXM4-40GB";
  round(e, kT0 + kSecond,
        {{{110, 30 * kGiB}, {111, 700 * kMiB}},
         {{111, 20 * kGiB}},
         {{112, 20 * kGiB}},
         {{113, 20 * kGiB}}});
  Diagnosis d = diagnose(e);
  const Finding* foreign = find(d, FindingKind::kForeignGpuContext);
  ASSERT_NE(foreign, nullptr);
  EXPECT_THAT(foreign->evidence, Contains(HasSubstr("the device mapping may be off: rank 1")));
}

TEST(GpuPlacement, OtherRanksOnGpu0AreForeignAndMakeItHeavy) {
  Evidence e = four_ranks();
  for (int s = 1; s <= 3; ++s) {
    round(e, kT0 + s * kSecond,
          {{{110, 30 * kGiB}, {111, 700 * kMiB}, {112, 700 * kMiB}, {113, 700 * kMiB}},
           {{111, 20 * kGiB}},
           {{112, 20 * kGiB}},
           {{113, 20 * kGiB}}});
  }
  Diagnosis d = diagnose(e);
  EXPECT_THAT(kinds(d), ElementsAre(FindingKind::kForeignGpuContext, FindingKind::kGpuImbalance));
  const Finding& foreign = d.findings[0];
  EXPECT_EQ(foreign.severity, Severity::kWarning);  // no OOM: a warning, not the root cause
  EXPECT_FALSE(foreign.root_cause);
  EXPECT_THAT(foreign.ranks, ElementsAre(1, 2, 3));
  EXPECT_THAT(foreign.pids, ElementsAre(111, 112, 113));
  EXPECT_THAT(foreign.title, HasSubstr("belongs to rank 0 (pid 110)"));
  EXPECT_THAT(foreign.evidence,
              Contains("rank 3 (pid 113): 700 MiB on GPU 0 (00000000:06:00.0); its own GPU is "
                       "GPU 3 (00000000:09:00.0)"));
  const Finding& heavy = d.findings[1];
  EXPECT_THAT(heavy.title, HasSubstr("GPU 0 (00000000:06:00.0) peaked at 32.5 GiB, 1.6x"));
  EXPECT_THAT(heavy.ranks, ElementsAre(1, 2, 3));
  EXPECT_THAT(joined(heavy.evidence), HasSubstr("likely cause: other ranks (1, 2 and 3)"));
}

// T27: two ranks without set_device, both on cuda:0 only.
TEST(GpuPlacement, TwoRanksOnOneGpu) {
  Evidence e = four_ranks();
  e.processes.resize(3);
  for (auto& p : e.processes) p.world_size = 2;
  round(e, kT0 + kSecond, {{{110, 10 * kGiB}, {111, 10 * kGiB}}, {}});
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kForeignGpuContext));
  EXPECT_THAT(d.findings[0].ranks, ElementsAre(1));
}

// Two GPUs per rank (model parallel): no rank is on another's GPU by mistake.
TEST(GpuPlacement, SeveralGpusPerRankAreNotForeign) {
  Evidence e = four_ranks();
  e.processes.resize(3);
  for (auto& p : e.processes) p.world_size = 2;
  round(e, kT0 + kSecond,
        {{{110, 10 * kGiB}}, {{110, 10 * kGiB}}, {{111, 10 * kGiB}}, {{111, 10 * kGiB}}});
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

TEST(GpuPlacement, RankZeroAloneHeavyIsRankZeroWork) {
  Evidence e = four_ranks();
  round(e, kT0 + kSecond,
        {{{110, 40 * kGiB}}, {{111, 20 * kGiB}}, {{112, 20 * kGiB}}, {{113, 21 * kGiB}}});
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kGpuImbalance));
  EXPECT_THAT(joined(d.findings[0].evidence), HasSubstr("likely cause: rank 0 holds the most"));
  EXPECT_THAT(d.findings[0].ranks, ElementsAre(0));
}

// A rank other than 0 alone on its own GPU holds the most: no other rank there, no DataParallel,
// no rank-0 work; what is left is that its inputs were larger.
TEST(GpuPlacement, ARankHeavyOnItsOwnGpuHadLargerInputs) {
  Evidence e = four_ranks();
  round(e, kT0 + kSecond,
        {{{110, 20 * kGiB}}, {{111, 21 * kGiB}}, {{112, 39 * kGiB}}, {{113, 20 * kGiB}}});
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kGpuImbalance));
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.title,
            "GPU 2 (00000000:08:00.0) peaked at 39.5 GiB, 1.9x the median of the job's other GPUs "
            "(20.5 GiB)");
  EXPECT_THAT(f.ranks, ElementsAre(2));
  EXPECT_THAT(f.evidence, Contains("likely cause: uneven inputs: the heavy rank got larger "
                                   "batches (variable image or sequence sizes, uneven sharding); "
                                   "pad or bucket inputs to equal sizes"));
  EXPECT_THAT(joined(f.evidence), Not(HasSubstr("rank 0 holds the most")));
  EXPECT_THAT(f.fix, HasSubstr("Make the ranks' inputs equal in size"));
}

TEST(GpuPlacement, OneProcessOnEveryGpuIsDataParallel) {
  Evidence e = four_ranks();
  e.processes.resize(2);  // the launcher and one process, no world size
  e.processes[1].world_size.reset();
  e.processes[1].rank.reset();
  e.processes[1].rank_source = common::RankSource::kNone;
  round(e, kT0 + kSecond, {{{110, 30 * kGiB}}, {{110, 10 * kGiB}}, {{110, 10 * kGiB}}});
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kGpuImbalance));
  EXPECT_THAT(joined(d.findings[0].evidence), HasSubstr("nn.DataParallel"));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("DistributedDataParallel"));
}

TEST(GpuPlacement, SmallDifferencesAreNoImbalance) {
  Evidence e = four_ranks();
  round(e, kT0 + kSecond,
        {{{110, 300 * kMiB}}, {{111, 100 * kMiB}}, {{112, 100 * kMiB}}, {{113, 100 * kMiB}}});
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

// ---- OOM -------------------------------------------------------------------------------------

TEST(GpuOom, PyTorch2TextWithNvmlHoldersAndTheDeviceOfTheRank) {
  Evidence e = four_ranks();
  e.gpu.cuda_env[1].visible_devices = "2";  // rank 1's "GPU 0" is NVML's GPU 2
  round(e, kT0 + kSecond, {{}, {}, {{111, 60 * kGiB}, {5000, 18 * kGiB}}, {}});
  e.gpu.processes.push_back({5000, 5000, 5000, kT0, "python3 notebook.py"});
  fail(e, 111, kT0 + 2 * kSecond, "[rank1]: ",
       with_traceback(
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
           "total capacity of 79.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, "
           "this process has 60.00 GiB memory in use. Process 5000 has 18.00 GiB memory in use. "
           "Of the allocated memory 57.20 GiB is allocated by PyTorch, and 1.20 GiB is reserved "
           "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."));
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kGpuOom));  // and no second finding from the exit
  const Finding& oom = d.findings[0];
  EXPECT_TRUE(oom.root_cause);
  EXPECT_EQ(oom.title, "rank 1 (pid 111) ran out of GPU memory on GPU 2 (00000000:08:00.0)");
  EXPECT_THAT(oom.ranks, ElementsAre(1));
  std::string evidence = joined(oom.evidence);
  EXPECT_THAT(evidence, HasSubstr("GPU 2 (00000000:08:00.0): requested 2.0 GiB, capacity 79.7 "
                                  "GiB, free 1.1 GiB"));
  EXPECT_THAT(evidence, HasSubstr("this process: in use 60.0 GiB, allocated by PyTorch 57.2 GiB, "
                                  "reserved but unallocated 1.2 GiB"));
  EXPECT_THAT(evidence, HasSubstr("at that moment (NVML): rank 1 (pid 111) 60.0 GiB; pid 5000 "
                                  "outside the job (python3 notebook.py) 18.0 GiB"));
  EXPECT_THAT(oom.fix, HasSubstr("outside the job held the GPU"));
  EXPECT_THAT(oom.evidence, Contains("the OOM message names other processes on the GPU: pid 5000 "
                                     "(not a process of the job) 18.0 GiB"));
}

// Without NVML, PyTorch's own list of the other processes is the evidence: named by role.
TEST(GpuOom, TheMessagesOtherProcessesByRole) {
  Evidence e = four_ranks();
  e.gpu = {};
  fail(e, 110, kT0 + kSecond, "[rank0]: ",
       with_traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                      "GPU 0 has a total capacity of 79.65 GiB of which 1.06 GiB is free. "
                      "Including non-PyTorch memory, this process has 70.00 GiB memory in use. "
                      "Process 111 has 700.00 MiB memory in use. Process 112 has 720.00 MiB "
                      "memory in use. Process 9 has 8.00 GiB memory in use. Of the allocated "
                      "memory 65.20 GiB is allocated by PyTorch, and 1.20 GiB is reserved by "
                      "PyTorch but unallocated."));
  Diagnosis d = diagnose(e);
  const Finding* oom = find(d, FindingKind::kGpuOom);
  ASSERT_NE(oom, nullptr);
  EXPECT_THAT(oom->evidence, Contains("the OOM message names other processes on the GPU: rank 1 "
                                      "(pid 111) 700 MiB, rank 2 (pid 112) 720 MiB, pid 9 (not a "
                                      "process of the job) 8.0 GiB"));
  EXPECT_THAT(oom->fix, HasSubstr("Ranks 1, 2 put memory on this GPU"));
  EXPECT_THAT(oom->fix, HasSubstr("pid 9 (not a process of the job)"));
}

// A search for the batch that fits catches the OOM, logs it, halves its batch and finishes.
TEST(GpuOom, AnOomTheProcessSurvivedIsNoFailure) {
  Evidence e = four_ranks();
  fail(e, 110, kT0 + kSecond, "[rank0]: ",
       with_traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                      "GPU 0 has a total capacity of 79.65 GiB of which 1.06 GiB is free."));
  for (auto& p : e.processes) {
    if (p.pid == 110) p.exit_code = 0;
  }
  // The job failed, and rank 0 did not train on after it: it gave up (or left its peers).
  e.run.exit_code = 1;
  EXPECT_TRUE(diagnose(e).findings.at(0).root_cause);
  e.run.exit_code = 0;
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kGpuOom));
  const Finding& oom = d.findings[0];
  EXPECT_FALSE(oom.root_cause);
  EXPECT_EQ(oom.severity, Severity::kInfo);
  EXPECT_EQ(oom.title,
            "rank 0 (pid 110) ran out of GPU memory on GPU 0 (00000000:06:00.0), and went on: it "
            "handled the error and exited with code 0");
  EXPECT_THAT(oom.fix, StartsWith("Nothing to do if the process meant to catch it"));
}

TEST(GpuOom, FragmentationAdviceFollowsTheVersion) {
  for (auto [text, advice] : std::vector<std::pair<std::string, std::string>>{
           {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a "
            "total capacity of 79.65 GiB of which 1.06 GiB is free. Of the allocated memory "
            "60.20 GiB is allocated by PyTorch, and 17.30 GiB is reserved by PyTorch but "
            "unallocated.",
            "expandable_segments:True"},
           {"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; "
            "22.20 GiB total capacity; 12.00 GiB already allocated; 1.10 GiB free; 20.50 GiB "
            "reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
            "max_split_size_mb to avoid fragmentation.",
            "max_split_size_mb:128"}}) {
    Evidence e = four_ranks();
    fail(e, 110, kT0 + kSecond, "[rank0]: ", with_traceback(text));
    Diagnosis d = diagnose(e);
    ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kGpuFragmentation)) << text;
    EXPECT_THAT(d.findings[0].fix, HasSubstr(advice));
    EXPECT_THAT(d.findings[0].title, HasSubstr("through fragmentation"));
  }
}

// What the process's allocator already had set (PYTORCH_CUDA_ALLOC_CONF as it started) shapes the
// advice: expandable_segments:True is not advised again, max_split_size_mb is lowered.
TEST(GpuOom, FragmentationAdviceFitsTheAllocatorSettings) {
  const std::string new_text =
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
      "capacity of 79.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
      "process has 78.50 GiB memory in use. Of the allocated memory 60.20 GiB is allocated by "
      "PyTorch, and 17.30 GiB is reserved by PyTorch but unallocated. If reserved but "
      "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
      "to avoid fragmentation.  See documentation for Memory Management  "
      "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
  const std::string old_text =
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 22.20 "
      "GiB total capacity; 12.00 GiB already allocated; 1.10 GiB free; 20.50 GiB reserved in "
      "total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb "
      "to avoid fragmentation.  See documentation for Memory Management and "
      "PYTORCH_CUDA_ALLOC_CONF";
  auto diagnose_with = [](const std::string& text, std::optional<std::string> conf) {
    Evidence e = four_ranks();
    e.gpu.cuda_env[0].alloc_conf = std::move(conf);
    fail(e, 110, kT0 + kSecond, "[rank0]: ", with_traceback(text));
    Diagnosis d = diagnose(e);
    EXPECT_THAT(kinds(d), ElementsAre(FindingKind::kGpuFragmentation)) << text;
    return d.findings.empty() ? Finding{} : d.findings[0];
  };

  Finding set =
      diagnose_with(new_text, "expandable_segments:True,garbage_collection_threshold:0.6");
  EXPECT_THAT(set.fix, Not(HasSubstr("Set PYTORCH_CUDA_ALLOC_CONF")));
  EXPECT_THAT(set.fix, HasSubstr("although expandable_segments:True is already set"));
  EXPECT_THAT(set.fix, HasSubstr("fixed"));
  EXPECT_THAT(set.fix, HasSubstr("reduce the batch size"));
  EXPECT_THAT(set.fix, HasSubstr("garbage_collection_threshold"));
  EXPECT_THAT(set.evidence, Contains("PyTorch allocator settings as the process started: "
                                     "expandable_segments:True,garbage_collection_threshold:0.6"));
  EXPECT_THAT(joined(set.evidence), HasSubstr("reserved but unallocated 17.3 GiB"));

  // Set to False, or other settings only: expandable segments are advised, kept with the rest.
  EXPECT_THAT(diagnose_with(new_text, "expandable_segments:False").fix,
              HasSubstr("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and"));
  EXPECT_THAT(diagnose_with(new_text, "max_split_size_mb:256").fix,
              HasSubstr("Set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256,"
                        "expandable_segments:True"));
  Finding none = diagnose_with(new_text, std::nullopt);
  EXPECT_THAT(none.fix, HasSubstr("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and"));
  EXPECT_THAT(joined(none.evidence), Not(HasSubstr("allocator settings")));

  // PyTorch older than 2.1: max_split_size_mb, lowered when it is set already.
  EXPECT_THAT(diagnose_with(old_text, std::nullopt).fix,
              HasSubstr("PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128"));
  Finding split = diagnose_with(old_text, "max_split_size_mb:128");
  EXPECT_THAT(split.fix, HasSubstr("although max_split_size_mb is already 128: lower it"));
  EXPECT_THAT(joined(split.evidence), HasSubstr("reserved but unallocated 8.5 GiB"));
}

TEST(GpuOom, ASingleRequestLargerThanTheGpuIsAShapeBug) {
  Evidence e = four_ranks();
  fail(e, 110, kT0 + kSecond, "",
       with_traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                      "800000000.00 GiB. GPU 0 has a total capacity of 79.65 GiB of which 78.00 "
                      "GiB is free. Of the allocated memory 0 bytes is allocated by PyTorch, and "
                      "0 bytes is reserved by PyTorch but unallocated."));
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), Contains(FindingKind::kGpuOom));
  EXPECT_THAT(find(d, FindingKind::kGpuOom)->fix, HasSubstr("shape or unit bug"));
}

TEST(GpuOom, TensorFlowAndJaxTexts) {
  Evidence tf = four_ranks();
  std::vector<std::string> lines = {
      "W tensorflow/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory "
      "trying to allocate 256.00MiB (rounded to 268435456)requested by op Conv2D"};
  for (const std::string& l :
       with_traceback("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when "
                      "allocating tensor with shape[32,512,64,64] and type float on "
                      "/job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc")) {
    lines.push_back(l);
  }
  fail(tf, 111, kT0 + kSecond, "[default1]:", lines);
  Diagnosis d = diagnose(tf);
  const Finding* oom = find(d, FindingKind::kGpuOom);
  ASSERT_NE(oom, nullptr);
  EXPECT_THAT(oom->title, HasSubstr("GPU 1 (00000000:07:00.0)"));
  EXPECT_THAT(joined(oom->evidence), HasSubstr("requested 256 MiB"));
  EXPECT_THAT(oom->fix, HasSubstr("set_memory_growth"));

  Evidence jax = four_ranks();
  jax.gpu = {};  // no NVML on this machine
  jax.gpu.nvml_status = "NVML not loaded (libnvidia-ml.so.1): cannot open shared object file";
  fail(jax, 110, kT0 + kSecond, "",
       with_traceback("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory "
                      "while trying to allocate 17179869184 bytes."));
  d = diagnose(jax);
  oom = find(d, FindingKind::kGpuOom);
  ASSERT_NE(oom, nullptr);
  EXPECT_THAT(joined(oom->evidence), HasSubstr("requested 16.0 GiB"));
  EXPECT_THAT(joined(oom->evidence), HasSubstr("no NVML evidence"));
  EXPECT_THAT(oom->fix, HasSubstr("XLA_PYTHON_CLIENT_PREALLOCATE=false"));
  EXPECT_THAT(d.missing_evidence, Contains(HasSubstr("no GPU evidence: NVML not loaded")));
}

TEST(GpuOom, AnOomOnAGpuWithForeignContextsMakesThemTheRootCause) {
  Evidence e = four_ranks();
  round(e, kT0 + kSecond,
        {{{110, 70 * kGiB}, {111, 3 * kGiB}, {112, 3 * kGiB}},
         {{111, 20 * kGiB}},
         {{112, 20 * kGiB}},
         {{113, 20 * kGiB}}});
  fail(e, 110, kT0 + 3 * kSecond, "[rank0]: ",
       with_traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                      "GPU 0 has a total capacity of 79.65 GiB of which 1.06 GiB is free."));
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kForeignGpuContext);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_THAT(d.findings[0].title, HasSubstr("and that GPU ran out of memory"));
  EXPECT_THAT(find(d, FindingKind::kGpuOom)->fix, HasSubstr("Ranks 1, 2 put memory on this GPU"));
}

// ---- pid namespaces ----------------------------------------------------------------------------

constexpr int kHostOffset = 5'000'000;

// A round where NVML names processes by pids traindoc's namespace does not have (pid 0).
void unknown_round(Evidence& e, int64_t t, const std::vector<std::pair<int, uint64_t>>& on_gpu0) {
  uint64_t used = 500 * kMiB;
  for (auto [nvml_pid, bytes] : on_gpu0) {
    used += bytes;
    e.gpu.process_samples.push_back({t, 0, nvml_pid, 0, 0, bytes, "compute"});
  }
  store::GpuSample s;
  s.t_ns = t;
  s.device = 0;
  s.memory_used = used;
  e.gpu.samples.push_back(s);
}

const std::string kOomOnGpu0 =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 57.90 GiB memory in use. Of the allocated memory 55.20 GiB is allocated by PyTorch, and "
    "1.20 GiB is reserved by PyTorch but unallocated.";

// traindoc in a container, NVML giving host pids: the job's ranks appear under pids traindoc
// does not have. traindoc says so and does not ask to stop them.
TEST(GpuPidNamespace, HostPidsOfTheJobAreNotCalledOutsiders) {
  Evidence e = four_ranks();
  unknown_round(e, kT0, {});  // before the job touched the GPU
  unknown_round(e, kT0 + kSecond, {{kHostOffset + 110, 58 * kGiB}, {kHostOffset + 111, 20 * kGiB}});
  // PyTorch's message lists the other processes by NVML's pids too.
  std::string text = kOomOnGpu0;
  text.insert(text.find("Of the allocated"), "Process 5000111 has 20.00 GiB memory in use. ");
  fail(e, 110, kT0 + 2 * kSecond, "[rank0]: ", with_traceback(text));
  EXPECT_THAT(pids_of_another_namespace(e), ElementsAre(kHostOffset + 110, kHostOffset + 111));
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kGpuOom));
  const Finding& oom = d.findings[0];
  std::string evidence = joined(oom.evidence);
  EXPECT_THAT(evidence, HasSubstr("at that moment (NVML): pid 5000110 (a pid of another pid "
                                  "namespace: maybe one of the job's own processes) 58.0 GiB"));
  EXPECT_THAT(evidence, HasSubstr("NVML's process list uses the pids of another pid namespace, "
                                  "likely the host's pids of this container's processes"));
  EXPECT_THAT(oom.evidence,
              Contains("the OOM message names other processes on the GPU: pid 5000111 (a pid of "
                       "another pid namespace: maybe one of the job's own processes) 20.0 GiB"));
  EXPECT_THAT(oom.fix, Not(HasSubstr("stop them")));
  EXPECT_THAT(oom.fix, Not(HasSubstr("outside the job")));
  EXPECT_THAT(oom.fix, HasSubstr("NVML gave the pids of another pid namespace"));
  EXPECT_THAT(d.missing_evidence,
              Contains(AllOf(HasSubstr("GPU processes of the job not identified: NVML listed 2 "
                                       "process(es) on the GPUs (pids 5000110, 5000111)"),
                             HasSubstr("foreign-gpu-context"), HasSubstr("/host/proc"))));
  ASSERT_EQ(d.gpus.size(), 4u);
  ASSERT_EQ(d.gpus[0].holders.size(), 2u);
  EXPECT_EQ(d.gpus[0].holders[0].who, "another pid namespace (maybe the job's)");
}

// Another user's process, there before the job and never the job's: named as before, with the
// advice to stop it, and no note on pid namespaces.
TEST(GpuPidNamespace, AnInvisibleProcessBesideTheJobsIsAnotherContainers) {
  Evidence e = four_ranks();
  unknown_round(e, kT0, {{kHostOffset, 20 * kGiB}});
  e.gpu.process_samples.push_back({kT0 + kSecond, 0, 110, 110, 1100, 58 * kGiB, "compute"});
  unknown_round(e, kT0 + kSecond, {{kHostOffset, 20 * kGiB}});
  fail(e, 110, kT0 + 2 * kSecond, "[rank0]: ", with_traceback(kOomOnGpu0));
  EXPECT_THAT(pids_of_another_namespace(e), IsEmpty());
  Diagnosis d = diagnose(e);
  const Finding* oom = find(d, FindingKind::kGpuOom);
  ASSERT_NE(oom, nullptr);
  EXPECT_THAT(joined(oom->evidence), HasSubstr("pid 5000000 (not visible from traindoc's pid "
                                               "namespace: another container or user) 20.0 GiB"));
  EXPECT_THAT(oom->fix, HasSubstr("outside the job held the GPU"));
  EXPECT_THAT(d.missing_evidence, Not(Contains(HasSubstr("not identified"))));

  // Without the job's processes listed, a pid there from the first round on is still no sign
  // of another namespace in a job that shows no GPU use.
  Evidence cpu = four_ranks();
  unknown_round(cpu, kT0, {{kHostOffset, 20 * kGiB}});
  unknown_round(cpu, kT0 + kSecond, {{kHostOffset, 20 * kGiB}});
  EXPECT_THAT(pids_of_another_namespace(cpu), IsEmpty());
}

// ---- CUDA errors -------------------------------------------------------------------------------

TEST(CudaError, AnUnknownKernelAsksForLaunchBlocking) {
  Evidence e = four_ranks();
  fail(e, 110, kT0 + kSecond, "",
       with_traceback("RuntimeError: CUDA error: device-side assert triggered"));
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kDeviceSideAssert));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("CUDA_LAUNCH_BLOCKING=1"));
}

TEST(CudaError, AnIndexAssertionIsIndexOutOfRange) {
  Evidence e = four_ranks();
  std::vector<std::string> lines = {
      "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: "
      "[180,0,0], thread: [64,0,0] Assertion `srcIndex < srcSelectDimSize` failed."};
  for (const std::string& l :
       with_traceback("RuntimeError: CUDA error: device-side assert triggered")) {
    lines.push_back(l);
  }
  fail(e, 112, kT0 + kSecond, "[rank2]: ", lines);
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kIndexOutOfRange));
  EXPECT_THAT(d.findings[0].title, HasSubstr("rank 2 (pid 112)"));
  EXPECT_THAT(d.findings[0].title, HasSubstr("`srcIndex < srcSelectDimSize` in "));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("embedding"));
}

TEST(CudaError, ACudnnErrorBesideTheLabelsAssertionIsTheLabel) {
  // Recorded on an H200 with PyTorch 2.11 (tests/gpu, label-255), twice: the loss kernel's
  // assertions, then cuDNN's internal error raised at backward; and the same with the
  // assertions flushed only as the process exited, after the traceback.
  for (const char* recorded : {"assertions-first", "assertions-at-exit"}) {
    SCOPED_TRACE(recorded);
    std::ifstream in(std::string(TRAINDOC_FIXTURES) + "/gpu/h200-label-255-" + recorded + ".txt");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_EQ(lines.size() > 40, true);
    Evidence e = four_ranks();
    fail(e, 110, kT0 + kSecond, "[rank0]: ", lines);
    Diagnosis d = diagnose(e);
    ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kLabelOutOfRange));
    EXPECT_THAT(d.findings[0].title,
                HasSubstr("rank 0 (pid 110): a CUDA kernel assertion failed: `t >= 0 && t < "
                          "n_classes` in /pytorch/aten/src/ATen/native/cuda/NLLLoss2d.cu:106"));
    EXPECT_THAT(joined(d.findings[0].evidence), HasSubstr("GPU threads printed this assertion"));
    EXPECT_THAT(joined(d.findings[0].evidence), HasSubstr("CUDNN_STATUS_INTERNAL_ERROR"));
    // The GPU names neither the label nor the classes: how to find them, and ignore_index only
    // for a void label.
    const std::string& fix = d.findings[0].fix;
    EXPECT_THAT(fix, HasSubstr("`assert target.min() >= 0 and target.max() < num_classes`"));
    EXPECT_THAT(fix, HasSubstr("CUDA_LAUNCH_BLOCKING=1"));
    EXPECT_THAT(fix, HasSubstr("too few (num_classes, the last layer's outputs)"));
    EXPECT_THAT(fix, HasSubstr("only where the dataset's void label (e.g. 255) is in the "
                               "targets, ignore it: CrossEntropyLoss(ignore_index=255)"));
  }

  // Without the assertions, cuDNN's error is no kernel's.
  Evidence alone = four_ranks();
  fail(alone, 110, kT0 + kSecond,
       "[rank0]: ", with_traceback("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"));
  EXPECT_THAT(kinds(diagnose(alone)), ElementsAre(FindingKind::kPythonException));
}

// ---- hardware -----------------------------------------------------------------------------------

TEST(HardwareFault, XidAndEccButNotApplicationXids) {
  Evidence e = four_ranks();
  round(e, kT0 + kSecond, {{{110, kGiB}}, {{111, kGiB}}, {{112, kGiB}}, {{113, kGiB}}});
  e.gpu.events = {{kT0 + 2 * kSecond, 0, "xid", 31, "Xid 31"},
                  {kT0 + 3 * kSecond, 3, "xid", 79, "Xid 79"},
                  {kT0 + 3 * kSecond, 3, "gpu-lost", 0, "GPU is lost"}};
  for (uint64_t n : {0, 0, 2}) {
    store::GpuSample s;
    s.t_ns = kT0 + static_cast<int64_t>(4 + n) * kSecond;
    s.device = 1;
    s.ecc_uncorrected = n;
    e.gpu.samples.push_back(s);
  }
  Diagnosis d = diagnose(e);
  ASSERT_THAT(kinds(d), ElementsAre(FindingKind::kHardwareFault, FindingKind::kHardwareFault));
  const Finding& bus = d.findings[0];
  EXPECT_EQ(bus.title,
            "Xid 79: GPU has fallen off the bus on GPU 3 (00000000:09:00.0) NVIDIA H100, "
            "GPU-5f1c3000-aaaa");
  EXPECT_THAT(bus.ranks, ElementsAre(3));
  EXPECT_THAT(bus.evidence, Contains("at 3.0 s: gpu-lost: GPU is lost"));
  EXPECT_THAT(bus.fix, HasSubstr("reboot"));
  const Finding& ecc = d.findings[1];
  EXPECT_THAT(ecc.title, HasSubstr("uncorrectable ECC errors in GPU memory on GPU 1"));
  EXPECT_THAT(ecc.evidence,
              Contains("NVML: uncorrected ECC errors rose from 0 to 2 during the run"));
}

TEST(GpuMissing, RefusedReadsAreNamed) {
  Evidence e = four_ranks();
  round(e, kT0 + kSecond, {{{110, kGiB}}, {}});
  round(e, kT0 + 2 * kSecond, {{{110, kGiB}}, {}});
  e.gpu.samples[1].error = "process list: No Permission";
  EXPECT_THAT(diagnose(e).missing_evidence,
              Contains("GPU sampling of GPU 1 (00000000:07:00.0) failed in 1 of 2 samples: "
                       "process list: No Permission"));
}

TEST(GpuMissing, OnlyGpuJobsAreToldNvmlIsMissing) {
  Evidence e = four_ranks();
  e.gpu = {};
  EXPECT_THAT(diagnose(e).missing_evidence, Not(Contains(HasSubstr("GPU"))));  // schema 2
  e.gpu.nvml_status = "NVML not loaded (libnvidia-ml.so.1): not found";
  EXPECT_THAT(diagnose(e).missing_evidence, Not(Contains(HasSubstr("GPU"))));  // a CPU job
  e.gpu.cuda_env.push_back({110, 1100, "0", "", std::nullopt});
  EXPECT_THAT(diagnose(e).missing_evidence,
              Contains("no GPU evidence: NVML not loaded (libnvidia-ml.so.1): not found; memory "
                       "per GPU, the processes on each and driver events (Xid, ECC) are "
                       "unknown"));
}

// A machine with NVIDIA's device nodes is a GPU machine, whatever the job shows: a job that ran
// fine there without NVML is told that the GPU evidence is missing, and how to get it.
TEST(GpuMissing, AGpuMachineWithoutNvmlIsTold) {
  Evidence e = four_ranks();
  e.gpu = {};
  e.gpu.nvml_status = "NVML not loaded (libnvidia-ml.so.1): not found";
  e.gpu.driver_devices = true;
  EXPECT_THAT(diagnose(e).missing_evidence,
              Contains(AllOf(HasSubstr("no GPU evidence: NVML not loaded"),
                             HasSubstr("NVIDIA_DRIVER_CAPABILITIES=compute,utility"))));
}

}  // namespace
}  // namespace traindoc::analysis
