// Tests of the everyday errors of a training loop: autograd (a tensor changed in place, a second
// backward, a loss without grad, NaN caught by anomaly detection), checkpoints whose keys or
// shapes are not the model's, and tensors of another device, type or batch size. The texts are
// real, from Debian's PyTorch 1.13, and the 2.x forms where they differ.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "analysis/diagnosis.h"
#include "analysis/known_failure.h"
#include "analysis/traceback.h"
#include "analysis_job_fixture.h"
#include "signature_test_util.h"

namespace traindoc::analysis {
namespace {

using namespace job;             // NOLINT(google-build-using-namespace): the shared job fixture
using namespace signature_test;  // NOLINT(google-build-using-namespace): ids, match, fields

using testing::Contains;
using testing::HasSubstr;
using testing::Not;

TEST(TrainingSignatures, Autograd) {
  SignatureMatch m = match(
      "RuntimeError: one of the variables needed for gradient computation has been modified by "
      "an inplace operation: [torch.FloatTensor [4, 4]], which is output 0 of SigmoidBackward0, "
      "is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the "
      "operation that failed to compute its gradient, with "
      "torch.autograd.set_detect_anomaly(True).",
      "torch.autograd-inplace");
  expect_fields(m, {{"tensor_type", "FloatTensor"},
                    {"shape", "4,4"},
                    {"output", "0"},
                    {"grad_fn", "SigmoidBackward0"},
                    {"version", "1"},
                    {"expected_version", "0"}});
  m = match(
      "RuntimeError: one of the variables needed for gradient computation has been modified by "
      "an inplace operation: [torch.cuda.FloatTensor [512]] is at version 3; expected version 2 "
      "instead.",
      "torch.autograd-inplace");
  EXPECT_EQ(m.fields.count("grad_fn"), 0u);  // a leaf has no "output N of": the needle is enough
  EXPECT_THAT(ids("RuntimeError: Trying to backward through the graph a second time (or directly "
                  "access saved tensors after they have already been freed)."),
              testing::ElementsAre("torch.autograd-backward-twice"));
  EXPECT_THAT(ids("RuntimeError: element 0 of tensors does not require grad and does not have a "
                  "grad_fn"),
              testing::ElementsAre("torch.autograd-no-grad"));
  m = match("RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.",
            "torch.autograd-nan");
  expect_fields(m, {{"grad_fn", "SqrtBackward0"}, {"output", "0"}});
  m = match("RuntimeError: Function 'MulBackward0' returned nan values in its 1st output.",
            "torch.autograd-nan");
  expect_fields(m, {{"grad_fn", "MulBackward0"}, {"output", "1"}});
}

TEST(TrainingSignatures, TensorsOfAnotherDeviceTypeOrBatch) {
  SignatureMatch m = match(
      "RuntimeError: Expected all tensors to be on the same device, but found at least two "
      "devices, cuda:0 and cpu! (when checking argument for argument mat1 in method "
      "wrapper_CUDA_addmm)",
      "torch.device-mismatch");
  expect_fields(m, {{"device", "cuda:0"}, {"other_device", "cpu"}});
  m = match(
      "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) "
      "should be the same",
      "torch.tensor-type-mismatch");
  expect_fields(m, {{"input_type", "torch.cuda.FloatTensor"},
                    {"param", "weight"},
                    {"param_type", "torch.FloatTensor"}});
  m = match("RuntimeError: Input type (double) and bias type (float) should be the same",
            "torch.tensor-type-mismatch");
  expect_fields(m, {{"input_type", "double"}, {"param", "bias"}, {"param_type", "float"}});
  m = match("RuntimeError: expected scalar type Long but found Int", "torch.tensor-type-mismatch");
  expect_fields(m, {{"input_type", "Int"}, {"param_type", "Long"}});
  m = match("RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float",
            "torch.tensor-type-mismatch");
  expect_fields(m, {{"input_type", "Double"}, {"param_type", "Float"}});
  m = match("RuntimeError: mat1 and mat2 must have the same dtype", "torch.tensor-type-mismatch");
  EXPECT_EQ(m.fields.count("input_type"), 0u);  // 1.13 names no type
  m = match("ValueError: Expected input batch_size (4) to match target batch_size (5).",
            "torch.batch-size-mismatch");
  expect_fields(m, {{"input_batch", "4"}, {"target_batch", "5"}});
  EXPECT_THAT(ids("RuntimeError: Default process group has not been initialized, please make "
                  "sure to call init_process_group."),
              testing::ElementsAre("torch.default-group-not-initialized"));
}

TEST(TrainingSignatures, DatasetsAndConvolutions) {
  EXPECT_THAT(ids("ValueError: num_samples should be a positive integer value, but got "
                  "num_samples=0"),
              testing::ElementsAre("torch.dataset-empty"));
  SignatureMatch m = match(
      "TypeError: default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
      "lists; found <class 'PIL.Image.Image'>",
      "torch.collate-type");
  expect_fields(m, {{"type", "PIL.Image.Image"}});
  m = match(
      "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 1, 224, "
      "224] to have 3 channels, but got 1 channels instead",
      "torch.conv-channels");
  expect_fields(m, {{"weight_shape", "64,3,7,7"},
                    {"input_shape", "8,1,224,224"},
                    {"channels", "3"},
                    {"input_channels", "1"}});
  m = match(
      "RuntimeError: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of "
      "size: [2, 8, 3, 32, 32]",
      "torch.conv-input-dims");
  expect_fields(m, {{"unbatched_dims", "3"},
                    {"batched_dims", "4"},
                    {"op", "conv2d"},
                    {"input_shape", "2,8,3,32,32"}});
}

// load_state_dict's message spans lines, as Python prints it: the exception line, then a line per
// kind of difference, each beginning with a tab.
PythonTraceback state_dict_error(const std::vector<std::string>& details) {
  std::vector<store::LogLine> lines;
  uint64_t number = 1;
  for (std::string text : {"Traceback (most recent call last):",
                           "  File \"/home/user/proj/train.py\", line 7, in "
                           "<module>",
                           "    model.load_state_dict(torch.load(args.resume))",
                           "RuntimeError: Error(s) in loading state_dict for DeepLabV3:"}) {
    lines.push_back(stderr_line(2.0, number++, text));
  }
  for (const std::string& d : details) lines.push_back(stderr_line(2.0, number++, "\t" + d));
  std::vector<PythonTraceback> tracebacks = parse_tracebacks(lines);
  EXPECT_EQ(tracebacks.size(), 1u);
  return tracebacks.empty() ? PythonTraceback{} : tracebacks.front();
}

// The traceback's failure in words, as the rules give it.
KnownFailure known(const PythonTraceback& traceback, std::vector<SignatureMatch>& matches) {
  matches = match_traceback(traceback);
  std::optional<KnownFailure> f = describe_known(matches);
  EXPECT_TRUE(f);
  return f ? *f : KnownFailure{};
}

// What a DataLoader's spawned workers, torch.multiprocessing.spawn and torch.save must pickle.
TEST(TrainingSignatures, ObjectsPickleCannotSerialize) {
  SignatureMatch m =
      match("AttributeError: Can't pickle local object 'DS.__init__.<locals>.<lambda>'",
            "python.unpicklable");
  expect_fields(m, {{"local", "DS.__init__.<locals>.<lambda>"}});
  m = match(
      "_pickle.PicklingError: Can't pickle <function <lambda> at 0x7f7036d014e0>: attribute "
      "lookup <lambda> on __main__ failed",
      "python.unpicklable");
  expect_fields(m, {{"function", "<lambda>"}});
  m = match("TypeError: cannot pickle '_io.BufferedReader' object", "python.unpicklable");
  expect_fields(m, {{"type", "_io.BufferedReader"}});
  EXPECT_THAT(ids("        An attempt has been made to start a new process before the"),
              testing::ElementsAre("python.spawn-main-unguarded"));
  m = match(
      "AttributeError: Can't get attribute 'Squares' on <module '__mp_main__' from "
      "'/tmp/proj/train.py'>",
      "python.unpickle-missing-class");
  expect_fields(m, {{"name", "Squares"}, {"module", "__mp_main__"}});
}

// A script written for torchrun, started without it.
TEST(TrainingSignatures, VariablesALauncherSets) {
  expect_fields(match("KeyError: 'WORLD_SIZE'", "python.launcher-variable-missing"),
                {{"variable", "WORLD_SIZE"}});
  EXPECT_THAT(ids("KeyError: 'RANKS'"), testing::IsEmpty());
  EXPECT_THAT(ids("KeyError: 'label'"), testing::IsEmpty());
  expect_fields(match("ValueError: Error initializing torch.distributed using env:// rendezvous: "
                      "environment variable RANK expected, but not set",
                      "torch.env-rendezvous-unset"),
                {{"variable", "RANK"}});
}

// Pillow 9.4's words for a dataset file that is no image, and for one cut short.
TEST(TrainingSignatures, ImagesPillowCannotRead) {
  expect_fields(match("PIL.UnidentifiedImageError: cannot identify image file "
                      "'/data/train/img_42.jpg'",
                      "pil.unreadable-image"),
                {{"path", "/data/train/img_42.jpg"}});
  expect_fields(match("OSError: Truncated File Read", "pil.unreadable-image"),
                {{"truncated", "Truncated File Read"}});
  expect_fields(
      match("OSError: image file is truncated (3 bytes not processed)", "pil.unreadable-image"),
      {{"truncated", "image file is truncated"}});
}

// PyTorch 1.13's warnings of silently wrong results, with the place Python's warnings name.
TEST(TrainingSignatures, WarningsOfSilentlyWrongResults) {
  SignatureMatch m = match(
      "/home/user/proj/train.py:52: UserWarning: Using a target size (torch.Size([16])) that is "
      "different to the input size (torch.Size([16, 1])). This will likely lead to incorrect "
      "results due to broadcasting. Please ensure they have the same size.",
      "torch.loss-broadcast");
  expect_fields(m, {{"target_shape", "16"},
                    {"input_shape", "16,1"},
                    {"file", "/home/user/proj/train.py"},
                    {"line", "52"}});
  EXPECT_FALSE(m.failure);
  m = match(
      "/home/user/proj/model.py:31: UserWarning: Implicit dimension choice for log_softmax has "
      "been deprecated. Change the call to include dim=X as an argument.",
      "torch.softmax-implicit-dim");
  expect_fields(
      m, {{"function", "log_softmax"}, {"file", "/home/user/proj/model.py"}, {"line", "31"}});
  m = match(
      "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run "
      "some cuda functions before calling NumCudaDevices() that might have already set an error? "
      "Error 804: forward compatibility was attempted on non supported HW (Triggered internally "
      "at ../c10/cuda/CUDAFunctions.cpp:109.)",
      "torch.cuda-init-warning");
  EXPECT_THAT(m.fields.at("reason"), testing::EndsWith("Error 804: forward compatibility was "
                                                       "attempted on non supported HW"));
}

TEST(TrainingSignatures, AStateDictMessageIsOneMatchWithTheFieldsOfEveryLine) {
  std::vector<SignatureMatch> matches = match_traceback(state_dict_error(
      {"Missing key(s) in state_dict: \"backbone.conv1.weight\", \"classifier.4.bias\". ",
       "Unexpected key(s) in state_dict: \"module.backbone.conv1.weight\", "
       "\"module.classifier.4.bias\". "}));
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].id, "torch.state-dict-mismatch");
  expect_fields(matches[0], {{"model", "DeepLabV3"},
                             {"missing_keys", "\"backbone.conv1.weight\", \"classifier.4.bias\"."},
                             {"unexpected_keys",
                              "\"module.backbone.conv1.weight\", \"module.classifier.4.bias\"."}});
}

TEST(TrainingRules, ACheckpointSavedFromAWrappedModelNamesThePrefixAndTheWrapper) {
  std::vector<SignatureMatch> matches;
  KnownFailure f =
      known(state_dict_error(
                {"Missing key(s) in state_dict: \"0.weight\", \"0.bias\". ",
                 "Unexpected key(s) in state_dict: \"module.0.weight\", \"module.0.bias\". "}),
            matches);
  EXPECT_EQ(f.title,
            "the checkpoint's keys start with 'module.', the model's do not: it was saved from a "
            "model wrapped in DistributedDataParallel or DataParallel");
  EXPECT_THAT(f.fix, HasSubstr("k.removeprefix('module.')"));

  f = known(state_dict_error({"Missing key(s) in state_dict: \"fc.weight\". ",
                              "Unexpected key(s) in state_dict: \"_orig_mod.fc.weight\". "}),
            matches);
  EXPECT_THAT(f.title, HasSubstr("'_orig_mod.'"));
  EXPECT_THAT(f.title, HasSubstr("torch.compile"));

  // The reverse: the model is wrapped, the checkpoint is not.
  f = known(state_dict_error({"Missing key(s) in state_dict: \"module.fc.weight\". ",
                              "Unexpected key(s) in state_dict: \"fc.weight\". "}),
            matches);
  EXPECT_EQ(f.title,
            "the model's keys start with 'module.', the checkpoint's do not: the model is wrapped "
            "in DistributedDataParallel or DataParallel, the checkpoint was saved from the bare "
            "model");
  EXPECT_THAT(f.fix, HasSubstr("model.module.load_state_dict(state)"));
}

TEST(TrainingRules, ACheckpointOfOtherSizesOrLayersSaysWhichKeysDiffer) {
  std::vector<SignatureMatch> matches;
  KnownFailure f = known(
      state_dict_error({"size mismatch for 2.weight: copying a param with shape torch.Size([4, "
                        "16]) from checkpoint, the shape in current model is torch.Size([10, 16]).",
                        "size mismatch for 2.bias: copying a param with shape torch.Size([4]) from "
                        "checkpoint, the shape in current model is torch.Size([10])."}),
      matches);
  EXPECT_EQ(f.title, "the checkpoint's 2.weight is [4, 16], the model's [10, 16]");
  EXPECT_THAT(f.fix, HasSubstr("drop the head's entries (2.weight)"));

  f = known(state_dict_error({"Missing key(s) in state_dict: \"a.weight\", \"b.weight\", "
                              "\"c.weight\", \"d.weight\". ",
                              "Unexpected key(s) in state_dict: \"e.weight\". "}),
            matches);
  EXPECT_EQ(f.title,
            "the checkpoint does not fit the model: missing 'a.weight', 'b.weight', 'c.weight', "
            "...; unexpected 'e.weight'");
  EXPECT_THAT(f.fix, HasSubstr("strict=False"));

  // Keys that only share a prefix with some of the others are no wrapper's.
  f = known(state_dict_error({"Missing key(s) in state_dict: \"fc.weight\". ",
                              "Unexpected key(s) in state_dict: \"head.fc.weight\", \"x.y\". "}),
            matches);
  EXPECT_THAT(f.title, HasSubstr("does not fit the model"));
}

TEST(TrainingRules, ACheckpointThatWeightsOnlyLoadingRefusesNamesTheType) {
  // PyTorch 2.6+: the type is on a line of its own.
  std::vector<store::LogLine> lines;
  uint64_t number = 1;
  for (std::string text :
       {"Traceback (most recent call last):",
        "  File \"/home/user/proj/eval.py\", line 12, in <module>",
        "    state = torch.load(args.checkpoint)",
        "_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do "
        "so you have two options, do those steps only if you trust the source of the checkpoint. ",
        "\t(1) In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
        "`torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to "
        "`False` will likely succeed, but it can result in arbitrary code execution. Do it only if "
        "you got the file from a trusted source.",
        "\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps "
        "in the following error message.",
        "\tWeightsUnpickler error: Unsupported global: GLOBAL numpy._core.multiarray.scalar was "
        "not an allowed global by default. Please use "
        "`torch.serialization.add_safe_globals([scalar])` or the "
        "`torch.serialization.safe_globals([scalar])` context manager to allowlist this global if "
        "you trust this class/function."}) {
    lines.push_back(stderr_line(2.0, number++, text));
  }
  std::vector<PythonTraceback> tracebacks = parse_tracebacks(lines);
  ASSERT_EQ(tracebacks.size(), 1u);
  std::vector<SignatureMatch> matches;
  KnownFailure f = known(tracebacks[0], matches);
  expect_fields(*f.match, {{"global", "numpy._core.multiarray.scalar"}});
  EXPECT_EQ(f.title,
            "torch.load refused the checkpoint: it holds numpy._core.multiarray.scalar, which "
            "loading with weights_only does not allow");
  EXPECT_THAT(f.fix, HasSubstr("add_safe_globals([numpy._core.multiarray.scalar])"));

  // PyTorch 1.13 to 2.5, with weights_only=True: one line.
  SignatureMatch m = match(
      "_pickle.UnpicklingError: Weights only load failed. Re-running `torch.load` with "
      "`weights_only` set to `False` will likely succeed, but it can result in arbitrary code "
      "execution.Do it only if you get the file from a trusted source. WeightsUnpickler error: "
      "Unsupported class argparse.Namespace",
      "torch.load-weights-only");
  expect_fields(m, {{"global", "argparse.Namespace"}});
}

// Sizes that fail on the last, smaller batch of an epoch, as PyTorch 1.13 words them.
TEST(TrainingRules, SizesThatFailOnTheLastBatch) {
  Finding f = exception_finding(
      "ValueError: Expected more than 1 value per channel when training, got input size "
      "torch.Size([1, 64])");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): batch normalization got one sample per channel in training "
            "(input [1, 64])");
  EXPECT_THAT(f.fix, HasSubstr("drop_last=True"));
  f = exception_finding("RuntimeError: shape '[16, -1, 3]' is invalid for input of size 100");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): a view or reshape to [16, -1, 3] of a tensor of 100 elements");
  EXPECT_THAT(f.fix, HasSubstr("x.view(x.size(0), -1)"));
  f = exception_finding(
      "RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at "
      "non-singleton dimension 1");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): tensors of sizes 3 and 4 met at dimension 1, where neither is 1");
}

// A dataset that returns None for a sample: first in its batch (collate's own check), or after a
// tensor (torch.stack inside collate, 1.13's frames).
TEST(TrainingRules, ASampleOfNoneIsNamed) {
  Finding f = exception_finding(
      "TypeError: default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
      "lists; found <class 'NoneType'>");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): the dataset returned None for a sample, which the default collate "
            "cannot batch");
  std::vector<FrameHint> collate = {
      {"/home/user/proj/train.py", "<module>"},
      {"/usr/lib/python3/dist-packages/torch/utils/data/_utils/collate.py", "default_collate"},
      {"/usr/lib/python3/dist-packages/torch/utils/data/_utils/collate.py", "collate_tensor_fn"}};
  EXPECT_THAT(
      ids("TypeError: expected Tensor as element 1 in argument 0, but got NoneType", collate),
      testing::ElementsAre("torch.collate-none"));
  // torch.stack of the user's own list is no DataLoader's.
  EXPECT_THAT(ids("TypeError: expected Tensor as element 1 in argument 0, but got NoneType",
                  {{"/home/user/proj/train.py", "<module>"}}),
              testing::IsEmpty());
}

TEST(TrainingRules, AnObjectThatCannotBePickledIsNamed) {
  Finding f = exception_finding("TypeError: cannot pickle '_thread.lock' object");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): a _thread.lock object cannot be pickled");
  EXPECT_THAT(f.fix, HasSubstr("in each worker on first use"));
  f = exception_finding(
      "_pickle.PicklingError: Can't pickle <function <lambda> at 0x7f7036d014e0>: attribute "
      "lookup <lambda> on __main__ failed");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): the function <lambda> cannot be pickled");
  EXPECT_THAT(f.fix, HasSubstr("functools.partial instead of a lambda"));
}

// The module a pickle names tells which fix: a spawned process's copy of the main script, the
// main script of a program that saved a whole model, or a module whose names changed.
TEST(TrainingRules, AClassThatUnpicklingCannotFindSaysWhereItShouldBe) {
  Finding f = exception_finding(
      "AttributeError: Can't get attribute 'Squares' on <module '__mp_main__' from "
      "'/tmp/proj/train.py'>");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): a process that spawn started could not find Squares in the main "
            "script");
  EXPECT_THAT(f.fix, HasSubstr("define Squares at the main script's top level"));
  f = exception_finding(
      "AttributeError: Can't get attribute 'Net' on <module '__main__' from '/tmp/proj/eval.py'>");
  EXPECT_THAT(f.title, HasSubstr("the file names Net of the main script that saved it"));
  EXPECT_THAT(f.fix, HasSubstr("`from <its module> import Net`"));
  EXPECT_THAT(f.fix, HasSubstr("model.state_dict()"));
  // A notebook's main module comes from no file: spawn's processes cannot import it.
  f = exception_finding(
      "AttributeError: Can't get attribute 'Squares' on <module '__main__' "
      "(built-in)>");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): unpickling could not find Squares in the main module, which is "
            "no file (a notebook, the interactive interpreter, python -c)");
  EXPECT_THAT(f.fix, HasSubstr("define Squares in a .py module that the notebook imports"));
  f = exception_finding(
      "AttributeError: Can't get attribute 'ResBlock' on <module 'models.resnet' from "
      "'/tmp/proj/models/resnet.py'>");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): the file names models.resnet.ResBlock, which the loading "
            "program's models.resnet lacks");
  EXPECT_THAT(f.fix, HasSubstr("`ResBlock = NewName`"));
}

// A process that spawn started fails in its bootstrap, before any code of the user's: the
// `python -c` command spawn runs it with is not the user's line.
TEST(TrainingRules, SpawnsBootstrapCommandIsNotTheUsersCode) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 2.0, number,
              {"Traceback (most recent call last):", "  File \"<string>\", line 1, in <module>",
               "  File \"/usr/lib/python3.11/multiprocessing/spawn.py\", line 120, in spawn_main",
               "  File \"/usr/lib/python3.11/multiprocessing/spawn.py\", line 130, in _main",
               "AttributeError: Can't get attribute 'Squares' on <module '__mp_main__' from "
               "'/home/user/proj/train.py'>"},
              "[default0]:");
  exited(e, kRank0, 2.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  for (const std::string& line : d.findings[0].evidence) {
    EXPECT_THAT(line, Not(HasSubstr("at <string>:1"))) << line;
  }
  EXPECT_THAT(d.findings[0].evidence,
              Contains(HasSubstr("raised in /usr/lib/python3.11/multiprocessing/spawn.py:130")));
  // `python -c` is the user's own code.
  e.log_lines[2].text = "[default0]:  File \"<string>\", line 3, in <module>";
  e.log_lines[3].text = "[default0]:  File \"/home/user/proj/data.py\", line 7, in load";
  d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_THAT(d.findings[0].evidence, Contains(HasSubstr("at /home/user/proj/data.py:7 in load")));
}

// A native library that does not load: which one, and the build or package that brings it.
TEST(TrainingRules, NativeLibrariesThatDoNotLoadSayWhatToInstall) {
  const std::string kNotFound = ": cannot open shared object file: No such file or directory";
  Finding f = exception_finding("ImportError: libGL.so.1" + kNotFound);
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): the native library libGL.so.1 could not be loaded: it is not "
            "installed, or not on the loader's path");
  EXPECT_THAT(f.fix, HasSubstr("pip install opencv-python-headless"));
  f = exception_finding("OSError: libcudart.so.11.0" + kNotFound);
  EXPECT_THAT(f.fix, HasSubstr("loads libcudart.so.11.0 was built against that library"));
  f = exception_finding("ImportError: libcuda.so.1" + kNotFound);
  EXPECT_THAT(f.fix, HasSubstr("has no driver"));
  f = exception_finding("ImportError: libcuda.so" + kNotFound);
  EXPECT_THAT(f.fix, HasSubstr("development package"));
  f = exception_finding("ImportError: libSM.so.6" + kNotFound);
  EXPECT_THAT(f.fix, HasSubstr("apt-get install libsm6)"));
  // ATen's own loader, and a launcher's prefix.
  f = exception_finding("RuntimeError: Error in dlopen: libnvrtc.so.12" + kNotFound);
  EXPECT_THAT(f.fix, HasSubstr("loads libnvrtc.so.12 was built against"));
  EXPECT_THAT(ids("[default0]:ImportError: libGL.so.1" + kNotFound),
              Contains("python.shared-library-missing"));
  // Warnings that name a library the program goes on without are no failure.
  for (const char* warning :
       {"/venv/torchvision/io/image.py:13: UserWarning: Failed to load image Python extension: "
        "'/venv/torchvision/image.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev'If you "
        "don't plan on using image functionality from `torchvision.io`, you can ignore this",
        "node1:42:42 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object "
        "file: No such file or directory No plugin found (libnccl-net.so), using internal "
        "implementation"}) {
    EXPECT_THAT(ids(warning), Not(Contains(testing::StartsWith("python.")))) << warning;
  }
  // libcurl is no CUDA library.
  for (const char* library : {"libcurl.so.4", "/opt/x/lib/libcurl.so.4"}) {
    f = exception_finding(std::string("OSError: ") + library + kNotFound);
    EXPECT_THAT(f.fix, HasSubstr("apt-file search libcurl.so.4;")) << library;
  }
  const std::string module =
      "ImportError: /opt/venv/lib/python3.11/site-packages/mmcv/_ext.cpython-311-x86_64-linux-"
      "gnu.so: undefined symbol: ";
  f = exception_finding(module + "_ZN3c1015SmallVectorBase8grow_podEPvmm");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): the compiled module mmcv/_ext.cpython-311-x86_64-linux-gnu.so was "
            "built against another PyTorch: it needs c10::SmallVectorBase::grow_pod(void*, "
            "unsigned long, unsigned long), which the loaded libraries lack");
  EXPECT_THAT(f.fix, HasSubstr("--no-build-isolation"));
  // A versioned symbol: its version is no part of its name.
  f = exception_finding(module + "_ZN15TracebackLoggerC1EPKc, version libcudnn_ops_infer.so.8");
  EXPECT_THAT(f.title, HasSubstr("it needs TracebackLogger::TracebackLogger(char const*), which"));
  f = exception_finding(
      "ImportError: /venv/nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: "
      "__nvJitLinkAddData_12_1, version libnvJitLink.so.12");
  EXPECT_THAT(f.title, HasSubstr("built against another CUDA: it needs __nvJitLinkAddData_12_1,"));
  f = exception_finding(module + "PyFrame_GetCode");
  EXPECT_THAT(f.title, HasSubstr("built against another Python: it needs PyFrame_GetCode,"));
  f = exception_finding(module + "cudaGetDriverEntryPointByVersion");
  EXPECT_THAT(f.title, HasSubstr("built against another CUDA:"));
  f = exception_finding(module + "png_create_read_struct");
  EXPECT_THAT(f.title, HasSubstr("built against another version of a library:"));
}

// Conversions to NumPy, loss targets and wrapped models: what the call got, and the fix.
TEST(TrainingRules, ConversionsTargetsAndWrappersSayWhatTheCallGot) {
  Finding f = exception_finding(
      "RuntimeError: Can't call numpy() on Tensor that requires grad. Use "
      "tensor.detach().numpy() instead.");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): numpy() on a tensor that autograd records (it requires "
            "grad)");
  f = exception_finding(
      "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy "
      "the tensor to host memory first.");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): numpy() on a tensor on cuda:0: NumPy reads host memory "
            "only");
  EXPECT_THAT(f.fix, HasSubstr("tensor.detach().cpu().numpy()"));
  f = exception_finding(
      "RuntimeError: 0D or 1D target tensor expected, multi-target not supported");
  EXPECT_THAT(f.fix, HasSubstr("target.squeeze(1)"));
  // A regression loss's integer target, found in the backward pass; class targets the reverse.
  f = exception_finding("RuntimeError: Found dtype Long but expected Float");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): a tensor of type Long where Float is expected");
  EXPECT_THAT(f.fix, HasSubstr("mse_loss"));
  EXPECT_THAT(f.fix, Not(HasSubstr(".long() them")));
  f = exception_finding("RuntimeError: expected scalar type Long but found Float");
  EXPECT_THAT(f.fix, HasSubstr(".long() them"));
  EXPECT_THAT(f.fix, Not(HasSubstr("mse_loss")));
  f = exception_finding(
      "AttributeError: 'DistributedDataParallel' object has no attribute 'generate'");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): the model is wrapped in DistributedDataParallel, which does not "
            "pass on `generate`");
  EXPECT_THAT(f.fix, HasSubstr("model.module.generate"));
  // A class of the user's own, however named, is no wrapper.
  f = exception_finding("AttributeError: 'MyDataParallel' object has no attribute 'generate'");
  EXPECT_THAT(f.title, HasSubstr("raised AttributeError"));
}

TEST(TrainingRules, AutogradErrorsSayWhatHappenedToTheGraph) {
  Finding f = exception_finding(
      "RuntimeError: one of the variables needed for gradient computation has been modified by "
      "an inplace operation: [torch.FloatTensor [4, 4]], which is output 0 of SigmoidBackward0, "
      "is at version 1; expected version 0 instead.");
  EXPECT_EQ(f.kind, FindingKind::kPythonException);
  EXPECT_TRUE(f.root_cause);
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): output 0 of SigmoidBackward0 [4, 4], saved for the backward "
            "pass, was changed in place before backward()");
  EXPECT_THAT(f.fix, HasSubstr("out-of-place"));
  f = exception_finding(
      "RuntimeError: Trying to backward through the graph a second time (or directly access "
      "saved tensors after they have already been freed).");
  EXPECT_THAT(f.fix, HasSubstr(".detach() it at the end of each step"));
  f = exception_finding(
      "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn");
  EXPECT_THAT(f.fix, HasSubstr("torch.no_grad()"));
  f = exception_finding("RuntimeError: grad can be implicitly created only for scalar outputs");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): backward() on a loss of more than one value");
  EXPECT_THAT(f.fix, HasSubstr("reduction='none'"));
  f = exception_finding(
      "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_THAT(f.fix, HasSubstr("`with torch.no_grad():`"));
  f = exception_finding(
      "RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): the backward of LogBackward0 returned NaN (anomaly detection)");
}

// With anomaly detection on, PyTorch warns with the forward call's frames before it raises:
// the finding cites that line, which the backward's own traceback never reaches.
TEST(TrainingRules, AnomalyDetectionsForwardCallIsCited) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(
      e, 2.0, number,
      {"/usr/lib/python3/dist-packages/torch/autograd/__init__.py:197: UserWarning: Error "
       "detected in SqrtBackward0. Traceback of forward call that caused the error:",
       "  File \"/home/user/proj/train.py\", line 40, in <module>",
       "    loss = criterion(torch.sqrt(pred), target)",
       "  File \"/usr/lib/python3/dist-packages/torch/fx/traceback.py\", line 57, in format_stack",
       "    return traceback.format_stack()",
       " (Triggered internally at  ./torch/csrc/autograd/python_anomaly_mode.cpp:114.)",
       "  Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the "
       "backward pass",
       "Traceback (most recent call last):",
       "  File \"/home/user/proj/train.py\", line 41, in <module>", "    loss.backward()",
       "RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output."},
      "[default0]:");
  exited(e, kRank0, 2.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_THAT(d.findings[0].evidence,
              testing::Contains("the forward call that made it, at /home/user/proj/train.py:40 "
                                "in <module>: loss = criterion(torch.sqrt(pred), target)"));
  // Without the warning, nothing is cited as the forward call.
  e.log_lines.erase(e.log_lines.begin(), e.log_lines.begin() + 7);
  d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  for (const std::string& line : d.findings[0].evidence) {
    EXPECT_FALSE(line.starts_with("the forward call")) << line;
  }
}

TEST(TrainingRules, AConvolutionsChannelsSayWhatTheImagesAre) {
  Finding f = exception_finding(
      "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 1, 224, "
      "224] to have 3 channels, but got 1 channels instead");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): a convolution built for 3 input channels got 1 (input [8, 1, 224, "
            "224], weight [64, 3, 7, 7])");
  EXPECT_THAT(f.fix, testing::StartsWith("Grayscale images for a model built for RGB"));
  f = exception_finding(
      "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 224, 224, "
      "3] to have 3 channels, but got 224 channels instead");
  EXPECT_THAT(f.fix, HasSubstr("x.permute(0, 3, 1, 2)"));
  f = exception_finding(
      "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input[8, 4, 224, "
      "224] to have 3 channels, but got 4 channels instead");
  EXPECT_THAT(f.fix, testing::StartsWith("RGBA images"));
  f = exception_finding(
      "RuntimeError: Given groups=1, weight of size [128, 64, 3, 3], expected input[8, 32, 56, "
      "56] to have 64 channels, but got 32 channels instead");
  EXPECT_THAT(f.fix, HasSubstr("in_channels=32"));
}

TEST(TrainingRules, ATypeMismatchTellsADeviceFromADtype) {
  Finding f = exception_finding(
      "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) "
      "should be the same");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): an input on the GPU (torch.cuda.FloatTensor) for a layer whose "
            "weight is on the CPU (torch.FloatTensor)");
  EXPECT_THAT(f.fix, HasSubstr("x.to(device)"));
  f = exception_finding(
      "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) "
      "should be the same");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): a torch.cuda.HalfTensor input for a layer whose weight is "
            "torch.cuda.FloatTensor");
  EXPECT_THAT(f.fix, HasSubstr("torch.autocast"));
  EXPECT_THAT(f.fix, Not(HasSubstr("x.to(device)")));
  f = exception_finding("RuntimeError: expected scalar type Long but found Int");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): a tensor of type Int where Long is expected");
  EXPECT_THAT(f.fix, HasSubstr(".long()"));
  // An operation without a kernel for the type: which fix, by the type and the operation.
  f = exception_finding("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): the operation addmm_impl_cpu_ does not take Half tensors");
  EXPECT_THAT(f.fix, HasSubstr("model.float()"));
  f = exception_finding("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'BFloat16'");
  EXPECT_THAT(f.fix, HasSubstr("no bfloat16 kernel"));
  EXPECT_THAT(f.fix, Not(HasSubstr("model.half()")));
  f = exception_finding(
      "RuntimeError: \"nll_loss_forward_reduce_cuda_kernel_2d_index\" not implemented for 'Int'");
  EXPECT_THAT(f.fix, HasSubstr("must be int64: .long() them"));
  f = exception_finding("RuntimeError: \"softmax_lastdim_kernel_impl\" not implemented for 'Long'");
  EXPECT_THAT(f.fix, HasSubstr("needs floating point"));
  EXPECT_THAT(f.fix, Not(HasSubstr(".long()")));
  f = exception_finding("RuntimeError: \"baddbmm_with_gemm\" not implemented for 'ComplexHalf'");
  EXPECT_THAT(f.fix, HasSubstr("float32 is supported everywhere"));
  f = exception_finding("RuntimeError: mat1 and mat2 must have the same dtype");
  EXPECT_THAT(f.fix, HasSubstr("NumPy arrays are float64"));
  f = exception_finding(
      "RuntimeError: Expected all tensors to be on the same device, but found at least two "
      "devices, cuda:0 and cpu!");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): one operation got tensors on two devices, cuda:0 and cpu");
  f = exception_finding(
      "ValueError: Expected input batch_size (4) to match target batch_size (5).");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): the loss got 4 predictions for 5 targets");
  EXPECT_THAT(f.fix, HasSubstr("x.flatten(1)"));
}

// Both ranks print the same warning once each: one finding naming both, a warning, with the
// user's line when the warning names it (the functional form) and none for the module form,
// which names PyTorch's own line.
TEST(TrainingRules, AWarningOfSilentlyWrongResultsIsOneFindingForAllRanks) {
  Evidence e = torchrun_job();
  const std::string text =
      "UserWarning: Using a target size (torch.Size([16])) that is different to the input size "
      "(torch.Size([16, 1])). This will likely lead to incorrect results due to broadcasting. "
      "Please ensure they have the same size.";
  e.log_lines = {stderr_line(3.0, 7, "[default0]:/home/user/proj/train.py:52: " + text),
                 stderr_line(3.1, 8, "[default1]:/home/user/proj/train.py:52: " + text),
                 stderr_line(3.2, 9,
                             "[default0]:/usr/lib/python3/dist-packages/torch/nn/modules/"
                             "loss.py:536: " +
                                 text)};
  exited(e, kRank0, 9, 0);
  exited(e, kRank1, 9, 0);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kFrameworkWarning);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_FALSE(f.root_cause);
  EXPECT_EQ(f.title,
            "a loss compares targets of shape [16] with predictions of shape [16, 1] at "
            "/home/user/proj/train.py:52: broadcasting pairs each prediction with every target");
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1}));
  EXPECT_THAT(f.fix, HasSubstr("predictions.squeeze(-1)"));
  EXPECT_EQ(d.findings[1].title,
            "a loss compares targets of shape [16] with predictions of shape [16, 1]: "
            "broadcasting pairs each prediction with every target");
}

// A hint about speed alone (DDP's needless search for unused parameters, as 1.13's glog prints
// it) is info; every rank's line is one finding that cites the others.
TEST(TrainingRules, ASpeedHintIsInfo) {
  Evidence e = torchrun_job();
  const std::string text =
      "reducer.cpp:1298] Warning: find_unused_parameters=True was specified in DDP constructor, "
      "but did not find any unused parameters in the forward pass.";
  e.log_lines = {stderr_line(3.0, 7, "[default0]:W20261126 04:43:28.576334 1010 " + text),
                 stderr_line(3.0, 8, "[default1]:W20261126 04:43:28.577756 1011 " + text)};
  exited(e, kRank0, 9, 0);
  exited(e, kRank1, 9, 0);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].severity, Severity::kInfo);
  EXPECT_EQ(d.findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_THAT(d.findings[0].evidence, Contains(HasSubstr("also rank 1 (pid 1011) printed it")));
}

// As PyTorch 2.11 warned on an H100 whose /dev/nvidia-uvm was made unusable, then failed at the
// first use of CUDA: the warning says why the job may train on the CPU, the error is the failure;
// each names the unified-memory device.
TEST(TrainingRules, CudaThatCannotStartNamesTheUnifiedMemoryDevice) {
  const std::string reason =
      "CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing "
      "env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to "
      "be zero.";
  const std::string warning =
      "/opt/torch/.venv/lib/python3.12/site-packages/torch/cuda/__init__.py:180: UserWarning: "
      "CUDA initialization: " +
      reason + " (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:119.)";
  EXPECT_THAT(ids(warning), testing::ElementsAre("torch.cuda-init-warning"));
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(3.6, 1, warning)};
  exited(e, kRank0, 4, 0);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kFrameworkWarning);
  EXPECT_THAT(d.findings[0].title, HasSubstr("CUDA failed to start (CUDA unknown error - "));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("sudo rmmod nvidia_uvm; sudo modprobe nvidia_uvm"));

  e.log_lines.push_back(stderr_line(3.7, 2, "Traceback (most recent call last):"));
  e.log_lines.push_back(stderr_line(3.7, 3, "  File \"<string>\", line 1, in <module>"));
  e.log_lines.push_back(stderr_line(3.7, 4, "RuntimeError: " + reason));
  exited(e, kRank0, 4, 1);
  d = diagnose(e);
  const Finding& root = d.findings[0];
  EXPECT_TRUE(root.root_cause);
  EXPECT_EQ(root.kind, FindingKind::kCudaUnavailable);
  EXPECT_EQ(root.title,
            "rank 0 (pid 1010): CUDA could not start in the process (CUDA unknown "
            "error)");
  EXPECT_THAT(root.fix, HasSubstr("/dev/nvidia-uvm"));
}

}  // namespace
}  // namespace traindoc::analysis
