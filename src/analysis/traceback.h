// Python tracebacks read back from the lines traindoc kept of a job's output: frames, the
// exception, chained causes, and the worker traceback a DataLoader re-raise embeds. Lines are
// sparse (the log tap keeps the first and last lines and those that look like errors), so a
// traceback may miss frames; it is still returned, flagged incomplete. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/signatures.h"
#include "store/evidence.h"

namespace traindoc::analysis {

struct PythonFrame {
  std::string file;       // as printed: "/usr/lib/python3/dist-packages/torch/utils/data/x.py"
  int line = 0;           // 0 when not printed
  std::string function;   // "<module>", "" when not printed
  std::string code;       // the source line printed under the frame, trimmed; "" if none
  uint64_t log_line = 0;  // the log line the frame was printed on

  bool operator==(const PythonFrame&) const = default;
};

struct PythonTraceback {
  std::string exception_type;       // "RuntimeError", "torch.cuda.OutOfMemoryError"; "" if not seen
  std::string message;              // lines after the first joined with '\n'
  std::vector<PythonFrame> frames;  // outermost first, as Python prints them
  // Python prints the cause first: "The above exception was the direct cause of the following
  // exception:" links this traceback to `cause`, "During handling of the above exception,
  // another exception occurred:" to `context` (indices in the returned vector).
  std::optional<size_t> cause;
  std::optional<size_t> context;
  // A DataLoader worker's traceback that this exception's message embeds ("Original
  // Traceback (most recent call last):"), parsed as its own entry.
  std::optional<size_t> original;
  bool embedded = false;  // this one was parsed from another's message
  // torch.multiprocessing.spawn's parent printed it after "-- Process N terminated with the
  // following error:": the exception of the process it started N-th, not its own.
  std::optional<int> spawned_process;
  // Python printed "Exception in thread NAME:" before it: the exception ended that thread, and
  // the process went on without it. "" for a process's own.
  std::string thread;
  uint64_t first_line = 0;  // log line numbers spanned
  uint64_t last_line = 0;
  int64_t t_ns = 0;        // time of its last line
  int64_t start_t_ns = 0;  // time of its first line
  std::string stream;      // LogStream::name
  std::string prefix;      // launcher prefix of its lines ("[default0]:"), "" if none
  std::optional<int> prefix_rank;
  // Lines are missing inside it (a gap in line numbers), or it was cut before its exception
  // line, or it starts without its "Traceback" header.
  bool incomplete = false;

  const PythonFrame* last_frame() const { return frames.empty() ? nullptr : &frames.back(); }
  bool operator==(const PythonTraceback&) const = default;
};

// The level of a logging library's record, as its line begins: Python's logging
// ("WARNING:root:..."), glog and c10 ("W20261126 04:43:28.576334 ...", "[W ProcessGroup...]").
enum class LogLevel { kNone, kDebug, kInfo, kWarning, kError, kFatal };
LogLevel log_record_level(std::string_view text);

// A Python warning as `warnings` prints it: "path.py:12: UserWarning: ...".
bool is_python_warning(std::string_view text);

// A file of traindoc's own Python hook (python/traindoc_hook/): its wrappers stand between the
// user's call and the library it calls.
bool is_hook_file(std::string_view file);

// A file of an installed library or of the standard library (site-packages, dist-packages,
// lib/python3.N, frozen modules) or of traindoc's own Python hook, as opposed to the user's code.
bool is_library_file(std::string_view file);

// Tracebacks in the order they start. Lines are those of one run (one or both streams), in the
// order they were read; each stream and each launcher prefix is followed separately, so
// interleaved ranks' tracebacks stay apart.
std::vector<PythonTraceback> parse_tracebacks(const std::vector<store::LogLine>& lines);

// The signatures of a traceback's exception: its exception line and message lines matched with
// match_line, with its frames available to the signatures that need them. One match per id: a
// text that matches on several lines gets the fields of them all (the first line's value wins).
std::vector<SignatureMatch> match_traceback(const PythonTraceback& traceback);

}  // namespace traindoc::analysis
