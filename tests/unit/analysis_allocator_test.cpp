// Tests of the caching allocator's reading at an out-of-memory error (store::AllocatorState):
// live tensors against fragmentation, the words cited, the reading joined to the printed error,
// and an error the job caught without printing it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/allocator_facts.h"
#include "analysis/diagnosis.h"

namespace traindoc::analysis {
namespace {

using store::AllocatorState;
using store::Evidence;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::Not;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;
constexpr int kPid = 4242;

// 80 GiB reserved, `allocated` of it live, the free rest in blocks of at most `largest`.
AllocatorState reading(uint64_t allocated, uint64_t largest, uint64_t requested = 2 * kGiB) {
  AllocatorState s;
  s.t_ns = kT0 + kSecond;
  s.pid = kPid;
  s.requested = requested;
  s.reserved = 80 * kGiB;
  s.allocated = allocated;
  s.inactive = 80 * kGiB - allocated;
  s.largest_free = largest;
  s.segments = 40;
  return s;
}

// One Python process that ran to `exit_code`, with the readings given.
Evidence one_process(int exit_code, std::vector<AllocatorState> states) {
  Evidence e;
  e.run.root_pid = kPid;
  e.run.start_ns = kT0;
  e.run.exit_code = exit_code;
  store::ProcessRecord p;
  p.pid = kPid;
  p.ppid = 1;
  p.start_ticks = 100;
  p.cmdline = "/usr/bin/python3 train.py";
  p.argv0 = "/usr/bin/python3";
  p.exit_code = exit_code;
  p.end_ns = kT0 + 5 * kSecond;
  p.end_source = store::EndSource::kParent;
  e.processes.push_back(p);
  e.allocator_states = std::move(states);
  return e;
}

void print_oom(Evidence& e, const std::string& message) {
  uint64_t n = 1;
  for (const char* line :
       {"Traceback (most recent call last):", "  File \"/home/u/train.py\", line 41, in <module>",
        "    out = model(x)"}) {
    e.log_lines.push_back({kT0 + 2 * kSecond, "stderr", n++, line});
  }
  e.log_lines.push_back({kT0 + 2 * kSecond, "stderr", n, message});
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST(AllocatorVerdict, FreeBlocksThatTogetherHoldTheRequestButNoneAloneAreFragmentation) {
  EXPECT_EQ(allocator_verdict(reading(40 * kGiB, 1 * kGiB)), AllocatorVerdict::kFragmented);
  // One free block large enough would have been used: what failed is the total.
  EXPECT_EQ(allocator_verdict(reading(79 * kGiB, 1 * kGiB)), AllocatorVerdict::kLiveTensors);
  EXPECT_EQ(allocator_verdict(reading(80 * kGiB, 0)), AllocatorVerdict::kLiveTensors);
  // A sliver of the pool free, a request smaller still: the GPU is full, not fragmented.
  EXPECT_EQ(allocator_verdict(reading(80 * kGiB - 100 * kMiB, 20 * kMiB, 50 * kMiB)),
            AllocatorVerdict::kLiveTensors);
  AllocatorState unknown = reading(40 * kGiB, 1 * kGiB);
  unknown.requested.reset();
  EXPECT_EQ(allocator_verdict(unknown), AllocatorVerdict::kUnknown);
  unknown = reading(40 * kGiB, 1 * kGiB);
  unknown.largest_free.reset();  // enough free in sum, how it lies unknown
  EXPECT_EQ(allocator_verdict(unknown), AllocatorVerdict::kUnknown);
}

TEST(AllocatorEvidence, SaysLiveTensorsCachedBlocksAndSites) {
  AllocatorState s = reading(40 * kGiB, 1 * kGiB);
  s.alloc_retries = 3;
  s.pending_free = 512 * kMiB;
  s.history = true;
  s.snapshot = "allocator/oom-4242-0.pickle";
  s.sites = {{"/home/u/model.py", 12, "forward", 30 * kGiB, 15, 2 * kGiB, 2 * kGiB},
             {"/home/u/train.py", 41, "", 1 * kGiB, 3, 512 * kMiB, 256 * kMiB}};
  std::string words = joined(allocator_evidence(s, "GPU 0"));
  EXPECT_THAT(words, HasSubstr("PyTorch's allocator on GPU 0 at the error (its own reading): live "
                               "tensors 40.0 GiB (50%), free cached blocks 40.0 GiB (50%), "
                               "reserved 80.0 GiB, the largest free block 1.0 GiB for a request "
                               "of 2.0 GiB, fragmented"));
  EXPECT_THAT(words, HasSubstr("freed but still in use by another stream 512 MiB, 40 segments, 3 "
                               "cache flushes and retries before this error"));
  EXPECT_THAT(words, HasSubstr("live allocations by site (allocation history): model.py:12 in "
                               "forward 30.0 GiB in 15 blocks of 2.0 GiB; train.py:41 1.0 GiB in "
                               "3 blocks of 256 MiB to 512 MiB"));
  EXPECT_THAT(words, HasSubstr("allocator/oom-4242-0.pickle in the run folder"));
  EXPECT_THAT(joined(allocator_evidence(reading(80 * kGiB, 0), "GPU 0")),
              HasSubstr("traindoc run --memory-history saves a snapshot"));
}

// A message without the allocator's figures reads as a full GPU; the reading shows fragmentation.
TEST(AllocatorGpuOom, TheReadingDecidesFragmentationOfAPrintedError) {
  Evidence e = one_process(1, {reading(40 * kGiB, 1 * kGiB)});
  print_oom(e, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.");
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kGpuFragmentation);
  EXPECT_THAT(f.title, testing::EndsWith("(pid 4242) ran out of memory on CUDA device 0 through "
                                         "fragmentation"));
  EXPECT_THAT(joined(f.evidence), HasSubstr("the largest free block 1.0 GiB"));
  EXPECT_THAT(f.fix, HasSubstr("expandable_segments:True"));
  EXPECT_THAT(f.fix, HasSubstr("torch.cuda.empty_cache() between them"));
  // Without the reading, the same text is a full GPU.
  e.allocator_states.clear();
  EXPECT_EQ(diagnose(e).findings.at(0).kind, FindingKind::kGpuOom);
}

TEST(AllocatorGpuOom, LiveTensorsOfAPrintedErrorAskForASmallerBatch) {
  Evidence e = one_process(1, {reading(80 * kGiB, 0)});
  print_oom(e, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.");
  Diagnosis d = diagnose(e);
  const Finding& f = d.findings.at(0);
  EXPECT_EQ(f.kind, FindingKind::kGpuOom);
  EXPECT_THAT(joined(f.evidence), HasSubstr("live tensors filled it"));
  EXPECT_THAT(f.fix, HasSubstr("reduce the batch size"));
  EXPECT_THAT(f.fix, Not(HasSubstr("expandable_segments")));
}

// A search for the batch that fits catches its errors without a word: the last reading of the
// process tells, once, and as information where the process went on to exit 0.
TEST(AllocatorGpuOom, AnErrorCaughtWithoutAWordIsToldOnce) {
  AllocatorState first = reading(80 * kGiB, 0, 8 * kGiB);
  AllocatorState second = reading(80 * kGiB, 0, 4 * kGiB);
  second.number = 1;
  second.t_ns += kSecond;
  Evidence e = one_process(0, {first, second});
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kGpuOom);
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_THAT(f.title, testing::EndsWith("(pid 4242) ran out of GPU memory on CUDA device 0, an "
                                         "error it caught, and went on: it handled the error "
                                         "and exited with code 0"));
  EXPECT_THAT(joined(f.evidence), HasSubstr("for a request of 4.0 GiB"));
  EXPECT_THAT(f.pids, ElementsAre(kPid));
  // A process that failed after it: the caught error is no longer a matter of course.
  e = one_process(1, {first, second});
  EXPECT_NE(diagnose(e).findings.at(0).severity, Severity::kInfo);
}

}  // namespace
}  // namespace traindoc::analysis
