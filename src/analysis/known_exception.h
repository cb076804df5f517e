// Known Python texts turned into words: exceptions (kind python-exception) of the interpreter,
// shapes and types, autograd, checkpoints that do not fit the model, DDP; a command line the
// script rejected (bad-arguments). Pure.
#pragma once

#include "analysis/known_failure.h"

namespace traindoc::analysis {

// Sets the title (when the text's numbers say more than its first line) and the fix of a
// python-exception or bad-arguments match; leaves both empty for one with nothing known to add.
void describe_python(const SignatureMatch& m, KnownFailure& f);

}  // namespace traindoc::analysis
