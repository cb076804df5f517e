// Gathers the preflight checks' facts. Supervisor process, main thread.
#include "supervisor/preflight/preflight_probe.h"

#include <dirent.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/statfs.h>

#include <cstdlib>
#include <map>

#include "supervisor/file_text.h"
#include "supervisor/preflight/command_line.h"
#include "supervisor/preflight/network_probe.h"
#include "supervisor/preflight/python_files.h"
#include "supervisor/preflight/python_probe.h"
#include "supervisor/proc/host_sampler.h"

namespace traindoc::supervisor {
namespace {

constexpr const char* kShm = "/dev/shm";

store::ShmFacts probe_shm() {
  store::ShmFacts out;
  struct statfs fs {};
  if (statfs(kShm, &fs) != 0) return out;
  out.exists = true;
  out.tmpfs = fs.f_type == TMPFS_MAGIC;
  auto block = static_cast<uint64_t>(fs.f_frsize != 0 ? fs.f_frsize : fs.f_bsize);
  out.total = static_cast<uint64_t>(fs.f_blocks) * block;
  out.free = static_cast<uint64_t>(fs.f_bavail) * block;
  return out;
}

store::MemoryFacts probe_memory() {
  HostSampler host;
  store::HostSample sample = host.sample();
  store::MemoryFacts out;
  out.mem_total = sample.mem_total;
  if (sample.mem_available > 0) out.mem_available = sample.mem_available;
  out.swap_total = sample.swap_total;
  out.swap_free = sample.swap_free;
  out.cgroup_version = sample.cgroup_version;
  out.cgroup_max = sample.cgroup_max;
  out.cgroup_current = sample.cgroup_current;
  return out;
}

store::Limit limit_of(int resource) {
  rlimit limit{};
  store::Limit out;
  if (getrlimit(resource, &limit) != 0) return out;
  if (limit.rlim_cur != RLIM_INFINITY) out.soft = limit.rlim_cur;
  if (limit.rlim_max != RLIM_INFINITY) out.hard = limit.rlim_max;
  return out;
}

bool has_entries(const char* path) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return false;
  bool any = false;
  while (dirent* entry = readdir(dir)) any |= entry->d_name[0] != '.';
  closedir(dir);
  return any;
}

store::LimitFacts probe_limits() {
  store::LimitFacts out;
  out.nofile = limit_of(RLIMIT_NOFILE);
  out.memlock = limit_of(RLIMIT_MEMLOCK);
  out.stack = limit_of(RLIMIT_STACK);
  out.core = limit_of(RLIMIT_CORE);
  out.core_pattern = read_file_head("/proc/sys/kernel/core_pattern", 4096);
  while (!out.core_pattern.empty() && out.core_pattern.back() == '\n') out.core_pattern.pop_back();
  out.infiniband = has_entries("/sys/class/infiniband");
  return out;
}

// The Python that will run the command: its own interpreter, or the one of torchrun's #! line.
std::string job_python(const ParsedCommand& parsed, const std::string& path) {
  // A name without a slash is looked up in PATH, wherever the command starts.
  auto find = [&](const std::string& name) {
    return find_program(name.find('/') == std::string::npos ? name : from_here(parsed, name), path);
  };
  if (!parsed.python.empty()) return find(parsed.python);
  if (parsed.facts.launcher == store::Launcher::kTorchrun) {
    return shebang_interpreter(find(parsed.facts.program), path);
  }
  return "";
}

// The system's NCCL, where no wheel brought one: the version its library's name ends with.
std::string system_nccl() {
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                          "/usr/local/cuda/lib64"}) {
    char* resolved = realpath((std::string(dir) + "/libnccl.so.2").c_str(), nullptr);
    if (resolved == nullptr) continue;
    std::string name = resolved;
    free(resolved);  // NOLINT(cppcoreguidelines-no-malloc): realpath allocates with malloc
    if (std::string version = nccl_library_version(name); !version.empty()) return version;
  }
  return "";
}

}  // namespace

store::PreflightFacts probe_preflight(const std::vector<std::string>& command, GpuSampler& gpu) {
  store::PreflightFacts out;
  ParsedCommand parsed = parse_command(command);
  // The job's environment: traindoc's, as an `env` prefix changes it.
  auto env = [&parsed](const char* name) -> const char* {
    if (auto set = parsed.env.find(name); set != parsed.env.end()) return set->second.c_str();
    return parsed.ignore_environment || parsed.unset.contains(name) ? nullptr : getenv(name);
  };
  out.shm = probe_shm();
  out.memory = probe_memory();
  out.limits = probe_limits();
  out.nvml = gpu.preflight();
  if (const char* visible = env("CUDA_VISIBLE_DEVICES")) {
    out.cuda_visible_devices_set = true;
    out.cuda_visible_devices = visible;
  }
  out.command = parsed.facts;
  // Without PATH, execvp searches glibc's default.
  PythonLookup lookup{env("PATH") ? env("PATH") : "/bin:/usr/bin",
                      env("PYTHONPATH") ? env("PYTHONPATH") : "", env("HOME") ? env("HOME") : ""};
  if (parsed.facts.launcher == store::Launcher::kPython ||
      parsed.facts.launcher == store::Launcher::kTorchrun) {
    out.python = probe_python(job_python(parsed, lookup.path), lookup);
    if (out.python.nccl_version.empty()) out.python.nccl_version = system_nccl();
  }
  if (!parsed.facts.script.empty()) {
    std::string text = read_file_head(from_here(parsed, parsed.facts.script), 1 << 16);
    auto has = [&text](const char* word) { return text.find(word) != std::string::npos; };
    out.command.script_imports_torch = has("import torch") || has("from torch");
    out.command.script_uses_cuda = has("cuda") || has("nccl");
  }
  out.network = probe_network(out.command, env);
  return out;
}

}  // namespace traindoc::supervisor
