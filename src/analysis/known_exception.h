// Known Python exceptions (kind python-exception) turned into words: the interpreter's own
// errors, shapes and types, autograd, checkpoints that do not fit the model. Pure.
#pragma once

#include "analysis/known_failure.h"

namespace traindoc::analysis {

// Sets the title (when the text's numbers say more than its first line) and the fix of a
// python-exception match; leaves both empty for an exception with nothing known to add.
void describe_exception(const SignatureMatch& m, KnownFailure& f);

}  // namespace traindoc::analysis
