// libFuzzer target: every /proc and cgroup text parser on the same bytes (what a process, the
// kernel or a container runtime may put there). The cgroup locator takes two texts: the input
// up to its first NUL is /proc/<pid>/cgroup, the rest mountinfo.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/proc/cgroup_text.h"
#include "supervisor/proc/environ_text.h"
#include "supervisor/proc/proc_text.h"

using namespace traindoc::supervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  (void)parse_pid_name(text);
  if (std::optional<ProcStat> stat = parse_proc_stat(text)) {
    if (stat->comm.size() > text.size() || stat->num_threads < 0) abort();
  }
  (void)parse_proc_status(text);
  (void)parse_smaps_rollup(text).uss();
  (void)parse_proc_limits(text);
  (void)parse_meminfo(text);
  if (std::optional<ThreadSyscall> call = parse_thread_syscall(text)) {
    (void)call->waits_on_stdin();
    (void)call->cut_short_by_signal();
  }

  EnvironText env(text);
  for (const char* name : {"RANK", "LOCAL_RANK", "PATH", ""}) {
    if (const char* value = env.find(name)) {
      if (std::string_view(value).size() > text.size()) abort();
    }
  }
  (void)env.rank_env();
  std::vector<std::string> argv = parse_cmdline(text);
  if (!argv.empty() && argv.back().empty()) abort();  // trailing empty arguments are dropped
  (void)join_cmdline(argv);

  size_t nul = text.find('\0');
  std::string_view cgroup = text.substr(0, nul);
  std::string_view mountinfo = nul == std::string_view::npos ? text : text.substr(nul + 1);
  (void)parse_proc_cgroup(cgroup);
  (void)parse_mountinfo(mountinfo);
  for (const CgroupLocation& location : memory_cgroup_candidates(cgroup, mountinfo)) {
    if (location.version != 1 && location.version != 2) abort();
  }
  (void)join_cgroup_path("/sys/fs/cgroup", cgroup, mountinfo);
  (void)parse_cgroup_counter(text);
  (void)parse_v2_memory_max(text);
  (void)parse_v1_memory_limit(text);
  (void)parse_v2_memory_events(text);
  (void)parse_v1_oom_control(text);
  return 0;
}
