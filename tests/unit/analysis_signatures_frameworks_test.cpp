// Tests of TensorFlow's and JAX's failure texts that name the same failures as PyTorch's: a
// label out of range, JAX's NaN check, a collective's timeout, NCCL's errors. Each asserts the
// id, kind and fields of the real text, and the words describe_known gives them, beside
// PyTorch's for the same failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "analysis/known_failure.h"
#include "analysis/signatures.h"
#include "signature_test_util.h"

namespace traindoc::analysis {
namespace {

using signature_test::expect_fields;
using signature_test::ids;
using signature_test::match;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

KnownFailure described(const std::string& line) {
  std::optional<KnownFailure> f = describe_known(match_line(line));
  EXPECT_TRUE(f.has_value()) << line;
  return f.value_or(KnownFailure{});
}

TEST(SignatureFrameworks, TensorFlowLabelOutOfRange) {
  // sparse_xent_op.cc as op_kernel.cc logs it (a user's log, TF 2.16)
  const std::string line =
      "2024-10-14 21:27:37.487309: W tensorflow/core/framework/op_kernel.cc:1840] OP_REQUIRES "
      "failed at sparse_xent_op.cc:103 : INVALID_ARGUMENT: Received a label value of 255 which "
      "is outside the valid range of [0, 19).  Label values: 7 7 255 0";
  EXPECT_THAT(ids(line), UnorderedElementsAre("tf.label-out-of-range"));
  SignatureMatch m = match(line, "tf.label-out-of-range");
  EXPECT_EQ(m.kind, FindingKind::kLabelOutOfRange);
  expect_fields(m, {{"label", "255"}, {"classes", "19"}});
  EXPECT_EQ(match("Received a label value of -1 which is outside the valid range of [0, 5).",
                  "tf.label-out-of-range")
                .fields.at("label"),
            "-1");

  // The title has the class count PyTorch's text lacks; the fix is PyTorch's, with Keras' name.
  KnownFailure tf = described(line);
  KnownFailure torch = described("IndexError: Target 255 is out of bounds.");
  EXPECT_EQ(tf.title, "target label 255 is outside [0, 19)");
  EXPECT_EQ(torch.title, "target label 255 is outside [0, classes)");
  EXPECT_THAT(tf.fix, HasSubstr(torch.fix));
  EXPECT_THAT(tf.fix, HasSubstr("SparseCategoricalCrossentropy(ignore_class=255)"));
  // Both cite the void label; the rest of the evidence is each signature's own fields.
  const std::string void_label =
      "255 is the void label of segmentation masks (Cityscapes, Pascal VOC)";
  EXPECT_THAT(tf.evidence, Contains(void_label));
  EXPECT_THAT(torch.evidence, Contains(void_label));

  // A real class beyond the model's: the class count from the text goes into the fix.
  KnownFailure beyond = described(
      "Received a label value of 7 which is outside the valid range of [0, 7).  Label values: "
      "1 0 2 7");
  EXPECT_THAT(beyond.fix, HasSubstr("beyond the model's 7 classes (0..6)"));
  EXPECT_THAT(beyond.fix, Not(HasSubstr("ignore_class")));
}

TEST(SignatureFrameworks, JaxNanCheck) {
  // JAX's documentation, debugging/flags (jax_debug_nans)
  SignatureMatch m =
      match("FloatingPointError: invalid value (nan) encountered in log", "jax.debug-nans");
  EXPECT_EQ(m.kind, FindingKind::kPythonException);
  expect_fields(m, {{"value", "nan"}, {"primitive", "log"}});
  expect_fields(
      match("FloatingPointError: invalid value (inf) encountered in jit(div)", "jax.debug-nans"),
      {{"value", "inf"}, {"primitive", "jit(div)"}});
  // NumPy's warning has no "(nan)": not JAX's check.
  EXPECT_THAT(ids("RuntimeWarning: invalid value encountered in log"),
              Not(Contains("jax.debug-nans")));

  KnownFailure jax = described("FloatingPointError: invalid value (nan) encountered in log");
  KnownFailure torch =
      described("RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.");
  EXPECT_EQ(jax.title, "log produced NaN (JAX's jax_debug_nans check)");
  for (const char* advice : {"outside the function's domain",
                             "lower the learning rate or clip "
                             "gradients"}) {
    EXPECT_THAT(jax.fix, HasSubstr(advice));
    EXPECT_THAT(torch.fix, HasSubstr(advice));
  }
  EXPECT_THAT(jax.fix, HasSubstr("optax.clip_by_global_norm"));
}

TEST(SignatureFrameworks, TensorFlowCollectiveTimeout) {
  const std::string line =
      "tensorflow.python.framework.errors_impl.DeadlineExceededError: Collective has timed out "
      "during execution.";
  EXPECT_THAT(ids(line), UnorderedElementsAre("tf.collective-timeout"));
  SignatureMatch m = match(line, "tf.collective-timeout");
  EXPECT_EQ(m.kind, FindingKind::kCollectiveMissing);
  expect_fields(m, {{"phase", "during execution"}});
  expect_fields(
      match("Collective has timed out waiting for other workers.", "tf.collective-timeout"),
      {{"phase", "waiting for other workers"}});
  // The same words as gloo's timeout of PyTorch.
  KnownFailure tf = described(line);
  KnownFailure torch = described(
      "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 2000ms for "
      "recv operation to complete");
  EXPECT_EQ(tf.fix, torch.fix);
}

TEST(SignatureFrameworks, TensorFlowNcclErrors) {
  // NcclManager's two forms; a user's log for the first
  SignatureMatch m = match(
      "Collective ops is aborted by: Error invoking NCCL: unhandled cuda error", "tf.nccl-error");
  EXPECT_EQ(m.kind, std::nullopt);
  expect_fields(m, {{"nccl_error", "unhandled cuda error"}});
  expect_fields(
      match("NCCL: unhandled system error. Set NCCL_DEBUG=WARN for detail.", "tf.nccl-error"),
      {{"nccl_error", "unhandled system error"}});
  // A remote error is a peer's exit, as PyTorch's text of it is.
  EXPECT_EQ(match("UnknownError: Error invoking NCCL: remote process exited or there was a "
                  "network error",
                  "tf.nccl-error")
                .kind,
            FindingKind::kPeerExited);
  EXPECT_EQ(match("torch.distributed.DistBackendError: NCCL error in: "
                  "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, remote process "
                  "exited or there was a network error, NCCL version 2.18.1",
                  "torch.nccl-error")
                .kind,
            FindingKind::kPeerExited);
}

}  // namespace
}  // namespace traindoc::analysis
