// TORCHELASTIC_ERROR_FILE for the torchrun ranks that fail without writing it, in the format
// torch.distributed.elastic reads, so that torchrun's own summary tells traindoc's account and
// points at the first failure (docs/crashes.md). Supervisor process, main loop thread, each tick:
// torchrun reads a rank's file as soon as it collects the rank's status, every monitor interval.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "store/evidence.h"

namespace traindoc::supervisor {

class ErrorFiles {
 public:
  // A process first seen with TORCHELASTIC_ERROR_FILE `path` (nullptr: none). Watched when it is
  // the first of its line with that path: its DataLoader workers inherit the rank's.
  void process_seen(int pid, uint64_t start_ticks, int ppid, std::optional<int> rank,
                    const char* path, int64_t now_ns);
  // The agent's crash record of a process, which waits in its handler: a rank's record is written
  // at once, before torchrun can collect its status. `words`: the crash in words.
  void crashed(const store::Crash& crash, const std::string& words);
  // A process's end, as the process table learned it.
  void ended(const store::ProcessRecord& record);
  // The watched ranks that became zombies since the last call, as (pid, wait status): torchrun
  // collects them at its next look, before which their files must be there.
  std::vector<std::pair<int, int>> find_zombies(int64_t now_ns);
  // Writes the records due and adds to each that traindoc wrote the rank that had failed before.
  void update();

 private:
  enum class Owner {
    kNone,  // no file yet
    kOurs,  // the supervisor wrote it
    kHook,  // the Python hook wrote it (an exception), with the siblings already ended
    kJob,   // the job wrote it (`@record`): left as it is
  };
  struct Rank {
    uint64_t start_ticks = 0;
    int ppid = 0;
    std::optional<int> rank;
    std::string path;
    bool live = true;
    int64_t alive_ns = 0;   // the latest moment the rank was seen alive
    int64_t failed_ns = 0;  // when traindoc knew it had failed (0: not known to have)
    std::string words;      // its failure: "died of SIGSEGV: ...", "killed by SIGKILL"
    std::string traceback;  // the Python traceback of its crash record
    Owner owner = Owner::kNone;
    std::string hook_record;         // as the hook wrote it
    std::vector<int> ended_before;   // the hook's siblings already ended
    std::optional<int> named_first;  // the rank its file names as failed before it
  };
  // Reads a file that appeared: the hook's or the job's.
  void adopt(int pid, Rank& rank);
  // The rank of the same torchrun known to have failed before `pid`, the earliest; -1 if none.
  int failed_before(int pid, const Rank& rank) const;
  void write(int pid, Rank& rank, int first);

  std::map<int, Rank> m_ranks;         // by pid
  std::map<int, std::string> m_paths;  // every process's path, by pid
};

}  // namespace traindoc::supervisor
