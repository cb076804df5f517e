// FileSizeLimit: a file of this process cannot grow past a size while it lives, as on a full
// disk (writes past it fail with EFBIG; SIGXFSZ is ignored meanwhile). For tests of what
// traindoc does when its writes fail.
#pragma once

#include <signal.h>
#include <sys/resource.h>

namespace traindoc::test {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &ignore, &m_action);
    getrlimit(RLIMIT_FSIZE, &m_limit);
    rlimit small = m_limit;
    small.rlim_cur = bytes;
    m_set = setrlimit(RLIMIT_FSIZE, &small) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &m_limit);
    sigaction(SIGXFSZ, &m_action, nullptr);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

  // Whether the limit holds (a hard limit below `bytes` keeps it from being set).
  bool set() const { return m_set; }

 private:
  struct sigaction m_action {};
  rlimit m_limit{};
  bool m_set = false;
};

}  // namespace traindoc::test
