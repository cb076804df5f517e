/* A stand-in for libnvidia-ml.so.1 on machines without a GPU: it exports the real NVML symbol
   names with the real ABI (src/supervisor/gpu/nvml_api.h) and reports what a scenario file says.
   Loaded by the supervisor (TRAINDOC_NVML_LIBRARY) or by unit tests; the scenario is the file
   named by TRAINDOC_FAKE_NVML_SCRIPT, read at nvmlInit. Directives, one per line (# comments):

     driver <version>
     cuda <version>       the CUDA version the driver supports, 1000 * major + 10 * minor
                          (default 13000, driver 580's)
     device <uuid> <pci bus id> <total MiB> <used MiB> <name ...>   (indices in order, from 0)
     process <device> <who> <MiB> [graphics] [+<MiB per second>] [@<file>]
         +R: the process's memory grows by R MiB a second from nvmlInit on (a leak)
         @F: while file F holds a number, the process holds that many MiB instead (a job
             that plays its own memory: what its training step would allocate)
         who: pid=<pid>   a process by its pid
              rank=<N>    the job process whose RANK is N (a descendant of the loading process
                          with TRAINDOC_RUN_DIR in its environment)
              job=<K>     the K-th such job process, by pid
     struct <16|24|32>    entry size the _v3 process lists write (default 24)
     refuse <symbol>      that entry point answers NVML_ERROR_FUNCTION_NOT_FOUND
     grow <n>             the next n list reads find one process more than the count said
     ecc <device> <corrected> <uncorrected>
     computemode <device> <mode>     nvmlComputeMode_t: 0 default, 2 prohibited, 3 exclusive-process
     xid <device> <xid> <after ms>   an Xid event that many ms after nvmlInit; Xid 79 also makes
                                     the device lost (NVML_ERROR_GPU_IS_LOST) from then on
     hostpids <offset> [<dir>]  the lists give every pid plus <offset>, as the driver gives host
                                pids to a process in a container's pid namespace. With <dir>, the
                                fake keeps there what the host's /proc would show of them:
                                <dir>/self/status for the loading process and <dir>/<pid+offset>/
                                {status,stat} for each listed one, NSpid giving both pids
     hostpids proc <dir>        the lists give each pid as the /proc mounted at <dir>, that of an
                                outer pid namespace, numbers it (its NSpid and start time there)
     init <ms>            nvmlInit takes that long (a driver without persistence mode)
     thread takes SIGCHLD       the library's own thread unblocks SIGCHLD, whatever its loader did

   Built twice: libnvidia-ml.so.1 exports nvmlEventSetWait_v2; old_events/libnvidia-ml.so.1 is a
   driver from before CUDA 11 that exports only nvmlEventSetWait (24-byte events).
   Not thread-safe, as the supervisor's single sampling thread needs none. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/gpu/nvml_api.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEVICES 16
#define MAX_PROCESSES 64
#define MAX_XIDS 16
#define MAX_REFUSED 16
#define MIB (1024ULL * 1024ULL)

struct nvmlDevice_st {
  char uuid[96];
  char pci[32];
  char name[96];
  unsigned long long total;
  unsigned long long used;
  unsigned long long ecc[2];
  int lost;
  int registered;
  int compute_mode;
};

struct fake_process {
  int device;
  char kind; /* 'p' pid, 'r' rank, 'j' job index */
  long who;
  long pid;      /* resolved; 0 when not found yet */
  long mirrored; /* the pid whose host /proc entry was written; 0 for none */
  long outer;    /* with hostpids proc: the pid in the outer namespace, found for `mirrored` */
  unsigned long long bytes;
  unsigned long long growth; /* bytes per second */
  char played[256];          /* the file whose number of MiB it holds; "" for none */
  int graphics;
};

struct fake_xid {
  int device;
  unsigned long long xid;
  long long at_ms;
  int delivered;
};

static struct {
  char driver[80];
  int cuda_version;
  struct nvmlDevice_st devices[MAX_DEVICES];
  unsigned device_count;
  struct fake_process processes[MAX_PROCESSES];
  unsigned process_count;
  struct fake_xid xids[MAX_XIDS];
  unsigned xid_count;
  char refused[MAX_REFUSED][64];
  unsigned refused_count;
  unsigned stride;
  int grow;
  long pid_offset;
  char host_dir[256];
  char outer_proc[256];
  long long init_ms;
  long long resolved_ms;
  int initialized;
  long long init_delay_ms;
  int thread_takes_sigchld;
} g;

struct nvmlEventSet_st {
  int unused;
};
static struct nvmlEventSet_st g_event_set;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int refused(const char* symbol) {
  for (unsigned i = 0; i < g.refused_count; ++i) {
    if (strcmp(g.refused[i], symbol) == 0) return 1;
  }
  return 0;
}

static void load_script(const char* path) {
  FILE* file = fopen(path, "r");
  if (file == NULL) return;
  char line[512];
  while (fgets(line, sizeof(line), file)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0') continue;
    char word[32] = "";
    int used = 0;
    if (sscanf(line, "%31s %n", word, &used) != 1) continue;
    const char* rest = line + used;
    if (strcmp(word, "driver") == 0) {
      snprintf(g.driver, sizeof(g.driver), "%s", rest);
    } else if (strcmp(word, "cuda") == 0) {
      g.cuda_version = atoi(rest);
    } else if (strcmp(word, "computemode") == 0) {
      int device = 0, mode = 0;
      if (sscanf(rest, "%d %d", &device, &mode) == 2 && device >= 0 &&
          (unsigned)device < g.device_count) {
        g.devices[device].compute_mode = mode;
      }
    } else if (strcmp(word, "device") == 0 && g.device_count < MAX_DEVICES) {
      struct nvmlDevice_st* d = &g.devices[g.device_count];
      unsigned long long total = 0, in_use = 0;
      int name_at = 0;
      if (sscanf(rest, "%95s %31s %llu %llu %n", d->uuid, d->pci, &total, &in_use, &name_at) >= 4) {
        d->total = total * MIB;
        d->used = in_use * MIB;
        snprintf(d->name, sizeof(d->name), "%s", rest + name_at);
        ++g.device_count;
      }
    } else if (strcmp(word, "process") == 0 && g.process_count < MAX_PROCESSES) {
      struct fake_process* p = &g.processes[g.process_count];
      char who[32] = "", options[3][256] = {"", "", ""};
      unsigned long long mib = 0;
      if (sscanf(rest, "%d %31s %llu %255s %255s %255s", &p->device, who, &mib, options[0],
                 options[1], options[2]) >= 3) {
        char* eq = strchr(who, '=');
        if (eq == NULL) continue;
        p->kind = who[0] == 'p' ? 'p' : who[0] == 'r' ? 'r' : 'j';
        p->who = strtol(eq + 1, NULL, 10);
        p->pid = p->kind == 'p' ? p->who : 0;
        p->bytes = mib * MIB;
        for (int o = 0; o < 3; ++o) {
          if (strcmp(options[o], "graphics") == 0) p->graphics = 1;
          if (options[o][0] == '+') p->growth = strtoull(options[o] + 1, NULL, 10) * MIB;
          if (options[o][0] == '@') snprintf(p->played, sizeof(p->played), "%s", options[o] + 1);
        }
        ++g.process_count;
      }
    } else if (strcmp(word, "struct") == 0) {
      g.stride = (unsigned)strtoul(rest, NULL, 10);
    } else if (strcmp(word, "refuse") == 0 && g.refused_count < MAX_REFUSED) {
      snprintf(g.refused[g.refused_count++], sizeof(g.refused[0]), "%s", rest);
    } else if (strcmp(word, "hostpids") == 0) {
      if (strncmp(rest, "proc ", 5) == 0) {
        snprintf(g.outer_proc, sizeof(g.outer_proc), "%s", rest + 5);
      } else if (sscanf(rest, "%ld %255s", &g.pid_offset, g.host_dir) < 1) {
        g.pid_offset = 0;
      }
    } else if (strcmp(word, "grow") == 0) {
      g.grow = atoi(rest);
    } else if (strcmp(word, "init") == 0) {
      g.init_delay_ms = atoll(rest);
    } else if (strcmp(word, "thread") == 0) {
      g.thread_takes_sigchld = strcmp(rest, "takes SIGCHLD") == 0;
    } else if (strcmp(word, "ecc") == 0) {
      int device = 0;
      unsigned long long corrected = 0, uncorrected = 0;
      if (sscanf(rest, "%d %llu %llu", &device, &corrected, &uncorrected) == 3 && device >= 0 &&
          (unsigned)device < g.device_count) {
        g.devices[device].ecc[0] = corrected;
        g.devices[device].ecc[1] = uncorrected;
      }
    } else if (strcmp(word, "xid") == 0 && g.xid_count < MAX_XIDS) {
      struct fake_xid* x = &g.xids[g.xid_count];
      if (sscanf(rest, "%d %llu %lld", &x->device, &x->xid, &x->at_ms) == 3) ++g.xid_count;
    }
  }
  fclose(file);
}

/* ---- job processes, found in /proc ---------------------------------------------------------- */

/* A whole small file into `text` (NUL-terminated); 0 when it cannot be read. */
static size_t read_text(const char* path, char* text, size_t size) {
  FILE* file = fopen(path, "r");
  if (file == NULL) return 0;
  size_t n = fread(text, 1, size - 1, file);
  fclose(file);
  text[n] = '\0';
  return n;
}

/* Field `field` (counted from 1, as proc(5) does, >= 3) of a stat file; 0 when unreadable. */
static unsigned long long stat_field(const char* path, int field) {
  char text[1024];
  if (read_text(path, text, sizeof(text)) == 0) return 0;
  const char* at = strrchr(text, ')'); /* the end of field 2, the command name */
  for (int f = 2; at != NULL && f < field; ++f) at = strchr(at + 1, ' ');
  return at != NULL ? strtoull(at + 1, NULL, 10) : 0;
}

static long parent_of(long pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  return (long)stat_field(path, 4);
}

static int descends_from_us(long pid) {
  long self = (long)getpid();
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    pid = parent_of(pid);
    if (pid == self) return 1;
  }
  return 0;
}

/* RANK of a job process (-1 without one), or -2 when it is no job process. */
static long job_rank(long pid) {
  char path[64];
  static char env[1 << 16];
  snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
  FILE* file = fopen(path, "r");
  if (file == NULL) return -2;
  size_t n = fread(env, 1, sizeof(env) - 1, file);
  fclose(file);
  env[n] = '\0';
  int in_job = 0;
  long rank = -1;
  for (size_t at = 0; at < n; at += strlen(env + at) + 1) {
    if (strncmp(env + at, "TRAINDOC_RUN_DIR=", 17) == 0) in_job = 1;
    if (strncmp(env + at, "RANK=", 5) == 0) rank = strtol(env + at + 5, NULL, 10);
  }
  return in_job ? rank : -2;
}

static int alive(long pid) {
  return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static int compare_long(const void* a, const void* b) {
  long x = *(const long*)a, y = *(const long*)b;
  return (x > y) - (x < y);
}

/* Scans /proc at most every half second, and only while a selector has no live process. */
static void resolve_processes(void) {
  int needed = 0;
  for (unsigned i = 0; i < g.process_count; ++i) {
    if (g.processes[i].kind != 'p' && !alive(g.processes[i].pid)) needed = 1;
  }
  if (!needed || now_ms() - g.resolved_ms < 500) return;
  g.resolved_ms = now_ms();
  long jobs[256], ranks[256];
  size_t count = 0;
  DIR* proc = opendir("/proc");
  if (proc == NULL) return;
  struct dirent* entry;
  while ((entry = readdir(proc)) != NULL && count < 256) {
    if (!isdigit((unsigned char)entry->d_name[0])) continue;
    long pid = strtol(entry->d_name, NULL, 10);
    long rank = job_rank(pid);
    if (rank == -2 || !descends_from_us(pid)) continue;
    jobs[count] = pid;
    ranks[count] = rank;
    ++count;
  }
  closedir(proc);
  long sorted[256];
  memcpy(sorted, jobs, count * sizeof(long));
  qsort(sorted, count, sizeof(long), compare_long);
  for (unsigned i = 0; i < g.process_count; ++i) {
    struct fake_process* p = &g.processes[i];
    if (p->kind == 'p') continue;
    p->pid = 0;
    if (p->kind == 'j' && p->who >= 0 && (size_t)p->who < count) p->pid = sorted[p->who];
    /* The topmost process with that RANK: a DataLoader worker inherits its rank's. */
    for (size_t j = 0; p->kind == 'r' && j < count; ++j) {
      if (ranks[j] == p->who && (p->pid == 0 || jobs[j] < p->pid)) p->pid = jobs[j];
    }
  }
}

/* ---- the host's /proc, as a directory of plain files ------------------------------------------
 */

static void write_text(const char* dir, long pid, const char* name, const char* text) {
  char path[512];
  if (pid > 0) {
    snprintf(path, sizeof(path), "%s/%ld", dir, pid);
  } else {
    snprintf(path, sizeof(path), "%s/self", dir);
  }
  mkdir(path, 0755);
  strncat(path, "/", sizeof(path) - strlen(path) - 1);
  strncat(path, name, sizeof(path) - strlen(path) - 1);
  FILE* file = fopen(path, "w");
  if (file == NULL) return;
  fputs(text, file);
  fclose(file);
}

/* status with NSpid "<host pid> <pid>", and stat as /proc has it under the host pid. */
static void mirror(long pid, int self) {
  char text[1024];
  long host = pid + g.pid_offset;
  snprintf(text, sizeof(text), "Name:\tfake\nNSpid:\t%ld\t%ld\n", host, pid);
  write_text(g.host_dir, self ? 0 : host, "status", text);
  if (self) return;
  char path[64], stat[1024];
  snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  if (read_text(path, stat, sizeof(stat)) == 0) return;
  const char* after_pid = strchr(stat, ' ');
  snprintf(text, sizeof(text), "%ld%s", host, after_pid ? after_pid : "\n");
  write_text(g.host_dir, host, "stat", text);
}

/* Field 22 of a stat file: the start time in clock ticks, the same in every pid namespace. */
static unsigned long long start_ticks(const char* path) {
  return stat_field(path, 22);
}

/* The pid an outer namespace's /proc (g.outer_proc) gives the process `pid` of ours: the entry
   whose NSpid ends with it and whose start time is the same. 0 when none. */
static long outer_pid(long pid) {
  char path[640], line[256];
  snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  unsigned long long start = start_ticks(path);
  DIR* dir = opendir(g.outer_proc);
  if (dir == NULL) return 0;
  long found = 0;
  struct dirent* entry;
  while (found == 0 && (entry = readdir(dir)) != NULL) {
    if (!isdigit((unsigned char)entry->d_name[0])) continue;
    snprintf(path, sizeof(path), "%s/%s/status", g.outer_proc, entry->d_name);
    FILE* file = fopen(path, "r");
    if (file == NULL) continue;
    while (fgets(line, sizeof(line), file)) {
      if (strncmp(line, "NSpid:", 6) != 0) continue;
      char* last = strrchr(line, '\t');
      long outer = strtol(line + 6, NULL, 10);
      if (last != NULL && last != line + 6 && strtol(last + 1, NULL, 10) == pid) {
        snprintf(path, sizeof(path), "%s/%s/stat", g.outer_proc, entry->d_name);
        if (start_ticks(path) == start) found = outer;
      }
      break;
    }
    fclose(file);
  }
  closedir(dir);
  return found;
}

/* ---- the NVML ABI -----------------------------------------------------------------------------
 */

static int valid(nvmlDevice_t device) {
  return device >= g.devices && device < g.devices + g.device_count;
}

static void deliver_due_losses(void) {
  for (unsigned i = 0; i < g.xid_count; ++i) {
    struct fake_xid* x = &g.xids[i];
    if (x->xid == 79 && now_ms() - g.init_ms >= x->at_ms && (unsigned)x->device < g.device_count) {
      g.devices[x->device].lost = 1;
    }
  }
}

/* The real library starts a thread of its own at init that waits in the kernel, with the signal
   mask of the thread that loaded it: a signal its loader has not yet blocked may go there and be
   lost (SIGCHLD: ignored) or end the process (SIGTERM). The same here, or with SIGCHLD unblocked
   whatever the loader did (`thread takes SIGCHLD`). It never ends: the library is built
   -z nodelete so that its code stays mapped after dlclose. */
static void* driver_thread(void* takes_sigchld) {
  if (takes_sigchld != NULL) {
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    pthread_sigmask(SIG_UNBLOCK, &child, NULL);
  }
  for (;;) pause();
  return NULL;
}

static void start_driver_thread(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, driver_thread, g.thread_takes_sigchld ? &g : NULL) == 0) {
    pthread_detach(thread);
  }
}

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  static pthread_once_t started = PTHREAD_ONCE_INIT;
  memset(&g, 0, sizeof(g));
  g.stride = sizeof(nvmlProcessInfo_v2_t);
  snprintf(g.driver, sizeof(g.driver), "%s", "580.65.06");
  g.cuda_version = 13000;
  const char* script = getenv("TRAINDOC_FAKE_NVML_SCRIPT");
  if (script != NULL) load_script(script);
  pthread_once(&started, start_driver_thread);
  if (g.init_delay_ms > 0) usleep((useconds_t)(g.init_delay_ms * 1000));
  g.init_ms = now_ms();
  g.resolved_ms = -1000;
  if (g.host_dir[0] != '\0') {
    mkdir(g.host_dir, 0755);
    mirror((long)getpid(), 1);
  }
  g.initialized = 1;
  return refused("nvmlInit_v2") ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
  g.initialized = 0;
  return NVML_SUCCESS;
}

EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  snprintf(version, length, "%s", g.driver);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (refused("nvmlSystemGetCudaDriverVersion_v2")) return NVML_ERROR_FUNCTION_NOT_FOUND;
  *version = g.cuda_version;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, int* mode) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  *mode = device->compute_mode;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!g.initialized) return NVML_ERROR_UNINITIALIZED;
  *count = g.device_count;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (index >= g.device_count) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g.devices[index];
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  snprintf(uuid, length, "%s", device->uuid);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  snprintf(name, length, "%s", device->name);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof(*pci));
  snprintf(pci->busId, sizeof(pci->busId), "%s", device->pci);
  snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%.15s", device->pci + 4);
  return NVML_SUCCESS;
}

static unsigned long long bytes_of(const struct fake_process* p) {
  if (p->played[0] != '\0') {
    FILE* file = fopen(p->played, "r");
    unsigned long long mib = 0;
    int held = file != NULL && fscanf(file, "%llu", &mib) == 1;
    if (file != NULL) fclose(file);
    if (held) return mib * MIB;
  }
  return p->bytes + p->growth * (unsigned long long)(now_ms() - g.init_ms) / 1000;
}

static unsigned long long process_bytes(const struct nvmlDevice_st* device) {
  unsigned long long sum = 0;
  for (unsigned i = 0; i < g.process_count; ++i) {
    const struct fake_process* p = &g.processes[i];
    if (&g.devices[p->device] == device && alive(p->pid)) sum += bytes_of(p);
  }
  return sum;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  deliver_due_losses();
  if (device->lost) return NVML_ERROR_GPU_IS_LOST;
  resolve_processes();
  memory->total = device->total;
  memory->used = device->used + process_bytes(device);
  if (memory->used > memory->total) memory->used = memory->total;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

/* One list read: entries of `stride` bytes, as a driver of that generation writes them. */
static nvmlReturn_t list_processes(nvmlDevice_t device, unsigned int* count, void* infos,
                                   int graphics, unsigned stride, const char* symbol) {
  if (refused(symbol)) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (!valid(device) || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (device->lost) return NVML_ERROR_GPU_IS_LOST;
  resolve_processes();
  unsigned found = 0;
  for (unsigned i = 0; i < g.process_count; ++i) {
    const struct fake_process* p = &g.processes[i];
    if (&g.devices[p->device] == device && p->graphics == graphics && alive(p->pid)) ++found;
  }
  if (found == 0) {
    *count = 0;
    return NVML_SUCCESS;
  }
  /* A process started between the count and the read. */
  if (infos != NULL && g.grow > 0) {
    --g.grow;
    *count = *count + 1;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (infos == NULL || *count < found) {
    *count = found;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  unsigned written = 0;
  for (unsigned i = 0; i < g.process_count; ++i) {
    struct fake_process* p = &g.processes[i];
    if (&g.devices[p->device] != device || p->graphics != graphics || !alive(p->pid)) continue;
    if ((g.host_dir[0] != '\0' || g.outer_proc[0] != '\0') && p->mirrored != p->pid) {
      if (g.host_dir[0] != '\0') mirror(p->pid, 0);
      if (g.outer_proc[0] != '\0') p->outer = outer_pid(p->pid);
      p->mirrored = p->pid;
    }
    nvmlProcessInfo_v3_t entry;
    memset(&entry, 0, sizeof(entry));
    entry.pid = (unsigned)(g.outer_proc[0] != '\0' ? p->outer : p->pid + g.pid_offset);
    entry.usedGpuMemory = bytes_of(p);
    entry.gpuInstanceId = 0xFFFFFFFFu;
    entry.computeInstanceId = 0xFFFFFFFFu;
    memcpy((char*)infos + (size_t)written * stride, &entry, stride);
    ++written;
  }
  *count = written;
  return NVML_SUCCESS;
}

#define PROCESS_LISTS(kind, graphics)                                                       \
  EXPORT nvmlReturn_t nvmlDeviceGet##kind##RunningProcesses_v3(nvmlDevice_t d, unsigned* n, \
                                                               void* p) {                   \
    return list_processes(d, n, p, graphics, g.stride,                                      \
                          "nvmlDeviceGet" #kind "RunningProcesses_v3");                     \
  }                                                                                         \
  EXPORT nvmlReturn_t nvmlDeviceGet##kind##RunningProcesses_v2(nvmlDevice_t d, unsigned* n, \
                                                               void* p) {                   \
    return list_processes(d, n, p, graphics, sizeof(nvmlProcessInfo_v2_t),                  \
                          "nvmlDeviceGet" #kind "RunningProcesses_v2");                     \
  }                                                                                         \
  EXPORT nvmlReturn_t nvmlDeviceGet##kind##RunningProcesses(nvmlDevice_t d, unsigned* n,    \
                                                            void* p) {                      \
    return list_processes(d, n, p, graphics, sizeof(nvmlProcessInfo_v1_t),                  \
                          "nvmlDeviceGet" #kind "RunningProcesses");                        \
  }
PROCESS_LISTS(Compute, 0)
PROCESS_LISTS(Graphics, 1)

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* u) {
  if (!valid(device) || device->lost) return NVML_ERROR_GPU_IS_LOST;
  u->gpu = process_bytes(device) > 0 ? 97 : 0;
  u->memory = process_bytes(device) > 0 ? 40 : 0;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor, unsigned* value) {
  (void)sensor;
  if (!valid(device) || device->lost) return NVML_ERROR_GPU_IS_LOST;
  *value = 64;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned* milliwatts) {
  if (!valid(device) || device->lost) return NVML_ERROR_GPU_IS_LOST;
  *milliwatts = 350000;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                              unsigned long long* reasons) {
  if (!valid(device) || device->lost) return NVML_ERROR_GPU_IS_LOST;
  *reasons = 0;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int type, int counter,
                                                unsigned long long* count) {
  (void)counter;
  if (!valid(device) || device->lost) return NVML_ERROR_GPU_IS_LOST;
  *count = device->ecc[type == 1];
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                     unsigned long long* types) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  *types = TRAINDOC_NVML_EVENT_XID | TRAINDOC_NVML_EVENT_SINGLE_BIT_ECC |
           TRAINDOC_NVML_EVENT_DOUBLE_BIT_ECC;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = &g_event_set;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                             nvmlEventSet_t set) {
  (void)set;
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  device->registered = (types & TRAINDOC_NVML_EVENT_XID) != 0;
  return NVML_SUCCESS;
}

/* The event before the MIG fields: what nvmlEventSetWait writes, 24 bytes. */
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
} fake_event_v1_t;

static nvmlReturn_t event_wait(nvmlEventData_t* data, size_t size) {
  for (unsigned i = 0; i < g.xid_count; ++i) {
    struct fake_xid* x = &g.xids[i];
    if (x->delivered || now_ms() - g.init_ms < x->at_ms || (unsigned)x->device >= g.device_count ||
        !g.devices[x->device].registered) {
      continue;
    }
    x->delivered = 1;
    nvmlEventData_t event;
    memset(&event, 0, sizeof(event));
    event.device = &g.devices[x->device];
    event.eventType = TRAINDOC_NVML_EVENT_XID;
    event.eventData = x->xid;
    event.gpuInstanceId = 0xFFFFFFFFu;
    event.computeInstanceId = 0xFFFFFFFFu;
    memcpy(data, &event, size);
    return NVML_SUCCESS;
  }
  return NVML_ERROR_TIMEOUT;
}

/* The supervisor passes timeout 0; the fake never waits. */
#ifdef FAKE_NVML_OLD_EVENTS
#define EVENT_SET_WAIT nvmlEventSetWait
#define EVENT_SIZE sizeof(fake_event_v1_t)
#else
#define EVENT_SET_WAIT nvmlEventSetWait_v2
#define EVENT_SIZE sizeof(nvmlEventData_t)
#endif
EXPORT nvmlReturn_t EVENT_SET_WAIT(nvmlEventSet_t set, nvmlEventData_t* data,
                                   unsigned int timeout_ms) {
  (void)set;
  (void)timeout_ms;
  return event_wait(data, EVENT_SIZE);
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  (void)set;
  return NVML_SUCCESS;
}
