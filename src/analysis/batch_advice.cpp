// The batch-size advice of out-of-memory findings: facts from the run's samples, the command
// line of `traindoc fit` that confirms them, and their words. Analysis; pure.
#include "analysis/batch_advice.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include "analysis/oom_facts.h"

namespace traindoc::analysis {
namespace {

// The last batch size `p` told at or before `t_ns`.
std::optional<int64_t> told_batch(const RuleContext& context, const ProcessSummary& p,
                                  int64_t t_ns) {
  std::optional<int64_t> batch;
  for (const store::Event& e : context.evidence.events) {
    if (e.kind == store::EventKind::kBatchSize && e.pid == p.record.pid && e.a && *e.a > 0 &&
        e.t_ns >= p.record.start_ns && e.t_ns <= t_ns) {
      batch = e.a;
    }
  }
  return batch;
}

// When `p` began training: its first step record of any kind, or its first batch-size event
// where that came earlier (the hook tells it as the loader is iterated, before the first step).
std::optional<int64_t> first_step_ns(const RuleContext& context, const ProcessSummary& p) {
  std::optional<int64_t> first;
  auto earliest = [&](int64_t t_ns) {
    if (!first || t_ns < *first) first = t_ns;
  };
  for (const store::StepSample& s : context.evidence.steps) {
    if (s.pid == p.record.pid && s.start_ticks == p.record.start_ticks && s.count > 0) {
      earliest(s.t_ns);
    }
  }
  for (const store::Event& e : context.evidence.events) {
    if (e.kind == store::EventKind::kBatchSize && e.pid == p.record.pid &&
        e.t_ns >= p.record.start_ns) {
      earliest(e.t_ns);
    }
  }
  return first;
}

// A memory series of one process: its peak up to `until_ns`, and its last reading at or before
// `before_ns` (the memory before training; none where no sample came that early).
struct Series {
  std::optional<uint64_t> peak;
  std::optional<uint64_t> before;
  int64_t before_at = 0;

  void add(int64_t t_ns, uint64_t bytes, std::optional<int64_t> before_ns, int64_t until_ns) {
    if (t_ns > until_ns) return;
    peak = std::max(peak.value_or(0), bytes);
    if (before_ns && t_ns <= *before_ns && (!before || t_ns >= before_at)) {
      before = bytes;
      before_at = t_ns;
    }
  }
};

Series gpu_series(const RuleContext& context, const ProcessSummary& p, const FailureMemory& f,
                  std::optional<int64_t> first_ns) {
  Series out;
  for (const store::GpuProcessSample& s : context.evidence.gpu.process_samples) {
    if (s.pid != p.record.pid || s.start_ticks != p.record.start_ticks || !s.used_bytes ||
        (f.device && s.device != *f.device)) {
      continue;
    }
    out.add(s.t_ns, *s.used_bytes, first_ns, f.t_ns);
  }
  // The error's own count of the process's memory, between samples.
  if (f.in_use) out.peak = std::max(out.peak.value_or(0), *f.in_use);
  return out;
}

// Host memory by its RSS without the pages of mapped files where the samples have them: a
// library's pages may be charged to another cgroup (the one that read the file first), and the
// kernel drops them before it kills; what a limit holds is the rest.
Series host_series(const RuleContext& context, const ProcessSummary& p, int64_t t_ns,
                   std::optional<int64_t> first_ns, bool& without_files) {
  Series out;
  const std::vector<store::ProcSample>& samples = context.evidence.proc_samples;
  without_files = std::any_of(samples.begin(), samples.end(),
                              [](const store::ProcSample& s) { return s.rss_file.has_value(); });
  for (const store::ProcSample& s : samples) {
    if (s.pid == p.record.pid && s.start_ticks == p.record.start_ticks &&
        (s.rss_file || !without_files)) {
      out.add(s.t_ns, s.rss - std::min(s.rss, s.rss_file.value_or(0)), first_ns, t_ns);
    }
  }
  // The process's own peak, which counts what happened between samples, where it is of the
  // same measure.
  if (p.peak_rss && !without_files) out.peak = std::max(out.peak.value_or(0), *p.peak_rss);
  return out;
}

// The host memory `p` may use at `t_ns`: its memory cgroup's limit where that is below the
// machine's memory, else the machine's.
void host_capacity(const store::Evidence& evidence, const store::ProcessRecord& r, int64_t t_ns,
                   BatchFacts& facts) {
  std::optional<uint64_t> machine;
  for (const store::HostSample& s : evidence.host_samples) {
    if (s.mem_total > 0 && (s.t_ns <= t_ns || !machine)) machine = s.mem_total;
  }
  std::optional<uint64_t> limit;
  std::string whose;
  if (const store::ProcessCgroup* member = memory_cgroup_at(evidence, r, t_ns, whose)) {
    for (const store::CgroupSample& s : evidence.cgroup_samples) {
      if (s.dir == member->dir && s.max && (s.t_ns <= t_ns || !limit)) limit = s.max;
    }
  }
  bool cgroup = limit && (!machine || *limit < *machine);
  facts.memory = cgroup ? BatchMemory::kCgroup : BatchMemory::kMachine;
  facts.capacity = cgroup ? limit : machine;
}

int world_size_of(const RuleContext& context, const ProcessSummary& p) {
  if (p.record.world_size && *p.record.world_size > 0) return *p.record.world_size;
  if (p.record.init_world_size && *p.record.init_world_size > 0) {
    return *p.record.init_world_size;
  }
  int ranks = 0;
  for (const ProcessSummary& q : context.processes) ranks += q.role.role == Role::kRank ? 1 : 0;
  return std::max(ranks, 1);
}

// Where a word is: argument `arg`, bytes [at, at + size).
struct Word {
  size_t arg = 0;
  size_t at = 0;
  std::string_view text;
};

// The words of every argument: a shell's `-c` string holds several.
std::vector<Word> words_of(const std::vector<std::string>& command) {
  std::vector<Word> out;
  for (size_t arg = 0; arg < command.size(); ++arg) {
    std::string_view text = command[arg];
    size_t at = 0;
    while (at < text.size()) {
      size_t begin = text.find_first_not_of(" \t\n", at);
      if (begin == std::string_view::npos) break;
      size_t end = std::min(text.find_first_of(" \t\n", begin), text.size());
      out.push_back({arg, begin, text.substr(begin, end - begin)});
      at = end;
    }
  }
  return out;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// How well an option's name says "the training batch size": 2 for one, 1 for an evaluation
// loader's (`--eval-batch-size`), 0 for none. `-b` counts; "bs" only as a whole part of the name
// (`--train-bs`), not inside another word (`--jobs`).
int batch_name(std::string_view name) {
  bool single_dash = name.size() == 2 && name[0] == '-';
  while (!name.empty() && (name.front() == '-' || name.front() == '+')) name.remove_prefix(1);
  std::string text = lower(name);
  bool batch = text.find("batch") != std::string::npos || (single_dash && text == "b");
  std::string_view rest = text;
  bool evaluation = false;
  while (!rest.empty()) {
    size_t end = std::min(rest.find_first_of("-_."), rest.size());
    std::string_view part = rest.substr(0, end);
    batch = batch || part == "bs";
    evaluation = evaluation || part == "val" || part.starts_with("eval") ||
                 part.starts_with("valid") || part == "test" || part.starts_with("infer");
    rest.remove_prefix(std::min(rest.size(), end + 1));
  }
  if (!batch) return 0;
  return evaluation ? 1 : 2;
}

// The value of word `i` as an option's (`--batch-size=16`, `bs=16`), or of the word after it
// (`--batch-size 16`): where it is, when its name says batch size, with that name's score.
struct Candidate {
  size_t arg = 0;
  size_t at = 0;
  size_t size = 0;
  int score = 0;
};

std::optional<Candidate> candidate(const std::vector<Word>& words, size_t i,
                                   const std::string& value) {
  std::string_view word = words[i].text;
  if (size_t eq = word.find('='); eq != std::string_view::npos && eq > 0) {
    if (word.substr(eq + 1) != value) return std::nullopt;
    int score = batch_name(word.substr(0, eq));
    if (score == 0) return std::nullopt;
    return Candidate{words[i].arg, words[i].at + eq + 1, value.size(), score};
  }
  if (!word.starts_with("-") || i + 1 >= words.size() || words[i + 1].text != value) {
    return std::nullopt;
  }
  int score = batch_name(word);
  if (score == 0) return std::nullopt;
  return Candidate{words[i + 1].arg, words[i + 1].at, value.size(), score};
}

bool needs_quotes(const std::string& word) {
  if (word.empty()) return true;
  return std::any_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) == 0 &&
           std::string_view("-_./=:,+@%{}").find(c) == std::string_view::npos;
  });
}

// "12.3 GiB" of the memory a batch must fit in: "the GPU's 80.0 GiB", "its memory cgroup's
// 64.0 MiB limit", "the machine's 16.0 GiB".
std::string capacity_words(const BatchFacts& facts) {
  std::string size = format_bytes(*facts.capacity);
  switch (facts.memory) {
    case BatchMemory::kGpu:
      return "the GPU's " + size;
    case BatchMemory::kCgroup:
      return "its memory cgroup's " + size + " limit";
    case BatchMemory::kMachine:
      break;
  }
  return "the machine's " + size;
}

// "At batch 16 (its DataLoader's batch_size) it peaked at 30.0 GiB of GPU memory, 2.0 GiB
// before its first training step: about 1.8 GiB a sample."
std::string peak_words(const BatchFacts& facts) {
  std::string batch = std::to_string(facts.batch);
  if (!facts.peak) return "Its DataLoader's batch size is " + batch + ".";
  std::string out = "At batch " + batch + " (its DataLoader's batch_size) it peaked at " +
                    format_bytes(*facts.peak) +
                    (facts.memory == BatchMemory::kGpu ? " of GPU memory"
                     : facts.without_files ? " of host memory (RSS without mapped files)"
                                           : " of host memory (RSS)");
  if (std::optional<double> per_sample = facts.per_sample_bytes()) {
    out += ", " + format_bytes(*facts.before) + " before its first training step: about " +
           format_bytes(static_cast<uint64_t>(std::llround(*per_sample))) + " a sample";
  }
  return out + ".";
}

// What the estimate says of a smaller batch: the one that fits, with its accumulation; that
// none does; or that the failing batch fits by it (the samples missed the failing step's need).
std::string fitting_words(const BatchFacts& facts) {
  std::optional<double> per_sample = facts.per_sample_bytes();
  if (!per_sample || !facts.capacity) return "";
  std::string capacity = capacity_words(facts);
  if (std::optional<int64_t> smaller = facts.fitting_batch()) {
    // The fewest accumulation steps of a batch that fits, each of the smallest batch that keeps
    // the samples of an optimizer step: 16 at up to 14 a step is 2 steps of 8.
    int64_t steps = (facts.batch + *smaller - 1) / *smaller;
    int64_t each = (facts.batch + steps - 1) / steps;
    int64_t effective = facts.batch * facts.world_size;
    std::string kept = each * steps == facts.batch
                           ? "the effective batch stays " + std::to_string(effective)
                           : "the effective batch is " +
                                 std::to_string(each * steps * facts.world_size) +
                                 ", at least the " + std::to_string(effective) + " of now";
    if (facts.world_size > 1) {
      kept += " (" + std::to_string(each * steps) + " a rank on " +
              std::to_string(facts.world_size) + " ranks)";
    }
    return " By that estimate batch " + std::to_string(*smaller) + " fits in " +
           std::to_string(std::lround(kBatchHeadroom * 100)) + "% of " + capacity + ": with " +
           std::to_string(steps) + " gradient accumulation steps of batch " + std::to_string(each) +
           ", " + kept + ".";
  }
  double usable = kBatchHeadroom * static_cast<double>(*facts.capacity);
  if (static_cast<double>(*facts.before) + *per_sample > usable) {
    return " Even batch 1 does not fit in " + std::to_string(std::lround(kBatchHeadroom * 100)) +
           "% of " + capacity + " by that estimate: what the process holds before training " +
           "(the model, its optimizer state) needs less memory first.";
  }
  return " By that estimate batch " + std::to_string(facts.batch) + " fits in " + capacity +
         ": the failing step needed more than the samples saw (one large request, or growth " +
         "between samples).";
}

}  // namespace

std::optional<double> BatchFacts::per_sample_bytes() const {
  if (!peak || !before || *peak <= *before || batch <= 0) return std::nullopt;
  return static_cast<double>(*peak - *before) / static_cast<double>(batch);
}

std::optional<int64_t> BatchFacts::fitting_batch() const {
  std::optional<double> per_sample = per_sample_bytes();
  if (!per_sample || !capacity) return std::nullopt;
  double room = kBatchHeadroom * static_cast<double>(*capacity) - static_cast<double>(*before);
  if (room < *per_sample) return std::nullopt;
  auto fits = static_cast<int64_t>(std::floor(room / *per_sample));
  if (fits >= batch) return std::nullopt;
  return fits;
}

std::optional<BatchFacts> batch_facts(const RuleContext& context, const ProcessSummary& p,
                                      const FailureMemory& failure) {
  std::optional<int64_t> batch = told_batch(context, p, failure.t_ns);
  if (!batch) return std::nullopt;
  BatchFacts facts;
  facts.batch = *batch;
  facts.world_size = world_size_of(context, p);
  facts.command = context.evidence.run.command;
  std::optional<int64_t> first_ns = first_step_ns(context, p);
  Series series = failure.memory == BatchMemory::kGpu
                      ? gpu_series(context, p, failure, first_ns)
                      : host_series(context, p, failure.t_ns, first_ns, facts.without_files);
  facts.peak = series.peak;
  facts.before = series.before;
  if (failure.memory == BatchMemory::kGpu) {
    facts.memory = BatchMemory::kGpu;
    facts.capacity = failure.capacity;
  } else {
    host_capacity(context.evidence, p.record, failure.t_ns, facts);
  }
  return facts;
}

std::optional<std::vector<std::string>> with_batch_placeholder(
    const std::vector<std::string>& command, int64_t batch) {
  std::vector<Word> words = words_of(command);
  std::string value = std::to_string(batch);
  std::optional<Candidate> best;
  for (size_t i = 0; i < words.size(); ++i) {
    std::optional<Candidate> c = candidate(words, i, value);
    if (c && (!best || c->score > best->score)) best = c;
  }
  if (!best) return std::nullopt;
  std::vector<std::string> out = command;
  out[best->arg].replace(best->at, best->size, "{batch}");
  return out;
}

std::string shell_words(const std::vector<std::string>& command) {
  std::string out;
  for (const std::string& word : command) {
    if (!out.empty()) out += ' ';
    if (!needs_quotes(word)) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string batch_advice(const BatchFacts& facts) {
  std::string out = peak_words(facts) + fitting_words(facts);
  std::string fit = "traindoc fit --param batch --target-batch " +
                    std::to_string(facts.batch * facts.world_size) + " -- ";
  if (std::optional<std::vector<std::string>> command =
          with_batch_placeholder(facts.command, facts.batch)) {
    return out + " Confirm the batch that fits, with the accumulation that keeps the effective " +
           "batch: `" + fit + shell_words(*command) + "`.";
  }
  return out + " Confirm the batch that fits, with the accumulation that keeps the effective " +
         "batch: `" + fit + shell_words(facts.command) +
         "`, with `{batch}` put where the command sets the batch size (no argument of it is " +
         std::to_string(facts.batch) + ": make the script take it as an option).";
}

std::string with_batch_advice(const RuleContext& context, const ProcessSummary& p,
                              const FailureMemory& failure, std::string fix) {
  std::optional<BatchFacts> facts = batch_facts(context, p, failure);
  if (!facts || (failure.requested && facts->capacity && *failure.requested > *facts->capacity)) {
    return fix;
  }
  return fix + (fix.empty() ? "" : " ") + batch_advice(*facts);
}

}  // namespace traindoc::analysis
