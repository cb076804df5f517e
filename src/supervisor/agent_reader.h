// Reads what the agents in the job's processes write into <run>/agent/slots.
// Supervisor process, main loop thread: creates the file before the job starts, then polls it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/layout.h"
#include "store/evidence.h"

namespace traindoc::supervisor {

struct AgentIdentity {
  int pid = 0;
  int ppid = 0;
  uint64_t start_ticks = 0;
  int64_t start_ns = 0;
  bool forked = false;
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
  int node_rank = -1;
  common::RankSource rank_source = common::RankSource::kNone;
  std::string cmdline;
};

struct AgentRecord {
  int pid = 0;  // the writer
  uint64_t start_ticks = 0;
  common::RecordType type = common::RecordType::kNone;
  int64_t time_ns = 0;
  int64_t a = 0;
  int64_t b = 0;
  std::optional<int64_t> c = {};  // for the types that have one (layout.h); none: kNoValue
};

// A crash record that became complete: its process waits until release_crash (or its timeout).
// `crash` holds what the agent wrote; the supervisor adds the map and the frames' symbols.
struct AgentCrash {
  uint32_t slot = 0;
  bool python_dumped = false;
  store::Crash crash;
};

// A process's own exit() or _exit(), from its slot: the status it passed, not yet proof that it
// is gone (a crash may still follow in what runs after).
struct AgentExit {
  int pid = 0;
  uint64_t start_ticks = 0;
  int code = 0;
  int64_t time_ns = 0;
};

// One collective record (enter or exit) of a process.
struct AgentCollective {
  int pid = 0;
  uint64_t start_ticks = 0;
  common::CollectiveCall call{};
};

struct AgentPoll {
  std::vector<AgentIdentity> identities;     // slots that became ready since the last poll
  std::vector<AgentRecord> records;          // records published since the last poll, steps aside
  std::vector<store::StepSample> steps;      // step records published since the last poll
  std::vector<AgentCrash> crashes;           // crash records completed since the last poll
  std::vector<AgentCollective> collectives;  // collective records published since the last poll
  std::vector<AgentExit> exits;              // exits written since the last poll
};

class AgentReader {
 public:
  // Creates and maps the slots file; throws std::runtime_error when it cannot. `outputs_socket`:
  // where agents hand over their output files (OutputFilesReader), empty for none.
  explicit AgentReader(const std::string& run_dir, const std::string& outputs_socket = "");
  ~AgentReader();
  AgentReader(const AgentReader&) = delete;
  AgentReader& operator=(const AgentReader&) = delete;

  // Whether a slot's process (pid, start ticks) is one of the job's. The slots file is written
  // by the job's processes, and any of them may name any pid in any slot.
  using Vouch = std::function<bool(int pid, int ppid, uint64_t start_ticks)>;

  // A slot is read only once `vouch` took its identity; until then it is asked again at each
  // poll, for a while (a process that ended at once is known only once its reaper tells), then
  // the slot is refused. What is read after is the vouched process's, whatever the slot says
  // later.
  AgentPoll poll(const Vouch& vouch);

  // Lets a crashed process go on dying: its handler waits on this (a futex across processes).
  void release_crash(uint32_t slot);

  // Removes the slots file once what it held is in run.db: its apparent size (a GiB, sparse)
  // would balloon a copy of the run folder, and it holds the processes' command lines
  // unredacted. Processes still running keep their mapping; the reader keeps its own.
  void remove_file();

  // Processes that found every slot taken, and records (of both rings) overwritten before they
  // were read.
  uint64_t processes_without_slot() const;
  uint64_t records_dropped() const { return m_records_dropped; }
  // Slots whose identity was never vouched for.
  uint64_t slots_refused() const { return m_slots_refused; }

 private:
  struct RingCursor {
    uint64_t pos = 0;       // entries consumed
    int stalled_polls = 0;  // polls spent waiting on one entry
  };
  template <typename Entry, typename Out, typename Copy>
  void drain(const Entry* entries, uint32_t capacity, uint64_t next, RingCursor& cursor,
             std::vector<Out>& out, Copy&& copy);
  // The identities of the slots that became ready, each once it is vouched for.
  void read_identities(uint32_t claimed, const Vouch& vouch, AgentPoll& out);
  // What the vouched slot `index` published since the last poll.
  void read_slot(uint32_t index, AgentPoll& out);

  void* m_base = nullptr;
  int m_fd = -1;  // kept to give each claimed slot its blocks (layout.h)
  std::string m_path;
  uint32_t m_scan_from = 0;  // every slot before it has been read as ready
  struct Owner {
    int pid = 0;
    uint64_t start_ticks = 0;
  };
  std::vector<bool> m_seen;        // per slot: identity read (vouched for, or refused)
  std::vector<Owner> m_owners;     // per slot: the vouched process; pid 0 for a refused slot
  std::vector<uint8_t> m_asked;    // per slot: polls that asked for a vouch
  std::vector<bool> m_backed;      // per slot: its blocks allocated, safe to read
  std::vector<bool> m_crash_seen;  // per slot: crash record returned
  std::vector<bool> m_exit_seen;   // per slot: exit returned
  std::vector<RingCursor> m_records;
  std::vector<RingCursor> m_collectives;
  static constexpr int kStallPolls = 10;
  // Polls (10 a second) that a slot waits for a vouch.
  static constexpr uint8_t kVouchPolls = 50;
  uint64_t m_records_dropped = 0;
  uint64_t m_slots_refused = 0;
};

}  // namespace traindoc::supervisor
