// The dynamic linker's audit library (LD_AUDIT, rtld-audit(7)) for NCCL resolved by name, in every
// job process beside the agent: JAX, TensorFlow and ctypes open libnccl with dlopen and take its
// functions with dlsym, which no preloaded interposer sees. The linker tells this library of each
// binding to an NCCL library, PLT or dlsym alike (la_symbind64), and binds the agent's interposer
// in its place. Called by the dynamic linker, in its own namespace, often with the linker's lock
// held: no libc (a second libc in the audit namespace would cost every process its load), no
// allocation, nothing that could call the linker back.
#include <link.h>

#include <atomic>
#include <cstdint>

#include "common/nccl_library.h"

namespace {

using traindoc::common::NcclBound;

std::atomic<uintptr_t> g_agent{0};  // the agent's link_map, once opened
std::atomic<NcclBound> g_bound{nullptr};

}  // namespace

// NOLINTBEGIN(readability-identifier-naming): the names the dynamic linker looks up.
extern "C" __attribute__((visibility("default"))) unsigned int la_version(unsigned int version) {
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

// Bindings from the agent are watched for its announcement, bindings to NCCL for the program's.
extern "C" __attribute__((visibility("default"))) unsigned int la_objopen(link_map* map,
                                                                          Lmid_t /*lmid*/,
                                                                          uintptr_t* cookie) {
  *cookie = reinterpret_cast<uintptr_t>(map);
  if (map->l_name == nullptr) return 0;
  const char* name = traindoc::common::file_name(map->l_name);
  if (traindoc::common::same_text(name, traindoc::common::kAgentLibraryName)) {
    g_agent.store(*cookie, std::memory_order_release);
    return LA_FLG_BINDFROM;
  }
  return traindoc::common::is_nccl_library(map->l_name) ? LA_FLG_BINDTO : 0;
}

// NOLINTBEGIN(performance-no-int-to-ptr): the linker hands addresses and link maps as integers.
extern "C" __attribute__((visibility("default"))) uintptr_t la_symbind64(
    Elf64_Sym* sym, unsigned int /*ndx*/, uintptr_t* refcook, uintptr_t* defcook,
    unsigned int* /*flags*/, const char* symname) {
  uintptr_t found = sym->st_value;
  if (*refcook == g_agent.load(std::memory_order_acquire)) {
    // The agent's own lookups: the real NCCL it forwards to, and its announcement.
    if (traindoc::common::same_text(symname, traindoc::common::kNcclBoundSymbol)) {
      auto bound = reinterpret_cast<NcclBound>(found);
      g_bound.store(bound, std::memory_order_release);
      bound(nullptr, nullptr, nullptr);
    }
    return found;
  }
  NcclBound bound = g_bound.load(std::memory_order_acquire);
  if (bound == nullptr ||
      !traindoc::common::starts_with(symname, traindoc::common::kNcclSymbolPrefix))
    return found;
  void* ours = bound(symname, reinterpret_cast<void*>(found), reinterpret_cast<void*>(*defcook));
  return ours != nullptr ? reinterpret_cast<uintptr_t>(ours) : found;
}
// NOLINTEND(performance-no-int-to-ptr)
// NOLINTEND(readability-identifier-naming)
