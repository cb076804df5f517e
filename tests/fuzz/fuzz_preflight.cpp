// libFuzzer target: the preflight checks' parsers (supervisor/preflight/), on what the user's
// command and the Python tree it runs in may hold. The first byte chooses the parser; the rest is
// its input: the job's argv split on NUL, torch/version.py's text, a launcher script read for its
// #! line, pyvenv.cfg's text, file names split on NUL, or a venv's pyvenv.cfg and torch's
// version.py (split on the first NUL) for the whole probe. None of them documents an error: any
// exception is a finding.
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/preflight/command_line.h"
#include "supervisor/preflight/python_files.h"
#include "supervisor/preflight/python_probe.h"

using namespace traindoc;
using namespace traindoc::supervisor;

namespace {

namespace fs = std::filesystem;

// A folder made once for the files the probes read: bin/ holds the Pythons a #! line may find
// on PATH, venv/ a venv whose pyvenv.cfg and torch/version.py each input rewrites.
struct Tree {
  std::string root, bin, script, venv_python, cfg, torch, version_py;
};

void write_file(const std::string& path, std::string_view bytes, mode_t mode = 0600) {
  FILE* file = fopen(path.c_str(), "wb");
  if (file == nullptr || fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size()) abort();
  fclose(file);
  if (chmod(path.c_str(), mode) != 0) abort();
}

// Never destroyed: the removal at exit needs it.
const Tree& tree() {
  static const Tree& made = *[] {
    auto* t = new Tree;
    t->root = (fs::temp_directory_path() / "fuzz-preflight-XXXXXX").string();
    if (mkdtemp(t->root.data()) == nullptr) abort();
    std::atexit([] { fs::remove_all(tree().root); });
    t->bin = t->root + "/bin";
    t->script = t->root + "/torchrun";
    std::string venv = t->root + "/venv";
    t->venv_python = venv + "/bin/python3.11";
    t->cfg = venv + "/pyvenv.cfg";
    t->torch = venv + "/lib/python3.11/site-packages/torch";
    t->version_py = t->torch + "/version.py";
    fs::create_directories(t->bin);
    fs::create_directories(venv + "/bin");
    fs::create_directories(t->torch);
    for (const char* name : {"python", "python3", "python3.11"}) {
      write_file(t->bin + "/" + name, "", 0700);
    }
    write_file(t->venv_python, "", 0700);
    write_file(t->torch + "/__init__.py", "");
    write_file(t->torch + "/_C.cpython-311-x86_64-linux-gnu.so", "");
    return t;
  }();
  return made;
}

// The pieces of `text` between NULs, empty ones kept (an argv may hold "").
std::vector<std::string> split_nul(std::string_view text) {
  std::vector<std::string> out;
  size_t from = 0;
  while (true) {
    size_t nul = text.find('\0', from);
    out.emplace_back(text.substr(from, nul == std::string_view::npos ? nul : nul - from));
    if (nul == std::string_view::npos) return out;
    from = nul + 1;
  }
}

bool in_any(const std::vector<std::string>& argv, std::string_view part) {
  for (const std::string& arg : argv) {
    if (arg.find(part) != std::string::npos) return true;
  }
  return false;
}

bool is_arg(const std::vector<std::string>& argv, const std::string& value) {
  for (const std::string& arg : argv) {
    if (arg == value) return true;
  }
  return false;
}

// A number the command line gave is written in one of its arguments.
void check_number(const std::vector<std::string>& argv, const std::optional<int>& value) {
  if (value && (*value < 0 || !in_any(argv, std::to_string(*value)))) abort();
}

void fuzz_command(std::string_view input) {
  std::vector<std::string> argv = split_nul(input);
  if (input.empty()) argv.clear();
  ParsedCommand parsed = parse_command(argv);
  const store::CommandFacts& facts = parsed.facts;
  // env's -S (--split-string, or an abbreviation) makes words that need not be arguments.
  bool split = std::any_of(argv.begin(), argv.end(), [](const std::string& arg) {
    return arg.starts_with("-") && (arg.find('S') != std::string::npos || arg.starts_with("--s"));
  });
  auto word = [&](const std::string& value) { return split || is_arg(argv, value); };
  if (!facts.program.empty() && !word(facts.program)) abort();
  if (!facts.script.empty() && !word(facts.script)) abort();
  if (!parsed.python.empty() && (!word(parsed.python) || !is_python_name(parsed.python))) {
    abort();
  }
  for (const auto& [name, value] : parsed.env) {
    if (name.find('=') != std::string::npos || !word(name + "=" + value)) abort();
  }
  if (!facts.master_addr.empty() && !in_any(argv, facts.master_addr)) abort();
  for (const std::optional<int>* number :
       {&facts.nproc_per_node, &facts.nnodes, &facts.node_rank, &facts.redirects, &facts.workers,
        &facts.batch_size, &facts.master_port}) {
    check_number(argv, *number);
  }
  if (facts.redirects && !facts.redirects_given) abort();
  if (facts.nproc_from_gpus && facts.nproc_per_node) abort();
  if (facts.launcher == store::Launcher::kNone &&
      (!facts.program.empty() || !facts.script.empty())) {
    abort();
  }
  if (!facts.script.empty() && facts.launcher != store::Launcher::kPython &&
      facts.launcher != store::Launcher::kTorchrun) {
    abort();
  }
}

void fuzz_torch_version(std::string_view input) {
  std::string text(input), version, cuda;
  parse_torch_version(text, version, cuda);
  for (const std::string& value : {version, cuda}) {
    if (value.find('\n') != std::string::npos || text.find(value) == std::string::npos) abort();
  }
}

void fuzz_shebang(std::string_view input) {
  const Tree& t = tree();
  write_file(t.script, input, 0700);
  std::string found = shebang_interpreter(t.script, t.bin);
  if (found.empty()) return;
  // A path of the #! line (or pip's trampoline), else the Python /usr/bin/env found on PATH.
  bool on_path = found.starts_with(t.bin + "/");
  if (found.find('\0') != std::string::npos ||
      (!on_path && input.find(found) == std::string::npos)) {
    abort();
  }
}

void fuzz_pyvenv_cfg(std::string_view input) {
  std::string text(input);
  VenvConfig config = parse_pyvenv_cfg(text);
  for (const std::string& value : {config.version, config.home}) {
    if (value.find('\n') != std::string::npos || text.find(value) == std::string::npos) abort();
  }
}

void fuzz_names(std::string_view input) {
  for (const std::string& name : split_nul(input)) {
    std::string python = interpreter_name_version(name);
    if (!python.empty() && (!python.starts_with("3") || name.find(python) == std::string::npos)) {
      abort();
    }
    std::string built_for = extension_python_version(name);
    if (!built_for.empty() &&
        (!built_for.starts_with("3.") || name.find(built_for.substr(2)) == std::string::npos)) {
      abort();
    }
    // nvidia_nccl_cu12-2.28.3.dist-info: the version is all between the first '-' and the suffix.
    std::string wheel = nccl_wheel_version(name);
    if (!wheel.empty() && name.find('-') + 1 + wheel.size() + 10 != name.size()) abort();
    // The library's version is in its file's name.
    std::string library = nccl_library_version(name);
    if (!library.empty() && (library.find('/') != std::string::npos || !name.ends_with(library))) {
      abort();
    }
    (void)is_python_name(name);
  }
}

void fuzz_probe(std::string_view input) {
  const Tree& t = tree();
  size_t nul = input.find('\0');
  std::string_view cfg = input.substr(0, nul);
  std::string_view version_py = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  write_file(t.cfg, cfg);
  write_file(t.version_py, version_py);
  store::PythonFacts facts = probe_python(t.venv_python, {});
  if (facts.interpreter != t.venv_python) abort();
  if (facts.torch_dir == t.torch &&
      (version_py.find(facts.torch_version) == std::string::npos || facts.torch_python != "3.11")) {
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 6) {
      case 0:
        fuzz_command(input);
        break;
      case 1:
        fuzz_torch_version(input);
        break;
      case 2:
        fuzz_shebang(input);
        break;
      case 3:
        fuzz_pyvenv_cfg(input);
        break;
      case 4:
        fuzz_names(input);
        break;
      default:
        fuzz_probe(input);
        break;
    }
  } catch (const std::exception& error) {
    fprintf(stderr, "fuzz_preflight: exception: %s\n", error.what());
    abort();
  }
  return 0;
}
