// The job's output tied to the processes that printed it: Python tracebacks and known error
// texts, attributed by launcher prefix (torchrun --tee "[default1]:", "[rank1]:") or, for
// unprefixed output, by which process ended right after printing it. Pure.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/signatures.h"
#include "analysis/traceback.h"

namespace traindoc::analysis {

// A known text on one kept line of output.
struct TextMatch {
  SignatureMatch match;
  const store::LogLine* line = nullptr;
};

class LineOwners;

// Whether a stream is one that errors go to: the job's stderr, or a file some process wrote its
// stderr to (a shell's `2> err.log`, `> log 2>&1`).
bool is_error_stream(const store::Evidence& evidence, std::string_view stream);

// Whether a stream is a log file some process opened itself (Python's logging.FileHandler).
bool is_log_file(const store::Evidence& evidence, std::string_view stream);

// The file this process wrote its stdout (fd 1) or stderr (fd 2) to; nullptr for the job's own.
const store::LogStream* output_file(const store::Evidence& evidence, const ProcessSummary& process,
                                    int fd);

class ProcessTexts {
 public:
  ProcessTexts(const store::Evidence& evidence, const std::vector<ProcessSummary>& processes);
  ~ProcessTexts();
  ProcessTexts(const ProcessTexts&) = delete;
  ProcessTexts& operator=(const ProcessTexts&) = delete;

  // The tracebacks this process printed, in order (embedded ones, such as a DataLoader
  // worker's "Original Traceback", included).
  std::vector<const PythonTraceback*> tracebacks(const ProcessSummary& process) const;
  // The exception this process ended with: its last top-level traceback printed no later than
  // shortly after its end, on stderr (a log file's when only a log file has one); nullptr when
  // none was seen.
  const PythonTraceback* final_exception(const ProcessSummary& process) const;
  // Known texts on lines attributed to this process, in output order.
  std::vector<const TextMatch*> matches(const ProcessSummary& process) const;
  // The signatures of a traceback (cached match_traceback), then those of the exceptions it was
  // raised from or while handling.
  const std::vector<SignatureMatch>& signatures(const PythonTraceback& traceback) const;
  // The last non-blank line this process printed on stderr by its end (within the minute
  // before it), for a process that ended without a traceback: `sys.exit("no config")`,
  // argparse's usage error, a native program's message. nullptr when none was kept.
  const store::LogLine* last_words(const ProcessSummary& process) const;
  // Every traceback parsed from the output.
  const std::vector<PythonTraceback>& all_tracebacks() const { return m_tracebacks; }
  // Every known text in the output, whoever printed it.
  const std::vector<TextMatch>& all_matches() const { return m_matches; }
  // The process a known text of all_matches() is attributed to; nullptr when none.
  const ProcessSummary* owner(const TextMatch& match) const {
    return m_match_owner[static_cast<size_t>(&match - m_matches.data())];
  }

 private:
  const store::Evidence& m_evidence;
  std::unique_ptr<LineOwners> m_owners;
  std::vector<PythonTraceback> m_tracebacks;
  std::vector<std::vector<SignatureMatch>> m_traceback_signatures;
  std::vector<const ProcessSummary*> m_traceback_owner;  // nullptr: not attributed
  std::vector<TextMatch> m_matches;
  std::vector<const ProcessSummary*> m_match_owner;
};

}  // namespace traindoc::analysis
