// What the files beside a Python interpreter say, from their text and names. Supervisor process,
// main thread.
#include "supervisor/preflight/python_files.h"

#include "supervisor/proc/text_scan.h"

namespace traindoc::supervisor {
namespace {

// The value of `key = value` in pyvenv.cfg's text; "" when absent.
std::string cfg_value(const std::string& text, std::string_view key) {
  for (const std::string& line : text::split(text, '\n')) {
    size_t eq = line.find('=');
    if (eq != std::string::npos && text::trim(std::string_view(line).substr(0, eq)) == key) {
      return std::string(text::trim(std::string_view(line).substr(eq + 1)));
    }
  }
  return "";
}

// "3.11" of "3.11.2".
std::string major_minor(const std::string& version) {
  size_t first = version.find('.');
  if (first == std::string::npos) return version;
  size_t second = version.find('.', first + 1);
  return second == std::string::npos ? version : version.substr(0, second);
}

}  // namespace

VenvConfig parse_pyvenv_cfg(const std::string& text) {
  VenvConfig out;
  for (const char* key : {"version_info", "version"}) {
    if (std::string version = cfg_value(text, key); !version.empty()) {
      out.version = major_minor(version);
      break;
    }
  }
  out.home = cfg_value(text, "home");
  out.system_site_packages = cfg_value(text, "include-system-site-packages") == "true";
  return out;
}

std::string interpreter_name_version(std::string_view name) {
  if (!name.starts_with("python3.")) return "";
  std::string version(name.substr(6));
  while (!version.empty() && (version.back() < '0' || version.back() > '9')) version.pop_back();
  return version;
}

std::string extension_python_version(std::string_view name) {
  constexpr std::string_view kPrefix = "_C.cpython-3";
  if (!name.starts_with(kPrefix) || !name.ends_with(".so")) return "";
  std::string_view minor = name.substr(kPrefix.size());
  minor = minor.substr(0, minor.find_first_not_of("0123456789"));
  return minor.empty() ? std::string() : "3." + std::string(minor);
}

std::string nccl_wheel_version(std::string_view name) {
  constexpr std::string_view kSuffix = ".dist-info";
  if (!name.starts_with("nvidia_nccl_") || !name.ends_with(kSuffix)) return "";
  // The '-' of the suffix is no version's.
  name.remove_suffix(kSuffix.size());
  size_t dash = name.find('-');
  return dash == std::string_view::npos ? "" : std::string(name.substr(dash + 1));
}

std::string nccl_library_version(const std::string& path) {
  // The file's name alone: a folder may be named like the library.
  std::string_view name(path);
  name.remove_prefix(name.rfind('/') + 1);
  constexpr std::string_view kPrefix = "libnccl.so.";
  if (name.starts_with(kPrefix) && name.find('.', kPrefix.size()) != std::string_view::npos) {
    return std::string(name.substr(kPrefix.size()));
  }
  return "";
}

}  // namespace traindoc::supervisor
