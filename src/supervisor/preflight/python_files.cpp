// What the files beside a Python interpreter say, from their text and names. Supervisor process,
// main thread.
#include "supervisor/preflight/python_files.h"

#include <algorithm>
#include <cctype>

#include "supervisor/proc/text_scan.h"

namespace traindoc::supervisor {
namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The value of `key` in pyvenv.cfg's text, as site.py's venv() reads it; "" when absent.
std::string cfg_value(const std::string& text, std::string_view key) {
  std::string value;
  std::string_view rest = text;
  while (!rest.empty()) {
    // Python reads the file in text mode: "\r\n" and "\r" end lines too.
    size_t end = rest.find_first_of("\r\n");
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(std::min(rest.size(), end == std::string_view::npos ? end : end + 1));
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    if (lowercase(text::trim(line.substr(0, eq))) == key) value = text::trim(line.substr(eq + 1));
  }
  return value;
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
  std::string system = lowercase(cfg_value(text, "include-system-site-packages"));
  out.system_site_packages = system.empty() || system == "true";
  return out;
}

Shebang parse_shebang(std::string_view head) {
  constexpr size_t kLineMax = 255;  // the kernel's BINPRM_BUF_SIZE, less its NUL
  constexpr std::string_view kSpaceTab = " \t";
  if (!head.starts_with("#!")) return {};
  std::string_view line = head.substr(0, std::min({head.find('\n'), head.find('\0'), kLineMax}));
  line.remove_prefix(std::min(line.size(), line.find_first_not_of(kSpaceTab, 2)));
  line.remove_suffix(line.size() - std::min(line.size(), line.find_last_not_of(kSpaceTab) + 1));
  size_t gap = line.find_first_of(kSpaceTab);
  if (gap == std::string_view::npos) return {std::string(line), ""};
  std::string_view argument = line.substr(gap);
  argument.remove_prefix(argument.find_first_not_of(kSpaceTab));
  return {std::string(line.substr(0, gap)), std::string(argument)};
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
