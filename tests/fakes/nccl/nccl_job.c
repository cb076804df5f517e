/* One rank of a job that uses NCCL's C API (the stand-in library here): rank 0 writes the unique
 * id to a file, the others read it; then every rank makes the same calls, except for the fault
 * named on the command line. Usage: nccl_job RANK NRANKS ID_FILE FAULT, FAULT one of none,
 * count, dtype, redop, root, skip. Ends with code 0 unless NCCL fails. Built as a program, as a
 * module (NCCL_JOB_MODULE) that nccl_job_loader opens the way Python opens a framework, and as a
 * program that opens NCCL itself and takes its functions by name (NCCL_JOB_DLSYM: nccl_job_dlsym
 * LIBRARY RANK NRANKS ID_FILE FAULT). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef NCCL_JOB_DLSYM
#include "nccl_by_name.h"
#else
#include "fake_nccl.h"

/* The stand-in's count of the calls it served; absent from a real NCCL. */
int fakeNcclCallsServed(void) __attribute__((weak));
#endif

static void share_id(ncclUniqueId* id, int rank, const char* path) {
  if (rank == 0) {
    ncclGetUniqueId(id);
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE* f = fopen(tmp, "wb");
    fwrite(id, sizeof(*id), 1, f);
    fclose(f);
    rename(tmp, path);
    return;
  }
  for (;;) {
    FILE* f = fopen(path, "rb");
    if (f != NULL && fread(id, sizeof(*id), 1, f) == 1) {
      fclose(f);
      return;
    }
    if (f != NULL) fclose(f);
    usleep(10000);
  }
}

#define CHECK(call)                                         \
  do {                                                      \
    if ((call) != ncclSuccess) {                            \
      fprintf(stderr, "rank %d: %s failed\n", rank, #call); \
      return 1;                                             \
    }                                                       \
  } while (0)

__attribute__((visibility("default"))) int nccl_job(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: nccl_job RANK NRANKS ID_FILE FAULT\n");
    return 2;
  }
  int rank = atoi(argv[1]);
  int nranks = atoi(argv[2]);
  const char* fault = argv[4];
  int odd = rank == nranks - 1; /* the faulty rank */
  ncclUniqueId id;
  share_id(&id, rank, argv[3]);
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  float buffer[4096];
  /* #1: all agree; in-place broadcast through the deprecated entry point. */
  CHECK(ncclBcast(buffer, 1024, ncclFloat32, 0, comm, NULL));
  /* #2: the faulty call. */
  size_t count = strcmp(fault, "count") == 0 && odd ? 2048 : 1024;
  ncclDataType_t type = strcmp(fault, "dtype") == 0 && odd ? ncclInt32 : ncclFloat32;
  ncclRedOp_t op = strcmp(fault, "redop") == 0 && odd ? ncclMax : ncclSum;
  int root = strcmp(fault, "root") == 0 && odd ? 1 : 0;
  if (strcmp(fault, "root") == 0) {
    CHECK(ncclReduce(buffer, buffer, count, type, op, root, comm, NULL));
  } else if (!(strcmp(fault, "skip") == 0 && odd)) {
    CHECK(ncclAllReduce(buffer, buffer, count, type, op, comm, NULL));
  }
  /* A skipped call leaves the others waiting: a real NCCL would hang in their next
   * synchronisation; the skipping rank is busy elsewhere. */
  if (strcmp(fault, "skip") == 0) {
    /* 6 s in a condition wait, which a stack-dump request does not cut short (a sleep it would). */
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t never = PTHREAD_COND_INITIALIZER;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 6;
    pthread_mutex_lock(&lock);
    while (pthread_cond_timedwait(&never, &lock, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&lock);
  }
  /* Point-to-point in a group, ring-wise, and a split off the world. */
  CHECK(ncclGroupStart());
  CHECK(ncclSend(buffer, 16, ncclFloat32, (rank + 1) % nranks, comm, NULL));
  CHECK(ncclRecv(buffer, 16, ncclFloat32, (rank + nranks - 1) % nranks, comm, NULL));
  CHECK(ncclGroupEnd());
  ncclComm_t half;
  CHECK(ncclCommSplit(comm, 0, rank, &half, NULL));
  CHECK(ncclAllGather(buffer, buffer, 8, ncclFloat32, half, NULL));
  CHECK(ncclCommDestroy(half));
  /* A nonblocking split: in progress until its state says it is ready. */
  ncclConfig_t nonblocking = {sizeof(ncclConfig_t), 0xcafebeef, 0, 0};
  ncclComm_t later;
  if (ncclCommSplit(comm, 1, rank, &later, &nonblocking) != ncclInProgress) return 1;
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) CHECK(ncclCommGetAsyncError(later, &state));
  CHECK(ncclReduceScatter(buffer, buffer, 4, ncclFloat32, ncclSum, later, NULL));
  CHECK(ncclCommDestroy(later));
  /* A communicator bootstrapped from several unique ids (NCCL 2.23+): the same on every rank. */
  ncclUniqueId ids[2] = {id, id};
  ids[1].internal[0] ^= 1;
  ncclComm_t scalable;
  CHECK(ncclCommInitRankScalable(&scalable, nranks, rank, 2, ids, NULL));
  CHECK(ncclAlltoAll(buffer, buffer, 2, ncclFloat32, scalable, NULL));
  CHECK(ncclCommDestroy(scalable));
  /* A shrink (NCCL 2.27+) that drops the last rank, as after its failure: the others go on. */
  if (rank < nranks - 1) {
    int dropped = nranks - 1;
    ncclComm_t shrunk;
    CHECK(ncclCommShrink(comm, &dropped, 1, &shrunk, NULL, 0));
    CHECK(ncclReduce(buffer, buffer, 3, ncclFloat32, ncclSum, 0, shrunk, NULL));
    CHECK(ncclCommDestroy(shrunk));
  }
  CHECK(ncclCommDestroy(comm));
  if (fakeNcclCallsServed != NULL && fakeNcclCallsServed() == 0) {
    fprintf(stderr, "rank %d: another NCCL library served the calls\n", rank);
    return 1;
  }
  return 0;
}

#if defined(NCCL_JOB_DLSYM)
int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: nccl_job_dlsym LIBRARY RANK NRANKS ID_FILE FAULT\n");
    return 2;
  }
  return load_nccl(argv[1]) != 0 ? 2 : nccl_job(argc - 1, argv + 1);
}
#elif !defined(NCCL_JOB_MODULE)
int main(int argc, char** argv) {
  return nccl_job(argc, argv);
}
#endif
