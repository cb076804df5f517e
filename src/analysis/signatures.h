// The catalog of known error texts (PyTorch, c10d/gloo/NCCL, CUDA libraries, TensorFlow, JAX,
// the kernel, Python): one table of entries that turns a line of a job's output into stable
// signature ids with normalized fields. Pure: used by the analysis in any process, no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/finding_kind.h"

namespace traindoc::analysis {

// One signature that a line matched.
struct SignatureMatch {
  std::string id;                   // stable, e.g. "torch.cuda-oom"; never renamed
  std::optional<FindingKind> kind;  // the finding kind it points to; none: supporting evidence
  bool failure = true;              // false for texts that are warnings or hints, not failures
  // Extracted values, normalized: byte sizes as plain integers ("requested_bytes"), durations
  // in ms ("timeout_ms"), signals as numbers ("signo"), lists comma-separated ("param_indices").
  // Every match of a prefixed line also has "prefix" ("[default0]:") and "prefix_rank" ("0"),
  // and "exception_type" when the line starts with a Python exception name.
  std::map<std::string, std::string> fields;

  bool operator==(const SignatureMatch&) const = default;
};

// A catalog entry, for docs and tests.
struct SignatureInfo {
  std::string_view id;
  std::string_view framework;  // pytorch, pytorch-distributed, gloo, nccl, cuda, tensorflow, ...
  std::optional<FindingKind> kind;
  bool failure = true;
  std::string_view description;     // what it matches, in words
  std::string_view example;         // a real line it matches
  std::string_view source;          // where the text comes from (source file, issue, test)
  std::vector<std::string> fields;  // names of the fields it can extract (prefix fields aside)
  // Signatures that need the Python traceback around the line (see match_line with frames):
  // the frame's file suffix and function that must be present.
  std::string_view frame_file;
  std::string_view frame_function;
};

// A frame of the Python traceback that a line ends, for signatures that need one.
struct FrameHint {
  std::string_view file;
  std::string_view function;
};

// All signatures that match one line of output (launcher prefixes are stripped first).
// Signatures that need traceback frames never match here.
std::vector<SignatureMatch> match_line(std::string_view line);
// Same, for the exception line of a traceback whose frames are known: signatures that need
// frames match too.
std::vector<SignatureMatch> match_line(std::string_view line, std::span<const FrameHint> frames);

const std::vector<SignatureInfo>& catalog();
// nullptr when no entry has this id.
const SignatureInfo* find_signature(std::string_view id);

// A launcher's prefix on a line: torchrun --tee "[default0]:", "[rank1]: ", "[1]:", mpirun
// --tag-output "[1,0]<stderr>:", possibly nested ("[default0]:[rank0]:").
struct LinePrefix {
  std::string_view text;    // the line without its prefixes
  std::string_view prefix;  // the prefixes as printed, "" when none
  std::optional<int> rank;  // the rank (or local rank) the prefix names
};
LinePrefix strip_launcher_prefix(std::string_view line);

// "2.00 GiB", "512.00 MiB", "20.00 KiB", "1024 bytes", "1.25GiB", "10.09G", "256B" -> bytes
// (binary units, as PyTorch, TensorFlow and XLA print them), rounded to the nearest byte and
// capped at UINT64_MAX. nullopt when the text is not a size.
std::optional<uint64_t> parse_size(std::string_view text);

// "RuntimeError: CUDA out of memory" -> {"RuntimeError", "CUDA out of memory"}: a line that
// starts with a Python exception name (dotted, ending in Error, Exception, Exit, Interrupt,
// Failure or Warning... see the .cpp) followed by ": " or the end of the line.
struct ExceptionLine {
  std::string_view type;
  std::string_view message;
};
// `strict`: the name must end like an exception class (Error, Exception, ...); otherwise any
// dotted identifier is accepted (the last line of a traceback is an exception, whatever its name).
std::optional<ExceptionLine> parse_exception_line(std::string_view text, bool strict = true);

}  // namespace traindoc::analysis
