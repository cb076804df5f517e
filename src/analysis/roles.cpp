// Role assignment over the process tree. Pure.
// Ranks come from the innermost launcher's variables (torchrun's RANK under srun or mpirun);
// a job without any is a single training process, called rank 0.
#include "analysis/roles.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include "analysis/diagnosis.h"
#include "analysis/file_name.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

using common::RankSource;

constexpr int kNone = -1;
// Spawn starts its processes one after another at once.
constexpr int64_t kSpawnBurstNs = 1'000'000'000;

// Whether `up` started before `child`. A child known only by its end (its reaper's record; no
// walk saw it, start ticks 0) started before that end.
bool started_before(const store::ProcessRecord& up, const store::ProcessRecord& child) {
  if (child.start_ticks != 0) return up.start_ticks <= child.start_ticks;
  return up.start_ns <= (child.end_ns != 0 ? child.end_ns : child.start_ns);
}

// A damaged or planted run.db may link processes in a circle (each the other's parent, started in
// the same clock tick, which a parent and its child may share): the link that closes a circle is
// cut, so that every walk up ends. One pass: 1 marks the path walked now, 2 what is done.
void cut_circles(std::vector<int>& parent) {
  std::vector<uint8_t> state(parent.size(), 0);
  std::vector<size_t> path;
  for (size_t i = 0; i < parent.size(); ++i) {
    path.clear();
    for (size_t at = i; state[at] == 0;) {
      state[at] = 1;
      path.push_back(at);
      if (parent[at] == kNone) break;
      auto up = static_cast<size_t>(parent[at]);
      if (state[up] == 1) {
        parent[at] = kNone;
        break;
      }
      at = up;
    }
    for (size_t walked : path) state[walked] = 2;
  }
}

// Parent index of each process: the latest process with the parent's pid that started first.
std::vector<int> parent_links(const std::vector<store::ProcessRecord>& procs) {
  std::vector<int> parent(procs.size(), kNone);
  for (size_t i = 0; i < procs.size(); ++i) {
    for (size_t j = 0; j < procs.size(); ++j) {
      if (i == j || procs[j].pid != procs[i].ppid) continue;
      if (!started_before(procs[j], procs[i])) continue;
      if (parent[i] == kNone ||
          procs[j].start_ticks >= procs[static_cast<size_t>(parent[i])].start_ticks) {
        parent[i] = static_cast<int>(j);
      }
    }
  }
  cut_circles(parent);
  return parent;
}

// A worker of a rank: a fork of it, or a Python process that multiprocessing started (spawn,
// forkserver). A program the rank runs (git, a shell command, a compiler) is not its worker.
// Without the agent, whether a process forked or exec'd is unknown: Python or the rank's own
// command line counts.
bool is_worker_of(const store::ProcessRecord& proc, const store::ProcessRecord& rank) {
  // multiprocessing's own servers do none of the rank's work, and numbering them would shift
  // the workers' numbers from those their DataLoader prints. The forkserver's forks, as the agent
  // tells them, are workers.
  bool fork = proc.agent && proc.forked;
  for (std::string_view server :
       {"multiprocessing.resource_tracker", "multiprocessing.forkserver"}) {
    if (!fork && proc.cmdline.find(server) != std::string::npos) return false;
  }
  if (proc.cmdline.find("multiprocessing") != std::string::npos) return true;
  if (proc.agent) return proc.forked;
  return is_python(proc) || proc.cmdline == rank.cmdline;
}

// The number torch.multiprocessing.spawn gave each process it started that was stopped before
// it learnt it (while it imported the main script): its place in start order, where the numbers
// its siblings learnt agree with theirs (spawn starts them in order) and are their ranks, and
// it started with them (not a process the parent started for other work after, or a later
// call's).
std::vector<std::optional<int>> spawn_places(const std::vector<store::ProcessRecord>& procs,
                                             const std::vector<int>& parent) {
  std::map<int, std::vector<size_t>> children;  // by parent, in start order
  for (size_t i = 0; i < procs.size(); ++i) {
    if (parent[i] != kNone && procs[i].cmdline.find("multiprocessing.spawn") != std::string::npos) {
      children[parent[i]].push_back(i);
    }
  }
  std::vector<std::optional<int>> places(procs.size());
  // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
  for (auto& family : children) {
    std::vector<size_t>& kids = family.second;
    std::sort(kids.begin(), kids.end(), [&](size_t a, size_t b) {
      return std::tie(procs[a].start_ticks, procs[a].pid) <
             std::tie(procs[b].start_ticks, procs[b].pid);
    });
    bool known = false;
    bool agree = true;
    for (size_t k = 0; k < kids.size(); ++k) {
      const store::ProcessRecord& kid = procs[kids[k]];
      if (kid.rank_source == RankSource::kNone) continue;
      known = true;
      agree = agree && kid.local_rank == static_cast<int>(k) && kid.rank == kid.local_rank;
    }
    if (!known || !agree) continue;
    auto with_known = [&](const store::ProcessRecord& kid) {
      return std::any_of(kids.begin(), kids.end(), [&](size_t j) {
        return procs[j].rank_source != RankSource::kNone &&
               store::distance_ns(procs[j].start_ns, kid.start_ns) <= kSpawnBurstNs;
      });
    };
    for (size_t k = 0; k < kids.size(); ++k) {
      const store::ProcessRecord& kid = procs[kids[k]];
      if (kid.rank_source == RankSource::kNone && with_known(kid))
        places[kids[k]] = static_cast<int>(k);
    }
  }
  return places;
}

// A launcher by its command line, for a job whose launcher failed before it started any rank.
bool is_launcher_command(const store::ProcessRecord& proc) {
  static constexpr std::string_view kModules[] = {"torch.distributed.run",
                                                  "torch.distributed.launch"};
  static constexpr std::string_view kPrograms[] = {"torchrun", "mpirun",    "mpiexec",
                                                   "srun",     "deepspeed", "accelerate"};
  const auto first_word = [](std::string_view text) { return text.substr(0, text.find(' ')); };
  // `python -m torch.distributed.run`, or `python3 -u /usr/bin/torchrun` (the script is the
  // launcher); not a wrapper whose arguments name one (`timeout 600 torchrun ...`).
  const PythonMain main = python_main(proc);
  std::string_view program = file_name(first_word(proc.cmdline));
  if (main.kind == PythonMain::Kind::kModule) {
    program = first_word(main.from);
    return std::find(std::begin(kModules), std::end(kModules), program) != std::end(kModules);
  }
  if (main.kind == PythonMain::Kind::kScript) program = file_name(first_word(main.from));
  return std::find(std::begin(kPrograms), std::end(kPrograms), program) != std::end(kPrograms);
}

}  // namespace

bool is_python(const store::ProcessRecord& proc) {
  std::string path =
      proc.argv0.empty() ? proc.cmdline.substr(0, proc.cmdline.find(' ')) : proc.argv0;
  std::string_view program = file_name(path);
  if (!program.starts_with("python")) return false;
  return std::all_of(program.begin() + 6, program.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

PythonMain python_main(const store::ProcessRecord& proc) {
  if (!is_python(proc)) return {};
  std::string_view args = proc.cmdline;
  bool value_next = true;  // the interpreter itself, then an option's value (-W ignore)
  while (!args.empty()) {
    size_t end = std::min(args.find(' '), args.size());
    std::string_view arg = args.substr(0, end);
    std::string_view from_here = args;
    args.remove_prefix(std::min(end + 1, args.size()));
    if (std::exchange(value_next, false) || arg.empty()) continue;
    if (!arg.starts_with('-')) return {PythonMain::Kind::kScript, from_here};
    if (arg.starts_with("--")) {
      value_next = arg == "--check-hash-based-pycs";
      continue;
    }
    // One-letter options, alone or together (-u, -uB, -uc): -c and -m end them, the module in
    // the same argument or the next (-mtorch.distributed.run); -W and -X take the rest of the
    // argument, or the next one, as their value.
    for (size_t i = 1; i < arg.size(); ++i) {
      if (arg[i] == 'c') return {PythonMain::Kind::kCode, {}};
      if (arg[i] == 'm') {
        return {PythonMain::Kind::kModule, i + 1 < arg.size() ? from_here.substr(i + 1) : args};
      }
      if (arg[i] == 'W' || arg[i] == 'X') {
        value_next = i + 1 == arg.size();
        break;
      }
    }
  }
  return {};
}

const char* to_string(Role role) {
  switch (role) {
    case Role::kLauncher:
      return "launcher";
    case Role::kRank:
      return "rank";
    case Role::kWorker:
      return "worker";
    case Role::kOther:
      break;
  }
  return "other";
}

std::string describe(const ProcessRole& role) {
  std::string rank = role.rank ? std::to_string(*role.rank) : "?";
  switch (role.role) {
    case Role::kRank:
      return "rank " + rank;
    case Role::kWorker:
      return "worker " + (role.worker ? std::to_string(*role.worker) : std::string("?")) +
             " of rank " + rank;
    case Role::kOther:
      if (role.rank) return "program of rank " + rank;
      break;
    default:
      break;
  }
  return to_string(role.role);
}

namespace {

// The rank each process carries: the innermost launcher's variables, the lowest source present
// (torch before mpi before slurm). A rank that init_process_group gave where torchrun set none
// (ranks that torch.multiprocessing.spawn started) comes before the outer launchers', and so
// does spawn's index, which names the ranks that never got as far as init_process_group.
struct RankReader {
  const std::vector<store::ProcessRecord>& procs;
  RankSource source = RankSource::kNone;
  std::vector<std::optional<int>> places;  // spawn's index, where it names ranks

  std::optional<int> operator()(size_t i) const {
    RankSource own = procs[i].rank_source;
    if (places[i] && (source == RankSource::kSpawn || source == RankSource::kProcessGroup)) {
      return places[i];
    }
    if (source == RankSource::kNone ||
        (own != source && !(source == RankSource::kProcessGroup && own == RankSource::kSpawn))) {
      return std::nullopt;
    }
    return procs[i].rank;
  }
};

// Spawn's index alone names ranks only once one of them failed: processes spawned for other
// work (a preprocessing pool) stay workers of the process that trains.
RankReader read_ranks(const std::vector<store::ProcessRecord>& procs,
                      const std::vector<int>& parent) {
  RankReader out{procs, RankSource::kNone, std::vector<std::optional<int>>(procs.size())};
  auto failed_spawn = [](const store::ProcessRecord& p) {
    return p.rank_source == RankSource::kSpawn && failed_itself(p);
  };
  bool spawn_ranks = std::any_of(procs.begin(), procs.end(), failed_spawn);
  for (RankSource name : {RankSource::kTorch, RankSource::kProcessGroup, RankSource::kSpawn,
                          RankSource::kOpenMpi, RankSource::kPmi, RankSource::kSlurm}) {
    if (name == RankSource::kSpawn && !spawn_ranks) continue;
    if (std::any_of(procs.begin(), procs.end(),
                    [&](const auto& p) { return p.rank_source == name && p.rank.has_value(); })) {
      out.source = name;
      break;
    }
  }
  if (spawn_ranks) out.places = spawn_places(procs, parent);
  return out;
}

// Rank processes: the topmost process carrying each rank. A shell or wrapper that carries the
// rank (sbatch sets SLURM_PROCID for the whole script) hands it down to the first Python process
// below it with the same rank: that one trains.
std::vector<bool> rank_processes(const std::vector<store::ProcessRecord>& procs,
                                 const std::vector<int>& parent, const RankReader& rank_of) {
  std::vector<bool> is_rank(procs.size(), false);
  for (size_t i = 0; i < procs.size(); ++i) {
    std::optional<int> rank = rank_of(i);
    if (!rank) continue;
    int up = parent[i];
    is_rank[i] = up == kNone || rank_of(static_cast<size_t>(up)) != rank;
  }
  for (size_t i = 0; i < procs.size(); ++i) {
    if (is_rank[i] || !is_python(procs[i]) || !rank_of(i)) continue;
    for (int up = parent[i]; up != kNone; up = parent[static_cast<size_t>(up)]) {
      auto above = static_cast<size_t>(up);
      if (is_python(procs[above]) || rank_of(above) != rank_of(i)) break;
      if (is_rank[above]) {
        is_rank[above] = false;
        is_rank[i] = true;
        break;
      }
    }
  }
  return is_rank;
}

// The single training process of a job without ranks: a topmost Python process that is no
// launcher. Of several (a script that checks its environment with one, then trains with
// another), the one that failed where the job failed (not one a stop signal ended), else the one
// that ran longest to its end, else the first. None when there is no such process.
std::optional<size_t> training_process(const std::vector<store::ProcessRecord>& procs,
                                       const std::vector<int>& parent, int root_pid) {
  bool job_failed = std::any_of(procs.begin(), procs.end(), [&](const auto& p) {
    return p.pid == root_pid && ended_in_failure(p);
  });
  auto failed = [&](const store::ProcessRecord& p) { return job_failed && failed_itself(p); };
  auto ran_ns = [](const store::ProcessRecord& p) {
    return p.end_ns == 0 ? int64_t{0} : store::elapsed_ns(p.start_ns, p.end_ns);
  };
  auto below_python = [&](size_t i) {
    for (int up = parent[i]; up != kNone; up = parent[static_cast<size_t>(up)]) {
      if (is_python(procs[static_cast<size_t>(up)])) return true;
    }
    return false;
  };
  auto trains_rather = [&](const store::ProcessRecord& a, const store::ProcessRecord& b) {
    if (failed(a) != failed(b)) return failed(a);
    if (ran_ns(a) != ran_ns(b)) return ran_ns(a) > ran_ns(b);
    return a.start_ticks < b.start_ticks;
  };
  std::optional<size_t> main;
  for (size_t i = 0; i < procs.size(); ++i) {
    if (!is_python(procs[i]) || is_launcher_command(procs[i])) continue;
    if (!below_python(i) && (!main || trains_rather(procs[i], procs[*main]))) main = i;
  }
  return main;
}

// The launcher started last, the innermost; none when no process is one.
std::optional<size_t> innermost_launcher(const std::vector<store::ProcessRecord>& procs) {
  std::optional<size_t> launcher;
  for (size_t i = 0; i < procs.size(); ++i) {
    if (is_launcher_command(procs[i]) &&
        (!launcher || procs[i].start_ticks > procs[*launcher].start_ticks)) {
      launcher = i;
    }
  }
  return launcher;
}

// The job's root process; none when it is not in the tree.
std::optional<size_t> root_process(const std::vector<store::ProcessRecord>& procs, int root_pid) {
  std::optional<size_t> root;
  for (size_t i = 0; i < procs.size(); ++i) {
    if (procs[i].pid == root_pid) root = i;
  }
  return root;
}

// Roles below and above the rank processes, in start order, so that worker numbers follow the
// order in which a rank started them: the ranks, the launchers above them, and below each the
// DataLoader workers of the nearest rank and the programs it runs (other).
void name_ranks_and_workers(const std::vector<store::ProcessRecord>& procs,
                            const std::vector<int>& parent, const std::vector<bool>& is_rank,
                            const RankReader& rank_of, std::vector<ProcessRole>& roles) {
  std::vector<size_t> order(procs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const store::ProcessRecord& x = procs[a];
    const store::ProcessRecord& y = procs[b];
    return std::tie(x.start_ticks, x.start_ns, x.pid) < std::tie(y.start_ticks, y.start_ns, y.pid);
  });

  // Each rank's workers so far. A worker gets the number its DataLoader gave it (the Python
  // hook's record), else the lowest number that none of its rank's workers alive at its start
  // holds, as PyTorch numbers a DataLoader's: a new epoch's workers are 0, 1 again once the last
  // epoch's ended (two DataLoaders alive at once count on in one sequence).
  std::vector<std::vector<size_t>> workers_of(procs.size());
  auto free_number = [&](size_t owner, const store::ProcessRecord& worker) {
    std::vector<bool> taken(workers_of[owner].size() + 1, false);
    for (size_t w : workers_of[owner]) {
      const store::ProcessRecord& other = procs[w];
      auto number = static_cast<size_t>(*roles[w].worker);
      if ((other.end_ns == 0 || other.end_ns > worker.start_ns) && number < taken.size()) {
        taken[number] = true;
      }
    }
    return static_cast<int>(std::find(taken.begin(), taken.end(), false) - taken.begin());
  };
  for (size_t i : order) {
    if (is_rank[i]) {
      roles[i].role = Role::kRank;
      roles[i].rank = rank_of(i).value_or(0);
      roles[i].local_rank = procs[i].local_rank ? procs[i].local_rank : roles[i].rank;
      roles[i].node_rank = procs[i].node_rank;
      for (int up = parent[i]; up != kNone; up = parent[static_cast<size_t>(up)]) {
        if (!is_rank[static_cast<size_t>(up)])
          roles[static_cast<size_t>(up)].role = Role::kLauncher;
      }
      continue;
    }
    for (int up = parent[i]; up != kNone; up = parent[static_cast<size_t>(up)]) {
      auto owner = static_cast<size_t>(up);
      if (!is_rank[owner]) continue;
      roles[i].rank = roles[owner].rank ? roles[owner].rank : rank_of(owner).value_or(0);
      roles[i].local_rank = roles[owner].local_rank;
      roles[i].node_rank = roles[owner].node_rank;
      if (is_worker_of(procs[i], procs[owner])) {
        roles[i].role = Role::kWorker;
        roles[i].worker = procs[i].worker_id ? *procs[i].worker_id : free_number(owner, procs[i]);
        workers_of[owner].push_back(i);
      }
      break;
    }
  }
}

}  // namespace

std::vector<ProcessRole> assign_roles(const std::vector<store::ProcessRecord>& procs,
                                      int root_pid) {
  std::vector<ProcessRole> roles(procs.size());
  std::vector<int> parent = parent_links(procs);
  RankReader rank_of = read_ranks(procs, parent);
  std::vector<bool> is_rank = rank_processes(procs, parent, rank_of);
  if (std::none_of(is_rank.begin(), is_rank.end(), [](bool b) { return b; })) {
    std::optional<size_t> main = training_process(procs, parent, root_pid);
    if (!main) {
      // A launcher that never started a rank: the innermost, and what runs it (a wrapper such
      // as `timeout`, a shell).
      if (std::optional<size_t> launcher = innermost_launcher(procs)) {
        for (int up = static_cast<int>(*launcher); up != kNone;
             up = parent[static_cast<size_t>(up)]) {
          roles[static_cast<size_t>(up)].role = Role::kLauncher;
        }
        return roles;
      }
      main = root_process(procs, root_pid);
    }
    if (!main) return roles;
    is_rank[*main] = true;
  }
  name_ranks_and_workers(procs, parent, is_rank, rank_of, roles);
  return roles;
}

}  // namespace traindoc::analysis
