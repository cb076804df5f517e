#include "store/symbol_name.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace traindoc::store {

std::string demangle(std::string_view raw) {
  std::string name(raw);
  if (size_t at = name.find('@'); at != std::string::npos && at > 0) name.resize(at);
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && out != nullptr ? std::string(out.get()) : name;
}

}  // namespace traindoc::store
