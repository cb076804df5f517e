// The shape of the signature catalog's table (signature_table.cpp and its parts
// signature_table_{distributed,python,device}.cpp), shared with the engine that runs it
// (signatures.cpp). Internal to the analysis library: use signatures.h.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "analysis/finding_kind.h"

// A size as PyTorch (format_size: "2.00 GiB", "123 bytes"), TensorFlow ("1.25GiB", "10.09G")
// and XLA print it, for the tables' patterns: a macro, so that it joins the literals around it.
#define TD_SIZE "([0-9]+(?:\\.[0-9]+)? ?(?:bytes|[KMGTPE]iB|[KMGTPE]B?|B))"

namespace traindoc::analysis {

struct KnownFailure;
struct SignatureMatch;

// Puts a match into words (known_failure.h's KnownFailure) from the fields it extracted: its
// title, the ranks it names, evidence and the fix. Those it leaves empty come from the entry's
// own title and fix. The describers are in signature_words.h.
using Describer = void (*)(const SignatureMatch&, KnownFailure&);

// How a captured text becomes a field value.
enum class Conv {
  kText,        // as printed, trimmed
  kInt,         // an integer
  kSize,        // "2.00 GiB", "1.25GiB", "123 bytes" -> bytes (parse_size)
  kKiB,         // kernel "1234kB" numbers -> bytes
  kSeconds,     // seconds -> milliseconds
  kDuration,    // "600000ms", "60s" -> milliseconds
  kSignalText,  // strsignal() text ("Segmentation fault") -> signal number
  kSignalName,  // "SIGKILL" -> signal number
  kList,        // "0 1 2", "a, b" -> "0,1,2", "a,b"
  kFlag,        // the part matched -> "1"
  kRest,        // the rest of the line after the match (trimmed, at most 512 bytes)
};

struct Capture {
  int group;          // regex group (0: the whole match; ignored by kRest)
  const char* field;  // field name
  Conv conv = Conv::kText;
};

// A pattern (ECMAScript) searched in a window around the entry's needle. Optional parts add
// fields when they match; a required part that does not match means the entry does not match.
struct Part {
  const char* pattern;
  std::vector<Capture> captures = {};
  bool required = false;
  bool repeat = false;  // every occurrence: values joined with ","
};

enum class Test {
  kPresent,       // the field was extracted
  kEquals,        // field == arg
  kContains,      // field contains arg
  kAtLeastField,  // field (+ plus) >= fraction x the field named arg (integers)
};

struct Condition {
  const char* field;
  Test test;
  const char* arg = "";
  double fraction = 1.0;
  const char* plus = nullptr;  // kAtLeastField: a field added to `field`; 0 when not extracted
};

// A more specific kind (or failure flag) when the extracted fields say so: the first refinement
// whose conditions all hold applies.
struct Refinement {
  std::vector<Condition> when;
  std::optional<FindingKind> kind;  // none: unchanged
  int failure = -1;                 // -1: unchanged, 0 or 1
  bool evidence_only = false;       // then the match points to no kind: supporting evidence
  // The words of the refined kind, in place of the entry's (see Entry).
  Describer describe = nullptr;
  const char* fix = "";
};

struct Entry {
  const char* id;
  const char* framework;
  std::optional<FindingKind> kind;  // none: supporting evidence only
  bool failure;
  // Substrings of which one must occur: the cheap test before any pattern runs.
  std::vector<std::string_view> needles;
  std::vector<Part> parts = {};
  const char* description = "";
  const char* example = "";
  const char* source = "";
  const char* unless = nullptr;  // no match when the line contains this
  std::vector<Refinement> refine = {};
  // Only for the exception line of a traceback with a frame in this file (suffix) and function.
  const char* frame_file = nullptr;
  const char* frame_function = nullptr;
  // The words of a failure this text names (describe_known): the describer that reads the fields,
  // then the title and the fix where it set none. A kind without words of its own points to the
  // traceback.
  Describer describe = nullptr;
  const char* title = "";
  const char* fix = "";
  bool info = false;  // a hint about speed alone: of severity info, not a warning
};

const std::vector<Entry>& signature_table();
// The entry of a signature id; nullptr when none has it.
const Entry* find_entry(std::string_view id);
// NCCL's line header: host, pid and GPU of the process that printed the line.
Part nccl_header();

// The entries of signature_table_distributed.cpp, signature_table_python.cpp and
// signature_table_device.cpp, which signature_table() includes.
std::vector<Entry> distributed_signature_entries();
std::vector<Entry> python_signature_entries();
std::vector<Entry> device_signature_entries();

}  // namespace traindoc::analysis
