// DiskReserve: space held in the run folder from the start of a run, given back when run.db can
// no longer be written (a disk that the job or anyone else filled), so that the run's end, its
// exit status and the note of what is missing still reach run.db. Supervisor process, main thread.
#pragma once

#include <cstdint>
#include <string>

namespace traindoc::supervisor {

class DiskReserve {
 public:
  // Holds up to `bytes` in `path` (less where the disk has less free); nothing where it cannot.
  DiskReserve(std::string path, uint64_t bytes);
  ~DiskReserve();
  DiskReserve(const DiskReserve&) = delete;
  DiskReserve& operator=(const DiskReserve&) = delete;

  // Gives the space back: the file is removed. Safe to call again.
  void release();

 private:
  std::string m_path;
  uint64_t m_held = 0;
};

}  // namespace traindoc::supervisor
