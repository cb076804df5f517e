// The signature engine: strips launcher prefixes, finds the table's entries whose needle occurs in
// a line (a substring test, before any regex), then runs their compiled patterns on a window
// around the needle and normalizes what they capture. Pure; the table is in signature_table*.cpp.
#include "analysis/signatures.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <regex>

#include "analysis/signature_table.h"

namespace traindoc::analysis {
namespace {

// Patterns run on a window around the needle, never on unbounded text: libstdc++'s regex
// recurses once per repeated character, and a line can be 4 KiB of anything.
// Even so a 2 KiB hostile token (no real text has one) takes ~0.5 MiB of stack: run matching on a
// thread of 1 MiB or more.
constexpr size_t kWindowBefore = 512;
constexpr size_t kWindowAfter = 1536;
constexpr size_t kRestMax = 512;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::optional<int64_t> to_int(std::string_view s) {
  s = trim(s);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Linux signal numbers, by strsignal() text and by name.
constexpr std::array<std::pair<std::string_view, int>, 17> kSignalTexts = {{
    {"hangup", 1},
    {"interrupt", 2},
    {"quit", 3},
    {"illegal instruction", 4},
    {"trace/breakpoint trap", 5},
    {"aborted", 6},
    {"bus error", 7},
    {"floating point exception", 8},
    {"floating-point exception", 8},
    {"killed", 9},
    {"user defined signal 1", 10},
    {"segmentation fault", 11},
    {"user defined signal 2", 12},
    {"broken pipe", 13},
    {"alarm clock", 14},
    {"terminated", 15},
    {"stack fault", 16},
}};
constexpr std::array<std::pair<std::string_view, int>, 15> kSignalNames = {{
    {"SIGHUP", 1},
    {"SIGINT", 2},
    {"SIGQUIT", 3},
    {"SIGILL", 4},
    {"SIGTRAP", 5},
    {"SIGABRT", 6},
    {"SIGBUS", 7},
    {"SIGFPE", 8},
    {"SIGKILL", 9},
    {"SIGUSR1", 10},
    {"SIGSEGV", 11},
    {"SIGUSR2", 12},
    {"SIGPIPE", 13},
    {"SIGALRM", 14},
    {"SIGTERM", 15},
}};

// "a, b", "0 1 2", "20, 10" -> "a,b", "0,1,2", "20,10".
std::string to_list(std::string_view s) {
  std::string out;
  std::string_view rest = s;
  while (!rest.empty()) {
    size_t i = 0;
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == ',')) ++i;
    rest.remove_prefix(i);
    size_t j = 0;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != ',') ++j;
    if (j == 0) break;
    if (!out.empty()) out += ',';
    out.append(rest.substr(0, j));
    rest.remove_prefix(j);
  }
  return out;
}

std::optional<std::string> convert(std::string_view raw, Conv conv) {
  switch (conv) {
    case Conv::kText: {
      std::string_view t = trim(raw);
      if (t.empty()) return std::nullopt;
      return std::string(t);
    }
    case Conv::kInt: {
      auto v = to_int(raw);
      if (!v) return std::nullopt;
      return std::to_string(*v);
    }
    case Conv::kSize: {
      auto v = parse_size(raw);
      if (!v) return std::nullopt;
      return std::to_string(*v);
    }
    case Conv::kKiB: {
      auto v = to_int(raw);
      if (!v || *v < 0) return std::nullopt;
      return std::to_string(static_cast<uint64_t>(*v) * 1024);
    }
    case Conv::kSeconds: {
      auto v = to_int(raw);
      if (!v) return std::nullopt;
      return std::to_string(*v * 1000);
    }
    case Conv::kDuration: {  // "600000ms", "60s", "2000 ms"
      std::string_view t = trim(raw);
      size_t i = 0;
      while (i < t.size() && is_digit(t[i])) ++i;
      auto v = to_int(t.substr(0, i));
      std::string_view unit = trim(t.substr(i));
      if (!v) return std::nullopt;
      if (unit == "ms") return std::to_string(*v);
      if (unit == "s") return std::to_string(*v * 1000);
      return std::nullopt;
    }
    case Conv::kSignalText: {
      std::string l = lower(trim(raw));
      for (const auto& [text, number] : kSignalTexts) {
        if (l == text) return std::to_string(number);
      }
      return std::nullopt;
    }
    case Conv::kSignalName: {
      std::string_view t = trim(raw);
      for (const auto& [name, number] : kSignalNames) {
        if (t == name) return std::to_string(number);
      }
      return std::nullopt;
    }
    case Conv::kList:
      return to_list(raw);
    case Conv::kFlag:
      return std::string("1");
    case Conv::kRest: {
      std::string_view t = trim(raw.substr(0, kRestMax));
      if (t.empty()) return std::nullopt;
      return std::string(t);
    }
  }
  return std::nullopt;
}

bool condition_holds(const Condition& c, const std::map<std::string, std::string>& fields) {
  auto it = fields.find(c.field);
  if (it == fields.end()) return false;
  switch (c.test) {
    case Test::kPresent:
      return true;
    case Test::kEquals:
      return it->second == c.arg;
    case Test::kContains:
      return it->second.find(c.arg) != std::string::npos;
    case Test::kAtLeastField: {
      auto other = fields.find(c.arg);
      if (other == fields.end()) return false;
      auto x = to_int(it->second);
      auto y = to_int(other->second);
      auto added = c.plus != nullptr ? fields.find(c.plus) : fields.end();
      std::optional<int64_t> z = added != fields.end() ? to_int(added->second) : 0;
      return x && y && z &&
             static_cast<long double>(*x) + static_cast<long double>(*z) >=
                 static_cast<long double>(*y) * c.fraction;
    }
  }
  return false;
}

bool refinement_applies(const Refinement& r, const std::map<std::string, std::string>& fields) {
  return std::all_of(r.when.begin(), r.when.end(),
                     [&](const Condition& c) { return condition_holds(c, fields); });
}

struct CompiledEntry {
  std::vector<std::regex> parts;  // one per Entry::parts
};

const std::vector<CompiledEntry>& compiled() {
  static const std::vector<CompiledEntry> compiled_entries = [] {
    std::vector<CompiledEntry> out;
    for (const Entry& e : signature_table()) {
      CompiledEntry c;
      for (const Part& p : e.parts) {
        c.parts.emplace_back(p.pattern, std::regex::ECMAScript | std::regex::optimize);
      }
      out.push_back(std::move(c));
    }
    return out;
  }();
  return compiled_entries;
}

using Iter = std::string_view::const_iterator;

void add_captures(const Part& part, const std::match_results<Iter>& m,
                  std::map<std::string, std::string>& fields, bool join) {
  for (const Capture& c : part.captures) {
    if (c.conv != Conv::kRest && c.group >= static_cast<int>(m.size())) continue;
    const std::sub_match<Iter>& sub = c.conv == Conv::kRest ? m.suffix() : m[c.group];
    if (!sub.matched) continue;
    std::string_view raw(sub.first == sub.second ? nullptr : &*sub.first,
                         static_cast<size_t>(sub.length()));
    std::optional<std::string> value = convert(raw, c.conv);
    if (!value) continue;
    auto [it, inserted] = fields.emplace(c.field, *value);
    if (!inserted && join) it->second += "," + *value;
  }
}

// Values that only make sense together: the old PyTorch OOM text gives reserved and allocated;
// the new one gives their difference, which is what fragmentation is judged by.
void derive(std::map<std::string, std::string>& fields) {
  if (fields.count("reserved_unallocated_bytes") || !fields.count("reserved_bytes") ||
      !fields.count("allocated_bytes")) {
    return;
  }
  auto reserved = to_int(fields["reserved_bytes"]);
  auto allocated = to_int(fields["allocated_bytes"]);
  if (reserved && allocated && *reserved >= *allocated) {
    fields["reserved_unallocated_bytes"] = std::to_string(*reserved - *allocated);
  }
}

bool frames_satisfy(const Entry& e, std::span<const FrameHint> frames) {
  if (e.frame_file == nullptr) return true;
  std::string_view file_suffix = e.frame_file;
  std::string_view function = e.frame_function == nullptr ? "" : e.frame_function;
  return std::any_of(frames.begin(), frames.end(), [&](const FrameHint& f) {
    return f.file.ends_with(file_suffix) && (function.empty() || f.function == function);
  });
}

std::vector<SignatureMatch> match_impl(std::string_view line,
                                       std::optional<std::span<const FrameHint>> frames) {
  std::vector<SignatureMatch> out;
  LinePrefix p = strip_launcher_prefix(line);
  std::string_view text = p.text;
  const std::vector<Entry>& table = signature_table();
  const std::vector<CompiledEntry>* regexes = nullptr;
  std::optional<ExceptionLine> exception;
  bool exception_parsed = false;

  for (size_t i = 0; i < table.size(); ++i) {
    const Entry& e = table[i];
    size_t pos = std::string_view::npos;
    for (std::string_view needle : e.needles) {
      pos = text.find(needle);
      if (pos != std::string_view::npos) break;
    }
    if (pos == std::string_view::npos) continue;
    if (e.unless != nullptr && text.find(e.unless) != std::string_view::npos) continue;
    if (e.frame_file != nullptr && (!frames || !frames_satisfy(e, *frames))) continue;

    size_t begin = pos > kWindowBefore ? pos - kWindowBefore : 0;
    size_t end = std::min(text.size(), pos + kWindowAfter);
    std::string_view window = text.substr(begin, end - begin);
    auto flags = std::regex_constants::match_default;
    if (begin > 0) flags |= std::regex_constants::match_prev_avail;
    if (end < text.size()) flags |= std::regex_constants::match_not_eol;

    if (regexes == nullptr) regexes = &compiled();
    const CompiledEntry& ce = (*regexes)[i];
    std::map<std::string, std::string> fields;
    bool ok = true;
    for (size_t k = 0; k < e.parts.size() && ok; ++k) {
      const Part& part = e.parts[k];
      const std::regex& re = ce.parts[k];
      if (part.repeat) {
        bool any = false;
        for (std::regex_iterator<Iter> it(window.begin(), window.end(), re, flags), last;
             it != last; ++it) {
          any = true;
          add_captures(part, *it, fields, /*join=*/true);
        }
        if (!any && part.required) ok = false;
        continue;
      }
      std::match_results<Iter> m;
      if (std::regex_search(window.begin(), window.end(), m, re, flags)) {
        add_captures(part, m, fields, /*join=*/false);
      } else if (part.required) {
        ok = false;
      }
    }
    if (!ok) continue;

    derive(fields);
    SignatureMatch match{e.id, e.kind, e.failure, {}};
    for (const Refinement& r : e.refine) {
      if (!refinement_applies(r, fields)) continue;
      if (r.kind) match.kind = r.kind;
      if (r.evidence_only) match.kind.reset();
      if (r.failure >= 0) match.failure = r.failure != 0;
      break;
    }
    if (!exception_parsed) {
      exception = parse_exception_line(text);
      exception_parsed = true;
    }
    if (exception && !fields.count("exception_type")) {
      fields["exception_type"] = std::string(exception->type);
    }
    if (!p.prefix.empty()) {
      fields["prefix"] = std::string(p.prefix);
      if (p.rank) fields["prefix_rank"] = std::to_string(*p.rank);
    }
    match.fields = std::move(fields);
    out.push_back(std::move(match));
  }
  return out;
}

// One launcher prefix at the start of `s`: its length and the rank it names, or 0.
// "[default0]:" "[rank1]:" "[1]:" (torchrun), "[1,0]<stderr>:" (mpirun --tag-output).
size_t prefix_length(std::string_view s, std::optional<int>& rank, bool& rank_form) {
  if (s.size() < 4 || s[0] != '[') return 0;
  size_t i = 1;
  size_t letters = i;
  while (i < s.size() && ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_')) ++i;
  std::string_view role = s.substr(letters, i - letters);
  size_t digits = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i == digits || i - digits > 6) return 0;
  int first = 0;
  std::from_chars(s.data() + digits, s.data() + i, first);
  if (i + 1 < s.size() && s[i] == ']' && s[i + 1] == ':') {
    rank = first;
    rank_form = role == "rank";
    size_t n = i + 2;
    // PyTorch 2.x writes "[rank0]: " before Python lines and "[rank0]:[W..." before C++ ones.
    if (rank_form && n < s.size() && s[n] == ' ') ++n;
    return n;
  }
  if (!role.empty() || i >= s.size() || s[i] != ',') return 0;
  size_t second_start = ++i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i == second_start || i >= s.size() || s[i] != ']') return 0;
  int second = 0;
  std::from_chars(s.data() + second_start, s.data() + i, second);
  std::string_view rest = s.substr(i + 1);
  for (std::string_view tag : {"<stdout>:", "<stderr>:", "<stddiag>:"}) {
    if (rest.starts_with(tag)) {
      rank = second;
      rank_form = true;
      return i + 1 + tag.size();
    }
  }
  return 0;
}

// PyTorch's DataLoader worker writes its "Unexpected segmentation fault" message with the
// string's terminating NUL, which then starts the next line: NULs at the start of a line (or of
// its text after the prefix) are not part of it.
std::string_view skip_nuls(std::string_view text) {
  while (!text.empty() && text.front() == '\0') text.remove_prefix(1);
  return text;
}

}  // namespace

LinePrefix strip_launcher_prefix(std::string_view line) {
  line = skip_nuls(line);
  LinePrefix out{line, {}, std::nullopt};
  size_t total = 0;
  bool have_rank_form = false;
  for (int depth = 0; depth < 4; ++depth) {
    std::optional<int> rank;
    bool rank_form = false;
    size_t n = prefix_length(line.substr(total), rank, rank_form);
    if (n == 0) break;
    // A global rank ("[rank1]:") beats a local one ("[default1]:") when both are present.
    if (!out.rank || (rank_form && !have_rank_form)) {
      out.rank = rank;
      have_rank_form = rank_form;
    }
    total += n;
  }
  out.prefix = line.substr(0, total);
  out.text = skip_nuls(line.substr(total));
  return out;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  std::string_view t = trim(text);
  size_t i = 0;
  while (i < t.size() && is_digit(t[i])) ++i;
  size_t int_digits = i;
  if (int_digits == 0 || int_digits > 20) return std::nullopt;
  std::string_view frac;
  if (i < t.size() && t[i] == '.') {
    size_t start = ++i;
    while (i < t.size() && is_digit(t[i])) ++i;
    frac = t.substr(start, i - start);
    if (frac.empty() || frac.size() > 9) return std::nullopt;
  }
  std::string_view unit = trim(t.substr(i));
  unsigned power = 0;
  if (unit == "bytes" || unit == "byte" || unit == "B") {
    power = 0;
  } else {
    static constexpr std::string_view kPrefixes = "KMGTPE";
    if (unit.empty() || unit.size() > 3) return std::nullopt;
    char p = unit[0] == 'k' ? 'K' : unit[0];
    size_t idx = kPrefixes.find(p);
    std::string_view suffix = unit.substr(1);
    if (idx == std::string_view::npos || !(suffix.empty() || suffix == "B" || suffix == "iB")) {
      return std::nullopt;
    }
    power = static_cast<unsigned>(idx) + 1;
  }
  __extension__ typedef unsigned __int128 U;  // sizes up to EiB times 10^9 before rounding
  U mantissa = 0;
  for (char c : t.substr(0, int_digits)) mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
  U scale = 1;
  for (char c : frac) {
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    scale *= 10;
  }
  U value = mantissa << (10 * power);
  U bytes = (value + scale / 2) / scale;
  if (bytes > static_cast<U>(UINT64_MAX)) return UINT64_MAX;
  return static_cast<uint64_t>(bytes);
}

std::optional<ExceptionLine> parse_exception_line(std::string_view text, bool strict) {
  size_t i = 0;
  while (i < text.size() && (is_ident_char(text[i]) || text[i] == '.')) ++i;
  if (i == 0 || text[0] == '.' || is_digit(text[0]) || text[i - 1] == '.') return std::nullopt;
  std::string_view type = text.substr(0, i);
  std::string_view message;
  if (i < text.size()) {
    if (text[i] != ':') return std::nullopt;
    if (i + 1 < text.size() && text[i + 1] != ' ') return std::nullopt;  // "http://", "a:b"
    message = trim(text.substr(i + 1));
  }
  if (strict) {
    std::string_view name = type.substr(type.rfind('.') + 1);
    // A private class ("numpy.core._exceptions._ArrayMemoryError") is still a class name.
    name.remove_prefix(std::min(name.find_first_not_of('_'), name.size()));
    static constexpr std::string_view kSuffixes[] = {"Error",     "Exception", "Exit",
                                                     "Interrupt", "Failure",   "Iteration"};
    bool named = std::any_of(std::begin(kSuffixes), std::end(kSuffixes),
                             [&](std::string_view s) { return name.ends_with(s); });
    if (!named || name.empty() || name.front() < 'A' || name.front() > 'Z') return std::nullopt;
  }
  return ExceptionLine{type, message};
}

std::vector<SignatureMatch> match_line(std::string_view line) {
  return match_impl(line, std::nullopt);
}

std::vector<SignatureMatch> match_line(std::string_view line, std::span<const FrameHint> frames) {
  return match_impl(line, frames);
}

const std::vector<SignatureInfo>& catalog() {
  static const std::vector<SignatureInfo> infos = [] {
    std::vector<SignatureInfo> out;
    for (const Entry& e : signature_table()) {
      SignatureInfo info;
      info.id = e.id;
      info.framework = e.framework;
      info.kind = e.kind;
      info.failure = e.failure;
      info.description = e.description;
      info.example = e.example;
      info.source = e.source;
      for (const Part& p : e.parts) {
        for (const Capture& c : p.captures) {
          if (std::find(info.fields.begin(), info.fields.end(), c.field) == info.fields.end()) {
            info.fields.emplace_back(c.field);
          }
        }
      }
      if (e.frame_file != nullptr) info.frame_file = e.frame_file;
      if (e.frame_function != nullptr) info.frame_function = e.frame_function;
      out.push_back(std::move(info));
    }
    return out;
  }();
  return infos;
}

const Entry* find_entry(std::string_view id) {
  static const std::map<std::string_view, const Entry*> by_id = [] {
    std::map<std::string_view, const Entry*> out;
    for (const Entry& e : signature_table()) out.emplace(e.id, &e);
    return out;
  }();
  auto it = by_id.find(id);
  return it == by_id.end() ? nullptr : it->second;
}

const SignatureInfo* find_signature(std::string_view id) {
  for (const SignatureInfo& info : catalog()) {
    if (info.id == id) return &info;
  }
  return nullptr;
}

}  // namespace traindoc::analysis
