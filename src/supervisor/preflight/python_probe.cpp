// The Python that will run a job and the torch it will import, from files alone.
// Supervisor process, main thread.
#include "supervisor/preflight/python_probe.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include "supervisor/file_text.h"
#include "supervisor/preflight/command_line.h"
#include "supervisor/preflight/python_files.h"
#include "supervisor/proc/text_scan.h"

namespace traindoc::supervisor {
namespace {

std::string dir_name(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string real_path(const std::string& path) {
  char* resolved = realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return path;
  std::string out = resolved;
  free(resolved);  // NOLINT(cppcoreguidelines-no-malloc): realpath allocates with malloc
  return out;
}

bool is_dir(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// What `pick` makes of a name in folder `dir` ("" for none of its own), the last name that
// gives one; "" when the folder cannot be read.
template <typename Pick>
std::string pick_name(const std::string& dir, Pick&& pick) {
  std::string found;
  DIR* listing = opendir(dir.c_str());
  if (listing == nullptr) return found;
  while (dirent* entry = readdir(listing)) {
    if (std::string value = pick(std::string_view(entry->d_name)); !value.empty()) found = value;
  }
  closedir(listing);
  return found;
}

// The "3.X" of the lib/python3.X folder under `prefix` that holds the standard library.
std::string version_from_lib(const std::string& prefix) {
  std::string lib = prefix + "/lib/";
  return pick_name(lib, [&lib](std::string_view name) {
    std::string os_py = lib;
    os_py += name;
    os_py += "/os.py";
    bool stdlib = name.starts_with("python3.") && access(os_py.c_str(), F_OK) == 0;
    return stdlib ? std::string(name.substr(6)) : std::string();
  });
}

// The Python torch's extension in `torch_dir` was built for.
std::string extension_python(const std::string& torch_dir) {
  return pick_name(torch_dir, extension_python_version);
}

// The version of the nvidia-nccl wheel in a site folder.
std::string nccl_wheel(const std::string& site) {
  return pick_name(site, nccl_wheel_version);
}

// A venv's pyvenv.cfg, looked for as site.py looks: beside the interpreter, then in the folder
// above it (the venv's own, whose site-packages it uses either way); "" for none.
std::string venv_config(const std::string& interpreter) {
  for (const std::string& dir : {dir_name(interpreter), dir_name(dir_name(interpreter))}) {
    if (std::string cfg = read_file_head(dir + "/pyvenv.cfg", 1 << 14); !cfg.empty()) return cfg;
  }
  return "";
}

// Where the interpreter looks for packages, in its order: PYTHONPATH, the user's site (outside a
// venv), the venv's site-packages, then the system's (Debian's dist-packages among them) where
// the venv includes them or there is none.
std::vector<std::string> site_folders(const std::string& interpreter, const std::string& version,
                                      const PythonLookup& lookup) {
  std::vector<std::string> out = text::split(lookup.pythonpath, ':');
  std::string venv = dir_name(dir_name(interpreter));
  std::string cfg = venv_config(interpreter);
  std::string lib = "/lib/python" + version;
  std::string prefix = dir_name(dir_name(real_path(interpreter)));
  bool system = true;
  if (!cfg.empty()) {
    out.push_back(venv + lib + "/site-packages");
    VenvConfig config = parse_pyvenv_cfg(cfg);
    system = config.system_site_packages;
    if (!config.home.empty()) prefix = dir_name(config.home);
  } else if (!lookup.home.empty()) {
    out.push_back(lookup.home + "/.local" + lib + "/site-packages");
  }
  if (system) {
    for (const char* site : {"/local/lib/python%/dist-packages", "/lib/python3/dist-packages",
                             "/lib/python%/dist-packages", "/lib/python%/site-packages"}) {
      std::string path = prefix + site;
      if (size_t at = path.find('%'); at != std::string::npos) path.replace(at, 1, version);
      out.push_back(path);
    }
  }
  return out;
}

std::string python_version(const std::string& interpreter) {
  std::string cfg = venv_config(interpreter);
  if (std::string version = parse_pyvenv_cfg(cfg).version; !version.empty()) return version;
  std::string name = real_path(interpreter);
  if (std::string version =
          interpreter_name_version(std::string_view(name).substr(name.rfind('/') + 1));
      !version.empty()) {
    return version;
  }
  return version_from_lib(dir_name(dir_name(real_path(interpreter))));
}

}  // namespace

std::string find_program(const std::string& name, const std::string& path) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  for (const std::string& dir : text::split(path, ':')) {
    std::string candidate = dir;
    candidate += "/";
    candidate += name;
    struct stat info {};
    if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

std::string shebang_interpreter(const std::string& script, const std::string& path) {
  std::string head = read_file_head(script, 1024);
  Shebang line = parse_shebang(head);
  // `#!/usr/bin/env python3`, `#!/usr/bin/env -S python3 -u`: the program env's one argument
  // names, as env reads it.
  if (line.interpreter.ends_with("/env") && !line.argument.empty()) {
    return find_program(parse_command({line.interpreter, line.argument}).facts.program, path);
  }
  // pip's trampoline for a path too long for #!:  '''exec' "/long/venv/bin/python" "$0" "$@"
  std::vector<std::string> lines = text::split(head, '\n');
  if (line.interpreter == "/bin/sh" && lines.size() > 1 && lines[1].starts_with("'''exec' ")) {
    std::string rest(text::trim(std::string_view(lines[1]).substr(9)));
    std::string program = rest.starts_with("\"") ? rest.substr(1, rest.find('"', 1) - 1)
                                                 : rest.substr(0, rest.find(' '));
    // A NUL in it, which a shell drops or stops at by its kind, leaves the program unknown.
    return program.find('\0') == std::string::npos ? program : "";
  }
  return line.interpreter;
}

void parse_torch_version(const std::string& text, std::string& version, std::string& cuda) {
  for (const std::string& line : text::split(text, '\n')) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key(text::trim(std::string_view(line).substr(0, line.find_first_of(":="))));
    std::string value(text::trim(std::string_view(line).substr(eq + 1)));
    bool quoted = value.size() >= 2 && (value.front() == '\'' || value.front() == '"');
    value = quoted ? value.substr(1, value.find(value.front(), 1) - 1) : "";
    if (key == "__version__") version = value;
    if (key == "cuda") cuda = value;
  }
}

store::PythonFacts probe_python(const std::string& interpreter, const PythonLookup& lookup) {
  store::PythonFacts out;
  out.interpreter = interpreter;
  if (interpreter.empty() || access(interpreter.c_str(), X_OK) != 0) {
    out.interpreter.clear();
    return out;
  }
  out.version = python_version(interpreter);
  std::vector<std::string> sites = site_folders(interpreter, out.version, lookup);
  for (const std::string& site : sites) {
    if (out.torch_dir.empty() && is_dir(site + "/torch") &&
        access((site + "/torch/__init__.py").c_str(), F_OK) == 0) {
      out.torch_dir = site + "/torch";
      parse_torch_version(read_file_head(out.torch_dir + "/version.py", 1 << 14), out.torch_version,
                          out.torch_cuda);
      out.torch_python = extension_python(out.torch_dir);
    }
    if (out.nccl_version.empty()) out.nccl_version = nccl_wheel(site);
  }
  return out;
}

}  // namespace traindoc::supervisor
