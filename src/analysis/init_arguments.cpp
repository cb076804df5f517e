// What the job's code passed to init_process_group against what its launcher set: a world size
// or rank written into the code (or a config) that the launch does not match leaves the ranks
// waiting for peers that were never started, or two processes claiming one rank. Pure.
#include <algorithm>

#include "analysis/rule_context.h"
#include "common/rank_env.h"

namespace traindoc::analysis {
namespace {

constexpr size_t kCalls = 4;  // the calls cited as evidence

// The variables of the launcher that started the process, nullptr for none. Below a rank they
// are the rank's, inherited (torch.multiprocessing.spawn inside a torchrun rank, a rank's own
// subprocess with a private world): they do not count its world. A wrapper between launcher and
// rank (a shell script, `conda run`) is no rank.
const common::RankVars* launcher_vars(const RuleContext& context, const store::ProcessRecord& r) {
  const ProcessSummary* parent = context.process(r.ppid);
  if (parent != nullptr && parent->role.role == Role::kRank) return nullptr;
  for (const common::RankVars& vars : common::kRankVars) {
    if (r.rank_source == vars.source) return &vars;
  }
  return nullptr;
}

// A process torch.multiprocessing.spawn started: its index is its local rank, which the rank
// init_process_group gave ("process-group") keeps only for such a process.
bool spawned(const store::ProcessRecord& r) {
  return r.local_rank && (r.rank_source == common::RankSource::kSpawn ||
                          r.rank_source == common::RankSource::kProcessGroup);
}

bool overlap(const store::ProcessRecord& a, const store::ProcessRecord& b) {
  auto ended_before = [](const store::ProcessRecord& x, const store::ProcessRecord& y) {
    return x.end_ns != 0 && x.end_ns < y.start_ns;
  };
  return !ended_before(a, b) && !ended_before(b, a);
}

// The processes torch.multiprocessing.spawn started beside `r` (it starts them all at once; a
// later spawn's, after these ended, are another world).
int spawn_count(const RuleContext& context, const store::ProcessRecord& r) {
  return static_cast<int>(
      std::count_if(context.processes.begin(), context.processes.end(), [&](auto& q) {
        return q.record.ppid == r.ppid && spawned(q.record) && overlap(q.record, r);
      }));
}

// A value the call passed; nullopt for one it left to the launcher's variables (-1) or for no
// call seen.
std::optional<int> passed(const std::optional<int>& value) {
  return value && *value >= 0 ? value : std::nullopt;
}

std::string call_text(const ProcessSummary& p, const RuleContext& context) {
  std::optional<int> rank = passed(p.record.init_rank);
  std::optional<int> world = passed(p.record.init_world_size);
  std::string args;
  if (rank) args = "rank=" + std::to_string(*rank);
  if (world)
    args += (args.empty() ? "" : ", ") + std::string("world_size=") + std::to_string(*world);
  return context.name(p) + " called init_process_group(" + args + ")";
}

std::string ranks_text(int n) {
  return counted(n, "rank", "ranks");
}

std::string env_int(const char* variable) {
  return std::string("int(os.environ[\"") + variable + "\"])";
}

std::string launcher_fix(const common::RankVars& vars) {
  std::string pass = "rank=" + env_int(vars.rank) + " and world_size=" + env_int(vars.world_size);
  std::string how =
      vars.source == common::RankSource::kTorch
          ? "leave out rank= and world_size= (init_method env://, the default, reads RANK and "
            "WORLD_SIZE), or pass " +
                pass
          : "pass " + pass + " (env:// reads only RANK and WORLD_SIZE)";
  return "Let init_process_group take the rank and world size the launcher set: " + how +
         ". A number written in the code or a config goes stale when the GPUs or nodes change.";
}

// The world a call joins: the size it passed, else the launcher's.
std::optional<int> world_of(const store::ProcessRecord& r) {
  return passed(r.init_world_size) ? r.init_world_size : r.world_size;
}

// Whether two processes passed one rank to init_process_group for one world at the same time:
// siblings (one launcher's, one spawn's) in a world of more than one (a sweep of single-process
// jobs each has its own).
bool same_rank(const store::ProcessRecord& a, const store::ProcessRecord& b) {
  return passed(a.init_rank) && a.init_rank == b.init_rank && a.ppid == b.ppid &&
         world_of(a).value_or(0) > 1 && world_of(a) == world_of(b) && overlap(a, b);
}

// What p's own call contradicts, with the words that say it; nullopt when nothing.
std::optional<InitMismatch> contradiction(const RuleContext& context, const ProcessSummary& p) {
  const store::ProcessRecord& r = p.record;
  std::optional<int> rank = passed(r.init_rank);
  std::optional<int> world = passed(r.init_world_size);
  if (!rank && !world) return std::nullopt;
  const common::RankVars* vars = launcher_vars(context, r);
  if (vars != nullptr && r.world_size) {
    std::string set = std::string(vars->world_size) + "=" + std::to_string(*r.world_size);
    if (world && *world != *r.world_size) {
      return InitMismatch{"init_process_group was asked for a world of " + ranks_text(*world) +
                              ", but the launcher set " + set,
                          {},
                          launcher_fix(*vars)};
    }
  } else if (spawned(r) && world) {
    int started = spawn_count(context, r);
    const std::string title = "init_process_group was asked for a world of " + ranks_text(*world) +
                              ", but torch.multiprocessing.spawn started " +
                              counted(started, "process", "processes");
    const std::string one_number =
        "mp.spawn and init_process_group one number: nprocs=world_size, and as rank the index "
        "spawn passes the function";
    // More than spawn started may be right: other machines may start the rest.
    if (*world > started) {
      return InitMismatch{title + " on this machine",
                          {},
                          "If no other machine starts the other " + ranks_text(*world - started) +
                              ", give " + one_number +
                              ". If others do, check that they started, with the same "
                              "MASTER_ADDR and MASTER_PORT (or init_method)."};
    }
    if (*world > 1 && *world < started) {  // a world of one is each process's own
      return InitMismatch{title, {}, "Give " + one_number + "."};
    }
  }
  for (const ProcessSummary& q : context.processes) {
    if (&q == &p || !same_rank(q.record, r)) continue;
    return InitMismatch{
        "more than one process passed rank=" + std::to_string(*rank) + " to init_process_group",
        {},
        std::string("Give each process its own rank, never a constant: ") +
            (vars != nullptr ? env_int(vars->rank) + ", what the launcher set."
             : spawned(r)    ? "the index torch.multiprocessing.spawn passes the function (plus "
                               "the node's first rank on several nodes)."
                             : "a number its launcher gives each process it starts.")};
  }
  // torchrun's RANK is the rank to use; other launchers' ranks may be reordered by the code.
  if (vars != nullptr && vars->source == common::RankSource::kTorch && rank && r.rank &&
      *rank != *r.rank) {
    return InitMismatch{"init_process_group was given rank=" + std::to_string(*rank) +
                            ", but the launcher set RANK=" + std::to_string(*r.rank),
                        {},
                        launcher_fix(*vars)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<InitMismatch> init_mismatch(const RuleContext& context, const ProcessSummary& p) {
  std::optional<InitMismatch> out = contradiction(context, p);
  if (!out) return out;
  // The calls that show it: p's, then the others' that contradict the launch the same way (a
  // few of them, in a world of many ranks).
  out->evidence.push_back(call_text(p, context));
  size_t more = 0;
  for (const ProcessSummary& q : context.processes) {
    if (&q == &p) continue;
    std::optional<InitMismatch> other = contradiction(context, q);
    if (!other || other->title != out->title) continue;
    if (out->evidence.size() < kCalls) {
      out->evidence.push_back(call_text(q, context));
    } else {
      ++more;
    }
  }
  if (more > 0) out->evidence.push_back("... and " + std::to_string(more) + " more such calls");
  return out;
}

}  // namespace traindoc::analysis
