// Known error texts turned into words: one describer per kind of failure, reading the numbers
// that the signature extracted. Pure.
#include "analysis/known_failure.h"

#include "analysis/diagnosis.h"
#include "analysis/known_exception.h"
#include "analysis/match_fields.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <set>

namespace traindoc::analysis {
namespace {

std::string millis(const std::string& ms) {
  return ms.empty() ? "" : ms + " ms";
}

using Describer = std::function<void(const SignatureMatch&, KnownFailure&)>;

void label(const SignatureMatch& m, KnownFailure& f) {
  std::string value = field(m, "label");
  f.title = value.empty() ? "a target label is outside [0, classes)"
                          : "target label " + value + " is outside [0, classes)";
  if (value == "255") {
    f.evidence.push_back("255 is the void label of segmentation masks (Cityscapes, Pascal VOC)");
    f.fix =
        "The dataset's void label 255 is not ignored: use CrossEntropyLoss(ignore_index=255) "
        "(or F.cross_entropy(..., ignore_index=255)), or remap void pixels to a class.";
  } else if (!value.empty()) {
    f.fix = "Label " + value +
            " is not a class of the model: check the label mapping and the number of classes "
            "(the model's output channels), or pass ignore_index=" +
            value + " if it marks pixels to skip.";
  }
}

void index(const SignatureMatch& m, KnownFailure& f) {
  f.title =
      "index " + (field(m, "index").empty() ? "" : field(m, "index") + " ") + "is out of range";
  if (!field(m, "size").empty()) {
    f.title += " for dimension " + field(m, "dim") + " with size " + field(m, "size");
  }
}

void worker_timeout(const SignatureMatch& m, KnownFailure& f) {
  std::string ms = field(m, "timeout_ms");
  f.title = "the DataLoader got no batch from its workers within " +
            (ms.empty() ? std::string("its timeout") : millis(ms));
}

void store_timeout(const SignatureMatch& m, KnownFailure& f) {
  if (m.id == "torch.gloo-connect-timeout" || m.id == "torch.rendezvous-timeout") {
    f.title = m.id == "torch.gloo-connect-timeout"
                  ? "timed out in init_process_group waiting for the other ranks to connect"
              : field(m, "error") == "Connection"
                  ? "torchrun could not reach its rendezvous endpoint"
                  : "torchrun's rendezvous timed out waiting for the other nodes to join";
    f.fix = kJoinFix;
    return;
  }
  if (m.id == "torch.store-connect-timeout") {
    f.title = "could not connect to the store at " + field(m, "host") + ":" + field(m, "port") +
              " in " + millis(field(m, "timeout_ms"));
    f.fix =
        "Nothing accepted a connection at the store's address: the process that hosts the store "
        "(rank 0, or torchrun's agent on the first node) had not started yet, had already "
        "failed, or listens at another address. Check that MASTER_ADDR and MASTER_PORT (or "
        "--rdzv-endpoint, init_method) are the same on every node and name that host, that it "
        "runs, and that this node reaches that address and port (a firewall, or the wrong "
        "network interface).";
    return;
  }
  std::string key = field(m, "key");
  f.title = key.empty() ? "timed out waiting on the store"
                        : "waited " + millis(field(m, "timeout_ms")) + " for store key '" + key +
                              "', which no process wrote";
}

void unused_parameters(const SignatureMatch& m, KnownFailure& f) {
  std::string names = field(m, "param_names");
  std::string indices = field(m, "param_indices");
  f.title = "DDP's gradient reduction did not finish: parameters that took no part in the loss";
  if (!names.empty()) {
    f.title += " (" + names + ")";
  } else if (!indices.empty()) {
    f.title += " (indices " + indices + ")";
  }
  if (auto rank = int_field(m, "rank")) {
    f.title += " on rank " + std::to_string(*rank);
    f.ranks.push_back(*rank);
  }
}

void model_mismatch(const SignatureMatch& m, KnownFailure& f) {
  auto rank = int_field(m, "rank");
  auto other = int_field(m, "other_rank");
  if (!field(m, "params").empty()) {
    // Lower rank first, whichever rank printed it.
    bool swap = rank && other && *other < *rank;
    std::string first = swap ? "other_" : "";
    std::string second = swap ? "" : "other_";
    f.title = "the model differs across ranks: rank " + field(m, first + "rank") + " has " +
              field(m, first + "params") + " parameters, rank " + field(m, second + "rank") +
              " has " + field(m, second + "params");
  } else if (!field(m, "sizes").empty()) {
    f.title = "the model differs across ranks: parameter " + field(m, "param_index") +
              " has sizes " + shape(field(m, "sizes")) + " on rank " + field(m, "rank") +
              " but not on rank " + field(m, "other_rank");
  } else {
    f.title = "the model differs across ranks";
  }
  for (auto r : {rank, other}) {
    if (r) f.ranks.push_back(*r);
  }
}

void collective_mismatch(const SignatureMatch& m, KnownFailure& f) {
  if (m.id == "torch.collective-mismatch") {
    auto side = [&](const std::string& p) {
      std::string text = "rank " + field(m, p + "rank") + " " + field(m, p + "op");
      if (!field(m, p + "shape").empty()) text += " " + shape(field(m, p + "shape"));
      if (!field(m, p + "dtype").empty()) text += " " + field(m, p + "dtype");
      return text;
    };
    auto rank = int_field(m, "rank");
    auto other = int_field(m, "other_rank");
    bool swap = rank && other && *other < *rank;  // lower rank first
    f.title = "ranks called different collectives at the same step: " + side(swap ? "other_" : "") +
              ", " + side(swap ? "" : "other_");
    for (auto r : {int_field(m, "rank"), int_field(m, "other_rank")}) {
      if (r) f.ranks.push_back(*r);
    }
  } else if (m.id == "gloo.invalid-tensor-size") {
    f.title = field(m, "op") + " tensor sizes differ across ranks: expected (" +
              field(m, "expected_shape") + ") at index " + field(m, "index") + ", got (" +
              field(m, "shape") + ")";
  } else if (m.id == "gloo.preamble-size-mismatch") {
    f.title = "a collective's sizes differ across ranks: a peer sent " + field(m, "peer_bytes") +
              " bytes where this rank expected " + field(m, "local_bytes");
  } else if (!field(m, "op").empty()) {
    f.title = "input shapes of " + field(m, "op") + " differ across ranks";
    std::string dims = field(m, "shape");
    if (!dims.empty()) {
      // The shape is whole when its length was printed on the same line and agrees; otherwise
      // its first values were printed here and the rest on the lines below.
      auto length = int_field(m, "shape_dims");
      bool whole = length && static_cast<size_t>(*length) == int_list(dims).size();
      std::string listed = shape(dims);
      f.title += ": rank " + field(m, "rank") + "'s shape " +
                 (whole ? "is " + listed : "begins with " + listed.substr(1, listed.size() - 2));
    }
  } else {
    f.title = "ranks called mismatched collectives";
  }
}

void collective_missing(const SignatureMatch& m, KnownFailure& f) {
  std::string ranks = field(m, "ranks");
  if (!ranks.empty()) {
    f.ranks = int_list(ranks);
    f.title = std::string(f.ranks.size() == 1 ? "rank " : "ranks ") + ranks +
              " did not reach the monitored barrier within " + millis(field(m, "timeout_ms"));
  } else if (m.id == "gloo.io-timeout") {
    f.title =
        "waited " + millis(field(m, "timeout_ms")) + " in a collective that a peer never joined";
  } else if (auto check = int_field(m, "check_rank")) {
    f.title =
        "failed a monitored barrier: rank " + std::to_string(*check) + " names the missing ranks";
    f.ranks.push_back(*check);
  } else {
    f.title = "a collective timed out: a rank never joined it";
  }
}

void launcher_bug(const SignatureMatch& m, KnownFailure& f) {
  if (m.id == "torchrun.redirects-none") {
    f.title =
        "torchrun failed before starting any rank: this build parses the default --redirects 0 "
        "to None";
    f.fix =
        "Pass --redirects 2 --tee 2 (any non-zero value) to torchrun, or use a PyTorch "
        "release with the fix.";
  }
}

void stopped_by_signal(const SignatureMatch& m, KnownFailure& f) {
  auto signo = int_field(m, "signo");
  if (!signo) return;
  f.title = "got " + signal_name(*signo) + " and stopped its ranks";
  f.fix =
      "A request to stop, sent to the launcher: from the scheduler (time limit, preemption), a "
      "user, or a parent process. If nothing else failed, look at the scheduler's log.";
}

// "12080" (the CUDA version a driver supports, as the driver API numbers it) -> "12.8".
std::string cuda_version(int number) {
  return std::to_string(number / 1000) + "." + std::to_string(number % 1000 / 10);
}

void cuda_unavailable(const SignatureMatch& m, KnownFailure& f) {
  if (m.id == "cuda.driver-too-old") {
    auto driver = int_field(m, "driver_cuda");
    f.title = driver ? "the NVIDIA driver supports CUDA up to " + cuda_version(*driver) +
                           ", older than the CUDA this program was built for"
                     : "the NVIDIA driver is older than the CUDA runtime this program uses";
    f.fix =
        "Install a build for the CUDA version the driver supports (`nvidia-smi` shows it; "
        "`torch.version.cuda` shows the one PyTorch was built for: a cu128 wheel for a 12.8 "
        "driver), or update the driver. On data-center GPUs, NVIDIA's CUDA "
        "forward-compatibility package (cuda-compat) lets a newer runtime run on an older "
        "driver.";
    return;
  }
  if (m.id == "cuda.unknown-error") {
    f.title = "CUDA could not start in the process (CUDA unknown error)";
    f.fix = kCudaUnknownErrorFix;
    return;
  }
  if (m.id == "cuda.invalid-device-ordinal") {
    f.title = "the process asked for a GPU it cannot see (invalid device ordinal)";
    f.fix =
        "A GPU number (torch.cuda.set_device(local_rank), cuda:N, a device map) is beyond the "
        "GPUs this process sees: start no more ranks per node than it has GPUs (torchrun "
        "--nproc_per_node at most torch.cuda.device_count()), and mind CUDA_VISIBLE_DEVICES, "
        "which numbers the GPUs it leaves visible from 0 (with CUDA_VISIBLE_DEVICES=2,3 they are "
        "cuda:0 and cuda:1).";
    return;
  }
  std::string reason = field(m, "reason");
  if (reason.starts_with("Attempting to deserialize")) {
    f.title = "torch.load found CUDA tensors in the checkpoint, and CUDA is not available here";
    f.fix =
        "Load with map_location: torch.load(path, map_location=\"cpu\") on a machine without a "
        "GPU, or map_location=torch.device(\"cuda\", local_rank) on each rank of a GPU job "
        "(which also keeps the ranks off GPU 0). If this machine has GPUs, CUDA is not available "
        "to this process: check the driver and CUDA_VISIBLE_DEVICES.";
    return;
  }
  f.fix = reason.starts_with("Distributed package")
              ? "This PyTorch has no NCCL (a CPU-only build): on the CPU use the gloo backend "
                "(init_process_group(\"nccl\" if torch.cuda.is_available() else \"gloo\")), "
                "or install a CUDA build of PyTorch on a GPU node."
          : reason.starts_with("Torch not compiled")
              ? "This PyTorch is a CPU-only build: install a CUDA build of PyTorch, or run on "
                "the CPU (pick the device with torch.cuda.is_available())."
          : reason.starts_with("Found no NVIDIA driver")
              ? "The machine has no NVIDIA driver loaded: run on a GPU node, or on the CPU "
                "(pick the device with torch.cuda.is_available())."
              : "No GPU is visible to this process: CUDA_VISIBLE_DEVICES may be empty or name "
                "no GPU (a scheduler sets it), or every GPU is taken in exclusive mode.";
}

void host_alloc(const SignatureMatch& m, KnownFailure& f) {
  std::string text = field(m, "requested_bytes");
  uint64_t bytes = 0;
  // MemoryError says no more than its name.
  if (std::from_chars(text.data(), text.data() + text.size(), bytes).ec != std::errc()) return;
  f.title = "a host allocation of " + format_bytes(bytes) + " was refused";
  if (!field(m, "shape").empty()) {
    f.title += " (an array of shape " + shape(field(m, "shape")) + " " + field(m, "dtype") + ")";
  }
}

void port_in_use(const SignatureMatch& m, KnownFailure& f) {
  if (field(m, "port").empty()) return;
  f.title = "the store could not listen on port " + field(m, "port") + ": " + field(m, "error");
}

void disk_full(const SignatureMatch& m, KnownFailure& f) {
  std::string path = field(m, "path");
  if (m.id == "torch.checkpoint-write-failed") {
    f.title = "torch.save could not write the checkpoint (record " + field(m, "record") +
              "): its filesystem is full or over quota";
  } else {
    bool quota = int_field(m, "errno") == 122;
    f.title = std::string(quota ? "the disk quota is used up" : "the disk is full") +
              (path.empty() ? ": a write failed" : ": writing '" + path + "' failed");
  }
  f.fix = "Free space on the filesystem the job writes to (`df -h " +
          (path.empty() ? std::string("<checkpoint folder>") : path) +
          "`; `quota -s` for a quota), or write checkpoints and logs to a larger one. Keep fewer "
          "checkpoints (delete the oldest as each new one is saved), and save to a temporary "
          "name then os.replace() it, so that a failed save never leaves a truncated file in "
          "place of the last good checkpoint.";
}

void checkpoint_corrupt(const SignatureMatch& m, KnownFailure& f) {
  std::string reason = field(m, "reason");
  if (m.id == "torch.checkpoint-truncated" || m.id == "torch.checkpoint-truncated-small") {
    f.title = "the checkpoint is not a whole file (" + reason + ")";
  } else if (reason == "Ran out of input") {
    f.title = "the checkpoint file is empty";
  } else {
    f.title = "the file is not a PyTorch checkpoint (" + reason + ")";
    if (reason.ends_with("'v'")) {
      f.evidence.push_back(
          "load key 'v' is the first letter of a Git LFS pointer (\"version https://git-lfs...\")");
    } else if (reason.ends_with("'<'")) {
      f.evidence.push_back("load key '<' is the first letter of an HTML page (a failed download)");
    }
  }
}

// EAGAIN is a limit on processes and threads; a thread's stack may also lack memory, which
// Python's text does not tell apart.
void process_limit(const SignatureMatch& m, KnownFailure& f) {
  if (m.id == "libgomp.thread-create-failed") {
    f.title = "OpenMP could not start its threads: " +
              std::string(field(m, "error") == "Cannot allocate memory"
                              ? "no memory for their stacks"
                              : "the limit on processes and threads was reached");
  } else if (m.id.ends_with("fork-failed")) {
    f.title = "could not start a process: the limit on processes and threads was reached";
  } else {
    f.title =
        "could not start a thread: the limit on processes and threads, or memory for its stack";
  }
}

// What the error says of the way to the server: no name service, no route, a firewall that
// drops the connection, a server that answers too slowly or refuses.
std::string network_error(const SignatureMatch& m) {
  std::string error = field(m, "error");
  std::string cause = field(m, "cause");  // urllib3's, under requests' text
  int number = int_field(m, "errno").value_or(0);
  if (number == -2 || number == -3 || number == -5) {
    return "the host name could not be resolved (" + error + ")";
  }
  if (number == 101) return "the network is unreachable";
  if (number == 111) return "nothing listens there (Connection refused)";
  if (cause == "ReadTimeoutError") return "it did not answer in time";
  if (number == 110 || cause == "ConnectTimeoutError" ||
      error.find("timed out") != std::string::npos) {
    return "the connection timed out";
  }
  if (error.find("CERTIFICATE_VERIFY_FAILED") != std::string::npos) {
    return "its TLS certificate is not trusted here";
  }
  if (error == "unknown url type: https") return "this Python has no SSL support (" + error + ")";
  return error;
}

// The fix where the server or the way to it says more than "work offline".
std::string network_fix(const SignatureMatch& m, const std::string& host) {
  std::string error = field(m, "error");
  if (error.find("CERTIFICATE_VERIFY_FAILED") != std::string::npos) {
    return "This Python does not trust the server's TLS certificate: a proxy that inspects "
           "traffic presents its own. Point the job at the site's CA bundle (SSL_CERT_FILE, and "
           "REQUESTS_CA_BUNDLE for requests) rather than turning verification off.";
  }
  if (error == "unknown url type: https") {
    return "This Python was built without the ssl module (OpenSSL missing when it was built): "
           "use an interpreter that has it (`python -c 'import ssl'` tells).";
  }
  if (field(m, "cause") == "ProxyError") {
    return "The proxy that HTTPS_PROXY (or HTTP_PROXY, ALL_PROXY) names did not let the "
           "request through: it did not answer (check its address and port on this node), or "
           "refused it (407: it wants credentials, in the proxy's URL; 403: the site is not "
           "allowed). Unset it where the node reaches the server directly (NO_PROXY for the "
           "site's own hosts).";
  }
  if (error.find("too many 429") != std::string::npos) {
    return "The server limits how often it is asked, and every rank and worker that downloads "
           "at once multiplies the requests: download once (rank 0 first, then a barrier, or "
           "beforehand into a cache the nodes share) and log in (HF_TOKEN) for a higher limit.";
  }
  if (host == "api.wandb.ai") {
    return "wandb cannot reach its server from this node: run with WANDB_MODE=offline and "
           "`wandb sync` the run's folder later from a machine that can.";
  }
  if ((host == "localhost" || host.starts_with("127.")) && int_field(m, "errno") == 111) {
    return "Nothing listens at that port on this machine: the service the job talks to (a "
           "tracking server such as MLflow, a local model server) is not running, or listens "
           "on another port. Start it first, or point the job at where it runs.";
  }
  return "";
}

void network_unreachable(const SignatureMatch& m, KnownFailure& f) {
  if (m.id == "huggingface.unreachable") {
    std::string model = field(m, "model");
    f.title = "could not reach the Hugging Face Hub" + (model.empty() ? "" : " for " + model) +
              ", and the file is not in the local cache";
    return;
  }
  std::string host = field(m, "host");
  std::string why = network_error(m);
  // A server that answered slowly, or with errors until urllib3's retries ran out ("too many 429
  // error responses", 500, 503), was reached.
  std::string error = field(m, "error");
  bool reached = field(m, "cause") == "ReadTimeoutError" ||
                 (error.starts_with("too many ") && error.ends_with(" error responses"));
  if (field(m, "cause") == "ProxyError") {
    f.title = "could not get through the proxy to " + host;
  } else {
    f.title = (host.empty() ? std::string("a download failed")
                            : (reached ? "could not download from " : "could not reach ") + host) +
              (why.empty() ? "" : ": " + why);
  }
  f.fix = network_fix(m, host);
}

const std::map<FindingKind, Describer>& describers() {
  static const std::map<FindingKind, Describer> kDescribers = {
      {FindingKind::kLabelOutOfRange, label},
      {FindingKind::kIndexOutOfRange, index},
      {FindingKind::kWorkerTimeout, worker_timeout},
      {FindingKind::kRendezvousTimeout, store_timeout},
      {FindingKind::kDdpUnusedParameters, unused_parameters},
      {FindingKind::kDdpModelMismatch, model_mismatch},
      {FindingKind::kCollectiveMismatch, collective_mismatch},
      {FindingKind::kCollectiveMissing, collective_missing},
      {FindingKind::kLauncherBug, launcher_bug},
      {FindingKind::kHostAllocFailed, host_alloc},
      {FindingKind::kKilledExternally, stopped_by_signal},
      {FindingKind::kPythonException, describe_python},
      {FindingKind::kBadArguments, describe_python},
      {FindingKind::kCudaUnavailable, cuda_unavailable},
      {FindingKind::kPortInUse, port_in_use},
      {FindingKind::kDiskFull, disk_full},
      {FindingKind::kCheckpointCorrupt, checkpoint_corrupt},
      {FindingKind::kProcessLimit, process_limit},
      {FindingKind::kNetworkUnreachable, network_unreachable},
  };
  return kDescribers;
}

// How much a match says: a failure of a kind about this process first (a plain exception's
// fix after any more specific kind), then the number of values it extracted (the monitored
// barrier's text beats the gloo timeout inside it).
int weight(const SignatureMatch& m) {
  if (!m.failure || !m.kind) return -1;
  int fields = static_cast<int>(std::count_if(m.fields.begin(), m.fields.end(), [](auto& kv) {
    return kv.first != "prefix" && kv.first != "prefix_rank" && kv.first != "exception_type";
  }));
  int base = reports_another_process(*m.kind)          ? 0
             : m.kind == FindingKind::kPythonException ? 500
                                                       : 1000;
  return base + fields;
}

// "train.py:42"
std::string location(const PythonFrame& f) {
  return f.file + (f.line > 0 ? ":" + std::to_string(f.line) : "");
}

std::string frame_text(const PythonFrame& f) {
  std::string text = location(f);
  if (!f.function.empty()) text += " in " + f.function;
  if (!f.code.empty()) text += ": " + f.code;
  return text;
}

// The innermost frame of the user's code (outside libraries), nullptr when none was printed.
const PythonFrame* user_frame(const PythonTraceback& traceback) {
  const PythonFrame* user = nullptr;
  const std::vector<PythonFrame>& frames = traceback.frames;
  for (size_t i = 0; i < frames.size(); ++i) {
    // spawn and forkserver start a process with `python -c "from multiprocessing.spawn import
    // spawn_main; ..."`: that <string> is theirs, not the user's.
    bool bootstrap = frames[i].file == "<string>" && i + 1 < frames.size() &&
                     (frames[i + 1].file.ends_with("multiprocessing/spawn.py") ||
                      frames[i + 1].file.ends_with("multiprocessing/forkserver.py"));
    if (!is_library_file(frames[i].file) && !bootstrap) user = &frames[i];
  }
  return user;
}

}  // namespace

const char* const kJoinFix =
    "A rank or a node never joined: the others wait for it until the rendezvous's timeout. "
    "Check that every node was started, with the same settings (--nnodes, "
    "--rdzv-endpoint or MASTER_ADDR and MASTER_PORT, --rdzv-id; WORLD_SIZE as many as the "
    "ranks started), that each node reaches that address and port (a firewall, or the wrong "
    "network interface: GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME), and that no other job holds "
    "the port.";

const char* const kCudaUnknownErrorFix =
    "Most often CUDA could not use the GPU's unified-memory device, /dev/nvidia-uvm: its "
    "kernel module (nvidia_uvm) is not loaded, or stopped working after a suspend, while "
    "nvidia-smi, which does not use it, still works. Reload it (sudo rmmod nvidia_uvm; sudo "
    "modprobe nvidia_uvm) or reboot; in a container, make sure /dev/nvidia-uvm is passed in "
    "(--gpus, or --device /dev/nvidia-uvm). CUDA_VISIBLE_DEVICES changed after CUDA started in "
    "the process gives the same error.";

bool reports_another_process(FindingKind kind) {
  static const std::set<FindingKind> kAboutAnother = {
      FindingKind::kWorkerCrash, FindingKind::kWorkerExit, FindingKind::kPeerExited,
      FindingKind::kHostOomKilled};
  return kAboutAnother.contains(kind);
}

std::optional<KnownFailure> describe_known(const std::vector<SignatureMatch>& matches,
                                           const PythonTraceback* from) {
  const SignatureMatch* best = nullptr;
  for (const SignatureMatch& m : matches) {
    if (weight(m) >= 0 && (best == nullptr || weight(m) > weight(*best))) best = &m;
  }
  if (best == nullptr) return std::nullopt;
  KnownFailure f;
  f.match = best;
  f.kind = *best->kind;
  auto it = describers().find(f.kind);
  if (it != describers().end()) it->second(*best, f);
  if (f.fix.empty()) f.fix = fix_for(f.kind);
  if (f.fix.empty()) {
    f.fix = "Read the traceback in " + (from ? traceback_place(*from) : "logs/stderr.log") + ".";
  }
  std::string values;
  for (const auto& [name, value] : best->fields) {
    if (name != "prefix" && name != "prefix_rank" && name != "exception_type") {
      values += (values.empty() ? "" : ", ") + name + " " + value;
    }
  }
  f.evidence.push_back("known error " + best->id + (values.empty() ? "" : ": " + values));
  return f;
}

std::string merge_key(FindingKind kind, const std::string& signature_id) {
  static const std::set<FindingKind> kCollective = {
      FindingKind::kCollectiveMismatch, FindingKind::kCollectiveOrder,
      FindingKind::kCollectiveMissing, FindingKind::kUnevenInputs, FindingKind::kPeerExited};
  return kCollective.contains(kind) ? std::string(to_string(kind)) : signature_id;
}

std::string fix_for(FindingKind kind) {
  static const std::map<FindingKind, std::string> kFixes = {
      {FindingKind::kLabelOutOfRange,
       "A target label is outside [0, classes): check the label mapping and the number of "
       "classes, or pass ignore_index for the label that marks pixels to skip."},
      {FindingKind::kIndexOutOfRange,
       "An index exceeds its dimension: check the ids fed to the embedding or gather against "
       "its size."},
      {FindingKind::kDdpUnusedParameters,
       "Some parameters took no part in the loss, so DDP's reduction never finished. Use every "
       "output in the loss, remove the unused layers, or pass find_unused_parameters=True "
       "(slower; static_graph=True when the pattern is fixed)."},
      {FindingKind::kDdpModelMismatch,
       "The model differs across ranks: build it identically everywhere (same config, same "
       "conditional layers, same vocabulary) and freeze the same parameters on every rank (DDP "
       "counts only those that require grad) before wrapping it in DDP."},
      {FindingKind::kRendezvousTimeout,
       "A store key that no rank ever wrote: a rank never reached the same rendezvous (it "
       "crashed, used another MASTER_PORT or group name). Find the rank that should have set "
       "it."},
      {FindingKind::kWorkerTimeout,
       "DataLoader workers are alive but slower than `timeout`: find the slow or blocked "
       "__getitem__ (py-spy dump on the workers), or raise the timeout."},
      {FindingKind::kCollectiveMismatch,
       "Ranks called the same collective with different ops, shapes or dtypes: make the "
       "control flow rank-independent and the shapes identical (pad, or all-gather the sizes "
       "first)."},
      {FindingKind::kCollectiveMissing,
       "A rank never entered the collective the others waited in (a rank-dependent branch, an "
       "early return or `continue`, or one rank still busy): make the collective unconditional "
       "or decide skips collectively; raise the timeout only for genuinely slow work."},
      {FindingKind::kHostAllocFailed,
       "One allocation was refused: the requested size is often a shape bug (a wrong dimension "
       "multiplied in); check it before adding memory."},
      {FindingKind::kPortInUse,
       "Another process holds the port: an earlier run still alive (`ss -ltnp` names it) or "
       "another job on this node. End it, or give this job another port (torchrun "
       "--master_port, MASTER_PORT)."},
      {FindingKind::kFdExhausted,
       "File descriptors ran out: raise `ulimit -n`, or use "
       "torch.multiprocessing.set_sharing_strategy('file_system')."},
      {FindingKind::kCheckpointCorrupt,
       "torch.load read a file that is not a whole checkpoint: a save cut short (a full disk, a "
       "job killed while saving), a partial copy or download, or a Git LFS pointer left in place "
       "of the file (`git lfs pull`). Load an earlier checkpoint or save this one again, and "
       "compare its size with the original. Save to a temporary name then os.replace() it, so "
       "that a checkpoint is whole or absent."},
      {FindingKind::kProcessLimit,
       "Every thread counts against the limit on processes: the user's (`ulimit -u`, across all "
       "of that user's processes on the machine), the container's (`cat "
       "/sys/fs/cgroup/pids.max`; docker --pids-limit, a Kubernetes pod's pid limit) and the "
       "kernel's (kernel.threads-max). Each rank starts OpenMP threads as many as the machine "
       "has cores unless OMP_NUM_THREADS says fewer (torchrun sets 1 when it starts several "
       "ranks per node), and NumPy's, OpenCV's and BLAS pools add their own, in DataLoader "
       "workers too: set OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS to a few, "
       "use fewer num_workers, or raise the limit. A thread also needs memory for its stack: "
       "check `ulimit -v` and `ulimit -s`."},
      {FindingKind::kNetworkUnreachable,
       "The job downloads as it runs, and this node cannot reach the server: compute nodes "
       "often have no internet access. Fetch once on a machine that has it (a login node) into "
       "the cache the job reads, on a filesystem the nodes share: torch.hub and torchvision "
       "weights in $TORCH_HOME/hub/checkpoints (~/.cache/torch), Hugging Face models and "
       "datasets in $HF_HOME (~/.cache/huggingface), then run with HF_HUB_OFFLINE=1 so that it "
       "reads only the cache; or pass a local path instead of a URL or a model name. Where the "
       "site has a proxy, set HTTPS_PROXY for the job."},
      {FindingKind::kShmExhausted,
       "/dev/shm is too small for what the workers pass: run the container with --shm-size "
       "(or --ipc=host), or lower batch size, num_workers or prefetch_factor."},
  };
  auto it = kFixes.find(kind);
  return it == kFixes.end() ? "" : it->second;
}

std::string traceback_place(const PythonTraceback& traceback) {
  const std::string& stream = traceback.stream;
  return store::is_job_stream(stream) ? "logs/" + stream + ".log" : stream;
}

std::string unknown_exception_fix(const PythonTraceback& traceback) {
  const PythonFrame* user = user_frame(traceback);
  const PythonFrame* last = traceback.last_frame();
  std::string place = traceback_place(traceback);
  std::string whole = "The whole traceback is in " + place + ".";
  if (user == nullptr) return "Read the traceback in " + place + ".";
  if (user == last) return "Your code raised it at " + location(*user) + ": fix it there. " + whole;
  return "A library raised it (" + location(*last) + "), called from your code at " +
         location(*user) + ": check what that line passes it. " + whole;
}

std::vector<std::string> where(const PythonTraceback& traceback) {
  std::vector<std::string> out;
  const PythonFrame* user = user_frame(traceback);
  if (user != nullptr) out.push_back("at " + frame_text(*user));
  const PythonFrame* last = traceback.last_frame();
  if (last != nullptr && last != user) out.push_back("raised in " + frame_text(*last));
  return out;
}

}  // namespace traindoc::analysis
