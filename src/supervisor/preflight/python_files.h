// What the files beside a Python interpreter say, from their text and names alone: a venv's
// pyvenv.cfg, the interpreter's own name, torch's extension, NCCL's wheel and library. Supervisor
// process, main thread (traindoc check, the start of a run). Pure: python_probe reads the files.
#pragma once

#include <string>
#include <string_view>

namespace traindoc::supervisor {

// What a venv's pyvenv.cfg tells, read as site.py reads it: a line's key before its first '=',
// stripped and in any case, its value after it, stripped; lines without '=' ignored; a later line
// of a key overrides an earlier one.
struct VenvConfig {
  std::string version;  // "3.11" of version_info, else of version; "" when neither has one
  std::string home;     // the folder of the Python the venv was made from; "" when absent
  // include-system-site-packages, "true" in any case; site.py's default where it is absent.
  bool system_site_packages = true;
};

VenvConfig parse_pyvenv_cfg(const std::string& text);

// A #! line as the kernel reads it: after "#!" and any spaces or tabs, the interpreter up to the
// first space or tab, then, past more of them, one argument to the line's end, with trailing
// spaces and tabs stripped (a '\r' is kept: "python3\r" names no file). Only the first 255
// bytes are read. Both empty for a file that does not start with "#!".
struct Shebang {
  std::string interpreter;
  std::string argument;  // "" when none
};

Shebang parse_shebang(std::string_view head);

// "3.11" of an interpreter's file name (python3.11, python3.12d); "" for any other name.
std::string interpreter_name_version(std::string_view name);

// "3.11" of torch's extension's file name (_C.cpython-311-x86_64-linux-gnu.so); "" for another.
std::string extension_python_version(std::string_view name);

// "2.28.3" of the nvidia-nccl wheel's dist-info folder (nvidia_nccl_cu12-2.28.3.dist-info); ""
// for another.
std::string nccl_wheel_version(std::string_view name);

// "2.18.3" of the system's NCCL library, the path libnccl.so.2 resolves to
// (/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3); "" for an unversioned one, which tells the
// major version alone.
std::string nccl_library_version(const std::string& path);

}  // namespace traindoc::supervisor
