// _dl_find_object for the agent's static unwinder (libgcc's, linked in: crash_record.cpp) on
// glibc before 2.35, which lacks it. In every job process: resolved at the agent's start-up (the
// unwinder's warm-up), then called by crash and stack-dump handlers. Async-signal-safe where
// glibc has _dl_find_object; before 2.35 the fallback walks the loaded objects with
// dl_iterate_phdr, which takes the loader's lock, as every unwinder of such a glibc does.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

typedef int (*FindObjectFn)(void*, struct dl_find_object*);

// The lookup found for this process: glibc's own, or find_by_walking. Written once at start-up.
static FindObjectFn g_find_object;

struct Search {
  uintptr_t pc;
  struct dl_find_object* result;
};

// dl_iterate_phdr's callback: 1 (stop) once the object whose segments hold the pc is found.
static int note_object(struct dl_phdr_info* info, size_t size, void* raw) {
  (void)size;
  struct Search* search = raw;
  uintptr_t start = UINTPTR_MAX, end = 0;
  void* eh_frame = NULL;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* segment = &info->dlpi_phdr[i];
    uintptr_t at = info->dlpi_addr + segment->p_vaddr;
    if (segment->p_type == PT_GNU_EH_FRAME) eh_frame = (void*)at;
    if (segment->p_type != PT_LOAD) continue;
    if (at < start) start = at;
    if (at + segment->p_memsz > end) end = at + segment->p_memsz;
  }
  if (search->pc < start || search->pc >= end) return 0;
  search->result->dlfo_flags = 0;
  search->result->dlfo_map_start = (void*)start;
  search->result->dlfo_map_end = (void*)end;
  search->result->dlfo_link_map = NULL;
  search->result->dlfo_eh_frame = eh_frame;
  return 1;
}

static int find_by_walking(void* pc, struct dl_find_object* result) {
  struct Search search = {(uintptr_t)pc, result};
  return dl_iterate_phdr(note_object, &search) == 1 ? 0 : -1;
}

int __wrap__dl_find_object(void* pc, struct dl_find_object* result) {
  FindObjectFn find = __atomic_load_n(&g_find_object, __ATOMIC_ACQUIRE);
  if (find == NULL) {
    *(void**)&find = dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35");  // as POSIX advises
    if (find == NULL) find = find_by_walking;
    __atomic_store_n(&g_find_object, find, __ATOMIC_RELEASE);
  }
  return find(pc, result);
}
