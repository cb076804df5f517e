// What a crash record says once read against the process's memory map, its output and the host:
// the kind of fault in words, the blame frame, the Python line that led there, and the fix.
// Pure; used by the crash rule.
#pragma once

#include <string>
#include <vector>

#include "analysis/rule_context.h"
#include "analysis/signatures.h"
#include "analysis/traceback.h"
#include "store/memory_map.h"

namespace traindoc::analysis {

struct CrashFacts {
  FindingKind kind = FindingKind::kNativeCrash;
  std::string what;  // "null pointer dereference (read of address 0x0)"
  std::string fix;
  int blame = -1;                     // index into the crash's frames
  std::string python_line;            // the innermost Python frame of the crashing thread
  std::string user_line;              // its innermost frame outside libraries
  std::vector<std::string> evidence;  // beyond the signal and the frames
  // Known texts among the messages printed with an abort (gloo's EnforceNotMet, ...).
  std::vector<SignatureMatch> message_signatures;
};

CrashFacts classify_crash(const store::Crash& crash, const RuleContext& context);

// "died of SIGSEGV: null pointer dereference (read of address 0x0)": the crash as a finding's
// title tells it after the process's name, and as the error file traindoc writes for torchrun.
std::string crash_words(const store::Crash& crash, const CrashFacts& facts);
// The same from the crash record alone, the moment the supervisor reads it.
std::string crash_words(const store::Crash& crash);

// The first frame outside libc, the dynamic loader, the C++ runtime, the Python interpreter and
// traindoc's agent; -1 when there is none.
int blame_frame(const std::vector<store::NativeFrame>& frames);

// "traindoc_test_null_deref_here (null_deref) at null_deref.c:12", or "libfoo.so+0x1234".
std::string describe_frame(const store::NativeFrame& frame);

// The innermost frame of the crashing thread in a CPython traceback dump, as
// `File "train.py", line 12 in step` (with `user_code`, the innermost outside site-packages and
// the standard library); "" when there is none.
std::string innermost_python_frame(const std::string& traceback, bool user_code);

}  // namespace traindoc::analysis
