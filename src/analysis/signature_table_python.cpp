// The Python and training-loop part of the signature table (signature_table.cpp holds the
// rest): the interpreter's own errors, shapes and types fed to layers and losses, autograd, and
// checkpoints that do not fit the model. Pure data.
#include "analysis/signature_table.h"

#include "analysis/signature_words.h"

namespace traindoc::analysis {
namespace {

using C = Conv;

}  // namespace

std::vector<Entry> python_signature_entries() {  // NOLINT(readability-function-size): a data table
  return {
      // ---- the interpreter ----------------------------------------------------------------------
      {.id = "python.module-not-found",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"No module named "},
       .parts = {{"No module named '([^']+)'", {{1, "module"}}, true}},
       .description = "an import of a module that the process's Python environment lacks",
       .example = "ModuleNotFoundError: No module named 'wandb'",
       .source = "CPython",
       .describe = words::module_not_found},
      {.id = "python.shared-library-missing",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {": cannot open shared object file"},
       // An exception's message from its start (ATen's "Error in dlopen: " too), not a warning
       // that names one (torchvision's image extension, NCCL's network plugin), which the
       // program goes on without.
       .parts =
           {{R"re(^[\w.]+: (?:Error in dlopen(?: or dlsym)?: )?([^\s:'"=]+): cannot open shared object file)re",
             {{1, "library"}},
             true}},
       .description = "a native library that a module (or ctypes) loads is not installed or not "
                      "on the loader's path: OpenCV's libGL in a slim container, a CUDA runtime "
                      "of another version than a package was built for",
       .example = "ImportError: libGL.so.1: cannot open shared object file: No such file or "
                  "directory",
       .source = "glibc's dynamic loader; verified with an extension module whose library was "
                 "removed, and with ctypes",
       .describe = words::shared_library_missing},
      {.id = "python.undefined-symbol",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {": undefined symbol: "},
       // A versioned symbol ends at its ", version LIB".
       .parts =
           {{R"(^[\w.]+: (?:Error in dlopen(?: or dlsym)?: )?(\S+\.so[\w.]*): undefined symbol: ([^\s,']+))",
             {{1, "module"}, {2, "symbol"}},
             true}},
       .description = "a compiled extension module needs a symbol that the libraries loaded with "
                      "it lack: it was built against another version of PyTorch, CUDA or Python",
       .example = "ImportError: /opt/venv/lib/python3.11/site-packages/mmcv/_ext.cpython-311-"
                  "x86_64-linux-gnu.so: undefined symbol: _ZN3c1015SmallVectorBase8grow_podEPvmm",
       .source = "glibc's dynamic loader; verified with an extension module built against a "
                 "symbol that no loaded library defines",
       .describe = words::undefined_symbol},
      {.id = "python.file-not-found",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"No such file or directory: "},
       .parts = {{R"(\[Errno 2\] No such file or directory: '([^']*)')", {{1, "path"}}, true}},
       .description = "a path (dataset, checkpoint, config) that does not exist for the process",
       .example = "FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'",
       .source = "CPython",
       .describe = words::file_not_found},
      {.id = "python.script-not-found",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"can't open file '"},
       .parts = {{R"(can't open file '([^']*)': \[Errno ([0-9]+)\] (.+))",
                  {{1, "path"}, {2, "errno", C::kInt}, {3, "error"}},
                  true}},
       .description = "the interpreter could not open the script it was told to run: nothing ran",
       .example = "/usr/bin/python3: can't open file '/home/user/proj/trian.py': [Errno 2] No such "
                  "file or directory",
       .source = "CPython's main, verified under torchrun",
       .describe = words::script_not_found},
      {.id = "python.syntax-error",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"SyntaxError: ", "IndentationError: ", "TabError: "},
       .parts = {{"^(SyntaxError|IndentationError|TabError): ", {{1, "error_type"}}, true}},
       .description = "Python could not compile a script or module: nothing in it ran",
       .example = "IndentationError: expected an indented block after 'if' statement on line 2",
       .source = "CPython",
       .fix = "Python could not compile the file cited, so nothing in it ran: fix that line. "
              "`python -m "
              "py_compile FILE` checks a file without running it."},

      {.id = "python.recursion-limit",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"RecursionError: maximum recursion depth exceeded"},
       .description = "calls nested past Python's recursion limit: most often a function that "
                      "calls itself without end",
       .example = "RecursionError: maximum recursion depth exceeded",
       .source = "CPython",
       .title = "calls nested past Python's recursion limit",
       .fix =
           "Most often a function calls itself without end: the frames the traceback repeats "
           "(Python prints a few, then `[Previous line repeated N more times]`) never meet their "
           "stopping condition. Fix that condition (a base case never reached; a __getattr__ that "
           "reads an attribute not set yet, as in a dataset unpickled in a spawned DataLoader "
           "worker before __init__ ran), or write the recursion as a loop. Data nested deeper than "
           "the limit (pickling, copy.deepcopy or repr of deep structures) needs a flatter "
           "structure, or sys.setrecursionlimit for a recursion that is deep but ends."},

      {.id = "python.unpicklable",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Can't pickle ", "cannot pickle '"},
       .parts = {{"Can't pickle local object '([^']+)'", {{1, "local"}}},
                 {"Can't pickle <function ([^ ]+) at ", {{1, "function"}}},
                 {"cannot pickle '([^']+)' object", {{1, "type"}}}},
       .description = "an object pickle cannot serialize (a lambda, a nested function, an open "
                      "file, a lock), sent to a process that spawn started or given to torch.save",
       .example = "AttributeError: Can't pickle local object 'build.<locals>.<lambda>'",
       .source = "CPython's pickle, verified with a DataLoader of spawned workers and torch.save",
       .describe = words::unpicklable},
      {.id = "python.unpickle-missing-class",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Can't get attribute '"},
       .parts = {{R"(Can't get attribute '([^']+)' on <module '([^']+)'(?: from '([^']*)')?)",
                  {{1, "name"}, {2, "module"}, {3, "origin"}},
                  true}},
       .description = "unpickling (torch.load, a process that spawn started) named a class or "
                      "function that the loading process's module lacks: one defined in the "
                      "main script of the saving process, or renamed since",
       .example = "AttributeError: Can't get attribute 'Squares' on <module '__mp_main__' from "
                  "'/home/user/proj/train.py'>",
       .source = "CPython's pickle, verified with a DataLoader of spawned workers and torch.load",
       .describe = words::missing_class},
      {.id = "python.spawn-main-unguarded",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"An attempt has been made to start a new process before the"},
       .description = "a process started with spawn or forkserver re-ran the main script's code "
                      "that starts processes: it is not under `if __name__ == '__main__':`",
       .example = "        An attempt has been made to start a new process before the",
       .source = "CPython's multiprocessing/spawn.py, verified with torch.multiprocessing.spawn",
       .title =
           "a started process re-ran the main script's code that starts processes, which is not "
           "under `if __name__ == '__main__':`",
       .fix =
           "The spawn and forkserver start methods (torch.multiprocessing.spawn, a DataLoader or "
           "multiprocessing.Pool with that context) import the main script again in every process "
           "they start: put the code that starts processes, and all training code, in a function "
           "called under `if __name__ == '__main__':`."},

      {.id = "python.argparse-error",
       .framework = "python",
       .kind = FindingKind::kBadArguments,
       .failure = true,
       .needles = {": error: unrecognized arguments: ",
                   ": error: the following arguments are required: ", ": error: argument "},
       .parts =
           {{R"(^(\S+): error: (?:unrecognized arguments: (.+)|the following arguments are )"
             R"(required: (.+)|argument ([^:]+): (.+)))",
             {{1, "program"}, {2, "unrecognized"}, {3, "required"}, {4, "argument"}, {5, "error"}},
             true}},
       .description = "a script's argparse rejected its command line (exit code 2): an unknown "
                      "flag (torch.distributed.launch's --local_rank), a missing or invalid one",
       .example = "args.py: error: unrecognized arguments: --local_rank=0",
       .source = "CPython argparse, verified under torch.distributed.launch",
       .describe = words::bad_arguments},

      // ---- shapes -------------------------------------------------------------------------------
      {.id = "torch.collate-unequal-sizes",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"stack expects each tensor to be equal size"},
       .parts =
           {{R"(but got \[([0-9, ]*)\] at entry ([0-9]+) and \[([0-9, ]*)\] at entry ([0-9]+))",
             {{1, "shape", C::kList},
              {2, "entry", C::kInt},
              {3, "other_shape", C::kList},
              {4, "other_entry", C::kInt}},
             true}},
       .description = "the samples of one batch differ in shape, so the DataLoader's default "
                      "collate cannot stack them",
       .example = "RuntimeError: stack expects each tensor to be equal size, but got [3, 32, 32] "
                  "at entry 0 and [3, 33, 32] at entry 1",
       .source = "torch.stack in torch/utils/data/_utils/collate.py, verified",
       .describe = words::collate_unequal},
      {.id = "torch.linear-shape-mismatch",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"shapes cannot be multiplied"},
       .parts = {{R"(shapes cannot be multiplied \(([0-9]+)x([0-9]+) and ([0-9]+)x([0-9]+)\))",
                  {{1, "rows", C::kInt},
                   {2, "input_features", C::kInt},
                   {3, "layer_features", C::kInt},
                   {4, "out_features", C::kInt}},
                  true}},
       .description = "a matrix product (nn.Linear) whose input has another number of features "
                      "than the layer was built for",
       .example = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x30752 and 7200x10)",
       .source = "aten/src/ATen/native/LinearAlgebra.cpp, verified",
       .describe = words::linear_features},
      {.id = "torch.batchnorm-one-sample",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Expected more than 1 value per channel when training"},
       .parts = {{R"(got input size torch\.Size\(\[([0-9, ]*)\]\))", {{1, "shape", C::kList}}}},
       .description = "batch normalization in training mode given one sample per channel (a "
                      "last batch of one)",
       .example = "ValueError: Expected more than 1 value per channel when training, got input "
                  "size torch.Size([1, 64])",
       .source = "torch/nn/functional.py _verify_batch_size, verified",
       .describe = words::batchnorm_one_sample},
      {.id = "torch.view-size-mismatch",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"is invalid for input of size"},
       .parts = {{R"(shape '\[([-0-9, ]*)\]' is invalid for input of size ([0-9]+))",
                  {{1, "shape", C::kList}, {2, "elements", C::kInt}},
                  true}},
       .description = "view or reshape to sizes whose product is not the tensor's element count",
       .example = "RuntimeError: shape '[16, -1, 3]' is invalid for input of size 100",
       .source = "aten/src/ATen/InferSize.h, verified",
       .describe = words::view_size_mismatch},
      {.id = "torch.broadcast-mismatch",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"must match the size of tensor b"},
       .parts =
           {{R"(The size of tensor a \(([0-9]+)\) must match the size of tensor b \(([0-9]+)\) )"
             R"(at non-singleton dimension ([0-9]+))",
             {{1, "size_a", C::kInt}, {2, "size_b", C::kInt}, {3, "dim", C::kInt}},
             true}},
       .description = "an elementwise operation on tensors whose sizes differ at a dimension "
                      "where neither is 1",
       .example = "RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at "
                  "non-singleton dimension 1",
       .source = "aten/src/ATen/ExpandUtils.cpp, verified",
       .describe = words::broadcast_mismatch},

      {.id = "torch.dataset-empty",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"but got num_samples=0"},
       .description = "a DataLoader over a dataset of no samples (its sampler refuses it)",
       .example = "ValueError: num_samples should be a positive integer value, but got "
                  "num_samples=0",
       .source = "torch/utils/data/sampler.py RandomSampler, verified",
       .title = "the DataLoader's dataset has no samples",
       .fix = "The dataset is empty: its path, file pattern or filter matched nothing (a relative "
              "path "
              "resolves against the working directory the job runs in), or a split or subset left "
              "nothing for this rank. Check len(dataset) before building the DataLoader."},
      {.id = "torch.collate-type",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"batch must contain tensors, numpy arrays, numbers"},
       .parts = {{R"(found <class '([^']+)'>)", {{1, "type"}}}},
       .description = "the default collate given samples it cannot batch: a PIL image or another "
                      "object the dataset returns without turning it into a tensor",
       .example = "TypeError: default_collate: batch must contain tensors, numpy arrays, "
                  "numbers, dicts or lists; found <class 'PIL.Image.Image'>",
       .source = "torch/utils/data/_utils/collate.py, verified",
       .describe = words::collate_type},
      {.id = "torch.collate-none",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"but got NoneType"},
       .parts = {{"(NoneType)", {{1, "type"}}, true}},
       .description = "a sample of None among tensors in a batch of the default collate",
       .example = "TypeError: expected Tensor as element 1 in argument 0, but got NoneType",
       .source = "torch/utils/data/_utils/collate.py (torch.stack), verified",
       .frame_file = "torch/utils/data/_utils/collate.py",
       .frame_function = "default_collate",
       .describe = words::collate_type},
      {.id = "torch.conv-channels",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"channels, but got"},
       .parts = {{R"(weight of size \[([0-9, ]+)\], expected input\[([0-9, ]+)\] to have )"
                  R"(([0-9]+) channels, but got ([0-9]+) channels)",
                  {{1, "weight_shape", C::kList},
                   {2, "input_shape", C::kList},
                   {3, "channels", C::kInt},
                   {4, "input_channels", C::kInt}},
                  true}},
       .description = "a convolution fed another number of channels than it was built for: "
                      "grayscale images for an RGB model, a channels-last tensor",
       .example = "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected "
                  "input[8, 1, 32, 32] to have 3 channels, but got 1 channels instead",
       .source = "aten/src/ATen/native/Convolution.cpp, verified",
       .describe = words::conv_channels},
      {.id = "torch.conv-input-dims",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"(batched) input to conv"},
       .parts = {{R"(Expected ([0-9])D \(unbatched\) or ([0-9])D \(batched\) input to (\w+), )"
                  R"(but got input of size: \[([0-9, ]*)\])",
                  {{1, "unbatched_dims", C::kInt},
                   {2, "batched_dims", C::kInt},
                   {3, "op"},
                   {4, "input_shape", C::kList}},
                  true}},
       .description = "a convolution fed a tensor of another number of dimensions than a batch "
                      "or a sample",
       .example = "RuntimeError: Expected 3D (unbatched) or 4D (batched) input to conv2d, but "
                  "got input of size: [2, 8, 3, 32, 32]",
       .source = "aten/src/ATen/native/Convolution.cpp, verified",
       .describe = words::conv_dims},

      // ---- autograd -----------------------------------------------------------------------------
      {.id = "torch.autograd-inplace",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"modified by an inplace operation"},
       .parts =
           {{R"(\[(?:torch\.)?([\w.]+) \[([0-9, ]*)\]\], which is output ([0-9]+) of (\w+), is )"
             R"(at version ([0-9]+); expected version ([0-9]+))",
             {{1, "tensor_type"},
              {2, "shape", C::kList},
              {3, "output", C::kInt},
              {4, "grad_fn"},
              {5, "version", C::kInt},
              {6, "expected_version", C::kInt}}}},
       .description = "a tensor that autograd saved for the backward pass was changed in place "
                      "before backward ran",
       .example = "RuntimeError: one of the variables needed for gradient computation has been "
                  "modified by an inplace operation: [torch.FloatTensor [4, 4]], which is output "
                  "0 of SigmoidBackward0, is at version 1; expected version 0 instead. Hint: "
                  "enable anomaly detection to find the operation that failed to compute its "
                  "gradient, with torch.autograd.set_detect_anomaly(True).",
       .source = "torch/csrc/autograd/saved_variable.cpp, verified",
       .describe = words::autograd_inplace},
      {.id = "torch.autograd-backward-twice",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Trying to backward through the graph a second time"},
       .description = "a backward pass through a graph whose saved tensors an earlier backward "
                      "freed: often a tensor carried over from the previous step",
       .example = "RuntimeError: Trying to backward through the graph a second time (or directly "
                  "access saved tensors after they have already been freed). Saved intermediate "
                  "values of the graph are freed when you call .backward() or autograd.grad(). "
                  "Specify retain_graph=True if you need to backward through the graph a second "
                  "time or if you need to access saved tensors after calling backward.",
       .source = "torch/csrc/autograd/saved_variable.cpp, verified",
       .title = "backward() ran a second time through a graph whose saved tensors were freed",
       .fix =
           "A tensor carried from one step to the next keeps the previous step's graph (an RNN's "
           "hidden state, a running total of losses, a cached output): .detach() it at the end of "
           "each step (`total += loss.item()` for a running total). If two backward passes through "
           "one graph are meant, pass retain_graph=True to the first."},
      {.id = "torch.autograd-non-scalar",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"grad can be implicitly created only for scalar outputs"},
       .description = "backward() without arguments on a loss of more than one element",
       .example = "RuntimeError: grad can be implicitly created only for scalar outputs",
       .source = "torch/autograd/__init__.py _make_grads, verified",
       .title = "backward() on a loss of more than one value",
       .fix =
           "backward() without arguments needs a loss of one element: reduce it first with .mean() "
           "or .sum() (a loss built with reduction='none' has one value per sample). Under "
           "nn.DataParallel, a loss computed inside the model comes back with one value per GPU: "
           ".mean() it. To back-propagate a tensor on purpose, pass gradient= of its shape "
           "(torch.ones_like(out))."},
      {.id = "torch.autograd-leaf-inplace",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"a leaf Variable that requires grad is being used in an in-place operation"},
       .description = "a parameter (a tensor made with requires_grad=True) changed in place "
                      "while autograd records",
       .example = "RuntimeError: a leaf Variable that requires grad is being used in an in-place "
                  "operation.",
       .source = "torch/csrc/autograd/VariableTypeUtils.h, verified",
       .title = "a tensor that requires grad, as a parameter, was changed in place while autograd "
                "recorded",
       .fix =
           "Changing a leaf tensor that requires grad in place (w -= lr * w.grad, w.add_(), w[0] = "
           "0, w.fill_()) must not be recorded: do it under `with torch.no_grad():`, as optimizers "
           "and torch.nn.init do. To compute with a changed copy, use an out-of-place operation (w "
           "+ 1 makes a new tensor)."},
      {.id = "torch.loss-multi-target",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"multi-target not supported"},
       .description = "cross_entropy or nll_loss got targets with a dimension per sample ([N, "
                      "1], one-hot integers) instead of one class index per sample",
       .example = "RuntimeError: 0D or 1D target tensor expected, multi-target not supported",
       .source = "aten/src/ATen/native/LossNLL.cpp, verified",
       .title = "cross_entropy or nll_loss got a target with more than one value per sample",
       .fix =
           "CrossEntropyLoss and NLLLoss take one class index per sample: an int64 tensor of shape "
           "[N], without a class dimension. A target of shape [N, 1] needs target.squeeze(1); "
           "one-hot targets need target.argmax(1) (or, as soft labels, .float() probabilities of "
           "shape [N, C], on PyTorch 1.10 and later). For several labels per sample, use "
           "BCEWithLogitsLoss with float targets of shape [N, C]."},
      {.id = "torch.numpy-requires-grad",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Can't call numpy() on Tensor that requires grad"},
       .description = "numpy() on a tensor that autograd records (a model's output, a loss)",
       .example = "RuntimeError: Can't call numpy() on Tensor that requires grad. Use "
                  "tensor.detach().numpy() instead.",
       .source = "torch/csrc/utils/tensor_numpy.cpp, verified",
       .title = "numpy() on a tensor that autograd records (it requires grad)",
       .fix =
           "Take the values out of the graph first: tensor.detach().cpu().numpy(), or compute "
           "metrics and plots under torch.no_grad(); for one number, loss.item(). A conversion to "
           "NumPy inside the model's forward cuts the graph: keep that computation in torch."},
      {.id = "torch.numpy-not-cpu",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {" device type tensor to numpy"},
       .parts = {{R"(can't convert (\S+) device type tensor to numpy)", {{1, "device"}}, true}},
       .description = "numpy() on a tensor in GPU memory (or another device's): NumPy reads host "
                      "memory only",
       .example = "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() "
                  "to copy the tensor to host memory first.",
       .source = "torch/csrc/utils/tensor_numpy.cpp, verified with the meta device",
       .describe = words::numpy_not_cpu},
      {.id = "torch.autograd-no-grad",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"does not require grad and does not have a grad_fn"},
       .description = "backward() on a tensor that no parameter requiring grad contributed to",
       .example = "RuntimeError: element 0 of tensors does not require grad and does not have a "
                  "grad_fn",
       .source = "torch/csrc/autograd/autograd.cpp, verified",
       .title = "backward() on a loss that no parameter requiring grad contributed to",
       .fix =
           "The loss was computed without autograd: under torch.no_grad() or "
           "torch.inference_mode() (an evaluation helper left on), from values taken out of the "
           "graph (.detach(), .item(), .numpy(), a new torch.tensor(...)), or from a model whose "
           "parameters are all frozen (requires_grad=False). Compute it from the model's outputs "
           "with grad enabled."},
      {.id = "torch.autograd-nan",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"returned nan values in its"},
       .parts = {{R"(Function '(\w+)' returned nan values in its ([0-9]+)\w* output)",
                  {{1, "grad_fn"}, {2, "output", C::kInt}}}},
       .description = "anomaly detection (torch.autograd.set_detect_anomaly) caught a backward "
                      "function that produced NaN",
       .example = "RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.",
       .source = "torch/csrc/autograd/engine.cpp, verified",
       .describe = words::autograd_nan},

      {.id = "torch.anomaly-forward-trace",
       .framework = "pytorch",
       .kind = std::nullopt,
       .failure = false,
       .needles = {"Traceback of forward call that caused the error"},
       .parts = {{R"(Error detected in (\w+)\. Traceback of forward call)", {{1, "grad_fn"}}}},
       .description = "anomaly detection's warning before an autograd error: the frames that "
                      "follow are those of the forward call that made the failing function",
       .example = "/usr/lib/python3/dist-packages/torch/autograd/__init__.py:197: UserWarning: "
                  "Error detected in SqrtBackward0. Traceback of forward call that caused the "
                  "error:",
       .source = "torch/csrc/autograd/python_anomaly_mode.cpp, verified"},

      // ---- checkpoints that do not fit the model ------------------------------------------------
      // load_state_dict prints a header line, then a line per kind of difference: each line
      // matches alone, and a traceback's lines add up to one match.
      {.id = "torch.state-dict-mismatch",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Error(s) in loading state_dict for ", "Missing key(s) in state_dict: ",
                   "Unexpected key(s) in state_dict: ", "copying a param with shape "},
       .parts =
           {{R"(Error\(s\) in loading state_dict for (\w+))", {{1, "model"}}},
            {R"(Missing key\(s\) in state_dict: )", {{0, "missing_keys", C::kRest}}},
            {R"(Unexpected key\(s\) in state_dict: )", {{0, "unexpected_keys", C::kRest}}},
            {R"(size mismatch for ([^:]+): copying a param with shape torch\.Size\(\[([0-9, ]*)\]\) )"
             R"(from checkpoint, the shape in current model is torch\.Size\(\[([0-9, ]*)\]\))",
             {{1, "param"}, {2, "checkpoint_shape", C::kList}, {3, "model_shape", C::kList}}}},
       .description = "load_state_dict with a checkpoint whose keys or shapes are not the "
                      "model's: a prefix added by DDP, DataParallel or torch.compile, another "
                      "architecture, or other sizes (classes, vocabulary)",
       .example = "Unexpected key(s) in state_dict: \"module.0.weight\", \"module.0.bias\". ",
       .source = "torch/nn/modules/module.py load_state_dict, verified",
       .describe = words::state_dict},

      {.id = "torch.load-weights-only",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Weights only load failed", "was not an allowed global by default"},
       .parts = {{R"(Unsupported (?:global: GLOBAL|class) ([\w.]+))", {{1, "global"}}}},
       .description = "torch.load with weights_only (the default since PyTorch 2.6) refused a "
                      "checkpoint that holds a Python object other than tensors and plain "
                      "values: an argparse.Namespace, a NumPy scalar, a whole model",
       .example = "_pickle.UnpicklingError: Weights only load failed. Re-running `torch.load` "
                  "with `weights_only` set to `False` will likely succeed, but it can result in "
                  "arbitrary code execution.Do it only if you get the file from a trusted "
                  "source. WeightsUnpickler error: Unsupported class argparse.Namespace",
       .source = "torch/serialization.py load, verified with weights_only=True on 1.13; the 2.6+ "
                 "message puts \"Unsupported global: GLOBAL ...\" on a line of its own",
       .describe = words::weights_only},

      // ---- what layers and losses are fed -------------------------------------------------------
      {.id = "torch.device-mismatch",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Expected all tensors to be on the same device"},
       .parts = {{R"(found at least two devices, ([\w:]+) and ([\w:]+))",
                  {{1, "device"}, {2, "other_device"}}}},
       .description = "an operation on tensors of different devices: a model on the GPU fed a "
                      "batch left on the CPU, or a tensor created inside forward without a device",
       .example = "RuntimeError: Expected all tensors to be on the same device, but found at "
                  "least two devices, cuda:0 and cpu!",
       .source = "aten/src/ATen/native/TensorCompare.cpp and the dispatcher's device check",
       .describe = words::device_mismatch},
      {.id = "torch.tensor-type-mismatch",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {") should be the same", "must have the same dtype", "expected scalar type ",
                   "Found dtype "},
       .parts =
           {{R"(Input type \(([\w.]+)\) and (weight|bias) type \(([\w.]+)\) should be the same)",
             {{1, "input_type"}, {2, "param"}, {3, "param_type"}}},
            {R"(expected scalar type (\w+) but found (\w+))",
             {{1, "param_type"}, {2, "input_type"}}},
            // The backward of a loss whose target's type is not its input's.
            {R"(Found dtype (\w+) but expected (\w+))", {{1, "input_type"}, {2, "param_type"}}},
            {R"(must have the same dtype(?:, but got (\w+) and (\w+))?)",
             {{1, "input_type"}, {2, "param_type"}}}},
       .description = "a layer or an operation fed tensors of different types: float64 from "
                      "NumPy against float32 weights, int32 class targets, a CUDA input for a "
                      "model on the CPU (or the reverse)",
       .example = "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type "
                  "(torch.FloatTensor) should be the same",
       .source = "aten/src/ATen/native/Convolution.cpp, LinearAlgebra.cpp; verified",
       .describe = words::type_mismatch},
      {.id = "torch.dtype-unsupported",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"\" not implemented for '"},
       .parts = {{R"re("(\w+)" not implemented for '(\w+)')re",
                  {{1, "kernel"}, {2, "dtype"}},
                  true}},
       .description = "an operation given a type it has no kernel for: float16 on the CPU, "
                      "integers where floating point is needed",
       .example = "RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'",
       .source = "aten/src/ATen/Dispatch.h, verified",
       .describe = words::dtype_unsupported},
      {.id = "torch.batch-size-mismatch",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"to match target batch_size"},
       .parts =
           {{R"(Expected input batch_size \(([0-9]+)\) to match target batch_size \(([0-9]+)\))",
             {{1, "input_batch", C::kInt}, {2, "target_batch", C::kInt}},
             true}},
       .description = "a loss given another number of predictions than of targets",
       .example = "ValueError: Expected input batch_size (4) to match target batch_size (5).",
       .source = "torch/nn/functional.py nll_loss / aten's loss checks, verified",
       .describe = words::batch_size_mismatch},
      {.id = "pil.unreadable-image",
       .framework = "pil",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"cannot identify image file", "image file is truncated", "Truncated File Read"},
       // A path, or the file object torchvision's pil_loader opened ("<_io.BufferedReader
       // name='/data/x.jpg'>").
       .parts = {{"cannot identify image file '([^']+)'", {{1, "path"}}},
                 {"cannot identify image file <[^>]*name='([^']+)'>", {{1, "path"}}},
                 {"(image file is truncated|Truncated File Read)", {{1, "truncated"}}}},
       .description = "a dataset file PIL cannot decode: not an image (an HTML page, a corrupt "
                      "file) or cut short",
       .example = "PIL.UnidentifiedImageError: cannot identify image file '/data/train/img_42.jpg'",
       .source = "Pillow's Image.open and ImageFile.load, verified with 9.4",
       .describe = words::unreadable_image},
      // ---- warnings of silently wrong results
      // ----------------------------------------------------------------------
      {.id = "torch.loss-broadcast",
       .framework = "pytorch",
       .kind = FindingKind::kFrameworkWarning,
       .failure = false,
       .needles = {"Using a target size (torch.Size("},
       .parts = {{R"(target size \(torch\.Size\(\[([0-9, ]*)\]\)\) that is different to the input )"
                  R"(size \(torch\.Size\(\[([0-9, ]*)\]\)\))",
                  {{1, "target_shape", C::kList}, {2, "input_shape", C::kList}},
                  true},
                 {R"(^(.+):([0-9]+): UserWarning)", {{1, "file"}, {2, "line", C::kInt}}}},
       .description = "an elementwise loss (mse, l1, smooth l1, huber) given targets of another "
                      "shape than its input: broadcasting compares every pair",
       .example = "train.py:52: UserWarning: Using a target size (torch.Size([16])) that is "
                  "different to the input size (torch.Size([16, 1])). This will likely lead to "
                  "incorrect results due to broadcasting. Please ensure they have the same size.",
       .source = "torch/nn/functional.py, verified",
       // BCE raises a ValueError with the same start: it broadcasts nothing.
       .unless = "is deprecated",
       .describe = words::loss_broadcast},
      {.id = "torch.softmax-implicit-dim",
       .framework = "pytorch",
       .kind = FindingKind::kFrameworkWarning,
       .failure = false,
       .needles = {"Implicit dimension choice for "},
       .parts = {{"Implicit dimension choice for (softmax|log_softmax|softmin)",
                  {{1, "function"}},
                  true},
                 {R"(^(.+):([0-9]+): UserWarning)", {{1, "file"}, {2, "line", C::kInt}}}},
       .description =
           "softmax without dim: over dimension 0 (the batch) for 0-, 1- and 3-dimensional "
           "inputs",
       .example = "train.py:31: UserWarning: Implicit dimension choice for softmax has been "
                  "deprecated. Change the call to include dim=X as an argument.",
       .source = "torch/nn/functional.py _get_softmax_dim, verified",
       .describe = words::softmax_implicit_dim},
      {.id = "torch.cuda-init-warning",
       .framework = "pytorch",
       .kind = FindingKind::kFrameworkWarning,
       .failure = false,
       .needles = {"CUDA initialization: "},
       .parts = {{R"(CUDA initialization: (.+?)(?: \(Triggered internally|$))",
                  {{1, "reason"}},
                  true}},
       .description = "CUDA failed to start in the process: torch.cuda.is_available() is False, "
                      "and code that falls back to the CPU trains there",
       .example = "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an "
                  "incorrectly set up environment, e.g. changing env variable "
                  "CUDA_VISIBLE_DEVICES after program start. Setting the available devices to "
                  "be zero. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:109.)",
       .source = "c10/cuda/CUDAFunctions.cpp device_count",
       .describe = words::cuda_init_warning},
      {.id = "torch.ddp-unused-search-needless",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kFrameworkWarning,
       .failure = false,
       .needles = {"find_unused_parameters=True was specified in DDP constructor, but did not "
                   "find any unused parameters"},
       .description = "DDP searches the graph for unused parameters every step and finds none: a "
                      "cost for nothing",
       .example = "[W reducer.cpp:1298] Warning: find_unused_parameters=True was specified in "
                  "DDP constructor, but did not find any unused parameters in the forward pass.",
       .source = "torch/csrc/distributed/c10d/reducer.cpp, verified",
       .title = "DDP looks for unused parameters every step (find_unused_parameters=True) and "
                "found none",
       .fix = "Each step pays an extra traversal of the autograd graph: build DDP without "
              "find_unused_parameters unless some steps leave parameters out of the loss "
              "(static_graph=True where the same ones always do).",
       .info = true},

      {.id = "torch.default-group-not-initialized",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Default process group has not been initialized"},
       .description = "a torch.distributed call before init_process_group in this process",
       .example = "RuntimeError: Default process group has not been initialized, please make "
                  "sure to call init_process_group.",
       .source = "torch/distributed/distributed_c10d.py, verified",
       .fix =
           "A torch.distributed call ran in a process that never called init_process_group: call "
           "dist.init_process_group(backend) first (torchrun sets the environment it reads), or, "
           "for a script that also runs as a single process, guard the calls with "
           "dist.is_initialized()."},
      {.id = "torch.env-rendezvous-unset",
       .framework = "pytorch-distributed",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"expected, but not set"},
       .parts = {{"environment variable ([A-Z_]+) expected, but not set", {{1, "variable"}}, true}},
       .description = "init_process_group's env:// rendezvous in a process no launcher started",
       .example = "ValueError: Error initializing torch.distributed using env:// rendezvous: "
                  "environment variable RANK expected, but not set",
       .source = "torch/distributed/rendezvous.py, verified",
       .describe = words::launcher_variable_missing},
      {.id = "python.launcher-variable-missing",
       .framework = "python",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"KeyError: '"},
       .parts = {{"^KeyError: '(RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|MASTER_ADDR|"
                  "MASTER_PORT|GROUP_RANK)'$",
                  {{1, "variable"}},
                  true}},
       .description = "the script reads a variable that torchrun sets, in a process it did not "
                      "start",
       .example = "KeyError: 'LOCAL_RANK'",
       .source = "CPython's os.environ, verified",
       .describe = words::launcher_variable_missing},
  };
}

}  // namespace traindoc::analysis
