// The last part of a path. Pure.
#pragma once

#include <string_view>

namespace traindoc::analysis {

// "train.py" of "/job/train.py", of "./train.py" and of "train.py"; "" of "/job/".
inline std::string_view file_name(std::string_view path) {
  return path.substr(path.find_last_of('/') + 1);
}

}  // namespace traindoc::analysis
