// What the job's code passed to init_process_group against what its launcher set: a world size
// or rank written into the code (or a config) that the launch does not match leaves the ranks
// waiting for peers that were never started, or two processes claiming one rank. Pure.
#include <algorithm>
#include <map>

#include "analysis/rules.h"
#include "common/rank_env.h"

namespace traindoc::analysis {
namespace {

constexpr size_t kCalls = 4;  // the calls cited as evidence

// The variables the launcher that named the process set, nullptr for none (spawn, a hand-made
// launcher that sets nothing).
const common::RankVars* launcher_vars(const store::ProcessRecord& r) {
  for (const common::RankVars& vars : common::kRankVars) {
    if (r.rank_source == common::rank_source_name(vars.source)) return &vars;
  }
  return nullptr;
}

bool spawned(const store::ProcessRecord& r) {
  return r.local_rank && (r.rank_source == "spawn" || r.rank_source == "process-group");
}

// The processes torch.multiprocessing.spawn started beside `r`: spawn starts them all at once.
int spawn_count(const RuleContext& context, const store::ProcessRecord& r) {
  return static_cast<int>(
      std::count_if(context.processes.begin(), context.processes.end(),
                    [&](auto& q) { return q.record.ppid == r.ppid && spawned(q.record); }));
}

bool overlap(const store::ProcessRecord& a, const store::ProcessRecord& b) {
  auto ended_before = [](const store::ProcessRecord& x, const store::ProcessRecord& y) {
    return x.end_ns != 0 && x.end_ns < y.start_ns;
  };
  return !ended_before(a, b) && !ended_before(b, a);
}

std::string call_text(const store::ProcessRecord& r) {
  std::string args;
  if (r.init_rank) args = "rank=" + std::to_string(*r.init_rank);
  if (r.init_world_size) {
    args += (args.empty() ? "" : ", ") + std::string("world_size=") +
            std::to_string(*r.init_world_size);
  }
  return "init_process_group(" + args + ")";
}

std::string ranks_text(int n) {
  return std::to_string(n) + (n == 1 ? " rank" : " ranks");
}

}  // namespace

std::optional<InitMismatch> init_mismatch(const RuleContext& context) {
  // By what they say, most first: a world of the wrong size, one rank claimed twice, a rank other
  // than the launcher's. Each keeps the first title and every call that shows it.
  std::optional<InitMismatch> size, twice, other;
  auto add = [](std::optional<InitMismatch>& kind, std::string title, std::string fix,
                std::string call) {
    if (!kind) kind = InitMismatch{std::move(title), {}, std::move(fix)};
    kind->evidence.push_back(std::move(call));
  };
  std::map<int, const ProcessSummary*> by_rank;  // the first to pass each rank
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (!r.init_rank && !r.init_world_size) continue;
    std::string who = context.name(p) + " called " + call_text(r);
    const common::RankVars* vars = launcher_vars(r);
    if (vars != nullptr && r.world_size) {
      std::string set = std::string(vars->rank) + "=" + (r.rank ? std::to_string(*r.rank) : "?") +
                        ", " + vars->world_size + "=" + std::to_string(*r.world_size);
      std::string fix = std::string("Let init_process_group take the rank and world size the ") +
                        "launcher set: leave out rank= and world_size= (init_method env://, the " +
                        "default, reads " + vars->rank + " and " + vars->world_size +
                        ") or pass int(os.environ[\"" + vars->rank + "\"]) and " +
                        "int(os.environ[\"" + vars->world_size + "\"]). A number written in " +
                        "the code or a config goes stale when the GPUs or nodes change.";
      if (r.init_world_size && *r.init_world_size != *r.world_size) {
        add(size,
            "init_process_group was asked for a world of " + ranks_text(*r.init_world_size) +
                ", but the launcher started " + std::to_string(*r.world_size) + " (" +
                vars->world_size + "=" + std::to_string(*r.world_size) + ")",
            fix, who + ", where the launcher set " + set);
      } else if (r.init_rank && r.rank && *r.init_rank != *r.rank) {
        add(other,
            "init_process_group was given rank=" + std::to_string(*r.init_rank) +
                " where the launcher set " + vars->rank + "=" + std::to_string(*r.rank),
            fix, who + ", where the launcher set " + set);
      }
    } else if (spawned(r) && r.init_world_size) {
      int started = spawn_count(context, r);
      if (*r.init_world_size != started) {
        add(size,
            "init_process_group was asked for a world of " + ranks_text(*r.init_world_size) +
                ", but torch.multiprocessing.spawn started " + std::to_string(started) +
                (started == 1 ? " process" : " processes"),
            "Give mp.spawn and init_process_group one number: nprocs=world_size, and as rank "
            "the index spawn passes the function (plus the node's first rank on several "
            "nodes).",
            who + ", one of " + std::to_string(started) +
                " processes torch.multiprocessing.spawn started");
      }
    }
    if (!r.init_rank) continue;
    auto [first, fresh] = by_rank.emplace(*r.init_rank, &p);
    if (fresh || !overlap(first->second->record, r)) continue;
    add(twice,
        "more than one process passed rank=" + std::to_string(*r.init_rank) +
            " to init_process_group",
        "Give each process its own rank: the launcher's (int(os.environ[\"RANK\"])), or the "
        "index torch.multiprocessing.spawn passes, never a constant.",
        who + ", as " + context.name(*first->second) + " did");
  }
  std::optional<InitMismatch>& out = size ? size : twice ? twice : other;
  // A world of many ranks that all passed the same number: a few of them say it.
  if (out && out->evidence.size() > kCalls) {
    size_t more = out->evidence.size() - kCalls;
    out->evidence.resize(kCalls);
    out->evidence.push_back("... and " + std::to_string(more) + " more such calls");
  }
  return out;
}

}  // namespace traindoc::analysis
