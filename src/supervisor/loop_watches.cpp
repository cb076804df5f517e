// The supervisor's main loop: its watches. Stop signals passed on to the job, idle spells, time
// limits about to run out, and the collective issues as the checker finds them. Supervisor
// process, main thread (loop.h).
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "store/collective_words.h"
#include "store/forwarded_signal.h"
#include "supervisor/collective_text.h"
#include "supervisor/loop.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {
namespace {

// How long a stop signal waits for the stacks asked for at it before it is passed on (SIGTERM
// ends a process before it can write).
constexpr int64_t kStopStacksHoldNs = 500'000'000;
// A stalled issue waits this long for the stacks it asked for.
constexpr int64_t kStackWaitNs = 1'500'000'000;
// --on-mismatch abort: SIGTERM, then SIGKILL to what is left after this.
constexpr int64_t kAbortGraceNs = 3'000'000'000;

// Who sent a signal, as the kernel told it, with its name while it is still there.
store::SignalSender sender_of(const signalfd_siginfo& info) {
  store::SignalSender sender{static_cast<int>(info.ssi_pid), info.ssi_code, {}};
  if (std::optional<ProcStat> stat = sender.pid > 0 ? read_proc_stat(sender.pid) : std::nullopt) {
    sender.name = stat->comm;
  }
  return sender;
}

}  // namespace

// Compares the ranks' collectives, finishes the issues whose stacks came in, and reports each
// the moment it is known. `final`: the job is over, nothing more will come.
void Loop::check_collectives(bool final) {
  bool killed = false;
  for (const store::ProcessRecord& ended : m_table.take_ended()) {
    m_checker.process_ended(ended);
    m_idle.process_ended(ended);
    m_error_files.ended(ended);
    killed = killed || ended.exit_signal == SIGKILL;
  }
  // At once: the OOM killer's victim leaves its cgroup, whose usage then falls away.
  if (killed) {
    sample_cgroups(common::realtime_ns(), false);
    read_kernel_log();
  }
  int64_t now = common::realtime_ns();
  for (FoundIssue& found : m_checker.check(now, final)) {
    bool missing = found.issue.kind == store::IssueKind::kMissing;
    std::string prompt = missing ? note_stdin_waits(found.dump_pids) : "";
    for (int pid : found.dump_pids) {
      DumpRequest request = request_fresh_dump(pid, false);
      for (store::CollectiveIssueRank& rank : found.issue.ranks) {
        if (rank.pid == pid && !request.spared.empty()) rank.stack = spared(pid, request.spared);
      }
    }
    // A missing rank that waits for a batch waits on its DataLoader workers: their stacks say
    // where.
    std::vector<int> workers;
    for (const store::CollectiveIssueRank& rank : found.issue.ranks) {
      if (!missing || rank.state != store::RankState::kNeverCalled || rank.end) continue;
      std::vector<int> mine = m_table.live_workers_of(rank.pid);
      workers.insert(workers.end(), mine.begin(), mine.end());
    }
    if (!workers.empty()) ask_stacks(store::EventKind::kStackAtStall, workers);
    if (!found.dump_pids.empty()) m_idle.stacks_asked();
    m_pending_issues.push_back({std::move(found), now + kStackWaitNs, std::move(prompt)});
  }
  for (auto it = m_pending_issues.begin(); it != m_pending_issues.end();) {
    bool complete = true;
    for (store::CollectiveIssueRank& rank : it->found.issue.ranks) {
      bool asked = std::find(it->found.dump_pids.begin(), it->found.dump_pids.end(), rank.pid) !=
                   it->found.dump_pids.end();
      if (!asked || !rank.stack.empty()) continue;
      if (auto stack = read_stack_dump(m_options.run_dir, rank.pid, m_symbolizer)) {
        rank.stack = *stack;
      } else {
        complete = false;
      }
    }
    if (!complete && !final && now < it->deadline_ns) {
      ++it;
      continue;
    }
    report_issue(it->found.issue, it->prompt);
    it = m_pending_issues.erase(it);
  }
  if (m_kill_at_ns != 0 && now >= m_kill_at_ns) {
    for (auto [pid, start] : m_table.live_processes()) signal_process(pid, start, SIGKILL);
    m_kill_at_ns = 0;
  }
}

// Stored and printed at once: a user watching the job learns it while the job still runs.
void Loop::report_issue(store::CollectiveIssue& issue, const std::string& prompt) {
  // Calls from different places may have paired harmlessly: a warning, no reason to end a job.
  bool abort = m_options.abort_on_issue && issue.field != store::IssueField::kSite &&
               m_kill_at_ns == 0 && !m_root_done;
  issue.aborted = abort;
  m_store.add_collective_issue(issue);
  store_calls(false);
  m_store.flush();
  if (m_options.announce) m_options.announce(store::issue_line(issue) + prompt);
  if (abort) abort_job(issue);
}

int Loop::end_job() {
  int sent = 0;
  for (auto [pid, start] : m_table.live_processes()) {
    if (signal_process(pid, start, SIGTERM)) ++sent;
  }
  m_kill_at_ns = common::realtime_ns() + kAbortGraceNs;
  return sent;
}

void Loop::end_trial(TrialWatch::Due why) {
  // The peaks up to the last step, while every process is still there to read.
  walk_and_sample(Walk::kRegular);
  store_changes();
  bool steps = why == TrialWatch::Due::kSteps;
  int64_t flat_ms = m_trial.flat_ns() / 1'000'000;
  std::string ran = steps ? "ran " + std::to_string(m_trial.steps()) + " optimizer steps"
                          : "counted no steps, and its memory stayed flat for " +
                                std::to_string(flat_ms) + " ms while it worked";
  event(store::EventKind::kTrialEnded, 0,
        "traindoc fit: the trial " + ran + "; traindoc ended it (SIGTERM to " +
            std::to_string(end_job()) + " process(es))",
        steps ? std::optional<int64_t>(m_trial.steps()) : std::nullopt,
        steps ? std::nullopt : std::optional<int64_t>(flat_ms));
}

void Loop::abort_job(const store::CollectiveIssue& issue) {
  int sent = end_job();
  event(store::EventKind::kTraindocAbort, 0,
        "--on-mismatch abort: traindoc ended the job (SIGTERM to " + std::to_string(sent) +
            " process(es)) for " + std::string(to_string(issue.kind)) + ": " +
            store::issue_line(issue));
  if (m_options.announce) {
    m_options.announce("ending the job (--on-mismatch abort) to save its remaining time");
  }
}

// Signals from a terminal reached every process of our process group already; signals sent to
// us alone (kill, a scheduler) go to every process of the job, as a terminal would have sent them.
void Loop::forward(const signalfd_siginfo& info) {
  int64_t received_ns = common::realtime_ns();
  int sig = static_cast<int>(info.ssi_signo);
  store::SignalSender from = sender_of(info);  // before the waits below: the sender may end
  read_agent();  // the processes registered since the last tick, for the stacks below
  walk_and_sample(Walk::kRegular);
  bool from_terminal = info.ssi_code == SI_KERNEL;
  if (m_stops.first_stop()) ask_stop_stacks(from_terminal);
  sig = m_stops.to_pass_on(sig);
  std::set<int> had_it;
  if (!from_terminal && sig != SIGKILL) {
    std::vector<int> catching;
    for (int pid : m_table.live_agent_pids(true)) {
      if (catches_signal(pid, sig)) catching.push_back(pid);
    }
    had_it = m_stops.had_it_already(sig, from.pid, received_ns, catching, m_table.live_pids(),
                                    [this] { read_agent(); });
  }
  pid_t our_group = getpgrp();
  int sent = 0;
  for (auto [pid, start] : m_table.live_processes()) {
    if (from_terminal && sig != SIGKILL && getpgid(pid) == our_group) continue;
    if (had_it.contains(pid)) continue;
    if (signal_process(pid, start, sig)) ++sent;
  }
  // At its arrival: the processes that had it already may have ended since.
  m_store.add_event(store::forwarded_event(
      received_ns, {sig, sent, std::move(from), static_cast<int64_t>(had_it.size())}));
  if (m_options.announce && sig == SIGKILL) {
    m_options.announce("second interrupt: killing the job");
  } else if (m_options.announce && sig == SIGINT) {
    m_options.announce("interrupt passed to the job; interrupt again to kill it");
  }
}

void Loop::ask_stop_stacks(bool from_terminal) {
  // The stacks of its programs (launcher, ranks; not their DataLoader workers).
  ask_stacks(store::EventKind::kStackAtStop, m_table.live_agent_pids(false));
  // A terminal's signal reached the job already; another waits a moment for the dumps.
  int64_t hold_until = common::realtime_ns() + kStopStacksHoldNs;
  while (!from_terminal && m_stacks.pending(store::EventKind::kStackAtStop) &&
         common::realtime_ns() < hold_until) {
    constexpr timespec kPoll{0, 10'000'000};
    nanosleep(&kPoll, nullptr);
    m_stacks.collect(common::realtime_ns(), false);
  }
}

// A prompt nobody answers (breakpoint(), input(), a login prompt) is the one wait that a user
// can end at once, and often cannot see among the ranks' output: each process of `pids` blocked
// on its standard input is recorded; the first is told as "; pid N (comm) waits ...".
std::string Loop::note_stdin_waits(const std::vector<int>& pids) {
  std::string told;
  for (int pid : pids) {
    std::optional<std::string> input = stdin_wait(pid);
    if (!input) continue;
    std::string text =
        "waits for input on its standard input" + (input->empty() ? "" : " (" + *input + ")");
    event(store::EventKind::kStdinWait, pid, text);
    if (!told.empty()) continue;
    std::optional<ProcStat> stat = read_proc_stat(pid);
    told = "; pid " + std::to_string(pid) + (stat ? " (" + stat->comm + ") " : " ") + text;
  }
  return told;
}

// A job that uses no CPU and prints nothing for --stall-seconds (idle_watch.h): said once per idle
// spell, with every process's stack (workers too); its end is recorded when the job moves again.
void Loop::watch_idle(int64_t t_ns, const IdleWatch::Work& work, uint64_t output_bytes) {
  IdleWatch::Turn turn = m_idle.walked({t_ns, work, output_bytes, m_table.size()});
  if (turn.resumed) {
    m_store.add_event({t_ns, store::EventKind::kJobResumed, 0,
                       seconds_text(t_ns - turn.since_ns) + " after the job went idle"});
  }
  if (!turn.went_idle) return;
  std::string idle = "no process used CPU or printed for " + seconds_text(t_ns - turn.since_ns);
  m_store.add_event({turn.since_ns, store::EventKind::kJobIdle, 0,
                     idle + " (told at +" + seconds_text(t_ns - m_run.start_ns) + ")"});
  // Before the stack requests, whose signals take the threads out of their waits for a moment.
  std::string prompt = note_stdin_waits(m_table.live_pids());
  ask_stacks(store::EventKind::kStackAtIdle, m_table.live_agent_pids(true));
  m_idle.stacks_asked();
  if (m_options.announce) {
    m_options.announce("the job is idle: " + idle +
                       m_idle.failure_before(turn.since_ns, m_run.start_ns) + prompt +
                       " (each process's stack goes to the report)");
  }
}

// Where a job was when its time limit ran out (a hang, most often): the stacks of the programs
// that a `timeout` is about to stop, asked for a moment before it does.
void Loop::watch_time_limits(int64_t t_ns) {
  for (int timeout : m_time_limits.due(t_ns, [this](int pid) { return m_table.is_live(pid); })) {
    std::vector<int> below;
    for (int pid : m_table.live_agent_pids(false)) {
      if (m_table.descends_from(pid, timeout)) below.push_back(pid);
    }
    ask_stacks(store::EventKind::kStackAtLimit, below);
  }
}

}  // namespace traindoc::supervisor
