// The words of known Python exceptions and rejected command lines (signature_words.h): one
// describer per signature, reading the values it extracted. Pure.
#include <algorithm>
#include <initializer_list>
#include <set>
#include <string_view>
#include <utility>

#include "analysis/file_name.h"
#include "analysis/match_fields.h"
#include "analysis/signature_words.h"
#include "store/symbol_name.h"

namespace traindoc::analysis::words {

// ---- the interpreter ---------------------------------------------------------------------------

void module_not_found(const SignatureMatch& m, KnownFailure& f) {
  std::string module = field(m, "module");
  f.fix =
      "The Python that ran this process (its command line is in the process table) has no "
      "module '" +
      module.substr(0, module.find('.')) +
      "': install the package that provides it with that interpreter (`python -m pip install "
      "...`), or launch the job with the environment that has it.";
}

void file_not_found(const SignatureMatch& m, KnownFailure& f) {
  f.fix = "The path '" + field(m, "path") +
          "' does not exist for this process: check it. A relative path resolves against the "
          "process's working directory, which a launcher or a scheduler may set elsewhere.";
}

void script_not_found(const SignatureMatch& m, KnownFailure& f) {
  f.fix = "Python could not open the script '" + field(m, "path") + "' (" + field(m, "error") +
          "), so nothing ran: check its name, and the working directory the job starts in (a "
          "relative path resolves against it; a launcher or a scheduler may set another).";
}

void batchnorm_one_sample(const SignatureMatch& m, KnownFailure& f) {
  std::string input = field(m, "shape");
  f.title = "batch normalization got one sample per channel in training" +
            (input.empty() ? std::string() : " (input " + shape(input) + ")");
  f.fix =
      "BatchNorm cannot compute a variance over one value: the last batch of an epoch often has "
      "a single sample (a dataset size one more than a multiple of the batch size). Pass "
      "drop_last=True to the DataLoader, use a batch of more than one sample per process, or "
      "call model.eval() to run one sample.";
}

void view_size_mismatch(const SignatureMatch& m, KnownFailure& f) {
  std::string sizes = shape(field(m, "shape"));
  std::string elements = field(m, "elements");
  f.title = "a view or reshape to " + sizes + " of a tensor of " + elements + " elements";
  f.fix = "The sizes multiply to another count than the tensor's " + elements +
          " elements. A size written as a constant, the batch size most often, fails on the "
          "last batch of an epoch, which is smaller: take it from the tensor (x.size(0), "
          "x.view(x.size(0), -1)) or pass drop_last=True to the DataLoader. Otherwise, print the "
          "tensor's shape before the line.";
}

void broadcast_mismatch(const SignatureMatch& m, KnownFailure& f) {
  f.title = "tensors of sizes " + field(m, "size_a") + " and " + field(m, "size_b") +
            " met at dimension " + field(m, "dim") + ", where neither is 1";
  f.fix =
      "Two tensors of an elementwise operation (+, *, a loss) differ in a dimension that "
      "cannot broadcast: print both shapes at the line cited. The usual causes: a constant "
      "batch size against the smaller last batch (drop_last=True), a missing or extra "
      "unsqueeze, or sequences of another length than the model's.";
}

void unreadable_image(const SignatureMatch& m, KnownFailure& f) {
  std::string path = field(m, "path");
  f.title = !path.empty()                    ? "PIL cannot read the image file " + path
            : !field(m, "truncated").empty() ? "PIL read an image file that is cut short"
                                             : "PIL cannot read an image file";
  f.fix =
      "A file of the dataset is no image PIL can decode: corrupt, cut short by a copy or a "
      "download, an HTML error page saved as .jpg, or a format whose plugin is missing. Find "
      "the bad files once before training (open each and call .verify()) and remove or fetch "
      "them again; for images cut short, PIL.ImageFile.LOAD_TRUNCATED_IMAGES = True loads what "
      "is there.";
}

void unpicklable(const SignatureMatch& m, KnownFailure& f) {
  std::string what = !field(m, "local").empty()      ? "the local object " + field(m, "local")
                     : !field(m, "function").empty() ? "the function " + field(m, "function")
                     : !field(m, "type").empty()     ? "a " + field(m, "type") + " object"
                                                     : "an object";
  f.title = what + " cannot be pickled";
  f.fix =
      "Pickle cannot serialize a lambda, a function or class defined inside another function, "
      "an open file, a lock or a connection. Python pickles what a DataLoader sends each worker "
      "that spawn or forkserver starts (the dataset, collate_fn, worker_init_fn), the arguments "
      "of torch.multiprocessing.spawn, and a whole object given to torch.save. Define functions "
      "and classes at module level (functools.partial instead of a lambda), open files and "
      "connections in each worker on first use (in __getitem__ or worker_init_fn), and save "
      "model.state_dict() rather than the model.";
}

// The module a pickle names tells who saved it: a spawned process's copy of the main script
// (__mp_main__), a script's own classes (__main__ from a file), a notebook's or the interactive
// interpreter's (__main__ from no file), or a module whose names changed.
void missing_class(const SignatureMatch& m, KnownFailure& f) {
  std::string name = field(m, "name");
  std::string module = field(m, "module");
  const std::string spawn =
      "A process that spawn or forkserver starts (the workers of a DataLoader with that context, "
      "torch.multiprocessing.spawn, multiprocessing.Pool; spawn is the default on macOS and "
      "Windows) imports the main script as __mp_main__, without running its `if __name__ == "
      "'__main__':` block, then looks up by name what it was sent";
  const std::string whole_model =
      "Save model.state_dict() instead, and load it into a model built from the class "
      "(model.load_state_dict(torch.load(path))). For a model saved whole already, import " +
      name + " into the loading program before torch.load (`from <its module> import " + name +
      "`; PyTorch 2.6 and later also need weights_only=False for a whole model).";
  if (module == "__mp_main__") {
    f.title = "a process that spawn started could not find " + name + " in the main script";
    f.fix = spawn + ": define " + name +
            " at the main script's top level, not inside that block or a function, or better in "
            "a module of its own that the main script imports.";
  } else if (module == "__main__" && field(m, "origin").empty()) {
    f.title = "unpickling could not find " + name +
              " in the main module, which is no file (a notebook, the interactive interpreter, "
              "python -c)";
    f.fix = spawn + "; a notebook is no script it can import: define " + name +
            " in a .py module that the notebook imports. Loading a model that a script saved "
            "whole (torch.save(model)) needs " +
            name + " too. " + whole_model;
  } else if (module == "__main__") {
    f.title = "the file names " + name +
              " of the main script that saved it, which the loading program's main script lacks";
    f.fix =
        "Pickle stores a class by its module and name, and a class of the script that ran is "
        "__main__." +
        name +
        ": a model saved whole (torch.save(model)) loads only where the main script "
        "defines " +
        name + " too. " + whole_model;
  } else {
    f.title = "the file names " + module + "." + name + ", which the loading program's " + module +
              " lacks";
    f.fix = "Pickle stores a class or function by its module and name: " + name +
            " was renamed, moved or removed from " + module +
            " since the file was saved, or the loading program imports another version of it. "
            "Restore the name (an alias `" +
            name + " = NewName` in " + module +
            " is enough), or load the file with the code that saved it and save its "
            "state_dict.";
  }
}

void launcher_variable_missing(const SignatureMatch& m, KnownFailure& f) {
  std::string variable = field(m, "variable");
  std::string fallback =
      variable == "MASTER_ADDR"   ? "os.environ.setdefault('MASTER_ADDR', '127.0.0.1')"
      : variable == "MASTER_PORT" ? "os.environ.setdefault('MASTER_PORT', '29500')"
                                  : "int(os.environ.get('" + variable + "', " +
                                        (variable.ends_with("WORLD_SIZE") ? "1" : "0") + "))";
  f.title = variable +
            ", which torchrun sets, is not set: no launcher of torch.distributed started this "
            "process";
  f.fix =
      "torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for each process "
      "it starts: launch with `torchrun --nproc_per_node N script.py`. srun and mpirun set their "
      "own (SLURM_PROCID, OMPI_COMM_WORLD_RANK): map them to these, or run torchrun under them. "
      "For a script that also runs as one process, give them defaults (" +
      fallback + ") and call init_process_group only when WORLD_SIZE is set.";
}

void bad_arguments(const SignatureMatch& m, KnownFailure& f) {
  std::string program = field(m, "program");
  std::string unknown = field(m, "unrecognized");
  if (unknown.find("--local_rank") != std::string::npos ||
      unknown.find("--local-rank") != std::string::npos) {
    f.title = program + " does not accept " + unknown +
              ", which torch.distributed.launch passes to every rank";
    f.fix =
        "torch.distributed.launch passes --local_rank (--local-rank from PyTorch 2.0) to the "
        "script: accept it, parser.add_argument('--local_rank', '--local-rank', type=int, "
        "default=0), or launch with torchrun (or launch --use_env), which passes the rank in the "
        "LOCAL_RANK variable instead: read os.environ['LOCAL_RANK'].";
  } else if (!unknown.empty()) {
    f.title = program + " does not accept the arguments " + unknown;
    f.fix =
        "The script's parser has no such flag: check its name and spelling, and that options "
        "meant for the launcher come before the script's name (after it, they go to the "
        "script).";
  } else if (!field(m, "required").empty()) {
    f.title = program + " needs the arguments " + field(m, "required");
    f.fix = "Pass them on the script's command line (after the script's name).";
  } else {
    f.title = program + ": argument " + field(m, "argument") + ": " + field(m, "error");
    f.fix = "Check the value given to " + field(m, "argument") + " on the script's command line.";
  }
}

void worker_exception(const SignatureMatch& m, KnownFailure& f) {
  f.fix = "DataLoader worker " + field(m, "worker") +
          " raised it in the code it runs for the loader (the dataset's __getitem__, a "
          "transform, collate_fn or worker_init_fn; the worker's frames are cited): fix it "
          "there. With num_workers=0 that code runs in the main process, where a debugger can "
          "stop at the exception.";
}

// ---- native libraries --------------------------------------------------------------------------

namespace {

// Whether a library's file name ("libcudart.so.11.0") starts with one of `names`.
bool library_of(const std::string& file, std::initializer_list<std::string_view> names) {
  return std::any_of(names.begin(), names.end(), [&](std::string_view name) {
    return file.starts_with(name) && file.size() > name.size() &&
           (file[name.size()] == '.' || file[name.size()] == '-');
  });
}

// The Debian and Ubuntu package of a desktop library that opencv-python loads; nullptr for
// others.
const char* desktop_package(const std::string& file) {
  static constexpr std::pair<std::string_view, const char*> kPackages[] = {
      {"libGL", "libgl1"},
      {"libEGL", "libegl1"},
      {"libOpenGL", "libopengl0"},
      {"libgthread-2.0", "libglib2.0-0"},
      {"libglib-2.0", "libglib2.0-0"},
      {"libSM", "libsm6"},
      {"libICE", "libice6"},
      {"libXext", "libxext6"},
      {"libXrender", "libxrender1"},
      {"libX11", "libx11-6"}};
  for (const auto& [library, package] : kPackages) {
    if (library_of(file, {library})) return package;
  }
  return nullptr;
}

}  // namespace

void shared_library_missing(const SignatureMatch& m, KnownFailure& f) {
  std::string library = field(m, "library");
  std::string file(file_name(library));
  f.title = "the native library " + library +
            " could not be loaded: it is not installed, or not on the loader's path";
  if (file.starts_with("libcuda.so.")) {
    f.fix =
        "libcuda.so.1 is the NVIDIA driver's own library: this machine, or this container, has "
        "no driver. Run on a GPU node; start a container with the GPU runtime (docker run "
        "--gpus all with the NVIDIA container toolkit, apptainer --nv).";
  } else if (file == "libcuda.so") {
    f.fix =
        "libcuda.so, without a version, is the name that compiling against the driver looks for "
        "(Triton, an extension built at run time); the driver installs libcuda.so.1. Install "
        "the driver's development package, or link libcuda.so to libcuda.so.1 in the driver's "
        "library folder (ldconfig -p | grep libcuda shows it).";
  } else if (library_of(file, {"libcudart", "libcublas", "libcublasLt", "libcudnn", "libcufft",
                               "libcurand", "libcusparse", "libcusolver", "libnccl", "libnvrtc",
                               "libnvJitLink", "libcupti", "libnvToolsExt"})) {
    f.fix = "The package that loads " + file +
            " was built against that library, which this environment lacks (CUDA's runtime and "
            "math libraries carry CUDA's major version in their names, cuDNN and NCCL their "
            "own). Install the package's build for the CUDA that PyTorch uses (python -c "
            "'import torch; print(torch.version.cuda)'; PyTorch's pip wheels bring these "
            "libraries as nvidia-* packages, as nvidia-cudnn-cu12), or install that library and "
            "add its folder to LD_LIBRARY_PATH.";
  } else if (const char* package = desktop_package(file)) {
    f.fix = file +
            " is one of the desktop (OpenGL, X11) libraries that opencv-python needs, which "
            "servers and slim containers lack: install opencv-python-headless in place of "
            "opencv-python (pip uninstall opencv-python, then pip install "
            "opencv-python-headless), or the system package (Debian and Ubuntu: apt-get install " +
            package + ").";
  } else {
    f.fix = "Install the system package that provides " + file +
            " (Debian and Ubuntu: apt-file search " + file +
            "; conda: the package of that name), or add the folder that holds it to "
            "LD_LIBRARY_PATH. `ldd` on the module's .so file lists every library it needs and "
            "those not found.";
  }
}

// Which build a missing symbol names: PyTorch's C++ namespaces, Python's C API, CUDA's.
void undefined_symbol(const SignatureMatch& m, KnownFailure& f) {
  std::string module = field(m, "module");
  std::string symbol = store::demangle(field(m, "symbol"));
  size_t dir = module.find_last_of('/');
  size_t above =
      dir == std::string::npos || dir == 0 ? std::string::npos : module.find_last_of('/', dir - 1);
  std::string name = above == std::string::npos ? module : module.substr(above + 1);
  auto starts = [&](std::initializer_list<std::string_view> prefixes) {
    return std::any_of(prefixes.begin(), prefixes.end(),
                       [&](std::string_view p) { return symbol.starts_with(p); });
  };
  std::string built;
  if (starts({"c10::", "at::", "torch::", "caffe2::", "THP"})) {
    built = "PyTorch";
    f.fix =
        "An extension compiled against one PyTorch version does not load in another: its C++ "
        "symbols change between versions, most often after torch was upgraded. Install the "
        "package's build made for this PyTorch and CUDA (python -c 'import torch; "
        "print(torch.__version__, torch.version.cuda)'; mmcv, torch-scatter, flash-attn and "
        "others publish one per pair), or rebuild it against the installed PyTorch: pip install "
        "--no-build-isolation --no-cache-dir --force-reinstall PACKAGE, or its setup again in "
        "its source tree after removing the build/ folder.";
  } else if (starts({"Py", "_Py"})) {
    built = "Python";
    f.fix =
        "The module was built for another Python than the one running it (the tag in its "
        "file name, cpython-3XX, names the one it was built for): reinstall the package with "
        "this interpreter (python -m pip install --force-reinstall PACKAGE).";
  } else if (starts({"cuda", "__cuda", "cublas", "cudnn", "cufft", "curand", "cusparse", "nccl",
                     "__nvJitLink", "nvJitLink"})) {
    built = "CUDA";
    f.fix =
        "The module was built against another CUDA version than the libraries loaded with it: "
        "install its build for the CUDA that PyTorch uses (python -c 'import torch; "
        "print(torch.version.cuda)'), or rebuild it with that CUDA toolkit.";
  } else {
    f.fix =
        "The module was built against another version of the library that defines the symbol: "
        "reinstall or rebuild the package against the installed libraries. `ldd -r` on the "
        "module's file lists its unresolved symbols and the libraries it loads.";
  }
  f.title = "the compiled module " + name + " was built against " +
            (built.empty() ? std::string("another version of a library") : "another " + built) +
            ": it needs " + symbol + ", which the loaded libraries lack";
}

// ---- shapes and types --------------------------------------------------------------------------

void collate_unequal(const SignatureMatch& m, KnownFailure& f) {
  f.fix = "The samples of one batch have different shapes (" + shape(field(m, "shape")) +
          " at entry " + field(m, "entry") + ", " + shape(field(m, "other_shape")) + " at entry " +
          field(m, "other_entry") +
          "), so the default collate cannot stack them: resize or crop every sample to one size "
          "in the dataset's transform, or pass the DataLoader a collate_fn that pads them "
          "(torch.nn.utils.rnn.pad_sequence for sequences).";
}

void linear_features(const SignatureMatch& m, KnownFailure& f) {
  f.fix = "A layer built for " + field(m, "layer_features") + " input features got " +
          field(m, "input_features") +
          ": the input is not the size the model was built for (another image size or sequence "
          "length, or a flatten after convolutions that keeps more). Give the layer "
          "in_features=" +
          field(m, "input_features") +
          " if that size is meant, or resize the inputs; nn.AdaptiveAvgPool2d before the flatten "
          "(or nn.LazyLinear) makes the model independent of the input size.";
}

void collate_type(const SignatureMatch& m, KnownFailure& f) {
  std::string type = field(m, "type");
  if (type == "NoneType") {
    f.title = "the dataset returned None for a sample, which the default collate cannot batch";
    f.fix =
        "__getitem__ returned None: a path without a return, or a sample it skips on an "
        "error (a corrupt file). Return a sample for every index, or drop the skipped ones "
        "in a collate_fn: default_collate([s for s in batch if s is not None]).";
    return;
  }
  if (type.empty()) return;
  f.title = "the DataLoader's default collate cannot batch samples of type " + type;
  f.fix = "The dataset returns " + type +
          " objects: turn each sample into a tensor in its transform (transforms.ToTensor() or "
          "PILToTensor() for PIL images, torch.as_tensor for arrays), or pass the DataLoader a "
          "collate_fn that batches them.";
}

void conv_channels(const SignatureMatch& m, KnownFailure& f) {
  auto expected = int_field(m, "channels");
  auto got = int_field(m, "input_channels");
  std::vector<int> input = int_list(field(m, "input_shape"));
  if (!expected || !got) return;
  f.title = "a convolution built for " + std::to_string(*expected) + " input channels got " +
            std::to_string(*got) + " (input " + shape(field(m, "input_shape")) + ", weight " +
            shape(field(m, "weight_shape")) + ")";
  if (!input.empty() && input.back() == *expected) {
    f.fix =
        "The input is in channels-last order ([N, H, W, C], as images come from NumPy or "
        "PIL): move the channels first, x.permute(0, 3, 1, 2).";
  } else if (*expected == 3 && (*got == 1 || *got == 4)) {
    f.fix = std::string(*got == 1 ? "Grayscale images" : "RGBA images (an alpha channel)") +
            " for a model built for RGB: convert them (PIL's .convert(\"RGB\") in the "
            "dataset's transform), or build the first layer with in_channels=" +
            std::to_string(*got) + ".";
  } else {
    f.fix =
        "The input has another number of channels than the layer was built for: build it "
        "with in_channels=" +
        std::to_string(*got) + ", or check what the previous layer or the dataset gives.";
  }
}

void conv_dims(const SignatureMatch& m, KnownFailure& f) {
  std::string op = field(m, "op");
  f.title = op + " takes a " + field(m, "unbatched_dims") + "D sample or a " +
            field(m, "batched_dims") + "D batch, and got " + shape(field(m, "input_shape"));
  f.fix = "Give " + op +
          " [N, C, ...] (or one sample, [C, ...]): an extra dimension (clips or stacked "
          "batches: x.flatten(0, 1)), or a missing channel dimension (x.unsqueeze(1)).";
}

namespace {

const char* const kDeviceFix =
    "Move every batch to the model's device (inputs and targets: x = x.to(device)), create "
    "tensors inside forward on the input's device (torch.zeros(..., device=x.device)), and "
    "register constant tensors as buffers (self.register_buffer) so that model.to(device) moves "
    "them too.";

}  // namespace

void device_mismatch(const SignatureMatch& m, KnownFailure& f) {
  if (!field(m, "other_device").empty()) {
    f.title = "one operation got tensors on two devices, " + field(m, "device") + " and " +
              field(m, "other_device");
  }
  f.fix = kDeviceFix;
}

namespace {

bool names(const std::string& type, std::initializer_list<const char*> words) {
  std::string lower = type;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(words.begin(), words.end(),
                     [&](const char* w) { return lower.find(w) != std::string::npos; });
}

}  // namespace

// Which fix depends on the type: float16 and bfloat16 lack CPU kernels; integers reach
// operations that need floating point, or loss targets need int64.
void dtype_unsupported(const SignatureMatch& m, KnownFailure& f) {
  std::string kernel = field(m, "kernel");
  std::string dtype = field(m, "dtype");
  f.title = "the operation " + kernel + " does not take " + dtype + " tensors";
  static const std::set<std::string> kIntegers = {"Bool", "Byte",   "Char",   "Short", "Int",
                                                  "Long", "UInt16", "UInt32", "UInt64"};
  bool integer = kIntegers.contains(dtype);
  bool cpu = !names(kernel, {"cuda"});
  if (dtype == "Half" && cpu) {
    f.fix =
        "Many operations have no float16 kernel on the CPU: the model or its inputs are float16 "
        "on the CPU (model.half(), or a float16 checkpoint, without moving it to the GPU). "
        "Compute in float32 on the CPU (model.float()), or in bfloat16 under "
        "torch.autocast('cpu', dtype=torch.bfloat16), which casts only where it is supported; "
        "on the GPU, keep float32 weights under torch.autocast('cuda') rather than .half().";
  } else if (dtype == "BFloat16" && cpu) {
    f.fix =
        "This PyTorch has no bfloat16 kernel for the operation on the CPU: keep the model in "
        "float32 (model.float()) and let torch.autocast('cpu', dtype=torch.bfloat16) pick the "
        "operations that take bfloat16, or use a newer PyTorch, which has more of them.";
  } else if (integer && names(kernel, {"nll_loss", "cross_entropy"})) {
    f.fix =
        "Class targets of cross_entropy and nll_loss must be int64: .long() them where they "
        "are made (NumPy gives int32 on some platforms, and from uint8 masks).";
  } else if (integer) {
    f.fix =
        "An integer tensor reached an operation that needs floating point: data read as "
        "integers (uint8 pixels, int64 arrays from NumPy) or a tensor built from Python ints "
        "(torch.tensor([1, 2])). Convert it with .float() where it is made (pixels: "
        ".float() / 255).";
  } else {
    f.fix =
        "Convert the tensor with .to(dtype) to a type the operation supports on its device "
        "(float32 is supported everywhere).";
  }
}

void type_mismatch(const SignatureMatch& m, KnownFailure& f) {
  std::string input = field(m, "input_type");
  std::string param = field(m, "param_type");
  std::string layer = field(m, "param");  // "weight" or "bias" when a layer's, else ""
  auto on = [](const std::string& type) { return names(type, {"cuda"}) ? "GPU" : "CPU"; };
  if (!layer.empty() && names(input, {"cuda"}) != names(param, {"cuda"})) {
    f.title = std::string("an input on the ") + on(input) + " (" + input + ") for a layer whose " +
              layer + " is on the " + on(param) + " (" + param + ")";
    f.fix = kDeviceFix;
    return;
  }
  if (!layer.empty()) {
    f.title = "a " + input + " input for a layer whose " + layer + " is " + param;
  } else if (!input.empty()) {
    f.title = "a tensor of type " + input + " where " + param + " is expected";
  }
  // Without the types (PyTorch 1.13's "mat1 and mat2 must have the same dtype"), the usual one.
  std::string both = input.empty() ? std::string("double") : input + " " + param;
  f.fix = "Convert one side with .to(dtype) where the tensor is made, so both are the same type.";
  if (names(input.empty() ? both : param, {"long", "int"})) {
    f.fix +=
        " Class targets of cross_entropy and nll_loss, and the indices of nn.Embedding, must be "
        "int64: .long() them.";
  } else if (names(input, {"long", "int"})) {
    f.fix +=
        " Inputs of layers and targets of regression and binary losses (mse_loss, l1_loss, "
        "binary_cross_entropy_with_logits) must be floating point, of the predictions' type: "
        ".float() them.";
  }
  if (names(both, {"double"})) {
    f.fix +=
        " NumPy arrays are float64, so torch.from_numpy and torch.tensor give float64 tensors "
        "for float32 weights: .float() them (or build the arrays as float32).";
  }
  if (names(both, {"half", "bfloat"})) {
    f.fix +=
        " For mixed precision, run the forward inside torch.autocast instead of calling .half() "
        "on part of the model or the inputs.";
  }
}

void batch_size_mismatch(const SignatureMatch& m, KnownFailure& f) {
  f.title = "the loss got " + field(m, "input_batch") + " predictions for " +
            field(m, "target_batch") + " targets";
  f.fix =
      "The outputs and the targets differ in their first dimension: a reshape in forward that "
      "folds features into the batch (x.view(-1, K) with the wrong K: use x.flatten(1) or "
      "x.view(x.size(0), -1)), targets of another shape (one-hot, or with an extra dimension), "
      "or outputs and targets of different batches.";
}

void numpy_not_cpu(const SignatureMatch& m, KnownFailure& f) {
  f.title = "numpy() on a tensor on " + field(m, "device") + ": NumPy reads host memory only";
  f.fix =
      "Copy it to host memory first: tensor.detach().cpu().numpy(); for one number, .item(). "
      "Libraries that take NumPy arrays (scikit-learn's metrics, matplotlib, np.array of a list "
      "of tensors) need that copy too; keep per-step GPU work in torch, and copy once for "
      "logging.";
}

// ---- autograd ----------------------------------------------------------------------------------

void autograd_inplace(const SignatureMatch& m, KnownFailure& f) {
  std::string what = field(m, "grad_fn").empty()
                         ? std::string("a tensor")
                         : "output " + field(m, "output") + " of " + field(m, "grad_fn") + " " +
                               shape(field(m, "shape"));
  f.title = what + ", saved for the backward pass, was changed in place before backward()";
  f.fix =
      "An in-place operation changed a tensor that autograd needs for the backward pass: `x += "
      "...`, `x[i] = ...`, `.add_()`, `.relu_()`, nn.ReLU(inplace=True), or optimizer.step() "
      "updating weights that a later backward through the same graph still needs (two losses, "
      "GAN training: run every backward before the step). Use the out-of-place form (`x = x + "
      "...`) or .clone() the tensor before changing it; torch.autograd.set_detect_anomaly(True) "
      "prints the forward line that made it.";
}

namespace {

// A NaN's fix in any framework: where the check `saw` it, where NaNs come from, and the
// framework's ways to keep inputs `in_range` and to `clip` gradients.
std::string nan_fix(const std::string& saw, const char* in_range, const char* clip) {
  return saw +
         ": an input outside the function's domain (log or sqrt of zero or less, a division by "
         "zero) or a forward value that overflowed. Keep inputs in range (" +
         in_range + "), lower the learning rate or clip gradients (" + clip + ").";
}

}  // namespace

void autograd_nan(const SignatureMatch& m, KnownFailure& f) {
  std::string fn = field(m, "grad_fn");
  f.title = (fn.empty() ? std::string("a backward function") : "the backward of " + fn) +
            " returned NaN (anomaly detection)";
  f.fix = nan_fix(
      "A gradient became NaN in the backward of the forward call cited (anomaly detection's "
      "warning names it)",
      "x.clamp_min(eps), log_softmax instead of log(softmax), BCEWithLogitsLoss instead of "
      "sigmoid then BCELoss",
      "torch.nn.utils.clip_grad_norm_");
}

void debug_nans(const SignatureMatch& m, KnownFailure& f) {
  std::string op = field(m, "primitive");
  std::string value = field(m, "value") == "inf" ? "Inf" : "NaN";
  f.title = (op.empty() ? std::string("an operation") : op) + " produced " + value +
            " (JAX's jax_debug_nans check)";
  f.fix = nan_fix("A value became " + value +
                      " in the operation cited (the traceback's last frame of yours, or the "
                      "forward call it differentiates)",
                  "jnp.maximum(x, eps), jax.nn.log_softmax instead of jnp.log(jax.nn.softmax(x)), "
                  "optax.sigmoid_binary_cross_entropy on logits",
                  "optax.clip_by_global_norm");
}

// ---- DDP and collectives ----------------------------------------------------------------------

void ddp_ready_twice(const SignatureMatch& m, KnownFailure& f) {
  std::string name = field(m, "param_name");
  std::string index = field(m, "param_index");
  f.title = "DDP got two gradients for " +
            (!name.empty()    ? "parameter " + name
             : !index.empty() ? "the parameter at index " + index
                              : std::string("a parameter")) +
            " in one backward pass";
  f.fix =
      "Under DDP each parameter may get one gradient per backward pass. A layer wrapped by more "
      "than one reentrant checkpoint (torch.utils.checkpoint with use_reentrant=True, 1.x's "
      "default): use "
      "checkpoint(..., use_reentrant=False). Two backward calls on one forward: sum the losses "
      "and call backward once. A graph that is the same every iteration: "
      "DistributedDataParallel(..., static_graph=True). TORCH_DISTRIBUTED_DEBUG=INFO names the "
      "parameter.";
}

void device_unsupported(const SignatureMatch& m, KnownFailure& f) {
  std::string device = field(m, "device").empty() ? "cpu" : field(m, "device");
  f.title = "a collective got a " + device +
            " tensor, for which its process group has no backend (NCCL takes CUDA tensors only)";
  f.fix =
      "Put the tensor on the rank's GPU before the collective (torch.tensor(x, "
      "device=torch.device('cuda', local_rank)), or .cuda() after torch.cuda.set_device). For "
      "values that stay on the CPU, use a gloo group (dist.new_group(backend='gloo')) or "
      "init_process_group('cpu:gloo,cuda:nccl'), which sends CPU tensors through gloo.";
}

void ddp_attribute(const SignatureMatch& m, KnownFailure& f) {
  std::string wrapper = field(m, "wrapper");
  f.title = "the model is wrapped in " + wrapper + ", which does not pass on `" +
            field(m, "attribute") + "`";
  f.fix = wrapper +
          " passes on calls of the model (model(x)) only: the model's own methods and "
          "attributes are on model.module (model.module." +
          field(m, "attribute") +
          "), or keep a reference to the model before wrapping it. Save model.module.state_dict(), "
          "so that the checkpoint loads into the model without the wrapper's 'module.' prefix.";
}

// ---- checkpoints -------------------------------------------------------------------------------

namespace {

// "\"a.b\", \"c\". " -> {"a.b", "c"}; a key cut short by the end of the text is dropped.
std::vector<std::string> quoted_keys(const std::string& text) {
  std::vector<std::string> keys;
  for (size_t open = text.find('"'); open != std::string::npos;) {
    size_t close = text.find('"', open + 1);
    if (close == std::string::npos) break;
    keys.push_back(text.substr(open + 1, close - open - 1));
    open = text.find('"', close + 1);
  }
  return keys;
}

// The prefix that every key of `longer` has over the keys of `shorter` ("module."), "" if none.
std::string common_prefix(const std::vector<std::string>& longer,
                          const std::vector<std::string>& shorter) {
  if (longer.empty() || shorter.empty()) return "";
  const std::string& first = longer.front();
  const std::string& bare = shorter.front();
  if (first.size() <= bare.size() || !first.ends_with(bare)) return "";
  std::string prefix = first.substr(0, first.size() - bare.size());
  if (!prefix.ends_with('.')) return "";
  bool all = std::all_of(longer.begin(), longer.end(),
                         [&](const std::string& k) { return k.starts_with(prefix); });
  return all ? prefix : "";
}

std::string wrapper_of(const std::string& prefix) {
  if (prefix == "module.") return "DistributedDataParallel or DataParallel";
  if (prefix == "_orig_mod.") return "torch.compile";
  return "another module";
}

std::string first_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < 3; ++i) out += (i ? ", '" : "'") + keys[i] + "'";
  return keys.size() > 3 ? out + ", ..." : out;
}

}  // namespace

void state_dict(const SignatureMatch& m, KnownFailure& f) {
  std::vector<std::string> missing = quoted_keys(field(m, "missing_keys"));
  std::vector<std::string> unexpected = quoted_keys(field(m, "unexpected_keys"));
  if (std::string extra = common_prefix(unexpected, missing); !extra.empty()) {
    f.title = "the checkpoint's keys start with '" + extra +
              "', the model's do not: it was saved from a model wrapped in " + wrapper_of(extra);
    f.fix = "Strip the prefix before loading: `state = {k.removeprefix('" + extra +
            "'): v for k, v in state.items()}` (or torch.nn.modules.utils."
            "consume_prefix_in_state_dict_if_present(state, '" +
            extra +
            "')). Save the inner model's state_dict (model.module for DDP, model._orig_mod for "
            "torch.compile) so that checkpoints load into any model.";
    return;
  }
  if (std::string extra = common_prefix(missing, unexpected); !extra.empty()) {
    f.title = "the model's keys start with '" + extra +
              "', the checkpoint's do not: the model is wrapped in " + wrapper_of(extra) +
              ", the checkpoint was saved from the bare model";
    f.fix =
        "Load the checkpoint into the inner model (model.module.load_state_dict(state) for DDP "
        "and DataParallel, model._orig_mod for torch.compile), or before wrapping the model.";
    return;
  }
  if (!field(m, "param").empty()) {
    f.title = "the checkpoint's " + field(m, "param") + " is " +
              shape(field(m, "checkpoint_shape")) + ", the model's " +
              shape(field(m, "model_shape"));
    f.fix =
        "The model was built with other sizes than the checkpoint (number of classes, "
        "vocabulary, hidden size): build it with the configuration the checkpoint was saved "
        "with. To fine-tune with another number of classes, drop the head's entries (" +
        field(m, "param") + ") from the state dict and load with strict=False.";
    return;
  }
  if (missing.empty() && unexpected.empty()) return;
  f.title = "the checkpoint does not fit the model:";
  if (!missing.empty()) f.title += " missing " + first_keys(missing);
  if (!unexpected.empty()) {
    f.title += std::string(missing.empty() ? "" : ";") + " unexpected " + first_keys(unexpected);
  }
  f.fix =
      "The checkpoint was saved from another architecture or configuration (layers added, "
      "removed or renamed): build the model as it was when the checkpoint was saved. When the "
      "difference is meant (a new head to fine-tune), load with strict=False and check the "
      "missing and unexpected keys it returns.";
}

void weights_only(const SignatureMatch& m, KnownFailure& f) {
  std::string global = field(m, "global");
  if (!global.empty()) {
    f.title = "torch.load refused the checkpoint: it holds " + global +
              ", which loading with weights_only does not allow";
  }
  std::string allow = global.empty() ? std::string("...") : global;
  f.fix =
      "torch.load loads only tensors and plain values by default since PyTorch 2.6 (and with "
      "weights_only=True before). If the checkpoint is your own or from a source you trust, "
      "allow the type, torch.serialization.add_safe_globals([" +
      allow +
      "]) before loading, or pass weights_only=False. Save new checkpoints so that they load "
      "as they are: state_dicts and plain values (float(x) for a NumPy scalar, vars(args) for "
      "an argparse.Namespace), not whole models.";
}

}  // namespace traindoc::analysis::words
