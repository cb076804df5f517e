// What the agent and its audit library (src/agent/audit) agree on, in every job process: the
// names by which each knows the other and NCCL. No libc: the audit library is built without one.
#pragma once

namespace traindoc::common {

// The agent's file name, as the launcher preloads it.
inline constexpr char kAgentLibraryName[] = "libtraindoc_agent.so";
// NCCL's file names: libnccl.so, libnccl.so.2, libnccl.so.2.28.9 (not its plugins, libnccl-net).
inline constexpr char kNcclLibraryPrefix[] = "libnccl.so";
// The prefix of NCCL's entry points.
inline constexpr char kNcclSymbolPrefix[] = "nccl";

// The agent's entry point that the audit library calls when the program binds an NCCL function
// `name` of the loaded NCCL `library` (its link_map) to `real`: returns the interposer to bind in
// its place, or nullptr to leave it. The agent looks itself up by this name at its start, which
// tells the audit library where it is; it is called then with a nullptr name, which tells the
// agent that the audit library is active.
inline constexpr char kNcclBoundSymbol[] = "traindoc_nccl_bound";
using NcclBound = void* (*)(const char* name, void* real, const void* library);

// What follows the last '/' of a path.
constexpr const char* file_name(const char* path) {
  const char* name = path;
  for (const char* at = path; *at != '\0'; ++at) {
    if (*at == '/') name = at + 1;
  }
  return name;
}

constexpr bool starts_with(const char* text, const char* prefix) {
  for (; *prefix != '\0'; ++text, ++prefix) {
    if (*text != *prefix) return false;
  }
  return true;
}

constexpr bool same_text(const char* a, const char* b) {
  return starts_with(a, b) && starts_with(b, a);
}

// Whether a loaded object's path names an NCCL library.
constexpr bool is_nccl_library(const char* path) {
  return path != nullptr && starts_with(file_name(path), kNcclLibraryPrefix);
}

}  // namespace traindoc::common
