// Compares the ranks' collective calls as they arrive and watches for stalls: the k-th call of
// every rank of a group must agree (op, shapes, types, reduce op, root), and a rank that never
// makes the call the others wait in is named. Supervisor process, main loop thread, each tick.
// Pure logic: records, process ends and the time come in, issues and calls to store go out.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/evidence.h"
#include "supervisor/agent_reader.h"

namespace traindoc::supervisor {

struct CheckerOptions {
  int64_t stall_ns = 30'000'000'000;  // --stall-seconds
  // A rank's end is acted on this long after it is known, so that its last records (written
  // before it died) are surely read first.
  int64_t end_grace_ns = 300'000'000;
  // Uneven inputs without records: a rank that fails this soon after another exited normally.
  int64_t uneven_window_ns = 60'000'000'000;
};

// An issue and the processes to ask for their stacks before it is final.
struct FoundIssue {
  store::CollectiveIssue issue;
  std::vector<int> dump_pids;
};

class CollectiveChecker {
 public:
  explicit CollectiveChecker(CheckerOptions options = {});

  // A job process with its launcher rank (from the agent), to find a world-group rank that has
  // not made any call yet. `inherited`: the rank is its parent's, which it was forked from (a
  // DataLoader worker of that rank): the process is no rank, and is left out.
  void process_started(int pid, uint64_t start_ticks, int rank, int world_size,
                       bool inherited = false);
  void process_ended(const store::ProcessRecord& process);
  // Its Python program and atexit handlers finished (the hook): an end after that is teardown.
  void script_finished(int pid, uint64_t start_ticks);
  // Some of the job's ranks run on other machines (its launcher said so): a group rank with no
  // process here is on another machine, watched by the traindoc there, and never told missing
  // here. The world group's ranks here are compared among themselves; other groups that span
  // machines are not compared (their calls never all arrive here).
  void job_spans_machines() {
    m_spans_machines = true;
    ++m_membership_version;
  }
  // A process's training steps so far (the Python hook's counts, by kind).
  void steps_counted(int pid, store::StepKind kind, int64_t count);
  // One enter or exit record.
  void add(const AgentCollective& record);

  // What the calls added so far and the time show; each issue is returned once. `final`: the
  // job is over and every record is read, so ends need no grace.
  std::vector<FoundIssue> check(int64_t now_ns, bool final = false);

  // Calls for run.db: the first ones of every rank and group, and the recent ones of a group
  // that an issue named. `all`: at the end, everything still held.
  std::vector<store::CollectiveCall> take_calls(bool all);
  // Calls handed out by take_calls before they returned, whose return (or raise) came since.
  std::vector<store::CollectiveCall> take_late_ends();

 private:
  struct Held {
    common::CollectiveCall call{};
    int pid = 0;
    uint64_t start_ticks = 0;
    int64_t end_ns = 0;
    bool raised = false;  // the call raised: it gave up waiting
  };
  struct RankTrack {
    int pid = 0;
    uint64_t start_ticks = 0;
    uint64_t last_number = 0;  // highest entered
    uint64_t completed = 0;    // calls that returned
    std::vector<Held> first;   // the first kFirstCalls, kept for the store
    std::deque<Held> recent;   // the last kRecentCalls
    uint64_t stored_upto = 0;  // numbers up to here were handed to the store
    size_t first_stored = 0;
  };
  struct Group {
    int size = 0;
    bool pair = false;        // a point-to-point pair: group rank 0 sends, 1 receives
    bool is_default = false;  // the default group (the job's world), as the Python hook marks it
    std::vector<RankTrack> ranks;
    std::map<uint64_t, int> arrivals;  // number -> ranks that made that call
    int64_t last_activity_ns = 0;
    bool settled = false;  // an issue was reported: later calls are misaligned, stop
    bool flush = false;    // an issue named it: store its recent calls
    uint64_t first_site_divergence = 0;
    // A stall reported while every rank still ran: its laggards may yet come (a straggler).
    uint64_t stalled_number = 0;
    std::vector<int> stalled_ranks;
    // members_here(), as of m_membership_version: it is asked at every call.
    std::vector<int> here;
    uint64_t here_version = 0;
  };
  struct Process {
    uint64_t start_ticks = 0;
    int rank = -1;
    int world_size = 0;
    std::optional<store::ProcessRecord> end;
    bool finished = false;  // its program was done before it ended
    std::map<store::StepKind, int64_t> steps;
  };

  // A group's wait in its latest call (`target`), as watch() finds it step by step.
  struct GroupWait {
    uint64_t target = 0;
    std::vector<int> laggards;     // group ranks here that have not made it
    std::vector<int> arrived;      // and those that have
    const Held* waited = nullptr;  // the first arrived rank's call
    int64_t since = INT64_MAX;     // when the first rank made it
    bool someone_waits = false;    // an arrived rank still waits in it
    int64_t gave_up_ns = 0;        // when the first arrived rank gave up (or ended), or 0
    int gave_up_rank = -1;
    bool gave_up_died = false;
    bool alone = false;  // the arrived ranks' call is code that only they run
    // Why it is over, once it is.
    store::IssueKind kind = store::IssueKind::kMissing;
    store::WaitEnd end = store::WaitEnd::kNone;
    int end_rank = -1;
    int64_t peer_end_ns = 0;  // a missing rank's failed end
  };

  static int64_t gave_up_at(const Held& held);
  static int peer_named(const Group& group, int group_rank);
  static const Held* find_call(const RankTrack& rank, uint64_t number);
  static Held* find_call(RankTrack& rank, uint64_t number);
  static bool reordered(const Group& group, const std::vector<int>& members,
                        const std::vector<Held*>& calls);
  void compare(uint64_t id, Group& group, uint64_t number, int64_t now_ns,
               std::vector<FoundIssue>& out);
  // `calls` of the group ranks `members`, in that order.
  bool compare_sites(uint64_t id, Group& group, const std::vector<int>& members,
                     const std::vector<Held*>& calls, int64_t now_ns, std::vector<FoundIssue>& out);
  bool only_from(const Group& group, const std::vector<int>& ranks, const std::string& site) const;
  void watch(uint64_t id, Group& group, int64_t now_ns, std::vector<FoundIssue>& out);
  std::optional<GroupWait> wait_in(Group& group);
  bool wait_over(uint64_t id, Group& group, int64_t now_ns, GroupWait& wait,
                 std::vector<FoundIssue>& out);
  FoundIssue missing_issue(uint64_t id, Group& group, int64_t now_ns, const GroupWait& wait) const;
  bool left_short(const Group& group, const GroupWait& wait) const;
  void watch_late(uint64_t id, Group& group, int64_t now_ns, std::vector<FoundIssue>& out);
  void watch_uneven(int64_t now_ns, std::vector<FoundIssue>& out);
  bool p2p_deadlock(uint64_t id, Group& group, int64_t now_ns, std::vector<FoundIssue>& out);
  const Process* process_of(const Group& group, int group_rank) const;
  bool elsewhere(const Group& group, int group_rank) const;
  // The group ranks on this machine: all of them, unless the job spans machines.
  const std::vector<int>& members_here(Group& group) const;
  std::vector<int> job_ranks(const Group& group) const;
  int pid_of(const Group& group, int group_rank) const;
  // `names`: job_ranks(group), or empty where the caller names the rank itself.
  store::CollectiveIssueRank rank_part(const Group& group, int group_rank,
                                       const std::vector<int>& names) const;
  uint64_t calls_of(int pid) const;

  int64_t grace_ns() const { return m_final ? 0 : m_options.end_grace_ns; }

  CheckerOptions m_options;
  bool m_final = false;
  bool m_spans_machines = false;
  // Moves on whenever a group's members here may have changed: a process started, a rank's
  // first call.
  uint64_t m_membership_version = 1;
  std::unordered_map<uint64_t, Group> m_groups;
  std::map<int, Process> m_processes;                    // by pid: the latest process holding it
  std::vector<std::pair<uint64_t, uint64_t>> m_pending;  // (group, number) ready to compare
  std::vector<store::CollectiveCall> m_late_ends;
  bool m_any_issue = false;
};

}  // namespace traindoc::supervisor
