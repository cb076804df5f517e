// Python traceback parsing over kept log lines: a small state machine per (stream, launcher
// prefix), so that ranks writing to one stream through torchrun --tee stay apart, with gaps in
// line numbers (lines the log tap did not keep) marking tracebacks incomplete. Pure.
#include "analysis/traceback.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>

#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

constexpr std::string_view kHeader = "Traceback (most recent call last):";
constexpr std::string_view kOriginalHeader = "Original Traceback (most recent call last):";
constexpr std::string_view kCauseMarker =
    "The above exception was the direct cause of the following exception:";
constexpr std::string_view kContextMarker =
    "During handling of the above exception, another exception occurred:";
// Python writes a traceback in one go; a longer pause means the next line is something else.
constexpr int64_t kMessagePauseNs = 200'000'000;
// Tracebacks taken for printed at once (consecutive headers), at most: a worker pool's.
constexpr int kMaxParallel = 64;

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// TensorFlow's op errors: this first line, then blank lines between the node's definition
// ("Detected at node ... defined at") and the op's own message ("Received a label value ...").
constexpr std::string_view kTensorFlowGraphError = "Graph execution error:";

bool indented(std::string_view s) {
  return !s.empty() && (s.front() == ' ' || s.front() == '\t');
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// `  File "x.py", line 12, in f` (also without ", in f", as SyntaxError prints it).
std::optional<PythonFrame> parse_frame(std::string_view text) {
  if (!indented(text)) return std::nullopt;
  std::string_view t = rtrim(ltrim(text));
  if (!t.starts_with("File \"")) return std::nullopt;
  t.remove_prefix(6);
  size_t end = t.find("\", line ");
  PythonFrame f;
  if (end == std::string_view::npos) {
    if (!t.ends_with("\"")) return std::nullopt;
    f.file = std::string(t.substr(0, t.size() - 1));
    return f;
  }
  f.file = std::string(t.substr(0, end));
  t.remove_prefix(end + 8);
  size_t i = 0;
  while (i < t.size() && is_digit(t[i])) ++i;
  std::from_chars(t.data(), t.data() + i, f.line);
  t.remove_prefix(i);
  if (t.starts_with(", in ")) f.function = std::string(t.substr(5));
  return f;
}

// A carets/tildes line under a frame's code (Python 3.11+), "[Previous line repeated N more
// times]": nothing to keep.
bool is_decoration(std::string_view text) {
  std::string_view t = ltrim(text);
  if (t.starts_with("[Previous line repeated")) return true;
  return !t.empty() && t.find_first_not_of("^~ ") == std::string_view::npos;
}

// A logging record that follows a traceback on the same stream (torchrun's agent, glog-style
// C++ logs): it ends the exception's message.
bool is_log_record(std::string_view t) {
  return log_record_level(t) != LogLevel::kNone;
}

// Lines that no exception message holds: another writer's, after the message ended.
bool ends_message(std::string_view t) {
  // libstdc++'s terminate handler, as a program that raised aborts in its teardown; a warning
  // printed as the interpreter shuts down (multiprocessing's resource tracker); a CUDA kernel's
  // assertion, which the CUDA runtime may print only as the process exits.
  return is_log_record(t) || t.starts_with("terminate called ") || is_python_warning(t) ||
         (t.find(": block: [") != std::string_view::npos &&
          t.find("] Assertion `") != std::string_view::npos);
}

// torch.multiprocessing.spawn's "-- Process 1 terminated with the following error:", which its
// parent prints before the traceback of the process it started as number 1.
std::optional<int> spawned_process(std::string_view t) {
  constexpr std::string_view kHead = "-- Process ";
  constexpr std::string_view kTail = " terminated with the following error:";
  if (!t.starts_with(kHead) || !t.ends_with(kTail)) return std::nullopt;
  std::string_view number = t.substr(kHead.size(), t.size() - kHead.size() - kTail.size());
  int value = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error != std::errc() || end != number.data() + number.size()) return std::nullopt;
  return value;
}

// threading's "Exception in thread prefetch:" (3.10+: "Exception in thread Thread-1 (load):"),
// printed before the traceback of an exception that ended a thread, also glued to a progress
// bar's last redraw. nullopt for other lines.
std::optional<std::string> thread_name(std::string_view t) {
  constexpr std::string_view kHead = "Exception in thread ";
  size_t head = t.rfind(kHead);
  if (head == std::string_view::npos || !t.ends_with(":")) return std::nullopt;
  std::string_view name = t.substr(head + kHead.size(), t.size() - head - kHead.size() - 1);
  if (name.empty()) return std::nullopt;
  return std::string(name);
}

// "Traceback (most recent call last):", alone or glued to output that did not end its line (a
// progress bar's last redraw); not a DataLoader's "Original Traceback" nor torchrun's summary
// field "traceback : Traceback (most recent call last):".
bool is_header_line(std::string_view t) {
  if (!t.ends_with(kHeader) || t.ends_with(kOriginalHeader)) return false;
  std::string_view before = rtrim(t.substr(0, t.size() - kHeader.size()));
  return !before.ends_with(" :");
}

// CPython's dump of an exception it could not finish printing (another exception came while it
// wrote the traceback: a DataLoader's SIGCHLD handler raising), after which it prints
// "lost sys.stderr": "object type name: EOFError", "object repr     : EOFError()"; its first
// line, "object address  : 0x...", glued to what was being written. The field and its value.
struct ObjectDumpLine {
  std::string_view field;  // "address", "refcount", "type", "type name", "repr"
  std::string_view value;
};

constexpr std::string_view kLostStderr = "lost sys.stderr";

std::optional<ObjectDumpLine> object_dump_line(std::string_view t) {
  constexpr std::string_view kAddress = "object address  : ";
  if (size_t glued = t.find(kAddress); glued != std::string_view::npos) {
    return ObjectDumpLine{"address", t.substr(glued + kAddress.size())};
  }
  if (!t.starts_with("object ")) return std::nullopt;
  size_t colon = t.find(": ");
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view field = rtrim(t.substr(7, colon - 7));
  if (field != "refcount" && field != "type" && field != "type name" && field != "repr") {
    return std::nullopt;
  }
  return ObjectDumpLine{field, t.substr(colon + 2)};
}

// The message of an exception's repr, its one string argument unquoted ("KeyError('label')"
// gives "label", "EOFError()" gives ""); several arguments stay as written.
std::string repr_message(std::string_view repr, std::string_view type) {
  size_t dot = type.rfind('.');
  std::string_view name = type.substr(dot == std::string_view::npos ? 0 : dot + 1);
  if (!repr.starts_with(name) || !repr.ends_with(")") || repr.size() < name.size() + 2) {
    return std::string(repr);
  }
  std::string_view args = repr.substr(name.size() + 1, repr.size() - name.size() - 2);
  if (args.size() < 2 || (args.front() != '\'' && args.front() != '"') ||
      args.back() != args.front()) {
    return std::string(args);
  }
  std::string out;
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] == '\\' && i + 2 < args.size()) {
      char next = args[++i];
      out += next == 'n' ? '\n' : next;
    } else {
      out += args[i];
    }
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<PythonTraceback>& out) : m_out(out) {}

  void feed(const store::LogLine& line) {
    uint64_t& prev = m_prev_number[line.stream];
    if (prev != 0 && line.number > prev + 1) gap(line.stream);
    m_after_gap = line.number > prev + 1;
    prev = std::max(prev, line.number);

    LinePrefix p = strip_launcher_prefix(line.text);
    // torchrun's --tee copies each rank's file a line at a time, and a line its rank had not
    // finished writing goes out as far as it was read, then the rest after its prefix again:
    // "[default1]:Parameter at index 1 has been mar[default1]:ked as ready twice". The prefix
    // within the line is that split, not the rank's words.
    store::LogLine joined;
    const store::LogLine* read = &line;
    if (!p.prefix.empty() && p.text.find(p.prefix) != std::string_view::npos) {
      joined = line;
      joined.text = p.prefix;
      for (std::string_view rest = p.text; !rest.empty();) {
        size_t at = rest.find(p.prefix);
        joined.text += rest.substr(0, at);
        rest =
            at == std::string_view::npos ? std::string_view() : rest.substr(at + p.prefix.size());
      }
      read = &joined;
      p = strip_launcher_prefix(joined.text);
    }
    Track& track = m_tracks[{read->stream, std::string(p.prefix)}];
    if (track.state != State::kIdle &&
        store::elapsed_ns(track.last_t, read->t_ns) > kMessagePauseNs) {
      close(track, track.state == State::kFrames);
    }
    track.last_t = read->t_ns;
    process(track, *read, p);
  }

  void finish() {
    for (auto& [key, track] : m_tracks) {
      if (track.state != State::kIdle) close(track, track.state == State::kFrames);
    }
  }

 private:
  enum class State { kIdle, kFrames, kMessage };
  enum class Link { kNone, kCause, kContext };

  struct Track {
    State state = State::kIdle;
    size_t current = 0;  // index in m_out while not idle
    std::optional<size_t> last_closed;
    Link pending = Link::kNone;
    std::optional<int> spawned;  // the line before was mp.spawn's "-- Process N terminated ..."
    std::string thread;          // the line before was "Exception in thread NAME:"
    // Headers that came right after this traceback's own: other processes printing theirs at the
    // same moment, whose lines interleave with its lines and go on after its exception.
    int parallel = 0;
    bool after_frame = false;  // the previous line was a frame: its code may follow
    int64_t last_t = 0;
    std::vector<std::string> message;           // the exception line's message, then more lines
    std::vector<store::LogLine> message_lines;  // the same, for an embedded traceback
  };

  void gap(const std::string& stream) {
    for (auto& [key, track] : m_tracks) {
      if (key.first != stream) continue;
      if (track.state == State::kFrames) m_out[track.current].incomplete = true;
      // A message never spans a gap: its lines are written at once and kept together.
      if (track.state == State::kMessage) close(track, false);
    }
  }

  PythonTraceback& start(Track& track, const store::LogLine& line, const LinePrefix& p) {
    PythonTraceback tb;
    tb.first_line = line.number;
    tb.last_line = line.number;
    tb.t_ns = tb.start_t_ns = line.t_ns;
    tb.stream = line.stream;
    tb.prefix = std::string(p.prefix);
    tb.prefix_rank = p.rank;
    if (track.last_closed && track.pending == Link::kCause) tb.cause = track.last_closed;
    if (track.last_closed && track.pending == Link::kContext) tb.context = track.last_closed;
    tb.spawned_process = track.spawned;
    track.spawned.reset();
    tb.thread = std::exchange(track.thread, {});
    // Python names the thread once, before the first traceback of a chain.
    if (std::optional<size_t> link = tb.cause ? tb.cause : tb.context) {
      if (tb.thread.empty()) tb.thread = m_out[*link].thread;
    }
    track.last_closed.reset();
    track.pending = Link::kNone;
    track.state = State::kFrames;
    track.after_frame = false;
    track.message.clear();
    track.message_lines.clear();
    track.current = m_out.size();
    m_out.push_back(std::move(tb));
    return m_out.back();
  }

  void touch(Track& track, const store::LogLine& line) {
    PythonTraceback& tb = m_out[track.current];
    tb.last_line = std::max(tb.last_line, line.number);
    tb.t_ns = std::max(tb.t_ns, line.t_ns);
  }

  void close(Track& track, bool cut) {
    size_t index = track.current;
    if (cut) m_out[index].incomplete = true;
    while (!track.message.empty() && track.message.back().empty()) track.message.pop_back();
    std::string message;
    for (size_t i = 0; i < track.message.size(); ++i) {
      if (i > 0) message += '\n';
      message += track.message[i];
    }
    m_out[index].message = std::move(message);
    track.state = State::kIdle;
    track.last_closed = index;
    track.pending = Link::kNone;
    track.parallel = 0;
    parse_original(index, track.message_lines);
    track.message.clear();
    track.message_lines.clear();
  }

  // "Caught KeyError in DataLoader worker process 0.\nOriginal Traceback (most recent call
  // last):\n  File ...\nKeyError: 'label'": the worker's own traceback, as its own entry.
  void parse_original(size_t index, const std::vector<store::LogLine>& lines) {
    auto it = std::find_if(lines.begin(), lines.end(), [](const store::LogLine& l) {
      return rtrim(l.text) == kOriginalHeader;
    });
    if (it == lines.end()) return;
    std::vector<store::LogLine> inner(it, lines.end());
    inner.front().text = std::string(kHeader);
    std::vector<PythonTraceback> found;
    Parser parser(found);
    for (const store::LogLine& l : inner) parser.feed(l);
    parser.finish();
    if (found.empty()) return;
    size_t base = m_out.size();
    for (PythonTraceback& tb : found) {
      tb.embedded = true;
      tb.prefix = m_out[index].prefix;
      tb.prefix_rank = m_out[index].prefix_rank;
      for (auto* link : {&tb.cause, &tb.context, &tb.original}) {
        if (*link) **link += base;
      }
      m_out.push_back(std::move(tb));
    }
    m_out[index].original = m_out.size() - 1;
  }

  // A line as the states below tell it apart.
  struct Shape {
    std::string_view text;  // without trailing blanks
    bool header = false;    // "Traceback (most recent call last):"
    bool cause = false;     // "The above exception was the direct cause ..."
    bool context = false;   // "During handling of the above exception, ..."
  };

  void process(Track& track, const store::LogLine& line, const LinePrefix& p) {
    std::string_view text = rtrim(p.text);
    Shape shape{text, is_header_line(text), text == kCauseMarker, text == kContextMarker};
    if (track.state == State::kMessage && in_message(track, line, p, shape)) return;
    if (track.state == State::kFrames && in_frames(track, line, shape)) return;
    in_idle(track, line, p, shape);
  }

  // A line after the exception line: more of its message, or what ends it. True when the line
  // belongs to the message; else the states after this one read it.
  bool in_message(Track& track, const store::LogLine& line, const LinePrefix& p,
                  const Shape& shape) {
    std::string_view text = shape.text;
    if (track.parallel > 0 && indented(text)) {
      // A frame, its code or its carets after the exception: the next traceback printed at
      // the same moment, without the header it shared with this one.
      int parallel = track.parallel - 1;
      close(track, false);
      start(track, line, p);
      track.parallel = parallel;
      return false;
    }
    if (text.empty() && !track.message.empty() && track.message.front() == kTensorFlowGraphError) {
      track.message.emplace_back();
      return true;
    }
    if (text.empty() || shape.header || shape.cause || shape.context || ends_message(text) ||
        spawned_process(text) || thread_name(text)) {
      close(track, false);
      return false;
    }
    track.message.emplace_back(text);
    store::LogLine copy = line;
    copy.text = std::string(text);
    track.message_lines.push_back(std::move(copy));
    touch(track, line);
    return true;
  }

  // A line among the frames: a frame, its code, a header printed for parallel tracebacks, or
  // the exception line that ends them. False when the line cut the traceback short, for the
  // idle state to read.
  bool in_frames(Track& track, const store::LogLine& line, const Shape& shape) {
    std::string_view text = shape.text;
    if (shape.header && m_out[track.current].frames.empty() && track.parallel < kMaxParallel) {
      ++track.parallel;
      touch(track, line);
      return true;
    }
    if (std::optional<ObjectDumpLine> dump = object_dump_line(text)) {
      PythonTraceback& tb = m_out[track.current];
      if (dump->field == "type name") tb.exception_type = std::string(dump->value);
      if (dump->field == "repr") track.message = {repr_message(dump->value, tb.exception_type)};
      touch(track, line);
      return true;
    }
    if (text == kLostStderr) {
      touch(track, line);
      close(track, true);
      return true;
    }
    if (std::optional<PythonFrame> frame = parse_frame(text)) {
      frame->log_line = line.number;
      m_out[track.current].frames.push_back(std::move(*frame));
      track.after_frame = true;
      touch(track, line);
      return true;
    }
    if (indented(text) || text.empty()) {
      std::vector<PythonFrame>& frames = m_out[track.current].frames;
      if (track.after_frame && !frames.empty() && frames.back().code.empty() &&
          !is_decoration(text) && !text.empty()) {
        frames.back().code = std::string(ltrim(text));
      }
      track.after_frame = false;
      if (!text.empty()) touch(track, line);
      return true;
    }
    // Another process's line, written between two of this traceback's (a DataLoader worker's
    // "ERROR: Unexpected segmentation fault ..." as the rank prints the traceback of its end):
    // the traceback goes on after it.
    if (ends_message(text)) return true;
    std::optional<ExceptionLine> exception;
    if (!shape.header && !shape.cause && !shape.context) {
      exception = parse_exception_line(text, /*strict=*/false);
    }
    if (!exception) {
      close(track, true);  // cut before its exception line; the line is something else
      return false;
    }
    PythonTraceback& tb = m_out[track.current];
    tb.exception_type = std::string(exception->type);
    track.message.clear();
    track.message.emplace_back(exception->message);
    track.state = State::kMessage;
    touch(track, line);
    return true;
  }

  // A line outside any traceback: a header, what names the next one's process or thread, a
  // chain's marker, or a frame or an exception line without the header before it.
  void in_idle(Track& track, const store::LogLine& line, const LinePrefix& p, const Shape& shape) {
    std::string_view text = shape.text;
    if (shape.header) {
      start(track, line, p);
      return;
    }
    track.spawned = spawned_process(text);
    if (track.spawned) return;
    std::optional<std::string> thread = thread_name(text);
    track.thread = thread.value_or("");
    if (thread) return;
    if (shape.cause || shape.context) {
      track.pending =
          track.last_closed ? (shape.cause ? Link::kCause : Link::kContext) : Link::kNone;
      return;
    }
    if (text.empty()) return;
    if (std::optional<PythonFrame> frame = parse_frame(text)) {
      // A traceback seen from its middle: its header was not kept, or there was none (a
      // SyntaxError raised while compiling the script prints its place alone).
      track.last_closed.reset();
      track.pending = Link::kNone;
      PythonTraceback& tb = start(track, line, p);
      tb.incomplete = m_after_gap;
      frame->log_line = line.number;
      tb.frames.push_back(std::move(*frame));
      track.after_frame = true;
      return;
    }
    // An exception line without its traceback (its frames were not kept, or the program
    // printed only the exception): a traceback of the exception alone. Warnings are not
    // exceptions that end anything.
    if (std::optional<ExceptionLine> exception = parse_exception_line(text, /*strict=*/true);
        exception && !exception->type.ends_with("Warning")) {
      PythonTraceback& tb = start(track, line, p);
      tb.incomplete = m_after_gap;
      tb.exception_type = std::string(exception->type);
      track.message.emplace_back(exception->message);
      track.state = State::kMessage;
      return;
    }
    track.last_closed.reset();
    track.pending = Link::kNone;
  }

  std::vector<PythonTraceback>& m_out;
  std::map<std::pair<std::string, std::string>, Track> m_tracks;
  std::map<std::string, uint64_t> m_prev_number;
  bool m_after_gap = false;  // lines of its stream before the current one were not kept
};

}  // namespace

LogLevel log_record_level(std::string_view t) {
  auto level_of = [](char c) {
    switch (c) {
      case 'E':
        return LogLevel::kError;
      case 'F':
        return LogLevel::kFatal;
      case 'W':
        return LogLevel::kWarning;
      case 'I':
        return LogLevel::kInfo;
      default:
        return LogLevel::kNone;
    }
  };
  // Python's logging.basicConfig: "WARNING:root:..."; a level and a space, as C++ libraries and
  // formats like "%(levelname)s: %(message)s" write it ("ERROR: Unexpected segmentation fault
  // encountered in worker."): no exception is named in capitals.
  constexpr std::pair<std::string_view, LogLevel> kPythonLevels[] = {
      {"ERROR:", LogLevel::kError},
      {"WARNING:", LogLevel::kWarning},
      {"INFO:", LogLevel::kInfo},
      {"DEBUG:", LogLevel::kDebug},
      {"CRITICAL:", LogLevel::kFatal}};
  for (auto [name, level] : kPythonLevels) {
    if (t.starts_with(name) && t.size() > name.size()) return level;
  }
  // "E0709 17:05:38.123 ..." (PyTorch 2.x), "W20261126 04:43:28.576334 ..." (1.13's glog),
  // "[E709 17:05:38 ...]", "[W ProcessGroupNCCL.cpp:..]"
  if (t.size() > 10 && level_of(t[0]) != LogLevel::kNone) {
    size_t date = std::find_if_not(t.begin() + 1, t.end(), is_digit) - t.begin() - 1;
    if ((date == 4 || date == 8) && t[date + 1] == ' ' && is_digit(t[date + 2])) {
      return level_of(t[0]);
    }
  }
  if (t.size() > 3 && t[0] == '[' && (t[2] == ' ' || is_digit(t[2]))) return level_of(t[1]);
  return LogLevel::kNone;
}

bool is_python_warning(std::string_view t) {
  size_t warning = t.find("Warning: ");
  if (warning == std::string_view::npos) return false;
  size_t colon = t.rfind(": ", warning);
  if (colon == std::string_view::npos || colon == 0) return false;
  size_t digits = t.find_last_not_of("0123456789", colon - 1);
  return digits != std::string_view::npos && digits + 1 < colon && t[digits] == ':';
}

bool is_hook_file(std::string_view file) {
  return file.find("/traindoc_hook/") != std::string_view::npos;
}

bool is_library_file(std::string_view file) {
  return file.find("-packages/") != std::string_view::npos ||
         file.find("/lib/python3") != std::string_view::npos || file.starts_with("<frozen") ||
         is_hook_file(file);
}

std::vector<PythonTraceback> parse_tracebacks(const std::vector<store::LogLine>& lines) {
  std::vector<PythonTraceback> out;
  Parser parser(out);
  for (const store::LogLine& line : lines) parser.feed(line);
  parser.finish();
  return out;
}

std::vector<SignatureMatch> match_traceback(const PythonTraceback& traceback) {
  std::vector<SignatureMatch> out;
  if (traceback.exception_type.empty()) return out;
  std::vector<FrameHint> frames;
  frames.reserve(traceback.frames.size());
  for (const PythonFrame& f : traceback.frames) frames.push_back({f.file, f.function});

  std::vector<std::string> lines;
  std::string_view message = traceback.message;
  size_t newline = message.find('\n');
  std::string_view first = message.substr(0, newline);
  lines.push_back(first.empty() ? traceback.exception_type
                                : traceback.exception_type + ": " + std::string(first));
  while (newline != std::string_view::npos) {
    message.remove_prefix(newline + 1);
    newline = message.find('\n');
    lines.emplace_back(message.substr(0, newline));
  }

  std::map<std::string, size_t> seen;  // id -> its match in `out`
  for (const std::string& line : lines) {
    for (SignatureMatch& m : match_line(line, frames)) {
      // A text that spans lines (load_state_dict's missing keys, then its unexpected ones)
      // matches once per line: the later lines add the fields the first did not have.
      if (auto it = seen.find(m.id); it != seen.end()) {
        out[it->second].fields.merge(m.fields);
        continue;
      }
      seen.emplace(m.id, out.size());
      m.fields["exception_type"] = traceback.exception_type;
      if (!traceback.prefix.empty()) {
        m.fields["prefix"] = traceback.prefix;
        if (traceback.prefix_rank) m.fields["prefix_rank"] = std::to_string(*traceback.prefix_rank);
      }
      out.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace traindoc::analysis
