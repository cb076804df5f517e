// Tests of the diagnosis of checkpoints and disks: a write refused by a full filesystem, a
// checkpoint that torch.load cannot read, an exception known only through the one it was raised
// from, and a program that raised and then aborted in its teardown (PyTorch 1.13's torch.save
// on a full disk does both). The texts are real, from Debian's PyTorch 1.13.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "analysis/diagnosis.h"
#include "analysis_job_fixture.h"
#include "signature_test_util.h"

namespace traindoc::analysis {
namespace {

using namespace job;             // NOLINT(google-build-using-namespace): the shared job fixture
using namespace signature_test;  // NOLINT(google-build-using-namespace): ids, match, fields

using testing::Contains;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::Not;

constexpr const char* kSerialization = "/usr/lib/python3/dist-packages/torch/serialization.py";

TEST(CheckpointSignatures, FullDiskAndQuota) {
  SignatureMatch m = match("OSError: [Errno 28] No space left on device", "python.no-space");
  EXPECT_EQ(m.kind, FindingKind::kDiskFull);
  expect_fields(m, {{"errno", "28"}, {"error", "No space left on device"}});
  m = match("OSError: [Errno 122] Disk quota exceeded: '/home/user/ckpt/epoch_3.pt'",
            "python.no-space");
  expect_fields(
      m,
      {{"errno", "122"}, {"error", "Disk quota exceeded"}, {"path", "/home/user/ckpt/epoch_3.pt"}});
  m = match(
      "RuntimeError: [enforce fail at inline_container.cc:445] . PytorchStreamWriter failed "
      "writing file data/0: file write failed",
      "torch.checkpoint-write-failed");
  expect_fields(m, {{"record", "data/0"}});
  // /dev/shm full is the workers' shared memory, not a disk.
  EXPECT_THAT(ids("RuntimeError: unable to write to file </torch_287_2714559211_8>: No space left "
                  "on device (28)"),
              ElementsAre("torch.shm-write-failed"));
}

TEST(CheckpointSignatures, UnreadableCheckpoints) {
  SignatureMatch m = match(
      "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central "
      "directory",
      "torch.checkpoint-truncated");
  EXPECT_EQ(m.kind, FindingKind::kCheckpointCorrupt);
  expect_fields(m, {{"reason", "failed finding central directory"}});
  // A small file cut in half: the zip reader's seek fails before it finds the directory.
  std::vector<FrameHint> open_zip = {{"/home/user/proj/train.py", "<module>"},
                                     {kSerialization, "load"},
                                     {kSerialization, "__init__"}};
  EXPECT_THAT(ids("OSError: [Errno 22] Invalid argument", open_zip),
              ElementsAre("torch.checkpoint-truncated-small"));
  EXPECT_THAT(ids("OSError: [Errno 22] Invalid argument"), testing::IsEmpty());
  // Pickle's errors are checkpoints only where torch.load raised them.
  std::vector<FrameHint> load = {{"/home/user/proj/train.py", "<module>"},
                                 {kSerialization, "load"},
                                 {kSerialization, "_legacy_load"}};
  EXPECT_THAT(ids("_pickle.UnpicklingError: invalid load key, 'v'.", load),
              ElementsAre("torch.checkpoint-not-a-checkpoint"));
  EXPECT_THAT(ids("EOFError: Ran out of input", load),
              ElementsAre("torch.checkpoint-not-a-checkpoint"));
  EXPECT_THAT(ids("EOFError: Ran out of input", {{"/home/user/proj/data.py", "read"}}),
              testing::IsEmpty());
}

TEST(CheckpointRules, AnUnreadableCheckpointNamesWhatTheFileIs) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(
      e, 2.0, number,
      {"[default0]:Traceback (most recent call last):",
       "[default0]:  File \"/home/user/proj/train.py\", line 30, in <module>",
       "[default0]:    state = torch.load(args.resume)",
       std::string("[default0]:  File \"") + kSerialization + "\", line 1002, in _legacy_load",
       "[default0]:    magic_number = pickle_module.load(f, **pickle_load_args)",
       "[default0]:_pickle.UnpicklingError: invalid load key, 'v'."});
  exited(e, kRank0, 2.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kCheckpointCorrupt);
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): the file is not a PyTorch checkpoint (invalid load key, 'v')");
  EXPECT_THAT(f.evidence, Contains(HasSubstr("Git LFS pointer")));
  EXPECT_THAT(f.evidence, Contains("at /home/user/proj/train.py:30 in <module>: state = "
                                   "torch.load(args.resume)"));
  EXPECT_THAT(f.fix, HasSubstr("os.replace()"));
  // The ranks of a torchrun job: one may have read it while another wrote it.
  EXPECT_THAT(f.fix, HasSubstr("dist.barrier() after rank 0's torch.save"));
  for (store::ProcessRecord& p : e.processes) p.world_size.reset();
  EXPECT_THAT(diagnose(e).findings[0].fix, Not(HasSubstr("dist.barrier()")));
}

// torch.save on a full disk (PyTorch 1.13): the write fails, closing the file fails again while
// handling that, the interpreter prints both, then aborts as it destroys the writer.
Evidence full_disk_save(double crash_seconds) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(
      e, 3.0, number,
      {"[default0]:Traceback (most recent call last):",
       std::string("[default0]:  File \"") + kSerialization + "\", line 423, in save",
       "[default0]:    _save(obj, opened_zipfile, pickle_module, pickle_protocol)",
       "[default0]:RuntimeError: [enforce fail at inline_container.cc:445] . PytorchStreamWriter "
       "failed writing file data/0: file write failed",
       "[default0]:",
       "[default0]:During handling of the above exception, another exception occurred:",
       "[default0]:", "[default0]:Traceback (most recent call last):",
       "[default0]:  File \"/home/user/proj/train.py\", line 41, in <module>",
       "[default0]:    torch.save(model.state_dict(), path)",
       std::string("[default0]:  File \"") + kSerialization + "\", line 290, in __exit__",
       "[default0]:    self.file_like.write_end_of_file()",
       "[default0]:RuntimeError: [enforce fail at inline_container.cc:325] . unexpected pos 448 "
       "vs 378",
       "[default0]:terminate called after throwing an instance of 'c10::Error'",
       "[default0]:  what():  [enforce fail at inline_container.cc:325] . unexpected pos 448 vs "
       "378",
       "[default0]:frame #0: <unknown function> + 0x4c062 (0x7f29e5bc4062 in "
       "/lib/x86_64-linux-gnu/libc10.so.1.13)"});
  killed(e, kRank0, crash_seconds + 0.1, SIGABRT);
  store::Crash crash;
  crash.pid = kRank0;
  crash.start_ticks = 500'100;
  crash.signo = SIGABRT;
  crash.code = -6;
  crash.time_ns = at(crash_seconds);
  e.crashes = {crash};
  return e;
}

TEST(CheckpointRules, ASaveOnAFullDiskIsTheCauseOfTheAbortThatFollows) {
  Diagnosis d = diagnose(full_disk_save(3.4));
  ASSERT_EQ(d.findings.size(), 2u);
  const Finding& root = d.findings[0];
  EXPECT_TRUE(root.root_cause);
  EXPECT_EQ(root.kind, FindingKind::kDiskFull);
  EXPECT_EQ(root.title,
            "rank 0 (pid 1010): torch.save could not write the checkpoint (record data/0): its "
            "filesystem is full or over quota");
  EXPECT_EQ(root.evidence.front(), "rank 0 (pid 1010) died of SIGABRT at +3.5 s");
  EXPECT_THAT(root.evidence,
              Contains("at /home/user/proj/train.py:41 in <module>: torch.save(model.state_dict(), "
                       "path)"));
  // The exception's message ends where libstdc++'s terminate handler begins.
  EXPECT_THAT(root.evidence, Contains(HasSubstr("unexpected pos 448 vs 378")));
  EXPECT_THAT(root.evidence, Not(Contains(HasSubstr("known error cpp.terminate"))));
  const Finding& abort = d.findings[1];
  EXPECT_EQ(abort.kind, FindingKind::kAbort);
  EXPECT_THAT(abort.title, HasSubstr("(in its teardown, after it raised RuntimeError)"));
  EXPECT_THAT(root.consequences, ElementsAre(1u));
}

TEST(CheckpointRules, AnExceptionReadAfterTheCrashRecordStillLeads) {
  // The crash record's time comes from the handler; the lines' from when they were read.
  Diagnosis d = diagnose(full_disk_save(2.9));
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kDiskFull);
  EXPECT_EQ(d.findings[1].kind, FindingKind::kAbort);
}

TEST(CheckpointRules, ACrashWithoutAnExceptionBeforeItStaysTheCause) {
  Evidence e = full_disk_save(3.4);
  e.log_lines.clear();
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kAbort);
  EXPECT_THAT(d.findings[0].title, Not(HasSubstr("teardown")));
}

}  // namespace
}  // namespace traindoc::analysis
