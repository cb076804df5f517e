// Reading the values a signature extracted (SignatureMatch::fields) back as numbers, lists and
// shapes, for the describers that turn them into words. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/signatures.h"

namespace traindoc::analysis {

// The field's text, "" when the signature did not extract it.
std::string field(const SignatureMatch& m, const std::string& name);
// The field as a whole integer; nullopt when absent or not one.
std::optional<int> int_field(const SignatureMatch& m, const std::string& name);
// "0,1,2" (a kList field) -> {0, 1, 2}; what is not a number is skipped.
std::vector<int> int_list(const std::string& text);
// "3,32,32" (a kList field) -> "[3, 32, 32]".
std::string shape(const std::string& list);

}  // namespace traindoc::analysis
