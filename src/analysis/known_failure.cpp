// Known error texts turned into words: the match that says most about a failure, put in the
// words of its catalog entry (signature_table.h), and where a traceback was raised. Pure.
#include "analysis/known_failure.h"

#include <algorithm>
#include <set>

#include "analysis/signature_table.h"

namespace traindoc::analysis {
namespace {

// How much a match says: a failure of a kind about this process first (a plain exception's
// fix after any more specific kind), then the number of values it extracted (the monitored
// barrier's text beats the gloo timeout inside it).
int weight(const SignatureMatch& m) {
  if (!m.failure || !m.kind) return -1;
  int fields = static_cast<int>(std::count_if(m.fields.begin(), m.fields.end(), [](auto& kv) {
    return kv.first != "prefix" && kv.first != "prefix_rank" && kv.first != "exception_type";
  }));
  int base = reports_another_process(*m.kind)          ? 0
             : m.kind == FindingKind::kPythonException ? 500
                                                       : 1000;
  return base + fields;
}

// "train.py:42"
std::string location(const PythonFrame& f) {
  return f.file + (f.line > 0 ? ":" + std::to_string(f.line) : "");
}

std::string frame_text(const PythonFrame& f) {
  std::string text = location(f);
  if (!f.function.empty()) text += " in " + f.function;
  if (!f.code.empty()) text += ": " + f.code;
  return text;
}

bool user_code(const std::vector<PythonFrame>& frames, size_t i) {
  // spawn and forkserver start a process with `python -c "from multiprocessing.spawn import
  // spawn_main; ..."`: that <string> is theirs, not the user's.
  bool bootstrap = frames[i].file == "<string>" && i + 1 < frames.size() &&
                   (frames[i + 1].file.ends_with("multiprocessing/spawn.py") ||
                    frames[i + 1].file.ends_with("multiprocessing/forkserver.py"));
  return !is_library_file(frames[i].file) && !bootstrap;
}

// A frame of the user's code that only passes on what its caller gave it, whose caller's line
// says more: a generator the caller loops over that loops over the caller's iterable (the
// torchvision references' `for i, (image, target) in enumerate(metric_logger.log_every(
// data_loader, ...))` over log_every's `for obj in iterable:`, where a DataLoader's error
// passes), or a wrapper that calls on with the caller's arguments (`return fn(*args, **kwargs)`).
bool passes_through(const PythonFrame& helper, const PythonFrame& caller) {
  std::string_view code = helper.code;
  if (code.find("(*args, **kw") != std::string_view::npos) return true;
  bool loops = code.starts_with("for ") || code.starts_with("yield from ");
  return loops && !helper.function.empty() && caller.code.starts_with("for ") &&
         caller.code.find(helper.function + "(") != std::string::npos;
}

// The innermost frame of the user's code (outside libraries) on the failing path, past helpers
// that only pass it on; nullptr when none was printed.
const PythonFrame* user_frame(const PythonTraceback& traceback) {
  const std::vector<PythonFrame>& frames = traceback.frames;
  const PythonFrame* user = nullptr;
  const PythonFrame* caller = nullptr;  // the user's frame that called frames[i], or nearest
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!user_code(frames, i)) continue;
    if (caller == nullptr || !passes_through(frames[i], *caller)) user = &frames[i];
    caller = &frames[i];
  }
  return user;
}

}  // namespace

bool reports_another_process(FindingKind kind) {
  static const std::set<FindingKind> kAboutAnother = {
      FindingKind::kWorkerCrash, FindingKind::kWorkerExit, FindingKind::kPeerExited,
      FindingKind::kHostOomKilled};
  return kAboutAnother.contains(kind);
}

KnownFailure describe_match(const SignatureMatch& m) {
  KnownFailure f;
  f.match = &m;
  if (m.kind) f.kind = *m.kind;
  const Entry* entry = find_entry(m.id);
  if (entry == nullptr) return f;
  Describer describe = entry->describe;
  const char* fix = entry->fix;
  // A refinement that changed the kind speaks for the kind it chose.
  if (m.kind != entry->kind) {
    for (const Refinement& r : entry->refine) {
      if (r.kind && r.kind == m.kind) {
        describe = r.describe;
        fix = r.fix;
        break;
      }
    }
  }
  if (describe != nullptr) describe(m, f);
  if (f.title.empty()) f.title = entry->title;
  if (f.fix.empty()) f.fix = fix;
  f.info = entry->info;
  return f;
}

std::optional<KnownFailure> describe_known(const std::vector<SignatureMatch>& matches,
                                           const PythonTraceback* from) {
  const SignatureMatch* best = nullptr;
  for (const SignatureMatch& m : matches) {
    if (weight(m) >= 0 && (best == nullptr || weight(m) > weight(*best))) best = &m;
  }
  if (best == nullptr) return std::nullopt;
  KnownFailure f = describe_match(*best);
  if (f.fix.empty()) {
    f.fix = "Read the traceback in " + (from ? traceback_place(*from) : "logs/stderr.log") + ".";
  }
  std::string values;
  for (const auto& [name, value] : best->fields) {
    if (name != "prefix" && name != "prefix_rank" && name != "exception_type") {
      values.append(values.empty() ? "" : ", ").append(name).append(" ").append(value);
    }
  }
  f.evidence.push_back("known error " + best->id + (values.empty() ? "" : ": " + values));
  return f;
}

std::string merge_key(FindingKind kind, const std::string& signature_id) {
  static const std::set<FindingKind> kCollective = {
      FindingKind::kCollectiveMismatch, FindingKind::kCollectiveOrder,
      FindingKind::kCollectiveMissing, FindingKind::kUnevenInputs, FindingKind::kPeerExited};
  return kCollective.contains(kind) ? std::string(to_string(kind)) : signature_id;
}

std::string traceback_place(const PythonTraceback& traceback) {
  const std::string& stream = traceback.stream;
  return store::is_job_stream(stream) ? "logs/" + stream + ".log" : stream;
}

std::string unknown_exception_fix(const PythonTraceback& traceback) {
  const PythonFrame* user = user_frame(traceback);
  const PythonFrame* last = traceback.last_frame();
  std::string place = traceback_place(traceback);
  std::string whole = "The whole traceback is in " + place + ".";
  if (user == nullptr) return "Read the traceback in " + place + ".";
  if (user == last) return "Your code raised it at " + location(*user) + ": fix it there. " + whole;
  return "A library raised it (" + location(*last) + "), called from your code at " +
         location(*user) + ": check what that line passes it. " + whole;
}

std::vector<std::string> where(const PythonTraceback& traceback) {
  std::vector<std::string> out;
  const PythonFrame* user = user_frame(traceback);
  if (user != nullptr) out.push_back("at " + frame_text(*user));
  const PythonFrame* last = traceback.last_frame();
  if (last != nullptr && last != user) out.push_back("raised in " + frame_text(*last));
  return out;
}

}  // namespace traindoc::analysis
