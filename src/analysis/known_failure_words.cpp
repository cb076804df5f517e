// The words of the catalog's failures of a kind of their own (signature_words.h): describers
// that turn the numbers a signature extracted into a title, the ranks named and a fix, and the
// fixes several entries share. Pure.
#include <charconv>

#include "analysis/diagnosis.h"
#include "analysis/match_fields.h"
#include "analysis/signature_words.h"
#include "store/time_math.h"

namespace traindoc::analysis::words {

namespace {

std::string millis(const std::string& ms) {
  return ms.empty() ? "" : ms + " ms";
}

}  // namespace

std::string label_fix(std::optional<int64_t> label, std::optional<int64_t> classes,
                      std::optional<int64_t> largest) {
  if (!label) return kLabelFix;
  std::string value = std::to_string(*label);
  std::string count = classes ? std::to_string(*classes) : "C";
  // Saturating (store::shifted_ns adds so): the event's numbers are whatever run.db holds.
  std::string last = classes ? std::to_string(store::shifted_ns(*classes, -1)) : "C-1";
  // The void labels, which a loss is told to ignore: segmentation masks' 255, and PyTorch's
  // default ignore_index where the loss's was set to another.
  if (*label == 255) {
    return "The dataset's void label 255 is not ignored: use CrossEntropyLoss(ignore_index=255) "
           "(or F.cross_entropy(..., ignore_index=255)), or remap void pixels to a class.";
  }
  if (*label == -100) {
    return "-100 is PyTorch's default ignore_index, and this loss no longer ignores it: its "
           "ignore_index was set to another value. If -100 marks the targets to skip, pass "
           "ignore_index=-100 (the default), or remap them to the value the loss ignores.";
  }
  if (*label < 0) {
    return "Label " + value + " is negative: the labels are wrong. Class labels run from 0 to " +
           (classes ? last + " (the loss's input has " + count + " classes)"
                    : std::string("the number of classes minus one")) +
           ": check how the dataset makes them (a class missing from its mapping, an offset "
           "subtracted).";
  }
  // A real class beyond the model's: too few classes, or labels numbered otherwise. The batch's
  // largest label (the hook's) bounds the classes the labels need; the text's is only the first
  // the loss met.
  bool void_too = largest == 255;  // a mask's void pixels beside a real class too many
  int64_t top = largest && *largest > *label && !void_too ? *largest : *label;
  std::string highest = std::to_string(top);
  std::string fix = "Label " + value;
  fix += classes ? " is beyond the model's " + count + " classes (0.." + last + ")"
                 : " is not a class of the model";
  if (top != *label) fix += ", and the batch's labels go up to " + highest;
  bool one_based = classes && largest && !void_too && top == *classes;
  if (one_based) {
    fix +=
        ": the largest label equals the class count, the mark of labels numbered from 1 "
        "(1.." +
        count + "): subtract 1 from them, or";
  } else {
    fix += ": either";
  }
  fix += " the model has too few classes (";
  if (classes) fix += "its output has " + count + ", ";
  fix += "the labels go up to at least " + highest +
         ": set num_classes, the last layer's outputs, to at least " +
         std::to_string(store::shifted_ns(top, 1)) +
         ") or the labels are wrong (remap them to 0.." + last;
  if (!classes) fix += " for C classes";
  fix += one_based ? ")." : "; a 1-based labelling gives " + count + ").";
  if (void_too) {
    fix +=
        " The targets also hold 255, the void label of segmentation masks: if it marks pixels "
        "to skip, pass ignore_index=255 as well.";
  }
  return fix;
}

void label(const SignatureMatch& m, KnownFailure& f) {
  std::string value = field(m, "label");
  // TensorFlow's text has the class count; PyTorch's does not.
  std::string classes = field(m, "classes");
  std::string range = "[0, " + (classes.empty() ? std::string("classes") : classes) + ")";
  f.title = value.empty() ? "a target label is outside " + range
                          : "target label " + value + " is outside " + range;
  if (value == "255") {
    f.evidence.push_back("255 is the void label of segmentation masks (Cityscapes, Pascal VOC)");
  }
  if (auto known = int_field(m, "label"))
    f.fix = label_fix(*known, int_field(m, "classes"), std::nullopt);
}

void keras_label(const SignatureMatch& m, KnownFailure& f) {
  label(m, f);
  if (field(m, "label") == "255") {
    f.fix +=
        " In Keras the loss's argument is ignore_class: "
        "SparseCategoricalCrossentropy(ignore_class=255).";
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

void rendezvous_timeout(const SignatureMatch& m, KnownFailure& f) {
  f.title = field(m, "error") == "Connection"
                ? "torchrun could not reach its rendezvous endpoint"
                : "torchrun's rendezvous timed out waiting for the other nodes to join";
}

void store_connect_timeout(const SignatureMatch& m, KnownFailure& f) {
  f.title = "could not connect to the store at " + field(m, "host") + ":" + field(m, "port") +
            " in " + millis(field(m, "timeout_ms"));
}

void store_key_timeout(const SignatureMatch& m, KnownFailure& f) {
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

void torch_collective_mismatch(const SignatureMatch& m, KnownFailure& f) {
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
}

void gloo_tensor_size(const SignatureMatch& m, KnownFailure& f) {
  f.title = field(m, "op") + " tensor sizes differ across ranks: expected (" +
            field(m, "expected_shape") + ") at index " + field(m, "index") + ", got (" +
            field(m, "shape") + ")";
}

void gloo_preamble_size(const SignatureMatch& m, KnownFailure& f) {
  f.title = "a collective's sizes differ across ranks: a peer sent " + field(m, "peer_bytes") +
            " bytes where this rank expected " + field(m, "local_bytes");
}

void collective_shapes(const SignatureMatch& m, KnownFailure& f) {
  if (!field(m, "op").empty()) {
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

void gloo_io_timeout(const SignatureMatch& m, KnownFailure& f) {
  f.title =
      "waited " + millis(field(m, "timeout_ms")) + " in a collective that a peer never joined";
}

void collective_missing(const SignatureMatch& m, KnownFailure& f) {
  std::string ranks = field(m, "ranks");
  if (!ranks.empty()) {
    f.ranks = int_list(ranks);
    f.title = std::string(f.ranks.size() == 1 ? "rank " : "ranks ") + ranks +
              " did not reach the monitored barrier within " + millis(field(m, "timeout_ms"));
  } else if (auto check = int_field(m, "check_rank")) {
    f.title =
        "failed a monitored barrier: rank " + std::to_string(*check) + " names the missing ranks";
    f.ranks.push_back(*check);
  } else {
    f.title = "a collective timed out: a rank never joined it";
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

namespace {

// "12080" (the CUDA version a driver supports, as the driver API numbers it) -> "12.8".
std::string cuda_version(int number) {
  return std::to_string(number / 1000) + "." + std::to_string(number % 1000 / 10);
}

}  // namespace

void driver_too_old(const SignatureMatch& m, KnownFailure& f) {
  auto driver = int_field(m, "driver_cuda");
  f.title = driver ? "the NVIDIA driver supports CUDA up to " + cuda_version(*driver) +
                         ", older than the CUDA this program was built for"
                   : "the NVIDIA driver is older than the CUDA runtime this program uses";
}

void cuda_unavailable(const SignatureMatch& m, KnownFailure& f) {
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

namespace {

// The fix for a full filesystem, naming the path that failed where the text gives it.
std::string free_space_fix(const std::string& path) {
  return "Free space on the filesystem the job writes to (`df -h " +
         (path.empty() ? std::string("<checkpoint folder>") : path) +
         "`; `quota -s` for a quota), or write checkpoints and logs to a larger one. Keep fewer "
         "checkpoints (delete the oldest as each new one is saved), and save to a temporary "
         "name then os.replace() it, so that a failed save never leaves a truncated file in "
         "place of the last good checkpoint.";
}

}  // namespace

void disk_full(const SignatureMatch& m, KnownFailure& f) {
  std::string path = field(m, "path");
  bool quota = int_field(m, "errno") == 122;
  f.title = std::string(quota ? "the disk quota is used up" : "the disk is full") +
            (path.empty() ? ": a write failed" : ": writing '" + path + "' failed");
  f.fix = free_space_fix(path);
}

void checkpoint_write_failed(const SignatureMatch& m, KnownFailure& f) {
  f.title = "torch.save could not write the checkpoint (record " + field(m, "record") +
            "): its filesystem is full or over quota";
  f.fix = free_space_fix(field(m, "path"));
}

void checkpoint_truncated(const SignatureMatch& m, KnownFailure& f) {
  f.title = "the checkpoint is not a whole file (" + field(m, "reason") + ")";
}

void checkpoint_corrupt(const SignatureMatch& m, KnownFailure& f) {
  std::string reason = field(m, "reason");
  if (reason == "Ran out of input") {
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

void openmp_threads(const SignatureMatch& m, KnownFailure& f) {
  f.title = "OpenMP could not start its threads: " +
            std::string(field(m, "error") == "Cannot allocate memory"
                            ? "no memory for their stacks"
                            : "the limit on processes and threads was reached");
}

namespace {

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

}  // namespace

void huggingface_unreachable(const SignatureMatch& m, KnownFailure& f) {
  std::string model = field(m, "model");
  f.title = "could not reach the Hugging Face Hub" + (model.empty() ? "" : " for " + model) +
            ", and the file is not in the local cache";
}

void network_unreachable(const SignatureMatch& m, KnownFailure& f) {
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

const char* const kLabelFix =
    "A target label is outside [0, classes), and the GPU does not say which: find it with "
    "`assert target.min() >= 0 and target.max() < num_classes` on the CPU before the loss (the "
    "CPU's loss names it: \"Target N is out of bounds\"), or rerun with CUDA_LAUNCH_BLOCKING=1 "
    "so that the traceback points at the loss. A label beyond the classes means the model has "
    "too few (num_classes, the last layer's outputs) or the labels need remapping to "
    "0..classes-1; only where the dataset's void label (e.g. 255) is in the targets, ignore it: "
    "CrossEntropyLoss(ignore_index=255).";

const char* const kIndexFix =
    "An index exceeds its dimension: check the ids fed to the embedding or gather against "
    "its size.";

const char* const kUnusedParametersFix =
    "Some parameters took no part in the loss, so DDP's reduction never finished. Use every "
    "output in the loss, remove the unused layers, or pass find_unused_parameters=True "
    "(slower; static_graph=True when the pattern is fixed).";

const char* const kModelMismatchFix =
    "The model differs across ranks: build it identically everywhere (same config, same "
    "conditional layers, same vocabulary) and freeze the same parameters on every rank (DDP "
    "counts only those that require grad) before wrapping it in DDP.";

const char* const kStoreKeyFix =
    "A store key that no rank ever wrote: a rank never reached the same rendezvous (it "
    "crashed, used another MASTER_PORT or group name). Find the rank that should have set "
    "it.";

const char* const kCollectiveMismatchFix =
    "Ranks called the same collective with different ops, shapes or dtypes: make the "
    "control flow rank-independent and the shapes identical (pad, or all-gather the sizes "
    "first).";

const char* const kCollectiveMissingFix =
    "A rank never entered the collective the others waited in (a rank-dependent branch, an "
    "early return or `continue`, or one rank still busy): make the collective unconditional "
    "or decide skips collectively; raise the timeout only for genuinely slow work.";

const char* const kHostAllocFix =
    "One allocation was refused: the requested size is often a shape bug (a wrong dimension "
    "multiplied in); check it before adding memory.";

const char* const kPortInUseFix =
    "Another process holds the port: an earlier run still alive (`ss -ltnp` names it) or "
    "another job on this node. End it, or give this job another port (torchrun "
    "--master_port, MASTER_PORT).";

const char* const kFdExhaustedFix =
    "File descriptors ran out: raise `ulimit -n`, or use "
    "torch.multiprocessing.set_sharing_strategy('file_system').";

const char* const kCheckpointCorruptFix =
    "torch.load read a file that is not a whole checkpoint: a save cut short (a full disk, a "
    "job killed while saving), a partial copy or download, or a Git LFS pointer left in place "
    "of the file (`git lfs pull`). Load an earlier checkpoint or save this one again, and "
    "compare its size with the original. Save to a temporary name then os.replace() it, so "
    "that a checkpoint is whole or absent.";

const char* const kProcessLimitFix =
    "Every thread counts against the limit on processes: the user's (`ulimit -u`, across all "
    "of that user's processes on the machine), the container's (`cat "
    "/sys/fs/cgroup/pids.max`; docker --pids-limit, a Kubernetes pod's pid limit) and the "
    "kernel's (kernel.threads-max). Each rank starts OpenMP threads as many as the machine "
    "has cores unless OMP_NUM_THREADS says fewer (torchrun sets 1 when it starts several "
    "ranks per node), and NumPy's, OpenCV's and BLAS pools add their own, in DataLoader "
    "workers too: set OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS to a few, "
    "use fewer num_workers, or raise the limit. A thread also needs memory for its stack: "
    "check `ulimit -v` and `ulimit -s`.";

const char* const kNetworkFix =
    "The job downloads as it runs, and this node cannot reach the server: compute nodes "
    "often have no internet access. Fetch once on a machine that has it (a login node) into "
    "the cache the job reads, on a filesystem the nodes share: torch.hub and torchvision "
    "weights in $TORCH_HOME/hub/checkpoints (~/.cache/torch), Hugging Face models and "
    "datasets in $HF_HOME (~/.cache/huggingface), then run with HF_HUB_OFFLINE=1 so that it "
    "reads only the cache; or pass a local path instead of a URL or a model name. Where the "
    "site has a proxy, set HTTPS_PROXY for the job.";

const char* const kShmFix =
    "/dev/shm is too small for what the workers pass: run the container with --shm-size "
    "(or --ipc=host), or lower batch size, num_workers or prefetch_factor.";

}  // namespace traindoc::analysis::words
