// The Python that will run a job and the torch it will import, read from the files beside the
// interpreter without starting it (importing torch takes seconds). Supervisor process, main thread
// (traindoc check, the start of a run).
#pragma once

#include <string>

#include "store/preflight.h"

namespace traindoc::supervisor {

// What the lookup reads of the environment.
struct PythonLookup {
  std::string path;        // PATH
  std::string pythonpath;  // PYTHONPATH
  std::string home;        // HOME, for the user's site-packages
};

// The file `name` names: itself when it holds a slash, else the first executable of that name in
// `path`; "" when none.
std::string find_program(const std::string& name, const std::string& path);

// The interpreter of a script's #! line (torchrun's), through /usr/bin/env and the /bin/sh
// trampoline pip writes for long paths; "" when it has none.
std::string shebang_interpreter(const std::string& script, const std::string& path);

// `interpreter`: the file found (find_program, shebang_interpreter).
store::PythonFacts probe_python(const std::string& interpreter, const PythonLookup& lookup);

// The version of torch/version.py's text ("1.13.0a0"), and its `cuda` ("" for None).
void parse_torch_version(const std::string& text, std::string& version, std::string& cuda);

}  // namespace traindoc::supervisor
