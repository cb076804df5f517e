// Crasher: a C++ exception nobody catches (std::terminate, abort, SIGABRT).
#include <stdexcept>

__attribute__((noinline)) void traindoc_test_throw_here() {
  throw std::runtime_error("shape mismatch in layer 3");
}

int main() {
  traindoc_test_throw_here();
  return 0;
}
