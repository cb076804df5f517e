// The words that the signature catalog's entries name (signature_table.h, Entry::describe and
// Entry::fix): describers that read a match's fields, and the fixes that several entries share.
// Internal to the analysis library. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/known_failure.h"

namespace traindoc::analysis::words {

// ---- known_failure_words.cpp: failures of a kind of their own --------------------------------
void label(const SignatureMatch& m, KnownFailure& f);
// The fix for a label a loss rejected, made from what is known of it: the label (the text's or
// the Python hook's), the class count of the loss's input and the largest label of its targets
// (the hook's). A void label gets ignore_index; a real class, the model's class count or the
// labels' mapping, never ignore_index; neither known, how to find them (kLabelFix). The one
// place of these words, for every rule that tells them.
std::string label_fix(std::optional<int64_t> label, std::optional<int64_t> classes,
                      std::optional<int64_t> largest);
// label, with Keras' name for the loss's ignored label (ignore_class) beside PyTorch's.
void keras_label(const SignatureMatch& m, KnownFailure& f);
void index(const SignatureMatch& m, KnownFailure& f);
void worker_timeout(const SignatureMatch& m, KnownFailure& f);
void rendezvous_timeout(const SignatureMatch& m, KnownFailure& f);
void store_connect_timeout(const SignatureMatch& m, KnownFailure& f);
void store_key_timeout(const SignatureMatch& m, KnownFailure& f);
void unused_parameters(const SignatureMatch& m, KnownFailure& f);
void model_mismatch(const SignatureMatch& m, KnownFailure& f);
void torch_collective_mismatch(const SignatureMatch& m, KnownFailure& f);
void gloo_tensor_size(const SignatureMatch& m, KnownFailure& f);
void gloo_preamble_size(const SignatureMatch& m, KnownFailure& f);
void collective_shapes(const SignatureMatch& m, KnownFailure& f);
void gloo_io_timeout(const SignatureMatch& m, KnownFailure& f);
void collective_missing(const SignatureMatch& m, KnownFailure& f);
void stopped_by_signal(const SignatureMatch& m, KnownFailure& f);
void driver_too_old(const SignatureMatch& m, KnownFailure& f);
void cuda_unavailable(const SignatureMatch& m, KnownFailure& f);
void host_alloc(const SignatureMatch& m, KnownFailure& f);
void port_in_use(const SignatureMatch& m, KnownFailure& f);
void disk_full(const SignatureMatch& m, KnownFailure& f);
void checkpoint_write_failed(const SignatureMatch& m, KnownFailure& f);
void checkpoint_truncated(const SignatureMatch& m, KnownFailure& f);
void checkpoint_corrupt(const SignatureMatch& m, KnownFailure& f);
void openmp_threads(const SignatureMatch& m, KnownFailure& f);
void huggingface_unreachable(const SignatureMatch& m, KnownFailure& f);
void network_unreachable(const SignatureMatch& m, KnownFailure& f);

// ---- known_exception.cpp: Python exceptions and bad arguments --------------------------------
void module_not_found(const SignatureMatch& m, KnownFailure& f);
void file_not_found(const SignatureMatch& m, KnownFailure& f);
void script_not_found(const SignatureMatch& m, KnownFailure& f);
void batchnorm_one_sample(const SignatureMatch& m, KnownFailure& f);
void view_size_mismatch(const SignatureMatch& m, KnownFailure& f);
void broadcast_mismatch(const SignatureMatch& m, KnownFailure& f);
void unreadable_image(const SignatureMatch& m, KnownFailure& f);
void unpicklable(const SignatureMatch& m, KnownFailure& f);
void missing_class(const SignatureMatch& m, KnownFailure& f);
void launcher_variable_missing(const SignatureMatch& m, KnownFailure& f);
void bad_arguments(const SignatureMatch& m, KnownFailure& f);
void worker_exception(const SignatureMatch& m, KnownFailure& f);
void shared_library_missing(const SignatureMatch& m, KnownFailure& f);
void undefined_symbol(const SignatureMatch& m, KnownFailure& f);
void collate_unequal(const SignatureMatch& m, KnownFailure& f);
void linear_features(const SignatureMatch& m, KnownFailure& f);
void collate_type(const SignatureMatch& m, KnownFailure& f);
void conv_channels(const SignatureMatch& m, KnownFailure& f);
void conv_dims(const SignatureMatch& m, KnownFailure& f);
void device_mismatch(const SignatureMatch& m, KnownFailure& f);
void dtype_unsupported(const SignatureMatch& m, KnownFailure& f);
void type_mismatch(const SignatureMatch& m, KnownFailure& f);
void batch_size_mismatch(const SignatureMatch& m, KnownFailure& f);
void numpy_not_cpu(const SignatureMatch& m, KnownFailure& f);
void autograd_inplace(const SignatureMatch& m, KnownFailure& f);
void autograd_nan(const SignatureMatch& m, KnownFailure& f);
// JAX's NaN check: the operation named, and the numerics advice autograd_nan gives PyTorch.
void debug_nans(const SignatureMatch& m, KnownFailure& f);
void ddp_ready_twice(const SignatureMatch& m, KnownFailure& f);
void device_unsupported(const SignatureMatch& m, KnownFailure& f);
void ddp_attribute(const SignatureMatch& m, KnownFailure& f);
void state_dict(const SignatureMatch& m, KnownFailure& f);
void weights_only(const SignatureMatch& m, KnownFailure& f);

// ---- rule_warnings.cpp: framework warnings ----------------------------------------------------
void loss_broadcast(const SignatureMatch& m, KnownFailure& f);
void softmax_implicit_dim(const SignatureMatch& m, KnownFailure& f);
void cuda_init_warning(const SignatureMatch& m, KnownFailure& f);

// ---- fixes that several entries share (known_failure_words.cpp) -------------------------------
// The fix for a rejected label where neither the label nor the class count is known (label_fix).
extern const char* const kLabelFix;
extern const char* const kIndexFix;
extern const char* const kUnusedParametersFix;
extern const char* const kModelMismatchFix;
extern const char* const kStoreKeyFix;
extern const char* const kCollectiveMismatchFix;
extern const char* const kCollectiveMissingFix;
extern const char* const kHostAllocFix;
extern const char* const kPortInUseFix;
extern const char* const kFdExhaustedFix;
extern const char* const kCheckpointCorruptFix;
extern const char* const kProcessLimitFix;
extern const char* const kNetworkFix;
extern const char* const kShmFix;
// The fix for ranks or nodes that never joined the rendezvous.
extern const char* const kJoinFix;
// The fix for CUDA that could not start with "CUDA unknown error" (cudaErrorUnknown).
extern const char* const kCudaUnknownErrorFix;

}  // namespace traindoc::analysis::words
