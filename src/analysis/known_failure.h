// What a known error text says about a failure, in words: the finding's kind, a title with the
// numbers the text carries, the ranks it names, and the fix. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/signatures.h"
#include "analysis/traceback.h"

namespace traindoc::analysis {

struct KnownFailure {
  const SignatureMatch* match = nullptr;  // the signature that decided it
  FindingKind kind = FindingKind::kPythonException;
  std::string title;       // without the process's name: "target label 255 is out of range"
  std::vector<int> ranks;  // ranks the text names (besides the process that printed it)
  std::vector<std::string> evidence;
  std::string fix;
  bool info = false;  // a hint about speed alone (Entry::info)
};

// The words of one match, from its catalog entry (signature_table.h): what its describer says,
// then the entry's title and fix where it said none. Those of the refinement that changed its
// kind, if one did. Empty for a signature without words.
KnownFailure describe_match(const SignatureMatch& m);

// The failure a traceback's (or a line's) signatures describe; nullopt when none of them is a
// failure of a known kind. Texts about another process's end (a worker killed, a peer gone)
// are chosen only when nothing else matched. A kind without advice of its own points to where
// the traceback `from` was printed.
std::optional<KnownFailure> describe_known(const std::vector<SignatureMatch>& matches,
                                           const PythonTraceback* from = nullptr);

// Where to read a traceback whole: the run folder's copy of the job's stream, or the file a
// process wrote it to.
std::string traceback_place(const PythonTraceback& traceback);

// Kinds whose text reports another process's end: the other process's own finding is the cause.
bool reports_another_process(FindingKind kind);

// How a finding from a known text is merged with the same failure seen elsewhere (TimedFinding's
// merge_key): collective failures by their kind, since the collective checker's finding and every
// rank's error text describe one event; others by the signature.
std::string merge_key(FindingKind kind, const std::string& signature_id);

// The fix for an exception no known text explains: where the user's code raised it, or called
// the library that did.
std::string unknown_exception_fix(const PythonTraceback& traceback);

// "at train.py:42 in step: loss = criterion(out, y)" for the innermost frame of the user's code
// (outside site-packages and the standard library), and "raised in torch/nn/functional.py:3026
// in cross_entropy" when the last frame is elsewhere. Empty for a traceback without frames.
std::vector<std::string> where(const PythonTraceback& traceback);

}  // namespace traindoc::analysis
