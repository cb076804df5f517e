// The distributed part of the signature table (signature_table.cpp holds the rest): DDP, c10d
// and gloo, NCCL and ProcessGroupNCCL, the store and rendezvous, launchers. Pure data.
#include "analysis/signature_table.h"

#include "analysis/signature_words.h"

namespace traindoc::analysis {
namespace {

// A DETAIL fingerprint: groups sequence number, op, shape, dtypes.
#define TD_FINGERPRINT                                                            \
  R"(is running (?:inconsistent )?collective: CollectiveFingerPrint\()"           \
  R"((?:SequenceNumber=([0-9]+), ?)?OpType=(\w+)(?:, TensorShape=\[([^\]]*)\])?)" \
  R"((?:, TensorDtypes=(\w+))?)"

// "[Rank 3]" in ProcessGroupNCCL/Gloo messages, "[PG ID 0 PG GUID 0(default_pg) Rank 0]".
Part rank_part() {
  return {R"(\bRank ([0-9]+)\])", {{1, "rank", Conv::kInt}}};
}

using C = Conv;

}  // namespace

// "host:pid:tid [gpu] file.cc:line NCCL WARN ...", which NCCL 2.28 prints after a time such as
// "[2026-11-25 17:28:04] " (NCCL_DEBUG_TIMESTAMP_FORMAT: any strftime text in brackets).
Part nccl_header() {
  return {R"(^(?:\[[^\]]*\] )?([^\s:]+):([0-9]+):([0-9]+) \[([0-9]+)\])",
          {{1, "host"}, {2, "pid", Conv::kInt}, {4, "gpu", Conv::kInt}}};
}

std::vector<Entry>
distributed_signature_entries() {  // NOLINT(readability-function-size): a data table
  return {
      // ---- DDP
      // ------------------------------------------------------------------------------------
      {.id = "torch.ddp-unfinished-reduction",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kDdpUnusedParameters,
       .failure = true,
       .needles = {"Expected to have finished reduction in the prior iteration"},
       .description = "DDP's reducer did not finish: parameters unused in the loss",
       .example = "RuntimeError: Expected to have finished reduction in the prior iteration before "
                  "starting a new one. This error indicates that your module has parameters that "
                  "were not used in producing loss.",
       .source = "torch/csrc/distributed/c10d/reducer.cpp; CASES.md T29",
       .describe = words::unused_parameters,
       .fix = words::kUnusedParametersFix},
      {.id = "torch.ddp-unused-param-indices",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kDdpUnusedParameters,
       .failure = true,
       .needles = {"Parameter indices which did not receive grad for rank "},
       .parts =
           {{"Parameter indices which did not receive grad for rank ([0-9]+): ([0-9]+(?: [0-9]+)*)",
             {{1, "rank", C::kInt}, {2, "param_indices", C::kList}},
             true}},
       .description = "the indices of the parameters that got no gradient",
       .example = "Parameter indices which did not receive grad for rank 0: 0",
       .source = "torch/csrc/distributed/c10d/reducer.cpp; CASES.md T29",
       .describe = words::unused_parameters,
       .fix = words::kUnusedParametersFix},
      {.id = "torch.ddp-unused-param-names",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kDdpUnusedParameters,
       .failure = true,
       .needles = {"Parameters which did not receive grad for rank "},
       .parts =
           {{R"(Parameters which did not receive grad for rank ([0-9]+): ([^\s,]+(?:, [^\s,]+)*))",
             {{1, "rank", C::kInt}, {2, "param_names", C::kList}},
             true}},
       .description = "the names of the parameters that got no gradient "
                      "(TORCH_DISTRIBUTED_DEBUG=INFO or DETAIL)",
       .example = "Parameters which did not receive grad for rank 0: a.weight",
       .source = "torch/csrc/distributed/c10d/reducer.cpp; CASES.md T29",
       .describe = words::unused_parameters,
       .fix = words::kUnusedParametersFix},
      {.id = "torch.ddp-param-no-grad",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kDdpUnusedParameters,
       .failure = false,
       .needles = {"did not get gradient in backwards pass"},
       .parts = {{R"(\[Rank ([0-9]+)\] Parameter: (\S+) did not get gradient in backwards pass)",
                  {{1, "rank", C::kInt}, {2, "param_names"}},
                  true}},
       .description = "the reducer's log line per parameter without gradient (debug mode)",
       .example = "[Rank 0] Parameter: a.weight did not get gradient in backwards pass.",
       .source = "torch/csrc/distributed/c10d/reducer.cpp; CASES.md T29",
       .describe = words::unused_parameters,
       .fix = words::kUnusedParametersFix},
      {.id = "torch.ddp-ready-twice",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Expected to mark a variable ready only once", "has been marked as ready twice"},
       .parts =
           {{R"(Parameter at index ([0-9]+)(?: with name (\S+))? has been marked as ready twice)",
             {{1, "param_index", C::kInt}, {2, "param_name"}}}},
       .description = "DDP got two gradients for one parameter in one backward pass: a layer "
                      "under several reentrant checkpoints, two backward passes of one forward, "
                      "a parameter used outside forward",
       .example = "RuntimeError: Expected to mark a variable ready only once. This error is "
                  "caused by one of the following reasons: 1) Use of a module parameter outside "
                  "the `forward` function.",
       .source = "torch/csrc/distributed/c10d/reducer.cpp, verified with two checkpoints of one "
                 "layer",
       .describe = words::ddp_ready_twice},
      {.id = "torch.collective-device-unsupported",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Tensors must be CUDA and dense",
                   "No backend type associated with device type "},
       .parts = {{R"(No backend type associated with device type (\w+))", {{1, "device"}}}},
       .description = "a collective given a tensor on a device its process group has no backend "
                      "for: a CPU tensor in an NCCL group",
       .example = "RuntimeError: No backend type associated with device type cpu",
       .source = "torch/csrc/distributed/c10d/ProcessGroup.hpp getBackend (2.x); "
                 "ProcessGroupNCCL.cpp check_gpu_single_tensor (1.x)",
       .describe = words::device_unsupported},
      {.id = "torch.ddp-attribute",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"DataParallel' object has no attribute '"},
       .parts = {{R"('((?:Distributed)?DataParallel)' object has no attribute '(\w+)')",
                  {{1, "wrapper"}, {2, "attribute"}},
                  true}},
       .description = "an attribute or method of the model asked of its DistributedDataParallel "
                      "(or DataParallel) wrapper, which passes on calls of the model only",
       .example = "AttributeError: 'DistributedDataParallel' object has no attribute 'generate'",
       .source = "torch/nn/modules/module.py __getattr__, verified with DDP on gloo and "
                 "DataParallel",
       .describe = words::ddp_attribute},
      {.id = "torch.ddp-model-mismatch",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kDdpModelMismatch,
       .failure = true,
       .needles = {"DDP expects same model across all ranks"},
       .parts = {{"DDP expects same model across all ranks, but Rank ([0-9]+) has ([0-9]+) params, "
                  "while rank ([0-9]+) has inconsistent ([0-9]+) params",
                  {{1, "rank", C::kInt},
                   {2, "params", C::kInt},
                   {3, "other_rank", C::kInt},
                   {4, "other_params", C::kInt}}}},
       .description = "ranks built models with different parameter counts",
       .example = "RuntimeError: DDP expects same model across all ranks, but Rank 1 has 2 params, "
                  "while rank 0 has inconsistent 4 params.",
       .source = "torch/csrc/distributed/c10d/reducer.cpp; CASES.md T28",
       .describe = words::model_mismatch,
       .fix = words::kModelMismatchFix},
      {.id = "torch.ddp-param-shape-mismatch",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kDdpModelMismatch,
       .failure = true,
       .needles = {"appears not to match"},
       .parts =
           {{R"((?:\[([0-9]+)\]: )?(?:params|replicas\[[0-9]+\])\[([0-9]+)\] in this process with)"
             R"( sizes \[([^\]]*)\] appears not to match (?:sizes|strides) of the same param in)"
             R"( process ([0-9]+))",
             {{1, "rank", C::kInt},
              {2, "param_index", C::kInt},
              {3, "sizes", C::kList},
              {4, "other_rank", C::kInt}},
             true}},
       .description = "a parameter's shape differs across ranks (1.13 and older \"replicas\" text)",
       .example = "RuntimeError: [1]: params[0] in this process with sizes [5, 4] appears not to "
                  "match sizes of the same param in process 0.",
       .source = "torch/csrc/distributed/c10d/reducer.cpp; CASES.md T28",
       .describe = words::model_mismatch,
       .fix = words::kModelMismatchFix},

      // ---- c10d / gloo
      // ------------------------------------------------------------------------------
      {.id = "gloo.connection-closed",
       .framework = "gloo",
       .kind = FindingKind::kPeerExited,
       .failure = true,
       .needles = {"Connection closed by peer"},
       .parts = {{R"(Connection closed by peer \[([^\]]+)\]:([0-9]+))",
                  {{1, "peer_host"}, {2, "peer_port", C::kInt}}}},
       .description = "the peer's process closed the socket: it exited (not a network fault)",
       .example = "RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                  "[127.0.0.1]:61103",
       .source = "gloo/transport/tcp/pair.cc; CASES.md H08, H11, T14"},
      {.id = "gloo.connection-reset",
       .framework = "gloo",
       .kind = FindingKind::kPeerExited,
       .failure = true,
       .needles = {"Connection reset by peer"},
       .parts = {{R"(pair\.cc:[0-9]+\]|Read error )", {}, true},
                 {R"(Read error \[([^\]]+)\]:([0-9]+))",
                  {{1, "peer_host"}, {2, "peer_port", C::kInt}}}},
       .description = "gloo's socket to a peer was reset: the peer died",
       .example = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error "
                  "[127.0.0.1]:36417: Connection reset by peer",
       .source = "gloo/transport/tcp/pair.cc; CASES.md H06, T14"},
      {.id = "python.connection-reset",
       .framework = "python",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"Connection reset by peer"},
       .parts = {{R"(\[Errno ([0-9]+)\])", {{1, "errno", C::kInt}}}},
       .description = "ECONNRESET anywhere (a download, a logger, a store client): a peer died or "
                      "the network dropped",
       .example = "ConnectionResetError: [Errno 104] Connection reset by peer",
       .source = "errno ECONNRESET",
       .unless = "Read error ["},
      {.id = "gloo.io-timeout",
       .framework = "gloo",
       .kind = FindingKind::kCollectiveMissing,
       .failure = true,
       .needles = {"operation to complete"},
       .parts = {{"Timed out waiting ([0-9]+)ms for (recv|send) operation to complete",
                  {{1, "timeout_ms", C::kInt}, {2, "op"}},
                  true}},
       .description = "a gloo send/recv waited for a peer that never posted the matching op",
       .example = "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
                  "10000ms for recv operation to complete",
       .source = "gloo/transport/tcp/unbound_buffer.cc; CASES.md T12, H08",
       .describe = words::gloo_io_timeout,
       .fix = words::kCollectiveMissingFix},
      {.id = "gloo.preamble-size-mismatch",
       .framework = "gloo",
       .kind = FindingKind::kCollectiveMismatch,
       .failure = true,
       .needles = {"op.preamble.length <= op.nbytes"},
       .parts = {{R"(op\.preamble\.length <= op\.nbytes\. ([0-9]+) vs ([0-9]+))",
                  {{1, "peer_bytes", C::kInt}, {2, "local_bytes", C::kInt}}}},
       .description = "a peer sent more bytes than this rank's buffer holds: tensor sizes differ",
       .example = "terminate called after throwing an instance of 'gloo::EnforceNotMet'  what():  "
                  "[enforce fail at ./gloo/transport/tcp/pair.cc:510] op.preamble.length <= "
                  "op.nbytes. 20 vs 12",
       .source = "gloo/transport/tcp/pair.cc; CASES.md T13, H05, H06",
       .describe = words::gloo_preamble_size,
       .fix = words::kCollectiveMismatchFix},
      {.id = "gloo.invalid-tensor-size",
       .framework = "gloo",
       .kind = FindingKind::kCollectiveMismatch,
       .failure = true,
       .needles = {"invalid tensor size"},
       .parts =
           {{R"(ProcessGroupGloo::(\w+): invalid tensor size)", {{1, "op"}}, true},
            {R"(at index ([0-9]+) \(expected \(([^)]*)\), got \(([^)]*)\)\))",
             {{1, "index", C::kInt}, {2, "expected_shape", C::kList}, {3, "shape", C::kList}}}},
       .description = "gloo checked the tensor sizes of a collective and they differ",
       .example = "RuntimeError: ProcessGroupGloo::allgather: invalid tensor size at index 1 "
                  "(expected (2), got (3))",
       .source = "torch/csrc/distributed/c10d/ProcessGroupGloo.cpp; CASES.md H06",
       .describe = words::gloo_tensor_size,
       .fix = words::kCollectiveMismatchFix},
      {.id = "cpp.terminate",
       .framework = "c++",
       .kind = FindingKind::kAbort,
       .failure = true,
       .needles = {"terminate called "},
       .parts = {{"terminate called (?:after throwing an instance of '([^']+)'|without an active "
                  "exception)",
                  {{1, "cpp_exception"}},
                  true},
                 {R"(what\(\):\s+)", {{0, "what", C::kRest}}}},
       .description = "an uncaught C++ exception aborted the process",
       .example = "terminate called after throwing an instance of 'gloo::EnforceNotMet'",
       .source = "libstdc++; CASES.md T13"},
      {.id = "torch.collective-mismatch",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kCollectiveMismatch,
       .failure = true,
       .needles = {"Detected mismatch between collectives on ranks"},
       .parts =
           {
               {R"(Rank ([0-9]+) )" TD_FINGERPRINT,
                {{1, "rank", C::kInt},
                 {2, "seq", C::kInt},
                 {3, "op"},
                 {4, "shape", C::kList},
                 {5, "dtype"}}},
               {R"(but Rank ([0-9]+) )" TD_FINGERPRINT,
                {{1, "other_rank", C::kInt},
                 {2, "other_seq", C::kInt},
                 {3, "other_op"},
                 {4, "other_shape", C::kList},
                 {5, "other_dtype"}}},
               {R"(Collectives differ in the following aspects:\s*)",
                {{0, "differences", C::kRest}}},
           },
       .description = "TORCH_DISTRIBUTED_DEBUG=DETAIL compared the ranks' collectives and they "
                      "differ (op, shape, dtype)",
       .example = "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
                  "collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10], "
                  "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), "
                  "device=cpu)), but Rank 1 is running collective: "
                  "CollectiveFingerPrint(OpType=REDUCE, TensorShape=[20, 10], TensorDtypes=Float).",
       .source = "torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp; CASES.md T12, T13, T15",
       .describe = words::torch_collective_mismatch,
       .fix = words::kCollectiveMismatchFix},
      {.id = "torch.collective-shape-verify",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kCollectiveMismatch,
       .failure = true,
       .needles = {"Error when verifying shape tensors for collective"},
       .parts = {{R"(verifying shape tensors for collective (\w+) on rank ([0-9]+))",
                  {{1, "op"}, {2, "rank", C::kInt}}},
                 // The rank's own shape, printed as a tensor: one value a line, then its type
                 // and length ("[ torch.LongTensor{1} ]") where the text is on one line.
                 {R"(Got shapes:\s+([0-9]+(?:\s+[0-9]+)*)(?:\s*\[ ?[\w.]+\{([0-9]+)\} ?\])?)",
                  {{1, "shape", C::kList}, {2, "shape_dims", C::kInt}}}},
       .description = "the older DETAIL check: input shapes differ across ranks",
       .example =
           "RuntimeError: Error when verifying shape tensors for collective ALLREDUCE on rank "
           "0. This likely indicates that input shapes into the collective are mismatched "
           "across ranks. Got shapes:  10 [ torch.LongTensor{1} ]",
       .source = "docs/source/distributed.md; CASES.md T13",
       .describe = words::collective_shapes,
       .fix = words::kCollectiveMismatchFix},
      {.id = "torch.monitored-barrier",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kCollectiveMissing,
       .failure = true,
       .needles = {"failed to pass monitoredBarrier"},
       .parts = {{"Ranks? ([0-9]+(?:, ?[0-9]+)*) failed to pass monitoredBarrier in ([0-9]+) ms",
                  {{1, "ranks", C::kList}, {2, "timeout_ms", C::kInt}},
                  true},
                 rank_part()},
       .description = "rank 0's monitored barrier names the ranks that never arrived",
       .example = "RuntimeError: [Rank 0]: Ranks 1 failed to pass monitoredBarrier in 10000 ms",
       .source = "torch/csrc/distributed/c10d/ProcessGroupGloo.cpp; CASES.md T14, H08",
       .describe = words::collective_missing,
       .fix = words::kCollectiveMissingFix},
      {.id = "torch.monitored-barrier-victim",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kCollectiveMissing,
       .failure = true,
       .needles = {"logs for faulty rank"},
       .parts = {{"check rank ([0-9]+) logs for faulty rank", {{1, "check_rank", C::kInt}}}},
       .description = "a non-zero rank of a failed monitored barrier: rank 0 names the culprit",
       .example =
           "RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors "
           "while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.",
       .source = "torch/csrc/distributed/c10d/ProcessGroupGloo.cpp; CASES.md T14",
       .describe = words::collective_missing,
       .fix = words::kCollectiveMissingFix},
      {.id = "torch.monitored-barrier-wrapper",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kCollectiveMissing,
       .failure = true,
       .needles = {"Monitored Barrier encountered error running collective"},
       .parts = {{R"(OpType=(\w+))", {{1, "op"}}}},
       .description = "DETAIL's monitored barrier before a collective failed",
       .example =
           "RuntimeError: ProcessGroupWrapper: Monitored Barrier encountered error running "
           "collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10]). Error: "
           "Rank 1 failed to pass monitoredBarrier in 2000 ms",
       .source = "torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp",
       .describe = words::collective_missing,
       .fix = words::kCollectiveMissingFix},

      // ---- NCCL and ProcessGroupNCCL
      // ------------------------------------------------------------------
      {.id = "torch.nccl-watchdog-timeout",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kCollectiveMissing,
       .failure = true,
       .needles = {"Watchdog caught collective operation timeout"},
       .parts =
           {{R"(WorkNCCL\(SeqNum=([0-9]+), OpType=(\w+)(?:, NumelIn=([0-9]+), NumelOut=([0-9]+))?)"
             R"((?:, Timeout\(ms\)=([0-9]+))?\) ran for ([0-9]+) milliseconds)",
             {{1, "seq", C::kInt},
              {2, "op"},
              {3, "numel", C::kInt},
              {4, "numel_out", C::kInt},
              {5, "timeout_ms", C::kInt},
              {6, "elapsed_ms", C::kInt}}},
            rank_part()},
       .description = "ProcessGroupNCCL's watchdog: a collective did not finish within the PG "
                      "timeout (a rank skipped it, is late, or died)",
       .example = "[E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught collective operation "
                  "timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                  "Timeout(ms)=1800000) ran for 1800668 milliseconds before timing out.",
       .source = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; CASES.md T17, H14",
       .describe = words::collective_missing,
       .fix = words::kCollectiveMissingFix},
      {.id = "torch.nccl-pg-status",
       .framework = "pytorch-distributed",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"last enqueued", "Last enqueued"},
       .parts = {{R"([Ll]ast enqueued (?:NCCL )?work: (-?[0-9]+), last completed (?:NCCL )?work:)"
                  R"( (-?[0-9]+))",
                  {{1, "last_enqueued", C::kInt}, {2, "last_completed", C::kInt}},
                  true},
                 {"(?:work sequence id|detected by watchdog at work): ([0-9]+)",
                  {{1, "seq", C::kInt}}},
                 rank_part()},
       .description = "the watchdog's view of a process group: last enqueued and completed "
                      "collective (a rank ahead of the others issued an extra one)",
       .example = "[rank0]:[E709 17:05:38.000 ProcessGroupNCCL.cpp:2271] [PG ID 0 PG GUID "
                  "0(default_pg) Rank 0]  failure detected by watchdog at work sequence id: 20585 "
                  "PG status: last enqueued work: 20589, last completed work: 20584",
       .source = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; distributed.md d.3"},
      {.id = "torch.nccl-communicator-aborted",
       .framework = "pytorch-distributed",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"NCCL communicator was aborted on rank"},
       .parts = {{"NCCL communicator was aborted on rank ([0-9]+)", {{1, "rank", C::kInt}}}},
       .description = "a later operation on a communicator the watchdog aborted",
       .example = "RuntimeError: NCCL communicator was aborted on rank 6. Original reason for "
                  "failure was: [Rank 6] Watchdog caught collective operation timeout: "
                  "WorkNCCL(SeqNum=4447361, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1805505 "
                  "milliseconds before timing out.",
       .source = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; distributed.md d.3"},
      {.id = "torch.nccl-taking-down",
       .framework = "pytorch-distributed",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"Some NCCL operations have failed or timed out",
                   "we are taking the entire process down"},
       .parts = {rank_part()},
       .description = "ProcessGroupNCCL ends the process after a failed or timed-out collective",
       .example = "[E ProcessGroupNCCL.cpp:681] [Rank 1] Some NCCL operations have failed or timed "
                  "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
                  "might run on corrupted/incomplete data.",
       .source = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; CASES.md T17"},
      {.id = "torch.nccl-watchdog-exception",
       .framework = "pytorch-distributed",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"watchdog thread terminated with exception"},
       .parts = {{"watchdog thread terminated with exception: ", {{0, "error", C::kRest}}},
                 rank_part()},
       .description = "the NCCL watchdog died of an error (the error follows; it has its own "
                      "signature)",
       .example = "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with "
                  "exception: CUDA error: uncorrectable ECC error encountered",
       .source = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; CASES.md HW01"},
      {.id = "torch.nccl-error",
       .framework = "pytorch-distributed",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"NCCL error in: ", "NCCL error: "},
       .parts = {{R"(NCCL error in: ([^,\s]+)(?:, ([^,]+))?)",
                  {{1, "location"}, {2, "nccl_error"}}},
                 {"NCCL error: ([^,]+)", {{1, "nccl_error"}}},
                 {R"(NCCL version ([0-9][0-9A-Za-z.+]*))", {{1, "nccl_version"}}}},
       .description = "a failed NCCL call as PyTorch reports it (peer-exited for a remote error)",
       .example =
           "torch.distributed.DistBackendError: NCCL error in: "
           "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system error, "
           "NCCL version 2.14.3",
       .source = "torch/csrc/distributed/c10d/NCCLUtils.hpp",
       .refine = {{{{"nccl_error", Test::kContains, "remote process exited"}},
                   FindingKind::kPeerExited}}},
      {.id = "nccl.result",
       .framework = "nccl",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
                   "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclTimeout"},
       .parts = {{R"(\b(ncclUnhandledCudaError|ncclSystemError|ncclInternalError|)"
                  R"(ncclInvalidArgument|ncclInvalidUsage|ncclRemoteError|ncclTimeout)\b)",
                  {{1, "nccl_result"}},
                  true}},
       .description = "an NCCL result code: UnhandledCudaError, SystemError, InternalError, "
                      "InvalidArgument, InvalidUsage, RemoteError (peer-exited), Timeout",
       .example = "ncclSystemError: System call (e.g. socket, malloc) or external library call "
                  "failed or device error.",
       .source = "torch/csrc/distributed/c10d/NCCLUtils.cpp; nccl.h",
       .refine = {{{{"nccl_result", Test::kEquals, "ncclRemoteError"}}, FindingKind::kPeerExited}}},
      {.id = "torch.dist-backend-error",
       .framework = "pytorch-distributed",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"DistBackendError"},
       .description = "torch.distributed.DistBackendError: a backend (NCCL) failure",
       .example = "torch.distributed.DistBackendError: NCCL error in: "
                  "/opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:94",
       .source = "torch/distributed; CASES.md T16, T27"},
      {.id = "nccl.warn",
       .framework = "nccl",
       .kind = std::nullopt,
       .failure = false,
       .needles = {"NCCL WARN "},
       .parts = {{"NCCL WARN ", {{0, "message", C::kRest}}}, nccl_header()},
       .description = "any NCCL warning line (NCCL_DEBUG=WARN or more), with its pid and GPU",
       .example = "ubuntu1583:1585 [0] init.cc:738 NCCL WARN Duplicate GPU detected : rank 0 and "
                  "rank 1 both on CUDA device 1000",
       .source = "nccl debug.cc"},
      {.id = "nccl.cuda-oom",
       .framework = "nccl",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"'out of memory'", "Failed to CUDA calloc"},
       .parts = {{"Failed to CUDA calloc ([0-9]+) bytes", {{1, "requested_bytes", C::kInt}}},
                 nccl_header()},
       .description = "NCCL could not allocate its GPU buffers",
       .example = "node1:2048:2048 [0] include/alloc.h:48 NCCL WARN Failed to CUDA calloc 10485760 "
                  "bytes",
       .source = "nccl include/alloc.h; memory.md a.4"},
      {.id = "nccl.shm-failed",
       .framework = "nccl",
       .kind = FindingKind::kShmExhausted,
       .failure = true,
       .needles = {"Error while creating shared memory segment", "failed to extend /dev/shm",
                   "posix_fallocate failed"},
       .parts = {{R"(shared memory segment (\S+) \(size ([0-9]+)\))",
                  {{1, "path"}, {2, "requested_bytes", C::kInt}}},
                 {R"(failed to extend (\S+) to ([0-9]+) bytes)",
                  {{1, "path"}, {2, "requested_bytes", C::kInt}}},
                 nccl_header()},
       .description = "NCCL could not create its shared-memory segment: /dev/shm is full",
       .example = "3d3e22c3066f:168:168 [0] misc/shmutils.cc:113 NCCL WARN Error while creating "
                  "shared memory segment /dev/shm/nccl-UbzKZ9 (size 9637888)",
       .source = "nccl misc/shmutils.cc",
       .fix = words::kShmFix},
      {.id = "nccl.duplicate-gpu",
       .framework = "nccl",
       .kind = FindingKind::kForeignGpuContext,
       .failure = true,
       .needles = {"Duplicate GPU detected"},
       .parts = {{R"(Duplicate GPU detected : rank ([0-9]+) and rank ([0-9]+))"
                  R"( both on CUDA device (\w+))",
                  {{1, "rank", C::kInt}, {2, "other_rank", C::kInt}, {3, "device"}}},
                 nccl_header()},
       .description = "two ranks on one GPU (no torch.cuda.set_device(local_rank))",
       .example = "ubuntu1583:1585 [0] init.cc:738 NCCL WARN Duplicate GPU detected : rank 0 and "
                  "rank 1 both on CUDA device 1000",
       .source = "nccl init.cc; CASES.md T27"},
      {.id = "nccl.mismatched-collective",
       .framework = "nccl",
       .kind = FindingKind::kCollectiveMismatch,
       .failure = true,
       .needles = {"Mismatched collective detected"},
       .parts = {{"at and around rank ([0-9]+)", {{1, "rank", C::kInt}}}, nccl_header()},
       .description = "NCCL 2.4-2.7's device-side mismatch check",
       .example = "init.cc:1247 NCCL WARN Mismatched collective detected, please check your "
                  "collective calls at and around rank 39. You can use NCCL_DEBUG=INFO and "
                  "NCCL_DEBUG_SUBSYS=COLL to see the collective logs",
       .source = "nccl 2.4.2-2.7.6; distributed.md d.1",
       .describe = words::collective_shapes,
       .fix = words::kCollectiveMismatchFix},
      {.id = "nccl.transport-size-mismatch",
       .framework = "nccl",
       .kind = FindingKind::kCollectiveMismatch,
       .failure = true,
       .needles = {"collective mismatch error", "message truncated"},
       .parts = {{"local size ([0-9]+) remote size ([0-9]+)",
                  {{1, "local_bytes", C::kInt}, {2, "remote_bytes", C::kInt}}},
                 {"receiving ([0-9]+) bytes instead of ([0-9]+)",
                  {{1, "remote_bytes", C::kInt}, {2, "local_bytes", C::kInt}}},
                 nccl_header()},
       .description = "NCCL's IB (<= 2.19) or socket transport saw sizes differ across ranks",
       .example = "NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local "
                  "size 496640 remote size 65536",
       .source = "nccl transport/net_ib.cc, net_socket.cc; distributed.md d.1",
       .describe = words::collective_shapes,
       .fix = words::kCollectiveMismatchFix},
      {.id = "torch.nccl-barrier-unknown-device",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kForeignGpuContext,
       .failure = false,
       .needles = {"to perform barrier as devices used by this process are currently unknown"},
       .parts = {{R"(Rank ([0-9]+)\]? +using GPU ([0-9]+) to perform barrier)",
                  {{1, "rank", C::kInt}, {2, "gpu", C::kInt}}}},
       .description = "a rank guessed its GPU for a barrier: the rank-to-GPU mapping may be wrong",
       .example =
           "[W ProcessGroupNCCL.cpp:1569] Rank 1 using GPU 0 to perform barrier as devices "
           "used by this process are currently unknown. This can potentially cause a hang if "
           "this rank to GPU mapping is incorrect.",
       .source = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; memory.md a.4"},

      // ---- store and rendezvous
      // -----------------------------------------------------------------------
      {.id = "torch.store-key-timeout",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kRendezvousTimeout,
       .failure = true,
       .needles = {"Timeout waiting for key: "},
       .parts = {{"Timeout waiting for key: (.{1,512}) after ([0-9]+) ms",
                  {{1, "key"}, {2, "timeout_ms", C::kInt}},
                  true}},
       .description = "a store key that no peer wrote (1.x stores)",
       .example = "RuntimeError: Timeout waiting for key: default_pg/nonexistent key after 1000 ms",
       .source = "torch/csrc/distributed/c10d/FileStore.cpp; CASES.md T30",
       .describe = words::store_key_timeout,
       .fix = words::kStoreKeyFix},
      {.id = "torch.store-wait-timeout",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kRendezvousTimeout,
       .failure = true,
       .needles = {"wait timeout after "},
       .parts = {{"wait timeout after ([0-9]+)ms, keys: ",
                  {{1, "timeout_ms", C::kInt}, {0, "key", C::kRest}},
                  true}},
       .description = "a store key that no peer wrote (2.x TCPStore)",
       .example = "torch.distributed.DistStoreError: wait timeout after 600000ms, keys: "
                  "/default_pg/0//cuda//0",
       .source = "torch/csrc/distributed/c10d/TCPStore.cpp",
       .describe = words::store_key_timeout,
       .fix = words::kStoreKeyFix},
      {.id = "torch.store-clients-timeout",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kRendezvousTimeout,
       .failure = true,
       .needles = {"waiting for clients."},
       .parts =
           {{R"(Timed out after ([0-9]+) seconds waiting for clients\. ([0-9]+)/([0-9]+) clients)"
             R"( joined)",
             {{1, "timeout_ms", C::kSeconds}, {2, "joined", C::kInt}, {3, "world_size", C::kInt}},
             true}},
       .description = "the store server waited for ranks that never connected",
       .example = "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for "
                  "clients. 1/4 clients joined.",
       .source = "torch/csrc/distributed/c10d/TCPStore.cpp",
       .describe = words::store_key_timeout,
       .fix = words::kStoreKeyFix},
      {.id = "torch.store-connect-timeout",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kRendezvousTimeout,
       .failure = true,
       .needles = {"client socket has timed out after"},
       .parts = {{R"(timed out after ([0-9]+ ?(?:ms|s)) while trying to connect to \(([^,]+),)"
                  R"( ([0-9]+)\))",
                  {{1, "timeout_ms", C::kDuration}, {2, "host"}, {3, "port", C::kInt}}}},
       .description = "a rank could not reach the store at MASTER_ADDR:MASTER_PORT",
       .example =
           "[E220 15:40:19.862248270 socket.cpp:1011] [c10d] The client socket has timed out "
           "after 600000ms while trying to connect to (192.168.6.2, 53489).",
       .source = "torch/csrc/distributed/c10d/socket.cpp",
       .describe = words::store_connect_timeout,
       .fix =
           "Nothing accepted a connection at the store's address: the process that hosts the store "
           "(rank 0, or torchrun's agent on the first node) had not started yet, had already "
           "failed, or listens at another address. Check that MASTER_ADDR and MASTER_PORT (or "
           "--rdzv-endpoint, init_method) are the same on every node and name that host, that it "
           "runs, and that this node reaches that address and port (a firewall, or the wrong "
           "network interface)."},
      {.id = "torch.store-bind-failed",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kPortInUse,
       .failure = true,
       .needles = {"The server socket has failed to"},
       .parts = {{R"(failed to bind to (\S+):([0-9]+) \(errno: ([0-9]+) - ([^)]+)\))",
                  {{1, "host"}, {2, "port", C::kInt}, {3, "errno", C::kInt}, {4, "error"}}}},
       .description = "the store could not listen on MASTER_PORT (errno 98: another job or a "
                      "stale process holds it)",
       .example =
           "RuntimeError: The server socket has failed to listen on any local network "
           "address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
           "already in use). The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 "
           "- Address already in use).",
       .source = "torch/csrc/distributed/c10d/socket.cpp",
       .refine = {{{{"errno", Test::kEquals, "99"}}, std::nullopt, -1, true}},
       .describe = words::port_in_use,
       .fix = words::kPortInUseFix},
      {.id = "python.address-in-use",
       .framework = "python",
       .kind = FindingKind::kPortInUse,
       .failure = true,
       .needles = {"Address already in use"},
       .parts = {{R"(\[Errno ([0-9]+)\])", {{1, "errno", C::kInt}}}},
       .description = "EADDRINUSE: a port is taken",
       .example = "OSError: [Errno 98] Address already in use",
       .source = "errno EADDRINUSE",
       .describe = words::port_in_use,
       .fix = words::kPortInUseFix},
      {.id = "torch.gloo-connect-timeout",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kRendezvousTimeout,
       .failure = true,
       .needles = {"Socket Timeout"},
       .description = "gloo's process group gave up connecting to the other ranks in "
                      "init_process_group: a rank never joined (needs the traceback's frame in "
                      "distributed_c10d.py _new_process_group_helper)",
       .example = "RuntimeError: Socket Timeout",
       .source = "gloo transport/tcp (PyTorch 1.13), seen with a rank that never started",
       .frame_file = "distributed_c10d.py",
       .frame_function = "_new_process_group_helper",
       .title = "timed out in init_process_group waiting for the other ranks to connect",
       .fix = words::kJoinFix},
      {.id = "torch.rendezvous-timeout",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kRendezvousTimeout,
       .failure = true,
       .needles = {"RendezvousTimeoutError", "RendezvousConnectionError"},
       .parts = {{"Rendezvous(Timeout|Connection)Error", {{1, "error"}}}},
       .description = "torchrun's elastic rendezvous did not complete or reach its store",
       .example = "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
       .source = "torch/distributed/elastic/rendezvous",
       .describe = words::rendezvous_timeout,
       .fix = words::kJoinFix},

      // ---- launchers
      // ----------------------------------------------------------------------------------
      {.id = "torchrun.redirects-none",
       .framework = "torchrun",
       .kind = FindingKind::kLauncherBug,
       .failure = true,
       .needles = {"'NoneType' object has no attribute 'get'"},
       .description =
           "Debian's torchrun (PyTorch 1.13, Python 3.11) parses the default "
           "--redirects 0 to None and dies before starting a worker; pass --redirects 2 "
           "--tee 2 (needs the traceback's frame in elastic/multiprocessing/api.py to_map)",
       .example = "AttributeError: 'NoneType' object has no attribute 'get'",
       .source = "DESIGN.md, Facts about the machines",
       .frame_file = "elastic/multiprocessing/api.py",
       .frame_function = "to_map",
       .title =
           "torchrun failed before starting any rank: this build parses the default --redirects 0 "
           "to None",
       .fix = "Pass --redirects 2 --tee 2 (any non-zero value) to torchrun, or use a PyTorch "
              "release with the fix."},
      {.id = "torchrun.child-failed",
       .framework = "torchrun",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"ChildFailedError"},
       .description = "torchrun's summary that a worker (rank) failed; the root cause section "
                      "follows",
       .example = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
       .source = "torch/distributed/elastic/multiprocessing/errors"},
      {.id = "torchrun.local-rank-failed",
       .framework = "torchrun",
       .kind = std::nullopt,
       .failure = true,
       .needles = {") local_rank: "},
       .parts = {{R"(failed \(exitcode: (-?[0-9]+)\) local_rank: ([0-9]+) \(pid: ([0-9]+)\)(?: of)"
                  R"( binary: (\S+))?)",
                  {{1, "exit_code", C::kInt},
                   {2, "local_rank", C::kInt},
                   {3, "pid", C::kInt},
                   {4, "binary"}},
                  true}},
       .description = "torchrun's agent saw a local rank fail (negative exit code: killed by that "
                      "signal)",
       .example = "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) "
                  "local_rank: 0 (pid: 1234) of binary: /usr/bin/python3",
       .source = "torch/distributed/elastic/agent/server/api.py"},
      {.id = "torchrun.signal-received",
       .framework = "torchrun",
       .kind = std::nullopt,
       .failure = true,
       .needles = {") received by PID "},
       .parts = {{R"(Signal ([0-9]+) \((SIG[A-Z0-9]+)\) received by PID ([0-9]+))",
                  {{1, "signo", C::kInt}, {2, "signal"}, {3, "pid", C::kInt}},
                  true}},
       .description = "the root-cause section of torchrun: the rank died of a signal",
       .example = "  traceback : Signal 9 (SIGKILL) received by PID 1234",
       .source = "torch/distributed/elastic/multiprocessing/api.py"},
      {.id = "torchrun.signal-exception",
       .framework = "torchrun",
       .kind = FindingKind::kKilledExternally,
       .failure = true,
       .needles = {" got signal: "},
       .parts = {{R"(SignalException: Process ([0-9]+) got signal: ([0-9]+))",
                  {{1, "pid", C::kInt}, {2, "signo", C::kInt}},
                  true}},
       .description = "torchrun's agent was sent SIGTERM, SIGINT, SIGHUP or SIGQUIT: it stops its "
                      "ranks and exits",
       .example = "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1234 "
                  "got signal: 15",
       .source = "torch/distributed/elastic/multiprocessing/api.py",
       .describe = words::stopped_by_signal},
      {.id = "torchrun.root-cause-exitcode",
       .framework = "torchrun",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"exitcode"},
       .parts = {{R"(^\s*exitcode\s*: (-?[0-9]+) \(pid: ([0-9]+)\))",
                  {{1, "exit_code", C::kInt}, {2, "pid", C::kInt}},
                  true}},
       .description = "the exit code in torchrun's failure summary",
       .example = "  exitcode  : -9 (pid: 1234)",
       .source = "torch/distributed/elastic/multiprocessing/errors/__init__.py"},
      {.id = "torchrun.closing-signal",
       .framework = "torchrun",
       .kind = std::nullopt,
       .failure = false,
       .needles = {" closing signal "},
       .parts = {{"Sending process ([0-9]+) closing signal (SIG[A-Z0-9]+)",
                  {{1, "pid", C::kInt}, {2, "signal"}, {2, "signo", C::kSignalName}},
                  true}},
       .description = "torchrun stops the other ranks after one failed (consequences, not causes)",
       .example = "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1235 "
                  "closing signal SIGTERM",
       .source = "torch/distributed/elastic/multiprocessing/api.py"},
      {.id = "torch.spawn-process-exited",
       .framework = "pytorch",
       .kind = std::nullopt,
       .failure = true,
       .needles = {" terminated with "},
       .parts = {{"process ([0-9]+) terminated with (?:signal (SIG[A-Z0-9]+)|exit code (-?[0-9]+))",
                  {{1, "process", C::kInt},
                   {2, "signal"},
                   {2, "signo", C::kSignalName},
                   {3, "exit_code", C::kInt}},
                  true}},
       .description = "torch.multiprocessing.spawn saw a child process end",
       .example = "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with "
                  "signal SIGABRT",
       .source = "torch/multiprocessing/spawn.py; CASES.md T13"},
      {.id = "torch.spawn-process-raised",
       .framework = "pytorch",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"terminated with the following error:"},
       .parts = {{"-- Process ([0-9]+) terminated with the following error:",
                  {{1, "process", C::kInt}},
                  true}},
       .description = "torch.multiprocessing.spawn: a child raised (its traceback follows)",
       .example = "-- Process 1 terminated with the following error:",
       .source = "torch/multiprocessing/spawn.py"},
  };
}

#undef TD_FINGERPRINT

}  // namespace traindoc::analysis
