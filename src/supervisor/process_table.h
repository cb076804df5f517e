// Every process of the job, merged from three sources: the /proc tree walk, the agents' slots,
// and ends (the supervisor's waitpid, a parent's reap recorded by its agent, a zombie's stat).
// Supervisor process, main loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/rank_env.h"
#include "store/evidence.h"
#include "supervisor/agent_reader.h"
#include "supervisor/proc/process_identity.h"

namespace traindoc::supervisor {

class ProcessTable {
 public:
  // A process found alive by the tree walk; `stack`: where its stack begins (ProcStat's
  // start_stack, 0 when unknown). Returns true when the caller should read its details from
  // /proc: the first time the walk finds it, and again once a fork of its parent, which shares
  // its parent's stack, has exec'd (its stack moved) with no agent to say so (a static or setuid
  // program, an environment without LD_PRELOAD, a nested traindoc's job).
  bool seen_alive(int pid, int ppid, uint64_t start_ticks, int64_t now_ns, uint64_t stack = 0);

  // What /proc says of a process, when seen_alive asks for it.
  void set_details(int pid, uint64_t start_ticks, const std::string& argv0,
                   const std::string& cmdline, const common::RankEnv& env);

  void from_agent(const AgentIdentity& identity);
  // The rank init_process_group gave the process: it replaces spawn's index and a rank from the
  // variables of an outer launcher (srun's SLURM_PROCID over torch.multiprocessing.spawn's
  // ranks), never torchrun's, which names the same rank.
  void joined_process_group(int pid, uint64_t start_ticks, int rank, int world_size);
  // The rank and world size the job's code passed to init_process_group, -1 for each it left to
  // the launcher's variables: kept beside the launcher's, which they may contradict. A later
  // call replaces both.
  void called_init_process_group(int pid, uint64_t start_ticks, int rank, int world_size);
  // init_process_group returned or raised: the process no longer waits in it for its peers.
  void left_init_process_group(int pid, uint64_t start_ticks);
  // The number a DataLoader gave the process, its worker.
  void worker_started(int pid, uint64_t start_ticks, int worker_id);
  // The index torch.multiprocessing.spawn started the process as: its local rank, and its rank
  // by convention until init_process_group replaces it; it replaces an outer launcher's rank.
  void spawned(int pid, uint64_t start_ticks, int index);

  // An end for the latest process with this pid. `status` is a wait status. A more exact source
  // replaces a less exact one (the supervisor's and the parent's waitpid over a zombie's stat).
  // `reaper`: the job process whose waitpid took the status, its parent then (0: none); it names
  // the parent of a process that lived too briefly for a walk to see it.
  void ended(int pid, int status, store::EndSource source, int64_t t_ns, int reaper = 0);

  // After a walk: live processes that were not found and have no end are gone without a trace.
  // They are marked vanished one walk later, so that a parent's reap record can still arrive.
  // `final`: the last walk of the run, after which no reap record can arrive, so whatever is
  // not alive and has no end vanished now.
  void sweep(const std::set<int>& alive, int64_t now_ns, bool final = false);

  // Every process still thought to run, by pid.
  std::vector<int> live_pids() const;
  // The same with their start times, for signals (signal_process).
  ProcessIds live_processes() const;
  // The start time of the process now holding `pid` as the table knows it; 0 when none.
  uint64_t start_of(int pid) const;
  // Those that run the agent, the processes whose stacks say where the job was; without
  // `workers`, only those started by exec (not DataLoader workers forked from a rank).
  std::vector<int> live_agent_pids(bool workers) const;
  // Live DataLoader workers (the hook told their number) that `pid` started, however: forked
  // from it, or exec'd by spawn or a forkserver below it.
  std::vector<int> live_workers_of(int pid) const;
  bool is_live(int pid) const;
  // Whether the table holds a process under `pid`, alive or ended.
  bool knows(int pid) const { return m_live.contains(pid); }
  // Whether the table itself knows the process (pid, start_ticks) as the job's: a walk found
  // it, or it ended before any sighting and the supervisor or a parent in the job reaped it.
  bool vouches_for(int pid, uint64_t start_ticks) const;
  // Whether the process called init_process_group and has not returned from it (Python hook).
  bool in_init_process_group(int pid) const;
  // Whether `ancestor` is the parent of `pid`, or its parent's, and so on.
  bool descends_from(int pid, int ancestor) const;

  // Records changed since the last call, for the store.
  std::vector<store::ProcessRecord> take_changed();
  // Every record is changed again: the store dropped what it was given (a full disk).
  void mark_all_changed();

  // Processes whose end became known since the last call (each once), for the live checks.
  std::vector<store::ProcessRecord> take_ended();

  size_t size() const { return m_records.size(); }

 private:
  struct Entry {
    store::ProcessRecord record;
    bool changed = true;
    int missing_walks = 0;
    bool walked = false;
    bool in_init_process_group = false;  // called it, not returned yet
    uint64_t stack = 0;                  // start_stack at the last walk
    bool from_fork = false;              // runs the program its parent ran: forked, no exec seen
    bool exec_seen = false;              // the walk saw it run a program of its own
  };
  // The process exec'd: what was known of the program it ran is not of the new one.
  static void forget_program(Entry& entry);
  Entry* live_entry(int pid);
  // The record of the process holding `pid` with `start_ticks`, known alive at `seen_ns` (a
  // walk's time, an agent's registration; 0: unknown), made when there is none.
  Entry& entry_for(int pid, uint64_t start_ticks, int64_t seen_ns);
  // A rank the Python hook told, kept if no nearer source named the process already.
  void take_rank(int pid, uint64_t start_ticks, common::RankSource source, int rank,
                 std::optional<int> world_size);

  std::vector<Entry> m_records;
  std::vector<size_t> m_newly_ended;  // indexes into m_records
  std::map<int, size_t> m_live;       // pid -> index of the process now holding that pid
};

}  // namespace traindoc::supervisor
