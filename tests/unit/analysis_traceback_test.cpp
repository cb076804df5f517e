// Tests of Python traceback parsing over kept log lines: PyTorch 1.13's chained DataLoader
// traceback (CASES.md T01), torchrun-prefixed interleaved ranks, sparse lines with gaps,
// multi-line messages, a DataLoader worker's embedded traceback, and the signatures they carry.
#include "analysis/traceback.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace traindoc::analysis {
namespace {

using store::LogLine;
using ::testing::ElementsAre;
using ::testing::IsSupersetOf;

constexpr int64_t kSecond = 1'000'000'000;

// Consecutive lines of one stream, numbered from `first`, read at `t` seconds.
std::vector<LogLine> lines(const std::vector<std::string>& texts, uint64_t first = 1,
                           double t = 10.0, const std::string& stream = "stderr") {
  std::vector<LogLine> out;
  out.reserve(texts.size());
  for (const std::string& text : texts) {
    out.push_back({static_cast<int64_t>(t * kSecond), stream, first++, text});
  }
  return out;
}

std::vector<std::string> match_ids(const PythonTraceback& tb) {
  std::vector<std::string> out;
  for (const SignatureMatch& m : match_traceback(tb)) out.push_back(m.id);
  return out;
}

const SignatureMatch* find(const std::vector<SignatureMatch>& ms, const std::string& id) {
  for (const SignatureMatch& m : ms) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

// PyTorch 1.13 on Python 3.11 (Debian), CASES.md T01: a worker's NULL dereference. The
// messages are the verified ones; the frames are those of 1.13's dataloader.py.
const std::vector<std::string> t01_lines = {
    "ERROR: Unexpected segmentation fault encountered in worker.",
    "Traceback (most recent call last):",
    ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1120, in "
     "_try_get_data"),
    "    data = self._data_queue.get(timeout=timeout)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 113, in get",
    "    if not self._poll(timeout):",
    "           ^^^^^^^^^^^^^^^^^^^",
    "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 256, in poll",
    "    return self._poll(timeout)",
    "           ^^^^^^^^^^^^^^^^^^^",
    "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 423, in _poll",
    "    r = wait([self], timeout)",
    "        ^^^^^^^^^^^^^^^^^^^^^",
    "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 930, in wait",
    "    ready = selector.select(timeout)",
    "            ^^^^^^^^^^^^^^^^^^^^^^^^",
    "  File \"/usr/lib/python3.11/selectors.py\", line 415, in select",
    "    fd_event_list = self._selector.poll(timeout)",
    "                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py\", line "
     "66, in handler"),
    "    _error_if_any_worker_fails()",
    "RuntimeError: DataLoader worker (pid 16088) is killed by signal: Segmentation fault. ",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    "  File \"/tmp/t01_segfault.py\", line 12, in <module>",
    "    next(iter(DataLoader(SegfaultDataset(10), batch_size=2, num_workers=2)))",
    ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 628, in "
     "__next__"),
    "    data = self._next_data()",
    "           ^^^^^^^^^^^^^^^^^",
    ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1316, in "
     "_next_data"),
    "    idx, data = self._get_data()",
    "                ^^^^^^^^^^^^^^^^",
    ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1282, in "
     "_get_data"),
    "    success, data = self._try_get_data()",
    "                    ^^^^^^^^^^^^^^^^^^^^",
    ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1133, in "
     "_try_get_data"),
    ("    raise RuntimeError('DataLoader worker (pid(s) {}) exited unexpectedly'.format(pids_str)) "
     "from e"),
    "RuntimeError: DataLoader worker (pid(s) 16088) exited unexpectedly",
};

TEST(TracebackParse, DataLoaderWorkerKilledChain113) {
  std::vector<LogLine> in = lines(t01_lines, 5, 3.5);
  in.back().t_ns = static_cast<int64_t>(3.6 * kSecond);
  std::vector<PythonTraceback> tbs = parse_tracebacks(in);
  ASSERT_EQ(tbs.size(), 2u);

  const PythonTraceback& killed = tbs[0];
  EXPECT_EQ(killed.exception_type, "RuntimeError");
  EXPECT_EQ(killed.message,
            "DataLoader worker (pid 16088) is killed by signal: Segmentation fault.");
  ASSERT_EQ(killed.frames.size(), 7u);
  EXPECT_EQ(killed.frames[0].file, "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py");
  EXPECT_EQ(killed.frames[0].line, 1120);
  EXPECT_EQ(killed.frames[0].function, "_try_get_data");
  EXPECT_EQ(killed.frames[0].code, "data = self._data_queue.get(timeout=timeout)");
  EXPECT_EQ(killed.frames[0].log_line, 7u);
  ASSERT_NE(killed.last_frame(), nullptr);
  EXPECT_EQ(killed.last_frame()->function, "handler");
  EXPECT_EQ(killed.last_frame()->line, 66);
  EXPECT_EQ(killed.last_frame()->code, "_error_if_any_worker_fails()");
  EXPECT_EQ(killed.first_line, 6u);
  EXPECT_EQ(killed.last_line, 27u);
  EXPECT_FALSE(killed.cause);
  EXPECT_FALSE(killed.incomplete);
  EXPECT_EQ(killed.stream, "stderr");
  EXPECT_EQ(killed.prefix_rank, std::nullopt);

  const PythonTraceback& exited = tbs[1];
  EXPECT_EQ(exited.exception_type, "RuntimeError");
  EXPECT_EQ(exited.message, "DataLoader worker (pid(s) 16088) exited unexpectedly");
  EXPECT_EQ(exited.cause, 0u);
  EXPECT_FALSE(exited.context);
  ASSERT_EQ(exited.frames.size(), 5u);
  EXPECT_EQ(exited.frames[0].file, "/tmp/t01_segfault.py");
  EXPECT_EQ(exited.frames[0].function, "<module>");
  EXPECT_EQ(exited.last_frame()->line, 1133);
  EXPECT_EQ(exited.last_frame()->code, ("raise RuntimeError('DataLoader worker (pid(s) {}) exited "
                                        "unexpectedly'.format(pids_str)) from e"));
  EXPECT_EQ(exited.first_line, 31u);
  EXPECT_EQ(exited.last_line, 45u);
  EXPECT_EQ(exited.t_ns, static_cast<int64_t>(3.6 * kSecond));
  EXPECT_FALSE(exited.incomplete);

  // The cause says what happened; the consequence only that something did.
  std::vector<SignatureMatch> ms = match_traceback(killed);
  const SignatureMatch* m = find(ms, "torch.dataloader-worker-killed");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->kind, FindingKind::kWorkerCrash);
  EXPECT_EQ(m->fields.at("worker_pid"), "16088");
  EXPECT_EQ(m->fields.at("signo"), "11");
  EXPECT_EQ(m->fields.at("exception_type"), "RuntimeError");
  EXPECT_THAT(match_ids(exited), ElementsAre("torch.dataloader-workers-exited"));
}

// The worker's message came out between a frame of the rank's traceback and its code, the NUL
// it writes starting the code's line, as a rank and its workers share one pipe (seen on a busy
// machine): the traceback goes on past it to its own exception.
TEST(TracebackParse, AWorkersLineInsideTheRanksTracebackIsNotItsException) {
  std::vector<std::string> texts(t01_lines.begin() + 1, t01_lines.end());
  auto code = std::find(texts.begin(), texts.end(), "    data = self._next_data()");
  ASSERT_NE(code, texts.end());
  code->insert(0, 1, '\0');
  texts.insert(code, t01_lines.front());
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines(texts));
  ASSERT_EQ(tbs.size(), 2u);
  const PythonTraceback& exited = tbs[1];
  EXPECT_EQ(exited.exception_type, "RuntimeError");
  EXPECT_EQ(exited.message, "DataLoader worker (pid(s) 16088) exited unexpectedly");
  EXPECT_EQ(exited.cause, 0u);
  EXPECT_FALSE(exited.incomplete);
  ASSERT_EQ(exited.frames.size(), 5u);
  EXPECT_EQ(exited.frames[1].code, "data = self._next_data()");
  EXPECT_THAT(match_ids(exited), ElementsAre("torch.dataloader-workers-exited"));
}

// As PyTorch 1.13's torch.multiprocessing.spawn prints a started process's exception.
const std::vector<std::string> kSpawnedRaised = {
    "Traceback (most recent call last):",
    "  File \"/home/user/proj/train.py\", line 11, in <module>",
    "    mp.spawn(run, args=(2,), nprocs=2)",
    "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 160, in join",
    "    raise ProcessRaisedException(msg, error_index, failed_process.pid)",
    "torch.multiprocessing.spawn.ProcessRaisedException: ",
    "",
    "-- Process 1 terminated with the following error:",
    "Traceback (most recent call last):",
    "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 69, in _wrap",
    "    fn(i, *args)",
    "  File \"/home/user/proj/train.py\", line 8, in run",
    "    raise RuntimeError(\"bad batch on rank 1\")",
    "RuntimeError: bad batch on rank 1",
};

TEST(TracebackParse, ASpawnedProcessesExceptionIsMarkedAsItsOwn) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines(kSpawnedRaised));
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_EQ(tbs[0].exception_type, "torch.multiprocessing.spawn.ProcessRaisedException");
  EXPECT_FALSE(tbs[0].spawned_process.has_value());
  EXPECT_EQ(tbs[1].exception_type, "RuntimeError");
  EXPECT_EQ(tbs[1].spawned_process, 1);
  EXPECT_EQ(tbs[1].frames.back().function, "run");
  // Only right before its traceback.
  std::vector<std::string> apart = kSpawnedRaised;
  apart.insert(apart.begin() + 8, "some other line");
  tbs = parse_tracebacks(lines(apart));
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_FALSE(tbs[1].spawned_process.has_value());
}

// threading prints the exception that ended a thread after naming the thread (3.10+ adds the
// target's name); the process goes on.
TEST(TracebackParse, AThreadsExceptionNamesTheThread) {
  const std::vector<std::string> thread_died = {
      "Exception in thread Thread-1 (prefetch):",
      "Traceback (most recent call last):",
      "  File \"/usr/lib/python3.11/threading.py\", line 1038, in _bootstrap_inner",
      "  File \"/home/user/proj/train.py\", line 6, in prefetch",
      "OSError: [Errno 5] Input/output error",
  };
  std::vector<std::string> texts = thread_died;
  texts.insert(texts.end(),
               {"Traceback (most recent call last):",
                "  File \"/home/user/proj/train.py\", line 9, in <module>", "KeyError: 'label'"});
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines(texts));
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_EQ(tbs[0].thread, "Thread-1 (prefetch)");
  EXPECT_EQ(tbs[0].exception_type, "OSError");
  EXPECT_EQ(tbs[1].thread, "");  // the main thread's own, after it

  // Two threads dying at once: the second's name ends the first's message. One glued to a
  // progress bar is named too.
  texts = thread_died;
  texts.push_back("Epoch 1: 45%|####  | 450/1000 [00:10<00:12]Exception in thread loader-2:");
  texts.insert(texts.end(), thread_died.begin() + 1, thread_died.end());
  tbs = parse_tracebacks(lines(texts));
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_EQ(tbs[0].message, "[Errno 5] Input/output error");
  EXPECT_EQ(tbs[1].thread, "loader-2");

  // Python names the thread once for a chain: the exception that ended it is the last one.
  texts = thread_died;
  texts.insert(texts.end(),
               {"", "The above exception was the direct cause of the following exception:", "",
                "Traceback (most recent call last):",
                "  File \"/home/user/proj/train.py\", line 8, in prefetch",
                "RuntimeError: shard 3 unreadable"});
  tbs = parse_tracebacks(lines(texts));
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_EQ(tbs[1].cause, 0u);
  EXPECT_EQ(tbs[1].thread, "Thread-1 (prefetch)");
}

// Lines that end an exception's message: a Python warning printed as the interpreter shuts
// down, a glog record of PyTorch 1.13. torchrun's summary field "traceback : Traceback (...)"
// is no traceback of its own.
TEST(TracebackParse, WhatEndsAMessageAndWhatIsNoHeader) {
  for (std::string after :
       {"/usr/lib/python3.11/multiprocessing/resource_tracker.py:224: UserWarning: "
        "resource_tracker: There appear to be 1 leaked semaphore objects to clean up at shutdown",
        "W20261126 04:43:28.576334 24431 reducer.cpp:1298] Warning: find_unused_parameters=True"}) {
    std::vector<PythonTraceback> tbs = parse_tracebacks(
        lines({"Traceback (most recent call last):",
               "  File \"/home/user/train.py\", line 3, in <module>", "KeyError: 'label'", after}));
    ASSERT_EQ(tbs.size(), 1u);
    EXPECT_EQ(tbs[0].message, "'label'") << after;
  }
  // logging.error(traceback.format_exc()) with logging's default format is a traceback.
  std::vector<PythonTraceback> tbs = parse_tracebacks(
      lines({"ERROR:root:Traceback (most recent call last):",
             "  File \"/home/user/train.py\", line 3, in <module>", "KeyError: 'label'"}));
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_FALSE(tbs[0].incomplete);
  tbs = parse_tracebacks(lines({
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
      "  traceback : Traceback (most recent call last):",
      "  File \"/home/user/train.py\", line 3, in <module>",
  }));
  for (const PythonTraceback& tb : tbs) EXPECT_NE(tb.first_line, 2u);
}

// torchrun --tee printed a line its rank had not finished writing in two pieces, the second
// after the prefix again: the message is the rank's, whole.
TEST(TracebackParse, ALineTheTeeSplitIsJoined) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "[default1]:Traceback (most recent call last):",
      "[default1]:  File \"/home/user/train.py\", line 40, in <module>",
      "[default1]:    loss.backward()",
      "[default1]:RuntimeError: Expected to mark a variable ready only once. This error is caused "
      "by one of the following reasons: 1) Use of a module parameter outside the `forward` "
      "function.",
      "[default1]:Parameter at index 1 has been mar[default1]:ked as ready twice. This means that "
      "multiple autograd engine  hooks have fired for this particular parameter during this "
      "iteration.",
  }));
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_THAT(tbs[0].message,
              ::testing::HasSubstr("Parameter at index 1 has been marked as ready"));
  std::vector<SignatureMatch> ms = match_traceback(tbs[0]);
  const SignatureMatch* m = find(ms, "torch.ddp-ready-twice");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fields.at("param_index"), "1");
}

TEST(TracebackParse, TorchrunTeeInterleavedRanks) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "[default0]:Traceback (most recent call last):",
      "[default1]:Traceback (most recent call last):",
      "[default0]:  File \"/home/user/train.py\", line 40, in <module>",
      "[default1]:  File \"/home/user/train.py\", line 40, in <module>",
      "[default0]:    main()",
      "[default1]:    main()",
      "[default0]:  File \"/home/user/train.py\", line 31, in main",
      "[default0]:    loss = criterion(out, target)",
      "[default1]:  File \"/home/user/train.py\", line 33, in main",
      "[default1]:    dist.all_reduce(t)",
      "[default0]:IndexError: Target 255 is out of bounds.",
      ("[default1]:RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
       "[127.0.0.1]:61103"),
      ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
       "(pid: 4242) of binary: /usr/bin/python3"),
  }));
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_EQ(tbs[0].prefix, "[default0]:");
  EXPECT_EQ(tbs[0].prefix_rank, 0);
  EXPECT_EQ(tbs[0].exception_type, "IndexError");
  EXPECT_EQ(tbs[0].message, "Target 255 is out of bounds.");
  ASSERT_EQ(tbs[0].frames.size(), 2u);
  EXPECT_EQ(tbs[0].last_frame()->code, "loss = criterion(out, target)");
  EXPECT_EQ(tbs[0].first_line, 1u);
  EXPECT_EQ(tbs[0].last_line, 11u);
  EXPECT_FALSE(tbs[0].incomplete);
  EXPECT_EQ(tbs[1].prefix_rank, 1);
  EXPECT_EQ(tbs[1].exception_type, "RuntimeError");
  EXPECT_EQ(tbs[1].last_frame()->line, 33);
  EXPECT_EQ(tbs[1].last_line, 12u);
  EXPECT_FALSE(tbs[1].cause);

  std::vector<SignatureMatch> ms = match_traceback(tbs[0]);
  const SignatureMatch* m = find(ms, "torch.target-out-of-bounds");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->kind, FindingKind::kLabelOutOfRange);
  EXPECT_EQ(m->fields.at("label"), "255");
  EXPECT_EQ(m->fields.at("prefix_rank"), "0");
  ms = match_traceback(tbs[1]);
  m = find(ms, "gloo.connection-closed");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fields.at("prefix_rank"), "1");
  EXPECT_EQ(m->fields.at("peer_port"), "61103");
}

TEST(TracebackParse, Torch2RankPrefixWithSpace) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "[rank0]: Traceback (most recent call last):",
      "[rank0]:   File \"/workspace/train.py\", line 10, in <module>",
      "[rank0]:     main()",
      "[rank0]:   File \"/workspace/train.py\", line 7, in main",
      "[rank0]:     y = model(x)",
      "[rank0]:         ^^^^^^^^",
      ("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
       "a total capacity of 79.15 GiB of which 1.2 GiB is free. Including non-PyTorch memory, this "
       "process has 77.9 GiB memory in use. Of the allocated memory 70.1 GiB is allocated by "
       "PyTorch, and 6.5 GiB is reserved by PyTorch but unallocated."),
      ("E0709 17:05:38.123000 140 torch/distributed/elastic/multiprocessing/api.py:833] failed "
       "(exitcode: 1) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3.12"),
  }));
  ASSERT_EQ(tbs.size(), 1u);
  const PythonTraceback& tb = tbs[0];
  EXPECT_EQ(tb.prefix, "[rank0]: ");
  EXPECT_EQ(tb.prefix_rank, 0);
  EXPECT_EQ(tb.exception_type, "torch.OutOfMemoryError");
  ASSERT_EQ(tb.frames.size(), 2u);
  EXPECT_EQ(tb.frames[0].code, "main()");
  EXPECT_EQ(tb.last_frame()->code, "y = model(x)");
  EXPECT_EQ(tb.last_line, 7u);
  std::vector<SignatureMatch> ms = match_traceback(tb);
  const SignatureMatch* m = find(ms, "torch.cuda-oom");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->kind, FindingKind::kGpuFragmentation);
  EXPECT_EQ(m->fields.at("gpu"), "0");
  EXPECT_EQ(m->fields.at("requested_bytes"), "2147483648");
  EXPECT_EQ(m->fields.at("prefix_rank"), "0");
  EXPECT_EQ(m->fields.at("exception_type"), "torch.OutOfMemoryError");
}

// The log tap keeps the first and last lines of a stream and those with anchors ("rror",
// "xception", "Traceback"...): frames and blank lines in between are often missing.
TEST(TracebackParse, SparseLinesWithGaps) {
  std::vector<LogLine> in;
  auto add = [&](uint64_t number, double t, const std::string& text) {
    in.push_back({static_cast<int64_t>(t * kSecond), "stderr", number, text});
  };
  add(200, 10.0, "Traceback (most recent call last):");
  add(201, 10.0, "  File \"/home/user/proj/train.py\", line 77, in <module>");
  // 202..213 not kept
  add(214, 10.0, "RuntimeError: DataLoader worker (pid(s) 42) exited unexpectedly");
  // 215 (blank) not kept
  add(216, 10.0, "The above exception was the direct cause of the following exception:");
  // 217 (blank) not kept
  add(218, 10.0, "Traceback (most recent call last):");
  // 219..229 not kept
  add(230, 10.1, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ");
  std::vector<PythonTraceback> tbs = parse_tracebacks(in);
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_TRUE(tbs[0].incomplete);
  EXPECT_EQ(tbs[0].exception_type, "RuntimeError");
  ASSERT_EQ(tbs[0].frames.size(), 1u);
  EXPECT_EQ(tbs[0].frames[0].line, 77);
  EXPECT_EQ(tbs[0].first_line, 200u);
  EXPECT_EQ(tbs[0].last_line, 214u);
  EXPECT_TRUE(tbs[1].incomplete);
  EXPECT_EQ(tbs[1].cause, 0u);  // the chain survives the missing blank lines
  EXPECT_TRUE(tbs[1].frames.empty());
  EXPECT_EQ(tbs[1].exception_type,
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError");
  EXPECT_EQ(tbs[1].last_line, 230u);
  EXPECT_EQ(tbs[1].t_ns, static_cast<int64_t>(10.1 * kSecond));
  EXPECT_THAT(match_ids(tbs[1]), ElementsAre("torchrun.child-failed"));
}

TEST(TracebackParse, SparseStartsMidTracebackAndCutAtTheEnd) {
  std::vector<LogLine> in;
  auto add = [&](uint64_t number, const std::string& text) {
    in.push_back({10 * kSecond, "stderr", number, text});
  };
  // The header fell between the first and the last 100 lines: only the tail is kept.
  add(900, ("  File \"/usr/lib/python3/dist-packages/torch/nn/functional.py\", line 3029, in "
            "cross_entropy"));
  add(901, "    return torch._C._nn.cross_entropy_loss(input, target, weight, reduction)");
  add(902, "IndexError: Target 255 is out of bounds.");
  add(950, "Traceback (most recent call last):");
  add(951, "  File \"/home/user/train.py\", line 3, in <module>");
  std::vector<PythonTraceback> tbs = parse_tracebacks(in);
  ASSERT_EQ(tbs.size(), 2u);
  EXPECT_TRUE(tbs[0].incomplete);
  EXPECT_EQ(tbs[0].exception_type, "IndexError");
  EXPECT_EQ(tbs[0].last_frame()->function, "cross_entropy");
  EXPECT_EQ(tbs[0].first_line, 900u);
  EXPECT_TRUE(tbs[1].incomplete);  // no exception line: the output ended
  EXPECT_EQ(tbs[1].exception_type, "");
  EXPECT_EQ(tbs[1].frames.size(), 1u);
  EXPECT_TRUE(match_traceback(tbs[1]).empty());
}

TEST(TracebackParse, MultiLineMessageEndsAtALogRecord) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "  File \"/home/user/train.py\", line 5, in <module>",
      "    dist.barrier()",
      ("torch.distributed.DistBackendError: NCCL error in: "
       "../torch/csrc/distributed/c10d/NCCLUtils.cpp:94, unhandled cuda error (run with "
       "NCCL_DEBUG=INFO for details), NCCL version 2.19.3"),
      "ncclUnhandledCudaError: Call to CUDA function failed.",
      "Last error:",
      "Cuda failure 2 'out of memory'",
      ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
       "(pid: 4242) of binary: /usr/bin/python3"),
  }));
  ASSERT_EQ(tbs.size(), 1u);
  const PythonTraceback& tb = tbs[0];
  EXPECT_EQ(tb.exception_type, "torch.distributed.DistBackendError");
  EXPECT_EQ(tb.message,
            ("NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:94, unhandled cuda error "
             "(run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
             "ncclUnhandledCudaError: Call to CUDA function failed.\n"
             "Last error:\n"
             "Cuda failure 2 'out of memory'"));
  EXPECT_EQ(tb.last_line, 7u);
  EXPECT_FALSE(tb.incomplete);
  std::vector<SignatureMatch> ms = match_traceback(tb);
  EXPECT_THAT(match_ids(tb), IsSupersetOf({"torch.nccl-error", "torch.dist-backend-error",
                                           "nccl.result", "nccl.cuda-oom"}));
  const SignatureMatch* oom = find(ms, "nccl.cuda-oom");
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->kind, FindingKind::kGpuOom);
  EXPECT_EQ(oom->fields.at("exception_type"), "torch.distributed.DistBackendError");
}

TEST(TracebackParse, MultiLineMessageEndsAtAPause) {
  std::vector<LogLine> in = lines({
      "Traceback (most recent call last):",
      "  File \"t.py\", line 1, in <module>",
      "ValueError: first line",
      "  second line, indented",
      "third line",
      "epoch 2 starts",
  });
  in.back().t_ns += 2 * kSecond;
  std::vector<PythonTraceback> tbs = parse_tracebacks(in);
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_EQ(tbs[0].message, "first line\n  second line, indented\nthird line");
  EXPECT_EQ(tbs[0].last_line, 5u);
}

// TensorFlow's op error holds blank lines (tf_label_255.txt's layout, TF 2.16 with Keras 3):
// the op's message after them is the exception's, and what follows the message still ends it.
TEST(TracebackParse, TensorFlowGraphErrorSpansBlankLines) {
  const std::string received =
      "Received a label value of 255 which is outside the valid range of [0, 19).  Label "
      "values: 7 255 0";
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "  File \"/home/user/proj/train.py\", line 67, in <module>",
      "    history = model.fit(train_ds, epochs=20)",
      ("tensorflow.python.framework.errors_impl.InvalidArgumentError: Graph execution error:"),
      "",
      "Detected at node compile_loss/SparseSoftmaxCrossEntropyWithLogits defined at (most "
      "recent call last):",
      "  File \"/home/user/proj/train.py\", line 67, in <module>",
      "",
      received,
      "\t [[{{node compile_loss/SparseSoftmaxCrossEntropyWithLogits}}]] [Op:__inference_12032]",
      "",
      "W20261126 04:43:28.576334 24431 reducer.cpp:1298] Warning: the next writer's record",
  }));
  ASSERT_EQ(tbs.size(), 1u);
  const PythonTraceback& tb = tbs[0];
  EXPECT_EQ(tb.exception_type, "tensorflow.python.framework.errors_impl.InvalidArgumentError");
  EXPECT_EQ(tb.message,
            "Graph execution error:\n\nDetected at node compile_loss/"
            "SparseSoftmaxCrossEntropyWithLogits defined at (most recent call last):\n  File "
            "\"/home/user/proj/train.py\", line 67, in <module>\n\n" +
                received +
                "\n\t [[{{node compile_loss/SparseSoftmaxCrossEntropyWithLogits}}]] "
                "[Op:__inference_12032]");
  EXPECT_EQ(tb.last_line, 10u);
  const SignatureMatch* label = find(match_traceback(tb), "tf.label-out-of-range");
  ASSERT_NE(label, nullptr);
  EXPECT_EQ(label->fields.at("classes"), "19");

  // Another exception's message still ends at its first blank line.
  tbs = parse_tracebacks(
      lines({"Traceback (most recent call last):", "  File \"t.py\", line 1, in <module>",
             "ValueError: first line", "", "epoch 2 starts"}));
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_EQ(tbs[0].message, "first line");
}

// A progress bar whose last redraw did not end its line: Python's header follows it on that line.
TEST(TracebackParse, AHeaderGluedToAProgressBar) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Epoch 1:  45%|####      | 450/1000 [00:10<00:12, 44.1it/s]Traceback (most recent call "
      "last):",
      "  File \"/home/user/train.py\", line 7, in load",
      "    return row[\"label\"]",
      "KeyError: 'label'",
  }));
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_FALSE(tbs[0].incomplete);
  EXPECT_EQ(tbs[0].first_line, 1u);
  EXPECT_EQ(tbs[0].exception_type, "KeyError");
  EXPECT_EQ(tbs[0].frames.size(), 1u);
}

TEST(TracebackParse, DataLoaderWorkerOriginalTraceback) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "  File \"/home/user/train.py\", line 20, in <module>",
      "    for batch in loader:",
      ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1345, in "
       "_process_data"),
      "    data.reraise()",
      "  File \"/usr/lib/python3/dist-packages/torch/_utils.py\", line 543, in reraise",
      "    raise exception",
      "KeyError: Caught KeyError in DataLoader worker process 0.",
      "Original Traceback (most recent call last):",
      ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 302, in "
       "_worker_loop"),
      "    data = fetcher.fetch(index)",
      ("  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 58, in "
       "fetch"),
      "    data = [self.dataset[idx] for idx in possibly_batched_index]",
      "  File \"/home/user/train.py\", line 12, in __getitem__",
      "    return self.items[i][\"label\"]",
      "KeyError: 'label'",
      "",
  }));
  ASSERT_EQ(tbs.size(), 2u);
  const PythonTraceback& outer = tbs[0];
  EXPECT_EQ(outer.exception_type, "KeyError");
  EXPECT_THAT(outer.message, ::testing::StartsWith("Caught KeyError in DataLoader worker process "
                                                   "0.\nOriginal Traceback"));
  EXPECT_EQ(outer.frames.size(), 3u);
  EXPECT_EQ(outer.original, 1u);
  EXPECT_EQ(outer.last_line, 16u);
  const PythonTraceback& worker = tbs[1];
  EXPECT_TRUE(worker.embedded);
  EXPECT_EQ(worker.exception_type, "KeyError");
  EXPECT_EQ(worker.message, "'label'");
  ASSERT_EQ(worker.frames.size(), 3u);
  EXPECT_EQ(worker.last_frame()->file, "/home/user/train.py");
  EXPECT_EQ(worker.last_frame()->line, 12);
  EXPECT_EQ(worker.last_frame()->function, "__getitem__");
  EXPECT_EQ(worker.first_line, 9u);
  EXPECT_EQ(worker.last_line, 16u);
  const SignatureMatch* m = nullptr;
  std::vector<SignatureMatch> ms = match_traceback(outer);
  m = find(ms, "torch.dataloader-worker-exception");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fields.at("worker_exception_type"), "KeyError");
}

TEST(TracebackParse, DuringHandlingContextAndIndependentTracebacks) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "  File \"a.py\", line 2, in <module>",
      "    d[\"x\"]",
      "KeyError: 'x'",
      "",
      "During handling of the above exception, another exception occurred:",
      "",
      "Traceback (most recent call last):",
      "  File \"a.py\", line 4, in <module>",
      "    raise ValueError(\"bad\")",
      "ValueError: bad",
      "Traceback (most recent call last):",
      "  File \"b.py\", line 1, in <module>",
      "KeyboardInterrupt",
  }));
  ASSERT_EQ(tbs.size(), 3u);
  EXPECT_EQ(tbs[1].context, 0u);
  EXPECT_FALSE(tbs[1].cause);
  EXPECT_EQ(tbs[1].exception_type, "ValueError");
  EXPECT_FALSE(tbs[2].context);
  EXPECT_FALSE(tbs[2].cause);
  EXPECT_EQ(tbs[2].exception_type, "KeyboardInterrupt");
  EXPECT_EQ(tbs[2].message, "");
}

TEST(TracebackParse, StreamsAreFollowedSeparately) {
  std::vector<LogLine> in = lines({"Traceback (most recent call last):"}, 50, 10.0, "stderr");
  for (const LogLine& l : lines({"step 1", "step 2"}, 7, 10.0, "stdout")) in.push_back(l);
  for (const LogLine& l : lines({"  File \"x.py\", line 9, in f",
                                 "OSError: [Errno 24] Too many "
                                 "open files"},
                                51, 10.0, "stderr")) {
    in.push_back(l);
  }
  std::vector<PythonTraceback> tbs = parse_tracebacks(in);
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_FALSE(tbs[0].incomplete);  // stdout's numbers are no gap in stderr
  EXPECT_EQ(tbs[0].exception_type, "OSError");
  EXPECT_THAT(match_ids(tbs[0]), ElementsAre("python.too-many-open-files"));
}

TEST(TracebackParse, SyntaxErrorFrameWithoutFunction) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "  File \"/home/user/train.py\", line 3",
      "    x = (",
      "        ^",
      "SyntaxError: '(' was never closed",
  }));
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_EQ(tbs[0].frames[0].line, 3);
  EXPECT_EQ(tbs[0].frames[0].function, "");
  EXPECT_EQ(tbs[0].exception_type, "SyntaxError");
}

// Debian's torchrun (1.13, Python 3.11) with the default --redirects: DESIGN.md.
TEST(TracebackParse, TorchrunRedirectsBug) {
  const std::string api = "/usr/lib/python3/dist-packages/torch/distributed/";
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "  File \"/usr/bin/torchrun\", line 33, in <module>",
      "    sys.exit(load_entry_point('torch==1.13.1', 'console_scripts', 'torchrun')())",
      "  File \"" + api + "elastic/multiprocessing/errors/__init__.py\", line 346, in wrapper",
      "    return f(*args, **kwargs)",
      "  File \"" + api + "run.py\", line 762, in main",
      "    run(args)",
      "  File \"" + api + "launcher/api.py\", line 246, in launch_agent",
      "    result = agent.run()",
      "  File \"" + api + "elastic/multiprocessing/__init__.py\", line 236, in start_processes",
      "    redirs = to_map(redirects, nprocs)",
      "  File \"" + api + "elastic/multiprocessing/api.py\", line 141, in to_map",
      "    map[i] = val_or_map.get(i, Std.NONE)",
      "AttributeError: 'NoneType' object has no attribute 'get'",
  }));
  ASSERT_EQ(tbs.size(), 1u);
  std::vector<SignatureMatch> ms = match_traceback(tbs[0]);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].id, "torchrun.redirects-none");
  EXPECT_EQ(ms[0].kind, FindingKind::kLauncherBug);
  EXPECT_EQ(ms[0].fields.at("exception_type"), "AttributeError");
}

// torchrun's own traceback when a rank failed: the failure summary is the message.
TEST(TracebackParse, TorchrunChildFailedSummary) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "  File \"/usr/bin/torchrun\", line 33, in <module>",
      ("    sys.exit(load_entry_point('torch==1.13.1', 'console_scripts', "
       "'torchrun')())"),
      ("  File \"/usr/lib/python3/dist-packages/torch/distributed/launcher/api.py\", line 246, in "
       "launch_agent"),
      "    raise ChildFailedError(",
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
      "============================================================",
      "train.py FAILED",
      "------------------------------------------------------------",
      "Failures:",
      "  <NO_OTHER_FAILURES>",
      "------------------------------------------------------------",
      "Root Cause (first observed failure):",
      "[0]:",
      "  time      : 2024-05-01_10:00:00",
      "  host      : node17",
      "  rank      : 0 (local_rank: 0)",
      "  exitcode  : -9 (pid: 4242)",
      "  error_file: <N/A>",
      "  traceback : Signal 9 (SIGKILL) received by PID 4242",
      "============================================================",
  }));
  ASSERT_EQ(tbs.size(), 1u);
  const PythonTraceback& tb = tbs[0];
  EXPECT_EQ(tb.exception_type, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError");
  EXPECT_EQ(tb.last_frame()->function, "launch_agent");
  EXPECT_EQ(tb.last_line, 21u);
  std::vector<SignatureMatch> ms = match_traceback(tb);
  EXPECT_THAT(match_ids(tb), ElementsAre("torchrun.child-failed", "torchrun.root-cause-exitcode",
                                         "torchrun.signal-received"));
  EXPECT_EQ(find(ms, "torchrun.root-cause-exitcode")->fields.at("exit_code"), "-9");
  EXPECT_EQ(find(ms, "torchrun.signal-received")->fields.at("signo"), "9");
}

TEST(TracebackParse, NothingToParse) {
  EXPECT_TRUE(parse_tracebacks({}).empty());
  EXPECT_TRUE(parse_tracebacks(lines({"epoch 1", "UserWarning: only a warning", "",
                                      "The above exception was the direct cause of the "
                                      "following exception:"}))
                  .empty());
}

TEST(TracebackParse, ExceptionLineWithoutItsTraceback) {
  // Printed alone: the exception, complete as printed.
  std::vector<PythonTraceback> found =
      parse_tracebacks(lines({"epoch 1", "RuntimeError: not in a traceback", "epoch 2"}));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].exception_type, "RuntimeError");
  EXPECT_EQ(found[0].message, "not in a traceback\nepoch 2");
  EXPECT_TRUE(found[0].frames.empty());
  EXPECT_FALSE(found[0].incomplete);

  // Lines before it were not kept: its frames may have been among them.
  found = parse_tracebacks(lines({"RuntimeError: not in a traceback"}, 40));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].incomplete);
}

TEST(TracebackParse, SyntaxErrorOfTheScriptIsComplete) {
  // Python compiles the script before running it: no "Traceback" header, nothing lost.
  std::vector<PythonTraceback> found = parse_tracebacks(
      lines({"  File \"/tmp/train.py\", line 3", "    print(1)", "    ^",
             "IndentationError: expected an indented block after 'if' statement on line 2"}));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].exception_type, "IndentationError");
  ASSERT_EQ(found[0].frames.size(), 1u);
  EXPECT_EQ(found[0].frames[0].line, 3);
  EXPECT_FALSE(found[0].incomplete);
}

// Two forkserver workers failing alike print their tracebacks at the same moment, line by line
// into one another (as read from a real run): two tracebacks, each with its exception.
TEST(TracebackParse, TwoPrintedAtOnceAreTwo) {
  const std::string forkserver = "  File \"/usr/lib/python3.11/multiprocessing/forkserver.py\"";
  const std::string spawn = "  File \"/usr/lib/python3.11/multiprocessing/spawn.py\"";
  const std::string error =
      "AttributeError: Can't get attribute 'Squares' on <module '__main__' (built-in)>";
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "Traceback (most recent call last):",
      forkserver + ", line 274, in main",
      "    code = _serve_one(child_r, fds,",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^",
      forkserver + ", line 313, in _serve_one",
      forkserver + ", line 274, in main",
      "    code = spawn._main(child_r, parent_sentinel)",
      "    code = _serve_one(child_r, fds,",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^",
      forkserver + ", line 313, in _serve_one",
      "     code = spawn._main(child_r, parent_sentinel)",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      spawn + ", line 130, in _main",
      "      self = reduction.pickle.load(from_parent)",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      error,
      "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      spawn + ", line 130, in _main",
      "    self = reduction.pickle.load(from_parent)",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      error,
      "Traceback (most recent call last):",
      "  File \"<string>\", line 8, in <module>",
      "RuntimeError: DataLoader worker (pid(s) 8323, 8324) exited unexpectedly",
  }));
  ASSERT_EQ(tbs.size(), 3u);
  for (size_t i : {0, 1}) {
    EXPECT_EQ(tbs[i].exception_type, "AttributeError") << i;
    EXPECT_EQ(tbs[i].message, error.substr(error.find(": ") + 2)) << i;
    EXPECT_EQ(tbs[i].frames.back().file, "/usr/lib/python3.11/multiprocessing/spawn.py") << i;
  }
  EXPECT_EQ(tbs[0].first_line, 1u);
  EXPECT_EQ(tbs[0].last_line, 17u);
  EXPECT_EQ(tbs[1].first_line, 18u);
  EXPECT_EQ(tbs[1].last_line, 22u);
  EXPECT_EQ(tbs[2].exception_type, "RuntimeError");
}

// CASES.md T03 as it came out once (PyTorch 1.13, Python 3.11): the rank's DataLoader worker was
// killed while the rank fetched a batch it had made, and while Python printed the EOFError, the
// DataLoader's SIGCHLD handler raised: CPython dumped the exception object instead of its line.
TEST(Traceback, AnExceptionCPythonCouldNotFinishPrintingIsReadFromItsDump) {
  std::vector<PythonTraceback> tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "  File \"/job/worker_killed.py\", line 24, in <module>",
      "    for batch in DataLoader(Images(), batch_size=8, num_workers=2):",
      ("  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/reductions.py\", line 305, "
       "in rebuild_storage_fd"),
      "    fd = df.detach()",
      "         ^^^^^^^^^^^",
      "  File \"/usr/lib/python3.11/multiprocessing/resource_sharer.py\", line 57, in detach",
      "    with _resource_sharer.get_connection(self._id) as conn:",
      "         ^^object address  : 0x7f0561b4dd80",
      "object refcount : 2",
      "object type     : 0x9f0c60",
      "object type name: EOFError",
      "object repr     : EOFError()",
      "lost sys.stderr",
  }));
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_EQ(tbs[0].exception_type, "EOFError");
  EXPECT_EQ(tbs[0].message, "");
  EXPECT_TRUE(tbs[0].incomplete);
  ASSERT_EQ(tbs[0].frames.size(), 3u);
  EXPECT_EQ(tbs[0].frames[2].function, "detach");
  EXPECT_EQ(tbs[0].last_line, 14u);

  tbs = parse_tracebacks(lines({
      "Traceback (most recent call last):",
      "  File \"/job/train.py\", line 3, in <module>",
      "    next(it)",
      "    ^^^^object address  : 0x7f0561b4dd80",
      "object refcount : 3",
      "object type     : 0x9f0c60",
      "object type name: RuntimeError",
      "object repr     : RuntimeError('DataLoader worker (pid(s) 42) exited unexpectedly')",
      "lost sys.stderr",
  }));
  ASSERT_EQ(tbs.size(), 1u);
  EXPECT_EQ(tbs[0].exception_type, "RuntimeError");
  EXPECT_EQ(tbs[0].message, "DataLoader worker (pid(s) 42) exited unexpectedly");
  EXPECT_THAT(match_ids(tbs[0]), IsSupersetOf({"torch.dataloader-workers-exited"}));
}

}  // namespace
}  // namespace traindoc::analysis
