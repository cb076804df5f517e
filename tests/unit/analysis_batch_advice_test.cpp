// Tests of the batch-size advice of out-of-memory findings: the batch value found in the job's
// command and replaced by {batch}, the words made from the facts, and the fix of gpu-oom,
// host-alloc-failed and host-oom-killed findings whose rank told its batch size.
#include "analysis/batch_advice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <optional>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis_job_fixture.h"

namespace traindoc::analysis {
namespace {

using namespace job;  // NOLINT(google-build-using-namespace): the shared job fixture
using Command = std::vector<std::string>;
using testing::HasSubstr;
using testing::Not;
using testing::Optional;

std::optional<Command> placed(const Command& command, int64_t batch = 16) {
  return with_batch_placeholder(command, batch);
}

// ---- the command line -------------------------------------------------------------------------

TEST(BatchPlaceholder, AnOptionsValueInEachSpelling) {
  EXPECT_THAT(placed({"python", "train.py", "--batch-size", "16"}),
              Optional(Command{"python", "train.py", "--batch-size", "{batch}"}));
  EXPECT_THAT(placed({"python", "train.py", "--batch_size=16"}),
              Optional(Command{"python", "train.py", "--batch_size={batch}"}));
  EXPECT_THAT(placed({"python", "train.py", "-b", "16"}),
              Optional(Command{"python", "train.py", "-b", "{batch}"}));
  EXPECT_THAT(placed({"python", "train.py", "bs=16"}),
              Optional(Command{"python", "train.py", "bs={batch}"}));
  EXPECT_THAT(placed({"python", "train.py", "data.loader.batch_size=16"}),
              Optional(Command{"python", "train.py", "data.loader.batch_size={batch}"}));
  EXPECT_THAT(
      placed({"python", "train.py", "--train-bs", "16", "--per_device_train_batch_size", "8"}),
      Optional(Command{"python", "train.py", "--train-bs", "{batch}",
                       "--per_device_train_batch_size", "8"}));
  EXPECT_THAT(placed({"python", "train.py", "--microBatch", "16"}),
              Optional(Command{"python", "train.py", "--microBatch", "{batch}"}));
}

TEST(BatchPlaceholder, TheNumberMustBeTheBatchAndTheNameSayBatch) {
  EXPECT_EQ(placed({"python", "train.py", "--batch-size", "32"}), std::nullopt);
  EXPECT_EQ(placed({"make", "--jobs", "16"}), std::nullopt);  // "bs" inside another word
  EXPECT_EQ(placed({"torchrun", "--nproc_per_node", "16", "train.py"}), std::nullopt);
  EXPECT_EQ(placed({"python", "train.py", "--epochs", "16", "16"}), std::nullopt);
  EXPECT_EQ(placed({"python", "train.py", "--batch-size"}), std::nullopt);
  EXPECT_EQ(placed({"python", "train.py", "--abc", "16"}), std::nullopt);  // not -b
  EXPECT_EQ(placed({}), std::nullopt);
}

TEST(BatchPlaceholder, TheTrainingLoadersOptionBeforeAnEvaluationLoaders) {
  EXPECT_THAT(placed({"python", "train.py", "--eval-batch-size", "16", "--batch-size", "16"}),
              Optional(Command{"python", "train.py", "--eval-batch-size", "16", "--batch-size",
                               "{batch}"}));
  EXPECT_THAT(placed({"python", "train.py", "--batch-size", "16", "--val_bs=16"}),
              Optional(Command{"python", "train.py", "--batch-size", "{batch}", "--val_bs=16"}));
  // Alone, an evaluation loader's is still the one the command sets.
  EXPECT_THAT(placed({"python", "train.py", "--valid-batch-size", "16"}),
              Optional(Command{"python", "train.py", "--valid-batch-size", "{batch}"}));
}

TEST(BatchPlaceholder, InsideAShellsCommandString) {
  EXPECT_THAT(placed({"sh", "-c", "cd /data && python train.py --batch-size 16 --lr 0.1"}),
              Optional(Command{"sh", "-c",
                               "cd /data && python train.py --batch-size {batch} "
                               "--lr 0.1"}));
  // The option and its value in two arguments of the shell string's neighbours too.
  EXPECT_THAT(placed({"srun", "python train.py --bs", "16"}),
              Optional(Command{"srun", "python train.py --bs", "{batch}"}));
}

TEST(ShellWords, QuotedWhereAShellWouldSplitOrExpand) {
  EXPECT_EQ(shell_words({"python", "train.py", "--batch-size", "{batch}", "lr=0.1"}),
            "python train.py --batch-size {batch} lr=0.1");
  EXPECT_EQ(shell_words({"sh", "-c", "python train.py --bs {batch}", "it's", "", "$HOME"}),
            "sh -c 'python train.py --bs {batch}' 'it'\\''s' '' '$HOME'");
}

// ---- the words ------------------------------------------------------------------------------

BatchFacts gpu_facts() {
  BatchFacts f;
  f.batch = 16;
  f.world_size = 2;
  f.memory = BatchMemory::kGpu;
  f.peak = 78 * kGiB;
  f.before = 2 * kGiB;
  f.capacity = 80 * kGiB;
  f.command = {"torchrun", "--nproc_per_node", "2", "train.py", "--batch-size", "16"};
  return f;
}

TEST(BatchAdvice, ThePeakTheEstimateTheBatchThatFitsAndTheFitCommand) {
  BatchFacts f = gpu_facts();
  // (78 - 2) GiB / 16 = 4.75 GiB a sample; (72 - 2) / 4.75 = 14.7.
  EXPECT_EQ(f.fitting_batch(), 14);
  EXPECT_EQ(batch_advice(f),
            "At batch 16 (its DataLoader's batch_size) it peaked at 78.0 GiB of GPU memory, 2.0 "
            "GiB before its first training step: about 4.8 GiB a sample. By that estimate batch "
            "14 fits in 90% of the GPU's 80.0 GiB: with 2 gradient accumulation steps of batch 8, "
            "the effective batch stays 32 (16 a rank on 2 ranks). Confirm the batch that fits, "
            "with the accumulation that keeps the effective batch: `traindoc fit --param batch "
            "--target-batch 32 -- torchrun --nproc_per_node 2 train.py --batch-size {batch}`.");
}

TEST(BatchAdvice, AnEffectiveBatchThatTheAccumulationCannotKeepExactly) {
  BatchFacts f = gpu_facts();
  f.batch = 17;  // up to 15 a step: 2 steps of 9, 18 samples
  f.world_size = 1;
  f.command = {"python", "train.py", "-b", "17"};
  EXPECT_THAT(batch_advice(f),
              HasSubstr("with 2 gradient accumulation steps of batch 9, the effective batch is "
                        "18, at least the 17 of now. "));
  EXPECT_THAT(batch_advice(f), HasSubstr("--target-batch 17 -- python train.py -b {batch}`."));
}

TEST(BatchAdvice, WithoutASampleBeforeTrainingThereIsNoEstimate) {
  BatchFacts f = gpu_facts();
  f.before.reset();
  EXPECT_EQ(f.per_sample_bytes(), std::nullopt);
  EXPECT_EQ(f.fitting_batch(), std::nullopt);
  EXPECT_EQ(batch_advice(f),
            "At batch 16 (its DataLoader's batch_size) it peaked at 78.0 GiB of GPU memory. "
            "Confirm the batch that fits, with the accumulation that keeps the effective batch: "
            "`traindoc fit --param batch --target-batch 32 -- torchrun --nproc_per_node 2 "
            "train.py --batch-size {batch}`.");
  f.peak.reset();
  EXPECT_THAT(batch_advice(f), testing::StartsWith("Its DataLoader's batch size is 16. Confirm"));
  // A peak no higher than before training: no growth with the batch to estimate from.
  f = gpu_facts();
  f.before = f.peak;
  EXPECT_EQ(f.per_sample_bytes(), std::nullopt);
}

TEST(BatchAdvice, NoBatchFitsWhenTheMemoryBeforeTrainingFillsTheRoom) {
  BatchFacts f = gpu_facts();
  f.before = 73 * kGiB;  // above 90% of 80 GiB
  EXPECT_EQ(f.fitting_batch(), std::nullopt);
  EXPECT_THAT(batch_advice(f),
              HasSubstr("Even batch 1 does not fit in 90% of the GPU's 80.0 GiB by that "
                        "estimate: what the process holds before training (the model, its "
                        "optimizer state) needs less memory first."));
}

TEST(BatchAdvice, AnEstimateThatFitsTheFailingBatchSaysTheSamplesMissedIt) {
  BatchFacts f = gpu_facts();
  f.peak = 40 * kGiB;
  EXPECT_EQ(f.fitting_batch(), std::nullopt);
  EXPECT_THAT(batch_advice(f), HasSubstr("By that estimate batch 16 fits in the GPU's 80.0 GiB: "
                                         "the failing step needed more than the samples saw"));
}

TEST(BatchAdvice, HostMemoryAndACommandWithoutTheBatch) {
  BatchFacts f = gpu_facts();
  f.memory = BatchMemory::kCgroup;
  f.capacity = 64 * kMiB;
  f.peak = 62 * kMiB;
  f.before = 30 * kMiB;  // 2 MiB a sample; (57.6 - 30) / 2 = 13.8
  f.world_size = 1;
  f.command = {"python", "train.py"};
  EXPECT_EQ(batch_advice(f),
            "At batch 16 (its DataLoader's batch_size) it peaked at 62.0 MiB of host memory "
            "(RSS), 30.0 MiB before its first training step: about 2.0 MiB a sample. By that "
            "estimate batch 13 fits in 90% of its memory cgroup's 64.0 MiB limit: with 2 "
            "gradient accumulation steps of batch 8, the effective batch stays 16. Confirm the "
            "batch that fits, with the accumulation that keeps the effective batch: `traindoc "
            "fit --param batch --target-batch 16 -- python train.py`, with `{batch}` put where "
            "the command sets the batch size (no argument of it is 16: make the script take it "
            "as an option).");
  f.memory = BatchMemory::kMachine;
  EXPECT_THAT(batch_advice(f), HasSubstr("fits in 90% of the machine's 64.0 MiB:"));
}

// ---- the findings ---------------------------------------------------------------------------

// Rank 0 of the torchrun job told batch 16 at its first optimizer step (1.5 s), after samples of
// its memory before training (1.0 s).
Evidence batch_job() {
  Evidence e = torchrun_job();
  e.run.command = {"torchrun", "--nproc_per_node", "2", "train.py", "--batch-size", "16"};
  const store::ProcessRecord& r = process(e, kRank0);
  e.steps = {{at(1.4), kRank0, r.start_ticks, store::StepKind::kBackward, 1},
             {at(1.5), kRank0, r.start_ticks, store::StepKind::kOptimizer, 1}};
  e.events.push_back({at(1.5), store::EventKind::kBatchSize, kRank0, "batch size 16", 16});
  return e;
}

void gpu_samples(Evidence& e, const std::vector<std::pair<double, uint64_t>>& samples) {
  const store::ProcessRecord& r = process(e, kRank0);
  e.gpu.nvml_loaded = true;
  e.gpu.devices = {{0, "GPU-5f1c0000-aaaa", "00000000:06:00.0", "NVIDIA H100", 80 * kGiB}};
  for (auto [seconds, bytes] : samples) {
    e.gpu.process_samples.push_back(
        {at(seconds), 0, kRank0, kRank0, r.start_ticks, bytes, "compute"});
  }
}

void print_error(Evidence& e, const std::string& exception) {
  uint64_t number = 1;
  print_lines(e, 3.0, number,
              {"Traceback (most recent call last):",
               "  File \"/home/user/proj/train.py\", line 52, in <module>",
               "    loss = model(x).sum()", exception},
              "[default0]:");
  exited(e, kRank0, 3.2, 1);
}

// A copy: the diagnosis it comes from is a temporary.
Finding found(const Diagnosis& d, FindingKind kind) {
  for (const Finding& f : d.findings) {
    if (f.kind == kind) return f;
  }
  ADD_FAILURE() << "no finding of kind " << to_string(kind);
  return {};
}

const std::string kCudaOom =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 78.00 GiB memory in use. Of the allocated memory 75.20 GiB is allocated by PyTorch, and "
    "1.20 GiB is reserved by PyTorch but unallocated.";

TEST(BatchAdviceFinding, AGpuOomOfARankThatToldItsBatch) {
  Evidence e = batch_job();
  gpu_samples(e, {{1.0, 2 * kGiB}, {2.0, 40 * kGiB}, {2.8, 70 * kGiB}});
  print_error(e, kCudaOom);
  Finding f = found(diagnose(e), FindingKind::kGpuOom);
  // The peak is the error's own 78 GiB in use, above the last sample's 70.
  EXPECT_THAT(f.fix, HasSubstr(" At batch 16 (its DataLoader's batch_size) it peaked at 78.0 GiB "
                               "of GPU memory, 2.0 GiB before its first training step: about 4.8 "
                               "GiB a sample. By that estimate batch 14 fits in 90% of the GPU's "
                               "79.7 GiB: with 2 gradient accumulation steps of batch 8, the "
                               "effective batch stays 32 (16 a rank on 2 ranks)."));
  EXPECT_THAT(f.fix, HasSubstr("`traindoc fit --param batch --target-batch 32 -- torchrun "
                               "--nproc_per_node 2 train.py --batch-size {batch}`."));
  EXPECT_THAT(f.fix, testing::StartsWith("The job's own peak exceeded the GPU"));
}

TEST(BatchAdviceFinding, NoAdviceWithoutABatchNorForAShapeBug) {
  Evidence e = batch_job();
  e.events.clear();
  gpu_samples(e, {{1.0, 2 * kGiB}, {2.0, 40 * kGiB}});
  print_error(e, kCudaOom);
  EXPECT_THAT(found(diagnose(e), FindingKind::kGpuOom).fix, Not(HasSubstr("traindoc fit")));

  // A batch told after the failure is not the failing step's.
  e.events.push_back({at(3.1), store::EventKind::kBatchSize, kRank0, "batch size 16", 16});
  EXPECT_THAT(found(diagnose(e), FindingKind::kGpuOom).fix, Not(HasSubstr("traindoc fit")));

  e = batch_job();
  print_error(e,
              "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 900.00 GiB. GPU 0 "
              "has a total capacity of 79.65 GiB of which 70.00 GiB is free.");
  Finding f = found(diagnose(e), FindingKind::kGpuOom);
  EXPECT_THAT(f.fix, HasSubstr("shape or unit bug"));
  EXPECT_THAT(f.fix, Not(HasSubstr("traindoc fit")));
}

// Rank 0's RSS, of which `files` bytes are pages of mapped files where given.
void rss_samples(Evidence& e, const std::vector<std::pair<double, uint64_t>>& samples,
                 std::optional<uint64_t> files = std::nullopt) {
  const store::ProcessRecord& r = process(e, kRank0);
  for (auto [seconds, bytes] : samples) {
    store::ProcSample s;
    s.t_ns = at(seconds);
    s.pid = kRank0;
    s.start_ticks = r.start_ticks;
    s.rss = bytes + files.value_or(0);
    s.rss_file = files;
    e.proc_samples.push_back(s);
  }
}

TEST(BatchAdviceFinding, AHostAllocationRefusedAtTheMachinesMemory) {
  Evidence e = batch_job();
  rss_samples(e, {{1.0, 1 * kGiB}, {2.0, 9 * kGiB}, {2.9, 15 * kGiB + 512 * kMiB}});
  print_error(e,
              "RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: "
              "can't allocate memory: you tried to allocate 1073741824 bytes. Error code 12 "
              "(Cannot allocate memory)");
  Finding f = found(diagnose(e), FindingKind::kHostAllocFailed);
  // 14.5 GiB over 16 samples; (14.4 - 1) / 0.906 = 14.8.
  EXPECT_THAT(f.fix, HasSubstr("At batch 16 (its DataLoader's batch_size) it peaked at 15.5 GiB "
                               "of host memory (RSS), 1.0 GiB before its first training step: "
                               "about 928 MiB a sample. By that estimate batch 14 fits in 90% "
                               "of the machine's 16.0 GiB: with 2 gradient accumulation steps of "
                               "batch 8, the effective batch stays 32"));
  EXPECT_THAT(f.fix, HasSubstr("--target-batch 32 -- torchrun --nproc_per_node 2 train.py "
                               "--batch-size {batch}`"));
}

TEST(BatchAdviceFinding, AnOomKillAtItsMemoryCgroupsLimit) {
  Evidence e = batch_job();
  const std::string dir = "/sys/fs/cgroup/memory/job/step_0";
  const store::ProcessRecord& r = process(e, kRank0);
  e.process_cgroups = {{at(0.5), kRank0, r.start_ticks, 1, "/job/step_0", dir}};
  e.cgroup_samples = {{at(1.0), dir, 1, 30 * kMiB, 64 * kMiB, dir, 0},
                      {at(2.9), dir, 1, 63 * kMiB, 64 * kMiB, dir, 0},
                      {at(3.3), dir, 1, 1 * kMiB, 64 * kMiB, dir, 1}};
  // 100 MiB of libraries' pages, charged to the cgroup that read them first: not this limit's.
  rss_samples(e, {{1.0, 30 * kMiB}, {2.0, 50 * kMiB}, {2.9, 62 * kMiB}}, 100 * kMiB);
  killed(e, kRank0, 3.2, SIGKILL);
  Finding f = found(diagnose(e), FindingKind::kHostOomKilled);
  EXPECT_THAT(f.fix, HasSubstr("`dmesg` shows"));
  EXPECT_THAT(f.fix, HasSubstr(" At batch 16 (its DataLoader's batch_size) it peaked at 62.0 MiB "
                               "of host memory (RSS without mapped files), 30.0 MiB before its "
                               "first training step: about 2.0 MiB a sample. By that estimate "
                               "batch 13 fits in 90% of its memory cgroup's 64.0 MiB limit"));
}

}  // namespace
}  // namespace traindoc::analysis
