// TORCHELASTIC_ERROR_FILE records. Supervisor process, main loop thread. A file is only ever
// created where there is none (link(2) of a finished temporary file fails on one that appeared),
// and only traindoc's own are written again, whole, by rename(2): torchrun never reads half one.
#include "supervisor/error_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <nlohmann/json.hpp>

#include "common/write_all.h"
#include "store/collective_words.h"
#include "supervisor/file_text.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {
namespace {

using Json = nlohmann::json;

// A record torch reads, not a log: anything larger is not one of its.
constexpr size_t kRecordMaxBytes = size_t{1} << 20;

std::string rank_words(int pid, const std::optional<int>& rank) {
  return (rank ? "rank " + std::to_string(*rank) + " (pid " : "(pid ") + std::to_string(pid) + ")";
}

// Writes `text` to a temporary file beside `path`, then puts it in place: `replace` renames it
// over traindoc's own record, otherwise it is linked only where no file exists.
bool put_file(const std::string& path, const std::string& text, bool replace) {
  std::string temporary = path + ".traindoc";
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool written = common::write_all(fd, text.data(), text.size());
  written = close(fd) == 0 && written;
  bool placed = written && (replace ? rename(temporary.c_str(), path.c_str()) == 0
                                    : link(temporary.c_str(), path.c_str()) == 0);
  int error = errno;
  if (!placed || !replace) unlink(temporary.c_str());
  errno = error;
  return placed;
}

}  // namespace

void ErrorFiles::process_seen(int pid, uint64_t start_ticks, int ppid, std::optional<int> rank,
                              const char* path, int64_t now_ns) {
  if (path == nullptr || *path == '\0') {
    m_paths.erase(pid);
    return;
  }
  m_paths[pid] = path;
  auto parent = m_paths.find(ppid);
  if (parent != m_paths.end() && parent->second == path) return;  // a worker of the rank
  auto found = m_ranks.find(pid);
  if (found != m_ranks.end() && found->second.start_ticks == start_ticks) return;
  Rank& entry = m_ranks[pid];
  entry = Rank{};
  entry.start_ticks = start_ticks;
  entry.ppid = ppid;
  entry.rank = rank;
  entry.path = path;
  entry.alive_ns = now_ns;
}

void ErrorFiles::crashed(const store::Crash& crash, const std::string& words) {
  auto found = m_ranks.find(crash.pid);
  if (found == m_ranks.end() || found->second.start_ticks != crash.start_ticks) return;
  Rank& rank = found->second;
  rank.alive_ns = std::max(rank.alive_ns, crash.time_ns);
  rank.failed_ns = crash.time_ns;
  rank.words = words;
  rank.traceback = crash.python_traceback;
}

void ErrorFiles::ended(const store::ProcessRecord& record) {
  auto found = m_ranks.find(record.pid);
  if (found == m_ranks.end() || found->second.start_ticks != record.start_ticks) return;
  Rank& rank = found->second;
  rank.live = false;
  if (record.exit_code.value_or(0) == 0 && !record.exit_signal) return;
  if (rank.failed_ns == 0) rank.failed_ns = record.end_ns;
  if (rank.words.empty()) rank.words = store::end_words({record.exit_code, record.exit_signal});
}

std::vector<std::pair<int, int>> ErrorFiles::find_zombies(int64_t now_ns) {
  std::vector<std::pair<int, int>> zombies;
  for (auto& [pid, rank] : m_ranks) {
    if (!rank.live) continue;
    std::optional<ProcStat> stat = read_proc_stat(pid);
    if (!stat || stat->starttime != rank.start_ticks) {
      rank.live = false;
    } else if (stat->state == 'Z') {
      rank.live = false;
      if (stat->exit_code) zombies.emplace_back(pid, *stat->exit_code);
    } else {
      rank.alive_ns = now_ns;
    }
    // The hook writes as the rank exits: seen before torchrun collects it.
    if (rank.owner == Owner::kNone && access(rank.path.c_str(), F_OK) == 0) adopt(pid, rank);
  }
  return zombies;
}

void ErrorFiles::adopt(int pid, Rank& rank) {
  rank.owner = Owner::kJob;
  std::string text = read_file_text(rank.path, kRecordMaxBytes);
  Json record = Json::parse(text, nullptr, false);
  if (!record.is_object() || !record.contains("traindoc")) return;
  const Json& ours = record["traindoc"];
  if (!ours.is_object() || ours.value("pid", 0) != pid) return;
  try {
    auto raised_ns = ours.at("time_ns").get<int64_t>();
    rank.ended_before = ours.at("ended_before").get<std::vector<int>>();
    rank.words = record.at("message").at("message").get<std::string>();
    // It had failed by then; when it raised, the supervisor's sightings of it alive cannot say.
    rank.failed_ns = rank.failed_ns == 0 ? raised_ns : std::min(rank.failed_ns, raised_ns);
  } catch (const Json::exception&) {
    return;  // not the hook's after all: the job's, left as it is
  }
  rank.owner = Owner::kHook;
  rank.hook_record = std::move(text);
}

int ErrorFiles::failed_before(int pid, const Rank& rank) const {
  int first = -1;
  int64_t first_ns = 0;
  for (const auto& [other, peer] : m_ranks) {
    if (other == pid || peer.ppid != rank.ppid || peer.failed_ns == 0) continue;
    // Proven first: it had ended when this rank's exception reached the top of its program, or
    // failed while this one, which no exception ended, still ran.
    bool before = std::find(rank.ended_before.begin(), rank.ended_before.end(), other) !=
                      rank.ended_before.end() ||
                  (rank.owner != Owner::kHook && peer.failed_ns < rank.alive_ns);
    if (before && (first < 0 || peer.failed_ns < first_ns)) {
      first = other;
      first_ns = peer.failed_ns;
    }
  }
  return first;
}

void ErrorFiles::write(int pid, Rank& rank, int first) {
  std::string note;
  if (first >= 0) {
    const Rank& peer = m_ranks.at(first);
    note = "traindoc: " + rank_words(first, peer.rank) + " failed before this rank (" + peer.words +
           "): look there first";
  }
  Json record;
  if (rank.owner == Owner::kHook) {
    record = Json::parse(rank.hook_record, nullptr, false);
    Json& info = record["message"]["extraInfo"];
    info["py_callstack"] = (note.empty() ? "" : note + "\n") + info.value("py_callstack", "");
  } else {
    std::string words = "traindoc: " + rank_words(pid, rank.rank) + " " + rank.words;
    record["message"]["message"] = words;
    record["message"]["extraInfo"] = {
        {"py_callstack", words + (note.empty() ? "" : "\n" + note) +
                             (rank.traceback.empty() ? "" : "\n\n" + rank.traceback)},
        {"timestamp", std::to_string(rank.failed_ns / 1'000'000'000)}};
    record["traindoc"] = {{"pid", pid}};
  }
  bool replace = rank.owner != Owner::kNone;
  if (!put_file(rank.path, record.dump(-1, ' ', false, Json::error_handler_t::replace), replace)) {
    // A file appeared meanwhile (the job's), or the folder is gone: never written again.
    if (!replace && errno == EEXIST) rank.owner = Owner::kJob;
    return;
  }
  if (!replace) rank.owner = Owner::kOurs;
  rank.named_first = first >= 0 ? std::optional<int>(first) : std::nullopt;
}

void ErrorFiles::update() {
  for (auto& [pid, rank] : m_ranks) {
    if (rank.owner == Owner::kNone && rank.failed_ns == 0) continue;
    if (rank.owner == Owner::kNone && access(rank.path.c_str(), F_OK) == 0) adopt(pid, rank);
    if (rank.owner == Owner::kJob) continue;
    int first = failed_before(pid, rank);
    std::optional<int> named = first >= 0 ? std::optional<int>(first) : std::nullopt;
    if (rank.owner != Owner::kNone && named == rank.named_first) continue;
    write(pid, rank, first);
  }
}

}  // namespace traindoc::supervisor
