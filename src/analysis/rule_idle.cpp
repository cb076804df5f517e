// Rule: the job sat idle, no process using CPU or printing, for --stall-seconds (the
// supervisor's idle watch): job-idle, with where each process was then. Pure.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string_view>

#include "analysis/rules.h"
#include "analysis/signature_words.h"
#include "common/layout.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

// A stop is logged as it arrives; a job signalled with traindoc (its process group) may move a
// moment before.
constexpr int64_t kStopSlackNs = 1'000'000'000;

bool trained_since(const RuleContext& context, int64_t t_ns) {
  return std::any_of(
      context.processes.begin(), context.processes.end(),
      [&](const ProcessSummary& p) { return p.trained_after_ns.value_or(0) > t_ns; });
}

// The stall watch tells a hang in a collective itself, with the same stacks and the call.
bool collective_hang(const RuleContext& context, int64_t from_ns, int64_t to_ns) {
  for (const store::CollectiveIssue& issue : context.evidence.collective_issues) {
    if (issue.t_ns >= from_ns && issue.first_ns <= to_ns) return true;
  }
  return false;
}

bool c10d_frame(const std::string& frame) {
  return frame.find("/torch/distributed/distributed_c10d.py\"") != std::string::npos;
}

// Whether the dump's process waits in init_process_group itself (not in new_group's barrier).
bool in_init_process_group(const std::string& dump) {
  if (dump.starts_with(common::kStackSpared)) return dump.ends_with(common::kStackSparedInInit);
  std::vector<std::string> frames = main_thread_frames(dump);
  return std::any_of(frames.begin(), frames.end(), [](const std::string& frame) {
    return c10d_frame(frame) && frame.ends_with(" in init_process_group");
  });
}

// A process that waits for its peers to start: the launcher at its rendezvous for the other
// nodes, or a rank in init_process_group for the other ranks. "" for any other wait.
std::string joining(const std::string& dump) {
  constexpr const char* kInit = "waits in init_process_group for the other ranks to join";
  if (dump.starts_with(common::kStackSpared)) return in_init_process_group(dump) ? kInit : "";
  for (const std::string& frame : main_thread_frames(dump)) {
    if (frame.find("/torch/distributed/elastic/rendezvous/") != std::string::npos) {
      return "waits at its rendezvous for the other nodes to join";
    }
    if (frame.find("/torch/distributed/rendezvous.py\"") != std::string::npos ||
        (c10d_frame(frame) && (frame.ends_with(" in init_process_group") ||
                               frame.ends_with(" in _store_based_barrier")))) {
      return kInit;
    }
  }
  return "";
}

// The process whose wait in a collective timed out as the spell ended (gloo's or NCCL's timeout
// in one the stall watch did not see, as DDP's own): the job did not come out of the wait, it
// gave up on it, and what it waited for is the cause. nullptr when none. (A rendezvous's and a
// DataLoader's timeouts have findings of their own that name what was waited for.)
const ProcessSummary* gave_up(const RuleContext& context, int64_t from_ns, int64_t at_ns) {
  for (const ProcessSummary& p : context.processes) {
    const PythonTraceback* tb =
        ended_in_failure(p.record) ? context.texts.final_exception(p) : nullptr;
    if (tb == nullptr || tb->t_ns < from_ns || tb->t_ns > store::shifted_ns(at_ns, kStopSlackNs)) {
      continue;
    }
    if (gave_up_waiting(context, p)) return &p;
  }
  return nullptr;
}

constexpr const char* kIdleFix =
    "A job that uses no CPU and prints nothing is waiting: on a lock or a queue that nothing "
    "will fill (a DataLoader worker deadlocked after fork by OpenCV or OpenMP threads of its "
    "parent: cv2.setNumThreads(0), or the spawn start method), on storage or the network, on "
    "input, or on a rank or node that never came. The stacks say where each process waits.";

// A spell of idleness and what followed it, up to the next spell: its end, the stacks asked for
// when it was told, the prompts nobody answered, and the first stop request during it.
struct Spell {
  const store::Event* idle = nullptr;
  const store::Event* resumed = nullptr;
  std::vector<const store::Event*> stacks;
  std::vector<const store::Event*> prompts;
  std::optional<StopRequest> stop;
};

Spell read_spell(const RuleContext& context, size_t i) {
  const std::vector<store::Event>& events = context.evidence.events;
  Spell spell;
  spell.idle = &events[i];
  for (size_t j = i + 1; j < events.size() && events[j].kind != store::EventKind::kJobIdle; ++j) {
    if (events[j].kind == store::EventKind::kJobResumed && spell.resumed == nullptr)
      spell.resumed = &events[j];
    if (events[j].kind == store::EventKind::kStackAtIdle) spell.stacks.push_back(&events[j]);
    if (events[j].kind == store::EventKind::kStdinWait) spell.prompts.push_back(&events[j]);
  }
  for (const StopRequest& request : stop_requests(context)) {
    if (request.t_ns >= spell.idle->t_ns) {
      spell.stop = request;
      break;
    }
  }
  // Moving as it was stopped (the traceback of a KeyboardInterrupt, a handler's goodbye, a
  // checkpoint saved on the way out) is no recovery from the hang; a job that went on after a
  // stop it handled (it trained again, or ended well) came out of its pause.
  if (spell.resumed != nullptr && spell.stop &&
      store::shifted_ns(spell.resumed->t_ns, kStopSlackNs) >= spell.stop->t_ns &&
      !run_finished(context) && !trained_since(context, spell.stop->t_ns)) {
    spell.resumed = nullptr;
  }
  if (spell.resumed != nullptr) spell.stop.reset();
  return spell;
}

// ", 3.0 s later", where the two times tell how much later.
std::string later(int64_t from_ns, int64_t to_ns) {
  std::optional<int64_t> ns = store::duration_ns(from_ns, to_ns);
  return ns ? ", " + format_seconds(*ns) + " later" : "";
}

// The finding's severity and title: a pause the job came out of, or ended well after, is worth
// knowing; one it never left before it failed is a hang; one it never left until it was stopped
// is why it was stopped (its user gave up on it, a scheduler's time limit ran out): the root
// cause.
void tell_spell(const RuleContext& context, const Spell& spell, const ProcessSummary* timed_out,
                Finding& f) {
  const store::Event& idle = *spell.idle;
  const store::Event* resumed = spell.resumed;
  const store::RunInfo& run = context.evidence.run;
  f.severity = spell.stop.has_value() || timed_out != nullptr ? Severity::kError
               : resumed == nullptr && !run_finished(context) ? Severity::kWarning
                                                              : Severity::kInfo;
  if (timed_out != nullptr) {
    f.title = "the job hung" + context.when(idle.t_ns) + " until " + context.name(*timed_out) +
              " gave up waiting" + later(idle.t_ns, resumed->t_ns);
    // Named, so that a launcher's restart that recovered the job tells it recovered.
    f.pids.push_back(timed_out->record.pid);
    add_ranks(f.ranks, context.ranks_of(*timed_out));
  } else if (resumed != nullptr) {
    std::optional<int64_t> paused_ns = store::duration_ns(idle.t_ns, resumed->t_ns);
    f.title = "the job paused" + context.when(idle.t_ns);
    if (paused_ns) f.title += " for " + format_seconds(*paused_ns);
  } else if (spell.stop.has_value()) {
    f.title = "the job hung" + context.when(idle.t_ns) +
              " and did not move again until it was stopped" + later(idle.t_ns, spell.stop->t_ns);
  } else {
    f.title = "the job went idle" + context.when(idle.t_ns) + " and did not move again";
    if (run.end_ns > idle.t_ns) f.title += " before it ended" + later(idle.t_ns, run.end_ns);
  }
}

// What the stacks of the spell say the processes waited for.
struct Waits {
  std::string join;                            // the first process waiting for its peers to start
  std::vector<const ProcessSummary*> joiners;  // those waiting in init_process_group
  std::string stuck;     // the first process whose innermost frame is the user's own code
  std::string fetching;  // the first rank waiting for a batch, and the workers making it
};

// Reads the stacks, and cites where each process was in `f`.
Waits read_waits(const RuleContext& context, const std::vector<const store::Event*>& stacks,
                 Finding& f) {
  Waits out;
  // Workers in the middle of a sample that their rank waits for, with their dumps.
  Fetchers fetchers;
  std::map<int, std::string> dumps;
  for (const store::Event* e : stacks) dumps.emplace(e->pid, e->text);
  for (const store::Event* e : stacks) {
    const ProcessSummary* p = context.process(e->pid);
    if (p == nullptr) continue;
    std::string waits = joining(e->text);
    if (!waits.empty() && out.join.empty()) out.join = context.name(*p) + " " + waits;
    if (in_init_process_group(e->text)) out.joiners.push_back(p);
    std::string own = stuck_in_user_code(e->text);
    if (!own.empty() && out.stuck.empty()) out.stuck = context.name(*p) + " is at " + own;
    const ProcessSummary* rank = rank_above(context, *p);
    auto rank_dump = rank != nullptr ? dumps.find(rank->record.pid) : dumps.end();
    if (rank_dump != dumps.end() && fetching_for_rank(*p, e->text, rank_dump->second)) {
      fetchers.emplace_back(p, e->text);
    }
    // The launcher only watches its ranks, once it has started them.
    if (p->role.role == Role::kLauncher && waits.empty()) continue;
    std::string where = where_it_was(context, *p, e->text);
    if (where.empty()) continue;
    f.evidence.push_back(where);
    if (std::find(f.pids.begin(), f.pids.end(), p->record.pid) == f.pids.end()) {
      f.pids.push_back(p->record.pid);
    }
    add_ranks(f.ranks, context.ranks_of(*p));
  }
  // The first such rank, with its own workers.
  const ProcessSummary* waiting =
      fetchers.empty() ? nullptr : rank_above(context, *fetchers.front().first);
  std::erase_if(fetchers,
                [&](const auto& worker) { return rank_above(context, *worker.first) != waiting; });
  if (waiting != nullptr)
    out.fetching = context.name(*waiting) + " " + batch_wait(context, fetchers);
  return out;
}

}  // namespace

void rule_idle(const RuleContext& context, std::vector<TimedFinding>& out) {
  const std::vector<store::Event>& events = context.evidence.events;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind != store::EventKind::kJobIdle) continue;
    Spell spell = read_spell(context, i);
    const store::Event& idle = *spell.idle;
    int64_t end_ns = spell.resumed != nullptr ? spell.resumed->t_ns : INT64_MAX;
    if (collective_hang(context, idle.t_ns, end_ns)) continue;
    const ProcessSummary* timed_out =
        spell.resumed != nullptr ? gave_up(context, idle.t_ns, spell.resumed->t_ns) : nullptr;
    Finding f;
    f.kind = FindingKind::kJobIdle;
    tell_spell(context, spell, timed_out, f);
    f.evidence.push_back(idle.text);
    const std::vector<const store::Event*>& prompts = spell.prompts;
    for (const store::Event* e : prompts) {
      const ProcessSummary* p = context.process(e->pid);
      std::string who = p != nullptr ? context.name(*p) : "pid " + std::to_string(e->pid);
      if (e == prompts.front()) f.title += ": " + who + " " + e->text;
      f.evidence.push_back(who + " " + e->text);
      f.pids.push_back(e->pid);
      if (p != nullptr) add_ranks(f.ranks, context.ranks_of(*p));
    }
    Waits waits = read_waits(context, spell.stacks, f);
    std::sort(f.ranks.begin(), f.ranks.end());
    if (prompts.empty()) {
      std::string quiet = "no process used CPU or printed anything";
      f.title += ": " + (!waits.join.empty()       ? waits.join
                         : !waits.fetching.empty() ? quiet + "; " + waits.fetching
                         : !waits.stuck.empty()    ? quiet + "; " + waits.stuck
                                                   : quiet);
    }
    f.fix = !prompts.empty()          ? kPromptFix
            : !waits.join.empty()     ? words::kJoinFix
            : !waits.fetching.empty() ? kWorkerStuckFix
                                      : kIdleFix;
    // A rank that waits for a world the launch does not match waits for ranks never started.
    std::optional<InitMismatch> mismatch;
    for (size_t k = 0; prompts.empty() && !mismatch && k < waits.joiners.size(); ++k) {
      mismatch = init_mismatch(context, *waits.joiners[k]);
    }
    if (mismatch) {
      f.title += "; " + mismatch->title;
      f.evidence.insert(f.evidence.end(), mismatch->evidence.begin(), mismatch->evidence.end());
      f.fix = mismatch->fix;
    }
    f.confidence = prompts.empty() && waits.join.empty() ? 0.7 : 0.9;
    out.push_back({std::move(f), idle.t_ns, 0});
  }
}

}  // namespace traindoc::analysis
