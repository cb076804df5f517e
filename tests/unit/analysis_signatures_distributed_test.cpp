// Tests of the distributed signatures on real texts (CASES.md, distributed.md): DDP, c10d and
// gloo, TORCH_DISTRIBUTED_DEBUG=DETAIL, ProcessGroupNCCL's watchdog in its 1.12 to 2.x formats,
// NCCL warnings, the store and rendezvous, torchrun and torch.multiprocessing.spawn.
// Each asserts the id, kind, failure flag and extracted fields (numbers exact).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/signatures.h"
#include "signature_test_util.h"

namespace traindoc::analysis {
namespace {

using signature_test::expect_fields;
using signature_test::expect_no_field;
using signature_test::Fields;
using signature_test::ids;
using signature_test::match;
using ::testing::IsSupersetOf;
using ::testing::UnorderedElementsAre;

// ---- DDP ---------------------------------------------------------------------------------------

TEST(SignatureDdp, UnusedParameters113) {
  // CASES.md T29 (verified, 1.13 gloo, 2nd iteration), as one line.
  const std::string line =
      "RuntimeError: Expected to have finished reduction in the prior iteration before starting a "
      "new one. This error indicates that your module has parameters that were not used in "
      "producing loss. You can enable unused parameter detection by passing the keyword argument "
      "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by making "
      "sure all `forward` function outputs participate in calculating loss. Parameter indices "
      "which did not receive grad for rank 0: 0  In addition, you can set the environment "
      "variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out information about "
      "which particular parameters did not receive gradient on this rank as part of this error";
  EXPECT_THAT(ids(line), UnorderedElementsAre("torch.ddp-unfinished-reduction",
                                              "torch.ddp-unused-param-indices"));
  EXPECT_EQ(match(line, "torch.ddp-unfinished-reduction").kind, FindingKind::kDdpUnusedParameters);
  expect_fields(match(line, "torch.ddp-unused-param-indices"),
                {{"rank", "0"}, {"param_indices", "0"}});
  // With TORCH_DISTRIBUTED_DEBUG=INFO
  SignatureMatch m = match("Parameters which did not receive grad for rank 0: a.weight",
                           "torch.ddp-unused-param-names");
  EXPECT_EQ(m.kind, FindingKind::kDdpUnusedParameters);
  expect_fields(m, {{"rank", "0"}, {"param_names", "a.weight"}});
  m = match("[Rank 0] Parameter: a.weight did not get gradient in backwards pass.",
            "torch.ddp-param-no-grad");
  EXPECT_FALSE(m.failure);
  expect_fields(m, {{"rank", "0"}, {"param_names", "a.weight"}});
}

TEST(SignatureDdp, UnusedParameters2xPrefixed) {
  SignatureMatch m =
      match("[rank1]: Parameter indices which did not receive grad for rank 1: 9 10 11",
            "torch.ddp-unused-param-indices");
  expect_fields(m, {{"rank", "1"}, {"param_indices", "9,10,11"}, {"prefix_rank", "1"}});
  m = match("Parameters which did not receive grad for rank 3: aux_head.weight, aux_head.bias",
            "torch.ddp-unused-param-names");
  expect_fields(m, {{"rank", "3"}, {"param_names", "aux_head.weight,aux_head.bias"}});
}

TEST(SignatureDdp, ModelMismatch) {
  SignatureMatch m = match(
      "RuntimeError: DDP expects same model across all ranks, but Rank 0 has 4 params, while "
      "rank 1 has inconsistent 2 params.",
      "torch.ddp-model-mismatch");
  EXPECT_EQ(m.kind, FindingKind::kDdpModelMismatch);
  expect_fields(m, {{"rank", "0"}, {"params", "4"}, {"other_rank", "1"}, {"other_params", "2"}});
  // CASES.md T28 (1.13, verified)
  m = match(
      "RuntimeError: DDP expects same model across all ranks, but Rank 1 has 2 params, while "
      "rank 0 has inconsistent 4 params.",
      "torch.ddp-model-mismatch");
  expect_fields(m, {{"rank", "1"}, {"params", "2"}, {"other_rank", "0"}, {"other_params", "4"}});
  m = match(
      "RuntimeError: [1]: params[0] in this process with sizes [5, 4] appears not to match sizes "
      "of the same param in process 0.",
      "torch.ddp-param-shape-mismatch");
  EXPECT_EQ(m.kind, FindingKind::kDdpModelMismatch);
  expect_fields(m, {{"rank", "1"}, {"param_index", "0"}, {"sizes", "5,4"}, {"other_rank", "0"}});
  // PyTorch <= 1.10: "replicas[0][i]"
  m = match(
      "RuntimeError: replicas[0][3] in this process with sizes [128, 64] appears not to match "
      "sizes of the same param in process 0.",
      "torch.ddp-param-shape-mismatch");
  expect_fields(m, {{"param_index", "3"}, {"sizes", "128,64"}, {"other_rank", "0"}});
  expect_no_field(m, "rank");
}

// A parameter under two reentrant checkpoints (1.13, verified): the header line, then the
// parameter, named with TORCH_DISTRIBUTED_DEBUG=INFO.
TEST(SignatureDdp, AParameterMarkedReadyTwice) {
  EXPECT_THAT(ids("RuntimeError: Expected to mark a variable ready only once. This error is "
                  "caused by one of the following reasons: 1) Use of a module parameter outside "
                  "the `forward` function."),
              testing::ElementsAre("torch.ddp-ready-twice"));
  SignatureMatch m = match(
      "Parameter at index 1 with name shared.bias has been marked as ready twice. This means "
      "that multiple autograd engine  hooks have fired for this particular parameter during this "
      "iteration.",
      "torch.ddp-ready-twice");
  expect_fields(m, {{"param_index", "1"}, {"param_name", "shared.bias"}});
  m = match(
      "Parameter at index 1 has been marked as ready twice. This means that multiple autograd "
      "engine  hooks have fired for this particular parameter during this iteration. You can set "
      "the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print "
      "parameter names for further debugging.",
      "torch.ddp-ready-twice");
  expect_fields(m, {{"param_index", "1"}});
  expect_no_field(m, "param_name");
}

// A CPU tensor in an NCCL group: 2.x names the device, 1.x only what NCCL takes.
TEST(SignatureDdp, ACollectiveOnADeviceItsGroupHasNoBackendFor) {
  SignatureMatch m = match("RuntimeError: No backend type associated with device type cpu",
                           "torch.collective-device-unsupported");
  expect_fields(m, {{"device", "cpu"}});
  EXPECT_THAT(ids("RuntimeError: Tensors must be CUDA and dense"),
              testing::ElementsAre("torch.collective-device-unsupported"));
}

// ---- c10d, gloo
// -----------------------------------------------------------------------------------

TEST(SignatureGloo, PeerGone) {
  // CASES.md H08 (c), verified
  SignatureMatch m = match(
      "RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
      "[127.0.0.1]:61103",
      "gloo.connection-closed");
  EXPECT_EQ(m.kind, FindingKind::kPeerExited);
  expect_fields(m, {{"peer_host", "127.0.0.1"}, {"peer_port", "61103"}});
  // H11, verified: without the address
  m = match("RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer",
            "gloo.connection-closed");
  expect_no_field(m, "peer_host");
  m = match(
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error "
      "[127.0.0.1]:36417: Connection reset by peer",
      "gloo.connection-reset");
  EXPECT_EQ(m.kind, FindingKind::kPeerExited);
  expect_fields(m, {{"peer_host", "127.0.0.1"}, {"peer_port", "36417"}});
  // The same errno from a download or a logger is no peer of the job.
  const std::string reset = "ConnectionResetError: [Errno 104] Connection reset by peer";
  EXPECT_THAT(ids(reset), UnorderedElementsAre("python.connection-reset"));
  m = match(reset, "python.connection-reset");
  EXPECT_EQ(m.kind, std::nullopt);
  expect_fields(m, {{"errno", "104"}, {"exception_type", "ConnectionResetError"}});
}

TEST(SignatureGloo, TimeoutsAndSizeMismatches) {
  // CASES.md T12 without DETAIL, H08 (b), verified
  SignatureMatch m = match(
      "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 10000ms for "
      "recv operation to complete",
      "gloo.io-timeout");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMissing);
  expect_fields(m, {{"timeout_ms", "10000"}, {"op", "recv"}});

  // T13 without DETAIL (verified)
  const std::string t13 =
      "terminate called after throwing an instance of 'gloo::EnforceNotMet'  what():  [enforce "
      "fail at ./gloo/transport/tcp/pair.cc:510] op.preamble.length <= op.nbytes. 20 vs 12";
  EXPECT_THAT(ids(t13), UnorderedElementsAre("gloo.preamble-size-mismatch", "cpp.terminate"));
  m = match(t13, "gloo.preamble-size-mismatch");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMismatch);
  expect_fields(m, {{"peer_bytes", "20"}, {"local_bytes", "12"}});
  m = match(t13, "cpp.terminate");
  EXPECT_EQ(m.kind, FindingKind::kAbort);
  expect_fields(m, {{"cpp_exception", "gloo::EnforceNotMet"},
                    {"what",
                     "[enforce fail at ./gloo/transport/tcp/pair.cc:510] "
                     "op.preamble.length <= op.nbytes. 20 vs 12"}});
  // H05 (NVIDIA/nccl#1394)
  expect_fields(match("what(): [enforce fail at /opt/gloo/transport/tcp/pair.cc:446] "
                      "op.preamble.length <= op.nbytes. 256000 vs 128000",
                      "gloo.preamble-size-mismatch"),
                {{"peer_bytes", "256000"}, {"local_bytes", "128000"}});

  // H06 (a), verified
  m = match(
      "RuntimeError: ProcessGroupGloo::allgather: invalid tensor size at index 1 (expected (2), "
      "got (3))",
      "gloo.invalid-tensor-size");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMismatch);
  expect_fields(m, {{"op", "allgather"}, {"index", "1"}, {"expected_shape", "2"}, {"shape", "3"}});
  EXPECT_EQ(match("terminate called without an active exception", "cpp.terminate").kind,
            FindingKind::kAbort);
}

TEST(SignatureC10d, DetailCollectiveMismatch113) {
  // CASES.md T12 (1.13, verified)
  SignatureMatch m = match(
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
      "collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10], "
      "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, "
      "layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), "
      "memory_format=(nullopt))), but Rank 1 is running collective: "
      "CollectiveFingerPrint(OpType=REDUCE, TensorShape=[20, 10], TensorDtypes=Float, "
      "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu, layout=Strided "
      "(default), requires_grad=false (default), pinned_memory=false (default), "
      "memory_format=(nullopt))).",
      "torch.collective-mismatch");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMismatch);
  expect_fields(m, {{"rank", "0"},
                    {"op", "ALLREDUCE"},
                    {"shape", "20,10"},
                    {"dtype", "Float"},
                    {"other_rank", "1"},
                    {"other_op", "REDUCE"},
                    {"other_shape", "20,10"},
                    {"other_dtype", "Float"}});
  expect_no_field(m, "seq");
  // T13 (1.13, verified): shapes differ
  m = match(
      "Detected mismatch between collectives on ranks. Rank 1 is running collective: "
      "CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20], TensorDtypes=Float, "
      "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)), but Rank 0 is running "
      "collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[10], TensorDtypes=Float, "
      "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cpu)).",
      "torch.collective-mismatch");
  expect_fields(m, {{"rank", "1"}, {"shape", "20"}, {"other_rank", "0"}, {"other_shape", "10"}});
}

TEST(SignatureC10d, DetailCollectiveMismatchCurrentAndOld) {
  // Current main: sequence numbers and the difference summary
  SignatureMatch m = match(
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
      "collective: CollectiveFingerPrint(SequenceNumber=1151423632, OpType=ALLREDUCE, "
      "TensorShape=[20, 10], TensorDtypes=Float, TensorDeviceTypes=cpu), but Rank 1 is running "
      "collective: CollectiveFingerPrint(SequenceNumber=1151423632, OpType=REDUCE, "
      "TensorShape=[20, 10], TensorDtypes=Float, TensorDeviceTypes=cpu).Collectives differ in "
      "the following aspects: \t Op type: ALLREDUCEvs REDUCE",
      "torch.collective-mismatch");
  expect_fields(m, {{"seq", "1151423632"},
                    {"op", "ALLREDUCE"},
                    {"other_seq", "1151423632"},
                    {"other_op", "REDUCE"},
                    {"differences", "Op type: ALLREDUCEvs REDUCE"}});
  // <= 1.12: "inconsistent collective"
  m = match(
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
      "inconsistent collective: CollectiveFingerPrint(OpType=ALLGATHER, TensorShape=[41, 256, 8, "
      "8, 8], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), "
      "device=cuda))",
      "torch.collective-mismatch");
  expect_fields(m, {{"rank", "0"}, {"op", "ALLGATHER"}, {"shape", "41,256,8,8,8"}});
  expect_no_field(m, "other_rank");
  // The older DETAIL text of the docs
  m = match(
      "RuntimeError: Error when verifying shape tensors for collective ALLREDUCE on rank 0. This "
      "likely indicates that input shapes into the collective are mismatched across ranks. Got "
      "shapes:  10 [ torch.LongTensor{1} ]",
      "torch.collective-shape-verify");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMismatch);
  expect_fields(m, {{"op", "ALLREDUCE"}, {"rank", "0"}, {"shape", "10"}, {"shape_dims", "1"}});
  // As PyTorch prints it: the shape tensor's values one a line, then its type and length.
  m = match(
      "RuntimeError: Error when verifying shape tensors for collective ALLREDUCE on rank 0. This "
      "likely indicates that input shapes into the collective are mismatched across ranks. Got "
      "shapes:  10",
      "torch.collective-shape-verify");
  expect_fields(m, {{"op", "ALLREDUCE"}, {"rank", "0"}, {"shape", "10"}});
  expect_no_field(m, "shape_dims");
}

TEST(SignatureC10d, MonitoredBarrier) {
  // CASES.md T14 (1.13, verified, DETAIL, timeout 10 s): the C++ log line and the exception
  SignatureMatch m = match(
      "E0101 12:00:00.000000 1234 ProcessGroupGloo.cpp:2803] [Rank 0]: Rank 1 failed to pass "
      "monitoredBarrier in 10000 ms",
      "torch.monitored-barrier");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMissing);
  expect_fields(m, {{"rank", "0"}, {"ranks", "1"}, {"timeout_ms", "10000"}});
  m = match("RuntimeError: [Rank 0]: Ranks 1 failed to pass monitoredBarrier in 10000 ms",
            "torch.monitored-barrier");
  expect_fields(m, {{"rank", "0"}, {"ranks", "1"}, {"timeout_ms", "10000"}});
  m = match("[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 1800000 ms",
            "torch.monitored-barrier");
  expect_fields(m, {{"ranks", "1,2"}, {"timeout_ms", "1800000"}});
  // The docs' text, without waitAllRanks
  m = match("RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms",
            "torch.monitored-barrier");
  expect_fields(m, {{"ranks", "1"}, {"timeout_ms", "2000"}});
  expect_no_field(m, "rank");
  m = match(
      "RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while "
      "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.",
      "torch.monitored-barrier-victim");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMissing);
  expect_fields(m, {{"check_rank", "0"}});
  m = match(
      "RuntimeError: ProcessGroupWrapper: Monitored Barrier encountered error running "
      "collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10]). Error: Rank 1 "
      "failed to pass monitoredBarrier in 2000 ms",
      "torch.monitored-barrier-wrapper");
  expect_fields(m, {{"op", "ALLREDUCE"}});
}

// ---- NCCL -------------------------------------------------------------------------------------

TEST(SignatureNccl, WatchdogTimeoutAllFormats) {
  // CASES.md T17 (1.12/1.13 era, OFA-Sys/OFA#271)
  SignatureMatch m = match(
      "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 "
      "milliseconds before timing out.",
      "torch.nccl-watchdog-timeout");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMissing);
  expect_fields(m, {{"rank", "1"},
                    {"seq", "469508"},
                    {"op", "ALLREDUCE"},
                    {"timeout_ms", "1800000"},
                    {"elapsed_ms", "1802212"}});
  expect_no_field(m, "numel");
  // H14, with the element counts
  m = match(
      "[E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran "
      "for 1802212 milliseconds before timing out.",
      "torch.nccl-watchdog-timeout");
  expect_fields(m, {{"rank", "0"}, {"numel", "1"}, {"numel_out", "1"}, {"timeout_ms", "1800000"}});
  // 2.x, with the rank prefix
  m = match(
      "[rank0]:[E709 17:05:38.000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=1259621, "
      "NumelOut=1259621, Timeout(ms)=600000) ran for 600000 milliseconds before timing out.",
      "torch.nccl-watchdog-timeout");
  expect_fields(m, {{"prefix_rank", "0"},
                    {"rank", "0"},
                    {"seq", "20585"},
                    {"numel", "1259621"},
                    {"timeout_ms", "600000"},
                    {"elapsed_ms", "600000"}});
  // An aborted communicator carries the watchdog's text
  const std::string aborted =
      "RuntimeError: NCCL communicator was aborted on rank 6. Original reason for failure was: "
      "[Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4447361, "
      "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1805505 milliseconds before timing out.";
  EXPECT_THAT(ids(aborted), UnorderedElementsAre("torch.nccl-communicator-aborted",
                                                 "torch.nccl-watchdog-timeout"));
  expect_fields(match(aborted, "torch.nccl-communicator-aborted"), {{"rank", "6"}});
}

TEST(SignatureNccl, ProcessGroupStatusAndTeardown) {
  SignatureMatch m = match(
      "[rank0]:[E709 17:05:38.000000 ProcessGroupNCCL.cpp:2271] [PG ID 0 PG GUID 0(default_pg) "
      "Rank 0]  failure detected by watchdog at work sequence id: 20585 PG status: last enqueued "
      "work: 20589, last completed work: 20584",
      "torch.nccl-pg-status");
  EXPECT_EQ(m.kind, std::nullopt);
  expect_fields(
      m,
      {{"rank", "0"}, {"seq", "20585"}, {"last_enqueued", "20589"}, {"last_completed", "20584"}});
  m = match(
      "Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued "
      "NCCL work: 1582, last completed NCCL work: 1579.",
      "torch.nccl-pg-status");
  expect_fields(m, {{"seq", "1580"}, {"last_enqueued", "1582"}, {"last_completed", "1579"}});
  m = match(
      "[rank0]:[E709 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received "
      "a dump signal due to a collective timeout from this local rank and we will try our best "
      "to dump the debug info. Last enqueued NCCL work: 20589, last completed NCCL work: "
      "20584.This is most likely caused by incorrect usages of collectives",
      "torch.nccl-pg-status");
  expect_fields(m, {{"last_enqueued", "20589"}, {"last_completed", "20584"}});

  m = match(
      "[rank1]:[E ProcessGroupNCCL.cpp:681] [Rank 1] Some NCCL operations have failed or timed "
      "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run "
      "on corrupted/incomplete data.",
      "torch.nccl-taking-down");
  expect_fields(m, {{"rank", "1"}, {"prefix_rank", "1"}});
  match(
      "[E ProcessGroupNCCL.cpp:695] [Rank 1] To avoid data inconsistency, we are taking the "
      "entire process down.",
      "torch.nccl-taking-down");

  // CASES.md HW01: the watchdog died of an ECC error
  const std::string ecc =
      "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: "
      "CUDA error: uncorrectable ECC error encountered";
  EXPECT_THAT(ids(ecc), IsSupersetOf({"torch.nccl-watchdog-exception", "cuda.ecc-uncorrectable"}));
  expect_fields(match(ecc, "torch.nccl-watchdog-exception"),
                {{"rank", "1"}, {"error", "CUDA error: uncorrectable ECC error encountered"}});
  EXPECT_EQ(match(ecc, "cuda.ecc-uncorrectable").kind, FindingKind::kHardwareFault);
}

TEST(SignatureNccl, NcclErrorsAndResults) {
  const std::string dbe =
      "torch.distributed.DistBackendError: NCCL error in: "
      "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with "
      "NCCL_DEBUG=INFO for details), NCCL version 2.19.3";
  EXPECT_THAT(ids(dbe), UnorderedElementsAre("torch.nccl-error", "torch.dist-backend-error"));
  SignatureMatch m = match(dbe, "torch.nccl-error");
  EXPECT_EQ(m.kind, std::nullopt);
  expect_fields(m, {{"location", "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970"},
                    {"nccl_error", "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"},
                    {"nccl_version", "2.19.3"},
                    {"exception_type", "torch.distributed.DistBackendError"}});
  m = match(
      "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, "
      "unhandled system error, NCCL version 2.14.3",
      "torch.nccl-error");
  expect_fields(m, {{"nccl_error", "unhandled system error"}, {"nccl_version", "2.14.3"}});
  m = match("RuntimeError: NCCL error: remote process exited or there was a network error",
            "torch.nccl-error");
  EXPECT_EQ(m.kind, FindingKind::kPeerExited);

  m = match("ncclUnhandledCudaError: Call to CUDA function failed.", "nccl.result");
  expect_fields(m, {{"nccl_result", "ncclUnhandledCudaError"}});
  EXPECT_EQ(m.kind, std::nullopt);
  m = match(
      "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
      "device error.",
      "nccl.result");
  expect_fields(m, {{"nccl_result", "ncclSystemError"}});
  m = match(
      "ncclRemoteError: A call failed possibly due to a network error or a remote process "
      "exiting prematurely.",
      "nccl.result");
  EXPECT_EQ(m.kind, FindingKind::kPeerExited);
  // T27's comment: "ncclInvalidUsage"
  EXPECT_THAT(ids("torch.distributed.DistBackendError: NCCL error in: x.cpp:1, invalid usage (run "
                  "with NCCL_DEBUG=WARN for details), NCCL version 2.28.3 ncclInvalidUsage: This "
                  "usually reflects invalid usage of NCCL library."),
              IsSupersetOf({"nccl.result", "torch.nccl-error", "torch.dist-backend-error"}));
}

TEST(SignatureNccl, WarnLines) {
  const std::string oom =
      "node1:2048:2048 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'";
  EXPECT_THAT(ids(oom), UnorderedElementsAre("nccl.cuda-oom", "nccl.warn"));
  SignatureMatch m = match(oom, "nccl.cuda-oom");
  EXPECT_EQ(m.kind, FindingKind::kGpuOom);
  expect_fields(m, {{"host", "node1"}, {"pid", "2048"}, {"gpu", "0"}});
  m = match(oom, "nccl.warn");
  EXPECT_FALSE(m.failure);
  expect_fields(m, {{"message", "Cuda failure 'out of memory'"}, {"pid", "2048"}});
  // NCCL 2.28 puts the time first (a real line, its host renamed).
  m = match(
      "[2026-11-25 17:28:04] gpu7:10770:10770 [0] init.cc:2053 NCCL WARN Cuda failure 'CUDA driver "
      "version is insufficient for CUDA runtime version'",
      "nccl.warn");
  expect_fields(m, {{"host", "gpu7"}, {"pid", "10770"}, {"gpu", "0"}});
  m = match(
      "node1:2048:2049 [3] include/alloc.h:109 NCCL WARN Failed to CUDA calloc 10485760 bytes",
      "nccl.cuda-oom");
  expect_fields(m, {{"requested_bytes", "10485760"}, {"gpu", "3"}});
  EXPECT_EQ(match("Cuda failure 2 'out of memory'", "nccl.cuda-oom").kind, FindingKind::kGpuOom);

  // /dev/shm full (real lines, docker's 64 MB default)
  m = match(
      "3d3e22c3066f:168:168 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend "
      "/dev/shm/nccl-UbzKZ9 to 9637892 bytes",
      "nccl.shm-failed");
  EXPECT_EQ(m.kind, FindingKind::kShmExhausted);
  expect_fields(m,
                {{"path", "/dev/shm/nccl-UbzKZ9"}, {"requested_bytes", "9637892"}, {"pid", "168"}});
  m = match(
      "3d3e22c3066f:168:168 [0] misc/shmutils.cc:113 NCCL WARN Error while creating shared "
      "memory segment /dev/shm/nccl-UbzKZ9 (size 9637888)",
      "nccl.shm-failed");
  expect_fields(m, {{"path", "/dev/shm/nccl-UbzKZ9"}, {"requested_bytes", "9637888"}});
  m = match(
      "Error while creating shared memory segment /dev/shm/nccl-cjY8K5 (size 10617216), error: "
      "No space left on device (28)",
      "nccl.shm-failed");
  expect_fields(m, {{"requested_bytes", "10617216"}});

  m = match(
      "ubuntu1583:1585 [0] init.cc:738 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both "
      "on CUDA device 1000",
      "nccl.duplicate-gpu");
  EXPECT_EQ(m.kind, FindingKind::kForeignGpuContext);
  expect_fields(m, {{"rank", "0"}, {"other_rank", "1"}, {"device", "1000"}});
  expect_no_field(m, "pid");  // not NCCL's host:pid:tid header (an edited log?)
  m = match(
      "gpu-node-3:51234:51240 [1] init.cc:974 NCCL WARN Duplicate GPU detected : rank 1 and "
      "rank 0 both on CUDA device 2000",
      "nccl.duplicate-gpu");
  expect_fields(m, {{"rank", "1"},
                    {"other_rank", "0"},
                    {"device", "2000"},
                    {"host", "gpu-node-3"},
                    {"pid", "51234"},
                    {"gpu", "1"}});

  m = match(
      "init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective calls "
      "at and around rank 39. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the "
      "collective logs",
      "nccl.mismatched-collective");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMismatch);
  expect_fields(m, {{"rank", "39"}});
  m = match(
      "NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size 496640 "
      "remote size 65536",
      "nccl.transport-size-mismatch");
  expect_fields(m, {{"local_bytes", "496640"}, {"remote_bytes", "65536"}});
  m = match(
      "NET/Socket : peer 10.0.0.2<43210> message truncated : receiving 1024 bytes instead of 512. "
      "If you believe your socket network is in a healthy state, there may be a mismatch in "
      "collective sizes",
      "nccl.transport-size-mismatch");
  expect_fields(m, {{"remote_bytes", "1024"}, {"local_bytes", "512"}});
}

TEST(SignatureNccl, BarrierOnGuessedGpu) {
  SignatureMatch m = match(
      "[W ProcessGroupNCCL.cpp:1569] Rank 1 using GPU 0 to perform barrier as devices used by "
      "this process are currently unknown. This can potentially cause a hang if this rank to GPU "
      "mapping is incorrect.",
      "torch.nccl-barrier-unknown-device");
  EXPECT_EQ(m.kind, FindingKind::kForeignGpuContext);
  EXPECT_FALSE(m.failure);
  expect_fields(m, {{"rank", "1"}, {"gpu", "0"}});
  m = match(
      "[rank1]:[W1025 10:00:00.000000 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank 1]  "
      "using GPU 1 to perform barrier as devices used by this process are currently unknown.",
      "torch.nccl-barrier-unknown-device");
  expect_fields(m, {{"rank", "1"}, {"gpu", "1"}, {"prefix_rank", "1"}});
}

// ---- store and rendezvous ----------------------------------------------------------------------

TEST(SignatureStore, Timeouts) {
  // CASES.md T30 (1.13, verified)
  SignatureMatch m =
      match("RuntimeError: Timeout waiting for key: default_pg/nonexistent key after 1000 ms",
            "torch.store-key-timeout");
  EXPECT_EQ(m.kind, FindingKind::kRendezvousTimeout);
  expect_fields(m, {{"key", "default_pg/nonexistent key"}, {"timeout_ms", "1000"}});
  m = match(
      "torch.distributed.DistStoreError: wait timeout after 600000ms, keys: "
      "/default_pg/0//cuda//0",
      "torch.store-wait-timeout");
  expect_fields(m, {{"timeout_ms", "600000"}, {"key", "/default_pg/0//cuda//0"}});
  m = match(
      "torch.distributed.DistStoreError: Timed out after 1201 seconds waiting for clients. "
      "511/512 clients joined.",
      "torch.store-clients-timeout");
  EXPECT_EQ(m.kind, FindingKind::kRendezvousTimeout);
  expect_fields(m, {{"timeout_ms", "1201000"}, {"joined", "511"}, {"world_size", "512"}});
  m = match(
      "[E220 15:40:19.862248270 socket.cpp:1011] [c10d] The client socket has timed out after "
      "600000ms while trying to connect to (192.168.6.2, 53489).",
      "torch.store-connect-timeout");
  expect_fields(m, {{"timeout_ms", "600000"}, {"host", "192.168.6.2"}, {"port", "53489"}});
  m = match(
      "torch.distributed.DistNetworkError: The client socket has timed out after 60s while "
      "trying to connect to (127.0.0.1, 29500).",
      "torch.store-connect-timeout");
  expect_fields(m, {{"timeout_ms", "60000"}, {"port", "29500"}});
  EXPECT_EQ(match("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
                  "torch.rendezvous-timeout")
                .kind,
            FindingKind::kRendezvousTimeout);
  SignatureMatch connection = match(
      "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to "
      "the C10d store has failed. See inner exception for details.",
      "torch.rendezvous-timeout");
  expect_fields(connection, {{"error", "Connection"}});

  // PyTorch 1.13 with gloo, rank 0 alone of 2 (real): only in the process group's creation.
  const std::string socket = "RuntimeError: Socket Timeout";
  EXPECT_THAT(ids(socket), UnorderedElementsAre());
  std::vector<FrameHint> frames = {
      {"/home/user/proj/train.py", "<module>"},
      {"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
       "init_process_group"},
      {"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
       "_new_process_group_helper"}};
  std::vector<SignatureMatch> ms = match_line(socket, frames);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].id, "torch.gloo-connect-timeout");
  EXPECT_EQ(ms[0].kind, FindingKind::kRendezvousTimeout);
}

TEST(SignatureStore, PortInUse) {
  const std::string line =
      "RuntimeError: The server socket has failed to listen on any local network address. The "
      "server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The "
      "server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).";
  EXPECT_THAT(ids(line), UnorderedElementsAre("torch.store-bind-failed", "python.address-in-use"));
  SignatureMatch m = match(line, "torch.store-bind-failed");
  EXPECT_EQ(m.kind, FindingKind::kPortInUse);
  expect_fields(
      m,
      {{"host", "[::]"}, {"port", "29500"}, {"errno", "98"}, {"error", "Address already in use"}});
  m = match(
      "The server socket has failed to bind to 10.1.1.1:29500 (errno: 99 - Cannot assign "
      "requested address).",
      "torch.store-bind-failed");
  EXPECT_EQ(m.kind, std::nullopt);
  m = match("OSError: [Errno 98] Address already in use", "python.address-in-use");
  EXPECT_EQ(m.kind, FindingKind::kPortInUse);
  expect_fields(m, {{"errno", "98"}});
}

// ---- launchers ---------------------------------------------------------------------------------

TEST(SignatureLaunchers, TorchrunRedirectsBugNeedsItsFrame) {
  const std::string line = "AttributeError: 'NoneType' object has no attribute 'get'";
  EXPECT_THAT(ids(line), UnorderedElementsAre());
  std::vector<FrameHint> frames = {
      {"/usr/bin/torchrun", "<module>"},
      {"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/__init__.py",
       "start_processes"},
      {"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/api.py",
       "to_map"}};
  std::vector<SignatureMatch> ms = match_line(line, frames);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].id, "torchrun.redirects-none");
  EXPECT_EQ(ms[0].kind, FindingKind::kLauncherBug);
  expect_fields(ms[0], {{"exception_type", "AttributeError"}});
  // The same text elsewhere is someone else's bug.
  frames.pop_back();
  EXPECT_TRUE(match_line(line, frames).empty());
}

TEST(SignatureLaunchers, TorchrunSummaries) {
  SignatureMatch m = match(
      "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 "
      "(pid: 1234) of binary: /usr/bin/python3",
      "torchrun.local-rank-failed");
  expect_fields(
      m,
      {{"exit_code", "-9"}, {"local_rank", "0"}, {"pid", "1234"}, {"binary", "/usr/bin/python3"}});
  expect_no_field(m, "exception_type");
  m = match(
      "E0709 17:05:38.123000 140 torch/distributed/elastic/multiprocessing/api.py:833] "
      "failed (exitcode: 1) local_rank: 1 (pid: 4243) of binary: /usr/bin/python3.12",
      "torchrun.local-rank-failed");
  expect_fields(m, {{"exit_code", "1"}, {"local_rank", "1"}, {"pid", "4243"}});
  expect_fields(
      match("  traceback : Signal 9 (SIGKILL) received by PID 1234", "torchrun.signal-received"),
      {{"signo", "9"}, {"signal", "SIGKILL"}, {"pid", "1234"}});
  expect_fields(match("  exitcode  : -9 (pid: 1234)", "torchrun.root-cause-exitcode"),
                {{"exit_code", "-9"}, {"pid", "1234"}});
  m = match(
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1235 closing signal "
      "SIGTERM",
      "torchrun.closing-signal");
  EXPECT_FALSE(m.failure);
  expect_fields(m, {{"pid", "1235"}, {"signal", "SIGTERM"}, {"signo", "15"}});
  match("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "torchrun.child-failed");

  // CASES.md T13 (verified): torch.multiprocessing.spawn
  m = match(
      "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal "
      "SIGABRT",
      "torch.spawn-process-exited");
  expect_fields(m, {{"process", "0"},
                    {"signal", "SIGABRT"},
                    {"signo", "6"},
                    {"exception_type", "torch.multiprocessing.spawn.ProcessExitedException"}});
  expect_fields(match("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated "
                      "with exit code 1",
                      "torch.spawn-process-exited"),
                {{"process", "1"}, {"exit_code", "1"}});
  EXPECT_THAT(ids("-- Process 1 terminated with the following error:"),
              UnorderedElementsAre("torch.spawn-process-raised"));
}

}  // namespace
}  // namespace traindoc::analysis
